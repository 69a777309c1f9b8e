/* The run configuration. Every key is declared once, in config.c's key table
 * (path, type, default, range, help); YAML parsing, --set overrides, --help-config
 * and the JSON echo of the resolved config all walk that table. */
#ifndef DPBENCH_CONFIG_H
#define DPBENCH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

#define CONFIG_MAX_DEVICES 64
#define CONFIG_MAX_SWEEP_KEYS 8
#define CONFIG_MAX_SWEEP_VALUES 64
#define CONFIG_MAX_SWEEP_POINTS 4096 // runs one sweep may ask for
#define CONFIG_MAX_KEYS 64 // the key table's size at most: explicit_keys has a bit per key
#define CONFIG_STR 256 // longest accepted string value, including the NUL
#define CONFIG_MAX_CHANNELS 4
#define CONFIG_MAX_FEATURES (1 << 20) // dataset.features, and a transformed sample
#define CONFIG_MAX_DEPTH 16 // YAML nesting a config may have (it needs 3)

/* A short list of floats (per-channel mean/std). */
struct float_list {
    double v[CONFIG_MAX_CHANNELS]; // (n)
    int n;
};

struct config {
    char name[CONFIG_STR];
    long seed;
    struct {
        char kind[CONFIG_STR];
        long length;           // samples
        long features;         // floats per sample
        double noise;          // teacher noise standard deviation
        double sample_cost_us; // emulated decode/augment work per sample, microseconds
        char path[CONFIG_STR];      // idx images file, cifar10 directory or folder root
        char eval_path[CONFIG_STR]; // held-out split, "" = the kind's default (or none)
        char make[CONFIG_STR];      // --make-dataset's KIND and options, run when path is missing
        bool drop_cache;            // evict the files from the page cache before each epoch
    } dataset;
    struct {
        long resize;        // shorter side to N then centre crop N x N, 0 = off
        long crop, pad;     // random N x N crop after zero padding P, 0 = off
        bool hflip;         // random horizontal flip, p = 0.5
        struct float_list mean, std; // per channel, after scaling to [0, 1]
    } transform;
    struct {
        long out_features;
        char loss[CONFIG_STR]; // auto | mse | cross_entropy
    } model;
    struct {
        long batch_size;
        bool shuffle, drop_last;
        long num_workers, prefetch_factor;
        bool pin_memory, persistent_workers, async_copy;
        long copy_depth; // device buffers in the async-copy ring
    } loader;
    struct {
        long epochs, warmup_epochs;
        double lr;
    } train;
    struct {
        char device[CONFIG_STR]; // cpu | cuda | emulated | auto
        char mode[CONFIG_STR];   // dp | ddp
        char comm[CONFIG_STR];   // auto | mpi | nccl (ddp's collectives)
        char blas[CONFIG_STR];   // auto | openblas | libxsmm (cpu step's products)
        long blas_threads;       // OpenBLAS threads for them; 0: the fastest measured
        long replicas;
        long devices[CONFIG_MAX_DEVICES]; // (n_devices) device ids, may repeat
        int n_devices;
    } parallel;
    struct config_emulate {     // parallel.device emulated: the device's timing
        double h2d_gbps;        // pinned host-to-device copies, GB/s (1e9 bytes/s)
        double pageable_gbps;   // pageable host-to-device copies, GB/s
        double launch_us;       // device time per replica per step, us
        double compute_us;      // device time per sample per step, us
        double p2p_gbps;        // gradient reduce between devices, GB/s; 0 = not timed
        char profile[CONFIG_STR]; // profile JSON (dpbench --h2d-bandwidth --out), "" = none
    } emulate;
    struct {
        bool trace;
        char format[CONFIG_STR]; // text | json | csv
        char out[CONFIG_STR];    // results directory, "" = none
        bool floor;              // measure this machine's floor for the run's shapes first
        bool verbose;            // text: each point's details in a sweep too
    } report;
    struct {
        char knobs[CONFIG_STR];  // --tune: knobs it may change, comma-separated; "" = all
        long max_workers;        // --tune: most workers tried, 0 = twice the usable cores
        double target_au;        // --tune: 0 = fastest; else cheapest settings reaching it
        double budget_s;         // --tune: trial seconds the search may spend
    } tune;
    struct {
        double threshold;        // B / A within 1 +- this: no measurable effect
        double precision;        // rounds until each point's interval is within +- this; 0 = off
        double budget_s;         // seconds the rounds may take; 0 = no limit
        long min_rounds, max_rounds; // rounds of a sweep: before it may stop, at most
    } bench;
    /* sweep: the cartesian product of these keys' values, first key outermost */
    struct config_sweep {
        char key[CONFIG_STR];
        char *values[CONFIG_MAX_SWEEP_VALUES]; // (n_values) owned strings
        int n_values;
        bool from_cli; // given by --sweep: a second --sweep of the key is refused
        int line;      // its line in the file's sweep: (0: --sweep), for a point's errors
    } sweep[CONFIG_MAX_SWEEP_KEYS];
    int n_sweep;
    char source[4096]; // file the config came from (as long as a path may be), "" = defaults only
    unsigned long long explicit_keys; // bit i: keys[i] was given (file, --set, sweep)
    int key_line[CONFIG_MAX_KEYS]; // keys[i]'s line in source, 0 = not from the file
};

/* Fills every key with its default. */
void config_defaults(struct config *c);
/* Parses YAML text over the current values; `file` names it in errors. */
int config_parse(struct config *c, const char *text, size_t len, const char *file,
                 struct error *e);
/* Reads and parses a YAML file (regular file, at most 1 MiB). */
int config_load(struct config *c, const char *path, struct error *e);
/* Applies one "path=value" override, validated like the file's keys. */
int config_set_arg(struct config *c, const char *arg, struct error *e);
/* Whether a key was given rather than left at its default (PyTorch tells
 * prefetch_factor=None from 2). */
bool config_is_explicit(const struct config *c, const char *path);
/* Sets one key from text, e.g. ("loader.num_workers", "4"). */
int config_set(struct config *c, const char *path, const char *value, struct error *e);
/* The length of the number v starts with in the config's one grammar
 * (config_set.c; a sign only where `sign`), 0 where it starts with none. */
size_t config_number_span(const char *v, bool real, bool sign);
/* A value the run resolved (a file's shape, the loss "auto" picks), not the
 * user's: the key stays given or not as it was (a tuned config writes the
 * keys given). A value the key refuses is not set. */
void config_resolve(struct config *c, const char *path, const char *value);
/* Adds or replaces a sweep key with comma-separated values ("key=v1,v2"). */
int config_sweep_arg(struct config *c, const char *arg, struct error *e);
/* Drops every sweep key (--no-sweep). */
void config_clear_sweep(struct config *c);
/* Refuses a sweep of more than CONFIG_MAX_SWEEP_POINTS points, or a key
 * without values. */
int config_validate_sweep(const struct config *c, struct error *e);
/* Checks rules that tie several keys together, for one run's config (a sweep
 * point's); call after all overrides. */
int config_validate(const struct config *c, struct error *e);
/* An error that names a key first ("dataset.path: ..."): where the file gave
 * that key, "FILE:LINE: " goes in front. -1. */
int config_error_at(const struct config *c, struct error *e);
/* Key path's line in the config's source (0: not from the file): a sweep
 * point's swept key takes its sweep: entry's, for config_error_at. */
void config_set_line(struct config *c, const char *path, int line);
/* Whether a and b make the same dataset: every key the key table marks as
 * data (the seed, dataset.*, transform.*, model.out_features) agrees. */
bool config_same_data(const struct config *a, const struct config *b);

/* The plug-in tables sit above the config: the application layer hands
 * them over at start-up. An enum key whose choices hold "*" accepts the
 * names names(0), names(1), ... up to the first NULL. */
typedef const char *(*config_names_fn)(size_t i);
void config_register_names(const char *path, config_names_fn names);
/* A rule that ties keys to a plug-in's fields (a backend's device ids, a
 * dataset kind's labels), run by config_validate before the core's rules. */
typedef int (*config_rule_fn)(const struct config *c, struct error *e);
void config_register_rule(config_rule_fn rule);

/* Deep copy (sweep strings duplicated) and release. */
int config_copy(struct config *dst, const struct config *src);
void config_free(struct config *c);

void config_print_help(void *stream); // FILE *: the key reference
/* The resolved config as a cJSON object (caller owns it). */
struct cJSON *config_to_json(const struct config *c);
/* A sweep point's swept keys with their values as the sweep set them (the
 * one value sweep_point keeps for each), before an auto value resolves
 * (model.loss, parallel.device). */
struct cJSON *config_overrides_json(const struct config *c);
/* The keys `keep` accepts (path: "loader.batch_size") as YAML, by section,
 * after the comment line `header` (its control bytes as '?'): values as JSON
 * scalars and flow lists, which YAML reads as they are. Allocated (free);
 * NULL when out of memory. */
char *config_yaml(const char *header, const struct config *c,
                  bool (*keep)(const struct config *c, const char *path));
/* Path of the i-th key of the table ("loader.batch_size"), NULL past the end. */
const char *config_key_name(size_t i);
/* The i-th key's type as --help-config names it ("int", "float", "int list",
 * "floats", ...) and its range (numbers, list items; a string's length);
 * NULL past the end. */
const char *config_key_type(size_t i, double *min, double *max);
/* An enum key's allowed values as "a|b|c" (what --help-config prints);
 * -1 for a key that is not an enum. */
int config_key_choices(const char *path, char *buf, size_t n);
/* Value of one key as text, e.g. for sweep point labels. */
int config_get_text(const struct config *c, const char *path, char *buf, size_t n);

#endif
