/* Results of a whole invocation (one run, or one per sweep point), and the
 * renderers over them: text table, JSON document, CSV rows. Figures are
 * derived once (report_summarize); renderers only format. */
#ifndef DPBENCH_REPORT_H
#define DPBENCH_REPORT_H

#include <stdio.h>

#include "machine.h"
#include "pipeline.h"
#include "rounds.h"
#include "train.h"

/* The JSON's "schema_version": docs/result.schema.json describes it; raised
 * when a field changes meaning or goes away (added fields keep it). */
#define REPORT_SCHEMA_VERSION 2

struct cJSON;

/* A swept knob's measured effect: the point that differs from the fastest in
 * this knob alone (the best of its other values), against the fastest. */
struct knob_effect {
    const char *key;   // the swept key (borrowed from the results' config)
    int run;           // that point's run, -1 when no point differs in the knob alone
    bool same_work;    // it does the same work as the fastest (not run again)
    struct ratio vs;   // its time / the fastest's, paired per round
};

/* A sweep's conclusion: its fastest point and each swept knob's effect. */
struct conclusion {
    int fastest;       // run index; -1 without a sweep or a measured point
    struct knob_effect knobs[CONFIG_MAX_SWEEP_KEYS]; // (n_knobs) in the sweep's order
    int n_knobs;
};

/* dpbench --tune's result (src/tune/ fills it, the renderers show it). Its
 * trials are the result's runs, run 0 the config as given; their rounds are
 * the race's (the profile's runs: rounds numbered below 0, never paired). */
enum tune_outcome {
    TUNE_CHANGE,       // a setting measured faster than the config as given
    TUNE_TARGET,       // tune.target_au: the cheapest setting measured to reach it
    TUNE_KEEP_FASTEST, // keeps the config as given: nothing measured faster
    TUNE_KEEP_NOISY,   // keeps it: the race could not tell its leader from it
    TUNE_KEEP_BUDGET,  // keeps it: tune.budget_s ended the race before it decided
    TUNE_NO_TARGET,    // no setting reaches tune.target_au
    TUNE_TOO_SHORT,    // epochs too short for a loader setting to be measured
    TUNE_STOPPED,      // interrupted, or a trial failed: what was measured, no recommendation
};

struct tune_trial_info {
    double predicted_s, predicted_au; // the pipeline model's epoch and AU for its settings
    int rounds;                       // race rounds it ran
    char decision[256];               // what the search concluded from it
};

/* The profile's costs that may go unmeasured (the first three in
 * pipeline_fit's bits), and their JSON names. */
enum tune_cost { TUNE_COST_LOOP, TUNE_COST_HANDOFF, TUNE_COST_CONTEND, TUNE_COST_PAGEABLE,
                 TUNE_COST_PINNED, TUNE_N_COSTS };
extern const char *const tune_cost_names[TUNE_N_COSTS]; // "loop_ms", ...

/* A setting --tune could choose, and what the model predicts for it. */
struct tune_setting {
    struct pipeline_knobs k;
    double predicted_s, predicted_au;
    double estimate_s;                // what ranks it: predicted_s, or its profile run's
                                      // median epoch where that is lower
    int trial;                        // its run, -1 when not run
};

struct tune_result {
    enum tune_outcome outcome;
    double target_au;                 // 0: the fastest epoch
    long max_workers;
    double budget_s, seconds;         // tune.budget_s; wall seconds the trials took
    int best;                         // the run recommended, -1 for none
    struct ratio gain;                // best's time / the config as given's, paired per round
    double rerun_s[2];                // where a rerun's median epoch lands (95%), NAN: none
    struct pipeline_costs costs;      // per batch, from the profile
    unsigned assumed;                 // 1 << TUNE_COST_*: costs no profile run measured or
                                      // fitted, which the model took as they are (0, or the
                                      // other pin_memory's copy)
    long batches;                     // per epoch
    struct tune_trial_info *trials;   // (n_trials) one per run
    int n_trials;
    struct tune_setting *space;       // (n_space) every setting in reach, in rank order
    int n_space;
    char statement[640];              // why the outcome, and what limited it
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
    int label_width;         // the longest point label of the whole sweep (the table's first column)
    int rounds;              // complete rounds: each measured point once a round (--repeat
                             // N: N); each run's rounds say where it stood in each order
    double alpha;            // the level of the rounds' verdicts: the last look's share of
                             // 0.05 (rounds.h); 0 = 0.05
    int looks;               // times the verdicts were looked at, the last one included
    const char *rounds_end;  // why the rounds ended: "decided", "round cap", "time budget",
                             // "stopped", "failed", "fixed" (--repeat, or one point)
    double rounds_budget_s;  // the seconds the rounds had where not bench.budget_s (--tune's
                             // race: what tune.budget_s left it); 0: bench.budget_s
    char command[1024];      // the command line that produced the result
    struct run_result *live; // a round in progress (train_run's output so far), NULL between
    int live_run;            // ... the run it is a round of
    bool interrupted;        // by a signal: runs holds only complete epochs
    double estimate_bytes;   // host memory estimated before the run (the largest point)
    double peak_rss_bytes;   // the process's peak resident memory after the runs
    struct conclusion conclusion; // a sweep's (report_summarize)
    struct tune_result *tune; // dpbench --tune's (owned; runs: one per trial), NULL otherwise
};

void report_summarize(struct results *r);

/* The verdicts from the rounds (verdicts.c). The run holding run i's
 * measurement (itself, or the one it is the same work as): */
int report_measured(const struct results *r, int i);
/* The median of a run's rounds' medians, seconds (NAN without rounds). */
double report_round_median(const struct run_result *run);
/* Run b against run a, paired by round over the rounds both ran. */
void report_pair(const struct results *r, int a, int b, struct ratio *out);
void report_conclude(const struct results *r, struct conclusion *c);
/* Every verdict the result prints is decided (each point against the first,
 * the conclusion's), and every point's precision reached (bench.precision). */
bool report_decided(const struct results *r);
/* A warning when two of the points ran under clearly different load
 * (others_cpu apart by LOAD_DIFFERENT), else NULL. */
const char *report_load_apart(const struct results *r, char *buf, size_t n);
/* "N verdicts undecided after K rounds (the first of them)", into buf. */
const char *report_undecided(const struct results *r, char *buf, size_t n);
/* The figures of run i alone (run 0's must be there: speed-ups are against it). */
void report_summarize_run(struct results *r, int i);
/* Which stage bounds an epoch, from its shares of the epoch (0..1): waiting
 * for data, exposed (not hidden) copies, DataParallel steps; the rest is the
 * loop's own time. A stage bounds only when it dominates. */
enum bound { BOUND_BALANCED, BOUND_INPUT, BOUND_COPY, BOUND_COMPUTE };
enum bound report_bound(double wait, double exposed_copy, double compute);
const char *bound_name(enum bound b); // "balanced", "input", "copy", "compute"
/* A summarized run's bound, from the shares its verdict weighs. */
enum bound report_run_bound(const struct run_result *run);
/* Run i's bounding stage in words, e.g. "input-bound: ...", with what to try
 * as far as the result measured it (a sweep's neighbouring points); to buf. */
void report_verdict(const struct results *r, int i, char *buf, size_t n);
/* Whether runs i and j differ, among the sweep's keys, in `key` alone. */
bool report_differs_only(const struct results *r, int i, int j, const char *key);

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
/* --tune's recommendation (or why there is none) with its gain, epoch, rerun
 * range and PyTorch DataLoader line: its first line after head, the others
 * after sub (render_tune.c). */
void report_tune_choice(FILE *f, const struct results *r, const char *head, const char *sub);
/* Trial i's cells that the text and Markdown tables share, "-" where too
 * little was measured (a trial that failed in its first epoch: none): the
 * model's epoch (ms), the measured median and its interval (ms, "*" where
 * min-max), its time against the config as given's [interval], AU, bound. */
struct tune_cells {
    char model[24], median[24], ci[48], vs[48], au[16];
    const char *bound;
    bool minmax; // the interval is min-max
};
void report_tune_cells(const struct results *r, int i, struct tune_cells *c);
/* An AU to 4 digits, more where 4 would put it on target's other side. */
const char *report_au_text(double au, double target, char v[32]);
/* The JSON document as a string (caller frees), or NULL when out of memory. */
char *report_json(const struct results *r);
int report_json_print(FILE *f, const struct results *r);


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
    /* report.trace's lines may go to stdout before the result (else stderr) */
    bool trace;
    /* dpbench compare's pairs; NULL: compare does not offer this format */
    int (*compare)(FILE *f, const struct compare_result *c);
};
/* The renderer named name, NULL when there is none. */
const struct renderer *renderer_find(const char *name);
/* The i-th renderer's name, NULL past the last (report.format's choices). */
const char *renderer_name(size_t i);

/* Refuses, before a run, a report.out that cannot take the result files: not
 * a directory (a regular file, /dev/null), not writable, refusing new files
 * (/proc), or a name too long for a file name there. Creates DIR if missing:
 * `made` (4096 bytes) gets the highest folder it created ("": none), for
 * dirs_unmake where the run is refused after all; refused here, it removes
 * them itself. */
int report_check_out(const char *dir, const char *name, char *made, struct error *e);
/* Writes DIR/NAME-STAMP.json, .csv and -summary.csv as one result: all or none, never
 * replacing an existing result (a second run in the same second gets
 * NAME-STAMP-2). The JSON's path goes to json_path. */
int report_write_files(const struct results *r, const char *dir, char *json_path, size_t n,
                       struct error *e);
/* Removes the result report_write_files placed at json_path (all three
 * files): what goes with it could not be written. */
void report_unwrite_files(const char *json_path);
/* Writes text to DIR/NAME-STAMP.EXT the same way, whole or not at all: never
 * replacing a file (NAME-STAMP-2.EXT ...), or, with replace, replacing the
 * file of that name (the latest of its kind: NAME-tuned.yaml); its path goes
 * to path. */
int report_write_text(const char *dir, const char *name, const char *stamp, const char *ext,
                      bool replace, const char *text, char *path, size_t n, struct error *e);
/* Removes DIR/NAME-STAMP.EXT, the latest of its kind, where a run has none
 * (an earlier run's would pass for its): 1 removed (its path in path), 0
 * none there (path ""), -1 with e set. */
int report_remove_text(const char *dir, const char *name, const char *stamp, const char *ext,
                       char *path, size_t n, struct error *e);
/* Refuses, before a run, DIR/NAME-STAMP.EXT that report_write_text could not
 * replace (whether the run would write it or not): a folder, or another
 * user's file in a sticky folder. */
int report_check_replace(const char *dir, const char *name, const char *stamp, const char *ext,
                         struct error *e);

void results_free(struct results *r);

#endif
