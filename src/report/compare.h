/* `dpbench compare`: B against A, point by point. compare_read.c reads the
 * result files; compare.c pairs their points and decides each pair with the
 * unit the files allow (docs/statistics.md): rounds run side by side
 * (interleaved, one run: `compare -c A.yaml -c B.yaml`), the rounds of two
 * separate runs, or, where a side ran once, its epochs, a verdict that covers
 * noise within one run only. The renderers format the result. */
#ifndef DPBENCH_COMPARE_H
#define DPBENCH_COMPARE_H

#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>

#include "stats.h"
#include "util.h"

struct cJSON;

enum { COMPARE_MAX_DIFFS = 24, COMPARE_MAX_NOTES = 16 };

/* One point of a result file. */
struct compare_point {
    int run;                // index in the file's runs
    const char *label;      // "key=value ..." or "" (borrowed from the document)
    struct cJSON *workload; // what is computed (owned)
    struct cJSON *settings; // how (owned)
    uint64_t hash[2];       // the workload's and the settings' (alike where they are)
    double *ms;             // (n) measured epoch times, ms
    int n;
    struct stats st;        // over ms
    double *round_ms;       // (n_rounds) its rounds' median epochs, ms (schema 2)
    int *round_of;          // (n_rounds) each one's round number
    int n_rounds;
    double others_cpu;      // other processes' share of the CPUs while it ran, NAN: unknown
    char blas[64];          // "OpenBLAS, 1 thread"; "" where the file has none
    bool failed;            // the run stopped on an error (its epochs are partial)
    bool paired;
};

struct compare_file {
    const char *path;
    struct cJSON *doc;
    int schema;                 // 1 or 2
    char tool[160];             // "dpbench 0.1.0 (0fa7ea6)" or "torch-1.13.1 (...)"
    char machine[512];          // "cpu; kernel; BLAS core; compiler"
    bool interrupted;
    bool interleaved;           // one point of compare -c's run (paired whatever its workload)
    double span_s;              // seconds its rounds measured, all points (schema 2)
    const struct cJSON *warnings; // the file's own "warnings" (borrowed), NULL: none
    struct compare_point *pts;  // (n)
    int n;
};

/* Two separate runs' rounds show the machine's drift between runs only when
 * each run measured for at least this long; shorter runs' verdicts are held
 * back (compare -c interleaves them instead). */
#define COMPARE_MIN_SPAN_S 30.0

/* The unit a pair was decided on. */
enum compare_unit {
    COMPARE_INTERLEAVED, // rounds both ran side by side: paired (stats_paired)
    COMPARE_RUNS,        // the rounds of two separate runs (stats_unpaired)
    COMPARE_EPOCHS,      // a side ran once: its epochs; within-run noise only
};
const char *compare_unit_name(enum compare_unit u);

/* A point of A and its partner in B. */
struct compare_pair {
    const struct compare_point *a, *b;
    enum compare_unit unit;
    struct ratio q;                     // B / A, its interval and verdict
    double p_value;                     // COMPARE_EPOCHS: Mann-Whitney's; NAN otherwise
    char why[256];                      // why the verdict was held back, "" if it was not
    char diffs[COMPARE_MAX_DIFFS][256]; // what differs: the workload's keys first (only
                                        // where the user chose the two, compare -c), then
                                        // the settings
    int n_diffs;
    int n_workload_diffs;               // of diffs, the workload's
    char blas[160];                     // "OpenBLAS, 1 thread vs libxsmm, 1 thread" or ""
};

struct compare_result {
    struct compare_file a, b;
    bool interleaved;           // A and B are two points of one run (compare -c)
    double threshold;           // the noise threshold the verdicts used
    double alpha;               // interleaved: the run's level over its looks (0.05 / looks)
    struct compare_pair *pairs; // (n_pairs)
    int n_pairs;
    char notes[COMPARE_MAX_NOTES][400]; // (n_notes) warnings about the two files; where
    int n_notes;                        // more came, the last one says how many
    int n_left_out;                     // not kept in notes (the files have them)
};

/* Reads both files and pairs their points: one each of one workload whatever
 * their settings, else by workload and settings; decides each pair. -1 with
 * e set on a file that cannot be used. */
int compare_read(struct compare_result *r, const char *path_a, const char *path_b,
                 double threshold, struct error *e);
/* The same for two parsed documents (the caller keeps them). */
int compare_docs(struct compare_result *r, const struct cJSON *a, const struct cJSON *b,
                 const char *name_a, const char *name_b, double threshold, struct error *e);
/* The same for a document of one run whose first two points are A and B,
 * measured in interleaved rounds (compare -c); doc is owned by r after. */
int compare_interleaved(struct compare_result *r, struct cJSON *doc, const char *name_a,
                        const char *name_b, double threshold, struct error *e);
void compare_free(struct compare_result *r);

/* compare_read.c: one file, refused with its path and why when unusable. */
int compare_file_read(struct compare_file *f, const char *path, struct error *e);
/* The same from a parsed document (f->doc is not set: the caller owns doc),
 * all its runs (only < 0) or run `only` alone. */
int compare_file_from(struct compare_file *f, const struct cJSON *doc, const char *path, int only,
                      struct error *e);
void compare_file_free(struct compare_file *f);
/* cJSON_Compare with numbers equal only when exactly so (its own takes a
 * relative 2e-16 as equal: seeds 2 apart above 2^52 would match). */
bool compare_same(const struct cJSON *a, const struct cJSON *b);
/* "section.key: A vs B" for each leaf that differs, at most max. */
int compare_diffs(const struct cJSON *a, const struct cJSON *b, const char *prefix,
                  char diffs[][256], int n, int max);

/* A point's median epoch (ms) on a unit: its rounds' medians' median, or
 * its epochs'. */
double compare_median(const struct compare_point *p, enum compare_unit unit);
/* A point's label, "(base)" for a run without a sweep. */
const char *compare_point_name(const struct compare_point *p);
/* Why an unpaired point found no partner in other, in words. */
void compare_unmatched_why(const struct compare_point *p, const struct compare_file *other,
                           char *buf, size_t n);
/* The pair's verdict in words: "faster", or "faster within run noise; not
 * interleaved" where only one run's epochs decided it. */
const char *compare_verdict_text(const struct compare_pair *p, char *buf, size_t n);
/* The lines the renderers that write prose (text, Markdown) print under a
 * pair (its points' names, what differs, why undecided) and for each point
 * left unpaired, each line after lead (render_text_compare.c). */
void report_compare_pair_notes(FILE *f, const struct compare_pair *p, const char *lead);
void report_compare_unmatched(FILE *f, const struct compare_result *c, const char *lead);

#endif
