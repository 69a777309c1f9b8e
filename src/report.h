/* Results of a whole invocation (one run, or one per sweep point), and the
 * renderers over them: text table, JSON document, CSV rows. Figures are
 * derived once (report_summarize); renderers only format. */
#ifndef DPBENCH_REPORT_H
#define DPBENCH_REPORT_H

#include <stdio.h>

#include "train.h"

struct machine {
    char cpu[256];      // model name
    long cores;         // online
    double mem_bytes;   // physical memory
    char kernel[128];   // uname -sr
    char devices[512];  // backend's device line ("" on cpu)
};

struct results {
    struct config cfg;       // the resolved base config (before sweep overrides); the
                             // keys resolved from the data as the runs had them
    char config_note[256];   // keys the runs resolved differently, "" when none
    struct machine machine;
    char date[32];           // ISO 8601 UTC, when the runs started
    char stamp[32];          // YYYYmmdd-HHMMSS UTC, for file names
    struct run_result *runs; // (n_runs)
    int n_runs;
    long n_points;           // points the sweep asked for (1 without a sweep)
    bool interrupted;        // by a signal: runs holds only complete epochs
    double estimate_bytes;   // host memory estimated before the run (the largest point)
    double peak_rss_bytes;   // the process's peak resident memory after the runs
};

void machine_describe(struct machine *m);
void report_summarize(struct results *r);
/* The bounding stage in words, e.g. "input-bound: ..."; written to buf. */
void report_verdict(const struct run_result *run, char *buf, size_t n);

void report_text(FILE *f, const struct results *r);
void report_csv(FILE *f, const struct results *r);
/* The JSON document as a string (caller frees), or NULL when out of memory. */
char *report_json(const struct results *r);

/* Refuses, before a run, a report.out that cannot take the result files: not
 * a directory (a regular file, /dev/null), not writable, refusing new files
 * (/proc), or a name too long for a file name there. Creates DIR if missing. */
int report_check_out(const char *dir, const char *name, struct error *e);
/* Writes DIR/NAME-STAMP.json and .csv as one result: both or neither, never
 * replacing an existing result (a second run in the same second gets
 * NAME-STAMP-2). The JSON's path goes to json_path. */
int report_write_files(const struct results *r, const char *dir, char *json_path, size_t n,
                       struct error *e);
/* Writes text to DIR/NAME-STAMP.EXT the same way (whole or not at all, never
 * replacing a file: NAME-STAMP-2.EXT ...); its path goes to path. */
int report_write_text(const char *dir, const char *name, const char *stamp, const char *ext,
                      const char *text, char *path, size_t n, struct error *e);

void results_free(struct results *r);

#endif
