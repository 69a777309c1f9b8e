/* `dpbench compare A.json B.json`: B against A, point by point, faster /
 * slower / same from the epoch samples (compare.c reads and pairs the files;
 * the renderers format the result). */
#ifndef DPBENCH_COMPARE_H
#define DPBENCH_COMPARE_H

#include <stdbool.h>

#include "stats.h"
#include "util.h"

struct cJSON;

enum { COMPARE_MAX_DIFFS = 24 };

/* One point of a result file. */
struct compare_point {
    int run;                // index in the file's runs
    const char *label;      // "key=value ..." or "" (borrowed from the document)
    struct cJSON *workload; // what is computed (owned)
    struct cJSON *settings; // how (owned)
    double *ms;             // (n) measured epoch times, ms
    int n;
    struct stats st;        // over ms
    bool paired;
};

struct compare_file {
    const char *path;
    struct cJSON *doc;
    char tool[160];             // "dpbench 0.1.0 (0fa7ea6)" or "torch-1.13.1 (...)"
    struct compare_point *pts;  // (n)
    int n;
};

/* A point of A and its partner in B. */
struct compare_pair {
    const struct compare_point *a, *b;
    struct comparison c;
    char diffs[COMPARE_MAX_DIFFS][256]; // settings that differ (one point each)
    int n_diffs;
};

struct compare_result {
    struct compare_file a, b;
    struct compare_pair *pairs; // (n_pairs)
    int n_pairs;
};

/* Reads both files and pairs their points: one each of one workload whatever
 * their settings, else by workload and settings. -1 with e set on a file
 * that cannot be used. */
int compare_read(struct compare_result *r, const char *path_a, const char *path_b,
                 struct error *e);
void compare_free(struct compare_result *r);

/* A point's label, "(base)" for a run without a sweep. */
const char *compare_point_name(const struct compare_point *p);
/* Why an unpaired point found no partner in other, in words. */
void compare_unmatched_why(const struct compare_point *p, const struct compare_file *other,
                           char *buf, size_t n);

#endif
