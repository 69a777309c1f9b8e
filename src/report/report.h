/* Results of a whole invocation (one run, or one per sweep point), and the
 * renderers over them: text table, JSON document, CSV rows. Figures are
 * derived once (report_summarize); renderers only format. */
#ifndef DPBENCH_REPORT_H
#define DPBENCH_REPORT_H

#include <stdio.h>

#include "machine.h"
#include "train.h"

/* The JSON's "schema_version": docs/result.schema.json describes it; raised
 * when a field changes meaning or goes away (added fields keep it). */
#define REPORT_SCHEMA_VERSION 1

struct cJSON;

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
    int label_width;         // the longest point label of the whole sweep (the table's first column)
    bool rows_shown;         // text: the points' table was printed as they finished
    int repeat;              // --repeat: each point ran this many times in a row (0 = 1)
    bool interrupted;        // by a signal: runs holds only complete epochs
    double estimate_bytes;   // host memory estimated before the run (the largest point)
    double peak_rss_bytes;   // the process's peak resident memory after the runs
    struct cJSON *tune;      // dpbench --tune: its "tune" object (owned), runs one per trial;
                             // NULL otherwise
};

void report_summarize(struct results *r);
/* The figures of run i alone (run 0's must be there: speed-ups are against it). */
void report_summarize_run(struct results *r, int i);
/* Which stage bounds an epoch, from its shares of the epoch (0..1): waiting
 * for data, exposed (not hidden) copies, DataParallel steps; the rest is the
 * loop's own time. A stage bounds only when it dominates. */
enum bound { BOUND_BALANCED, BOUND_INPUT, BOUND_COPY, BOUND_COMPUTE };
enum bound report_bound(double wait, double exposed_copy, double compute);
const char *bound_name(enum bound b); // "balanced", "input", "copy", "compute"
/* The bounding stage in words, e.g. "input-bound: ..."; written to buf. */
void report_verdict(const struct run_result *run, char *buf, size_t n);

/* "LABEL: " + the run's noise warning, or NULL when its spread is fine. */
const char *run_warning(const struct run_result *run, char *buf, size_t n);

/* Columns of run->splits: replicas, or ranks in a ddp run of several. */
int report_split_width(const struct run_result *run);

/* The renderers (render_*.c): each formats a result computed once; 0, or -1
 * when out of memory. */
int report_text(FILE *f, const struct results *r);
int report_csv(FILE *f, const struct results *r);
/* One row per point: swept keys, then the epoch-time statistics (ms). */
int report_summary_csv(FILE *f, const struct results *r);
int report_markdown(FILE *f, const struct results *r);
/* The JSON document as a string (caller frees), or NULL when out of memory. */
char *report_json(const struct results *r);
int report_json_print(FILE *f, const struct results *r);

/* The text table of a sweep, a row at a time as its points finish. */
int report_label_width(const struct results *r);
void report_text_table_head(FILE *f, const struct results *r);
/* The header lines, then the table's head: a sweep's first row follows. */
void report_text_head(FILE *f, const struct results *r);
void report_text_row(FILE *f, const struct results *r, int i);
/* Row i, after the header lines and the table's head when i is 0. */
void report_text_live_row(FILE *f, const struct results *r, int i);

struct compare_result;
struct allreduce_table;

/* --allreduce-bandwidth's table, as nccl-tests prints it. */
int report_allreduce_text(FILE *f, const struct allreduce_table *t);

/* An output format (fio's normal / terse / json printers, hyperfine's
 * export/): report.format's values are the names in renderers.c's table, and a
 * new format is one file filling this struct and one line there. */
struct renderer {
    const char *name; // report.format's value
    /* a run or a sweep, whole; 0, or -1 when out of memory */
    int (*results)(FILE *f, const struct results *r);
    /* a sweep's row i as soon as its point finishes (the header before row 0);
     * NULL: the whole result comes at the end */
    void (*row)(FILE *f, const struct results *r, int i);
    /* dpbench compare's pairs; NULL: compare does not offer this format */
    int (*compare)(FILE *f, const struct compare_result *c);
};
/* The renderer named name, NULL when there is none. */
const struct renderer *renderer_find(const char *name);
/* The i-th renderer's name, NULL past the last (report.format's choices). */
const char *renderer_name(size_t i);

/* Refuses, before a run, a report.out that cannot take the result files: not
 * a directory (a regular file, /dev/null), not writable, refusing new files
 * (/proc), or a name too long for a file name there. Creates DIR if missing. */
int report_check_out(const char *dir, const char *name, struct error *e);
/* Writes DIR/NAME-STAMP.json, .csv and -summary.csv as one result: all or none, never
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
