/* The rules that tie a config's keys together: the core's own (devices and
 * replicas, workers, sizes, ddp, the data and its transforms) and those the
 * plug-in tables hand over at start-up (config_register_rule), which read a
 * plug-in's fields; and the sweep's size. */
#include "config_keys.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RULES = 8 };
static config_rule_fn rules[MAX_RULES]; // config_validate's rules from above
static int n_rules;

void config_register_rule(config_rule_fn rule)
{
    for (int i = 0; i < n_rules; i++)
        if (rules[i] == rule)
            return;
    if (n_rules == MAX_RULES) { // a plug-in table's rule left unchecked: a build error
        fprintf(stderr, "dpbench: more than %d config rules registered (config_rules.c)\n",
                MAX_RULES);
        abort();
    }
    rules[n_rules++] = rule;
}

/* parallel.devices against parallel.replicas (whether the backend has
 * device ids is the backends' rule: registered from above). */
static int validate_devices(const struct config *c, struct error *e)
{
    if (c->parallel.n_devices > 0 && c->parallel.replicas != 1 &&
        c->parallel.replicas != c->parallel.n_devices)
        return error_set(e, "parallel.replicas: %ld disagrees with parallel.devices (%d ids); "
                            "give one or the other",
                         c->parallel.replicas, c->parallel.n_devices);
    return 0;
}

/* The loader knobs that need workers. */
static int validate_workers(const struct config *c, struct error *e)
{
    /* PyTorch's DataLoader refuses both without workers (ValueError). A sweep
     * over num_workers that reaches 0 is the exception: at that point the knob
     * has no workers to act on, and the run says so in its notes (train.c). */
    bool workers_swept = false;
    for (int i = 0; i < c->n_sweep; i++)
        workers_swept |= strcmp(c->sweep[i].key, "loader.num_workers") == 0;
    if (workers_swept)
        ; // checked per point: each point's knobs are inert or used
    else if (c->loader.num_workers == 0 && c->loader.persistent_workers)
        return error_set(e, "loader.persistent_workers: needs loader.num_workers > 0 "
                            "(there are no workers to keep), as in PyTorch");
    else if (c->loader.num_workers == 0 && config_is_explicit(c, "loader.prefetch_factor"))
        return error_set(e, "loader.prefetch_factor: can only be given with "
                            "loader.num_workers > 0 (batches are prefetched by workers), as "
                            "in PyTorch");
    return 0;
}

static int validate_sizes(const struct config *c, struct error *e)
{
    /* BLAS (OpenBLAS, cuBLAS) takes int sizes: the parameter vector (one axpy
     * for the SGD step), a batch's outputs and a chunk's inputs must fit */
    long replicas = c->parallel.n_devices ? c->parallel.n_devices : c->parallel.replicas;
    double params = (double)c->model.out_features * (double)(c->dataset.features + 1);
    double outputs = (double)c->loader.batch_size * (double)c->model.out_features;
    double chunk = (double)((c->loader.batch_size + replicas - 1) / replicas) *
                   (double)c->dataset.features;
    if (params > INT_MAX || outputs > INT_MAX || chunk > INT_MAX)
        return error_set(e, "model: %ld x %ld -> %ld with batch %ld needs arrays of %.0f floats, "
                            "more than BLAS' int sizes allow (%d)",
                         c->dataset.length, c->dataset.features, c->model.out_features,
                         c->loader.batch_size, fmax(params, fmax(outputs, chunk)), INT_MAX);
    return 0;
}

/* ddp: one replica a rank. */
static int validate_ddp(const struct config *c, struct error *e)
{
    bool ddp = strcmp(c->parallel.mode, "ddp") == 0;
    if (ddp && c->parallel.replicas > 1)
        return error_set(e, "parallel.replicas: %ld with parallel.mode: ddp; ddp runs one replica "
                            "per rank: start %ld ranks with mpirun -np %ld instead",
                         c->parallel.replicas, c->parallel.replicas, c->parallel.replicas);
    return 0;
}

/* The dataset's sizes and transforms (what a dataset kind allows is the
 * kinds' rule: registered from above). */
static int validate_data(const struct config *c, struct error *e)
{
    if (c->loader.drop_last && c->loader.batch_size > c->dataset.length)
        return error_set(e, "loader.batch_size: %ld is larger than dataset.length %ld with "
                            "drop_last: true, so an epoch has no batch",
                         c->loader.batch_size, c->dataset.length);
    if (c->transform.pad && !c->transform.crop)
        return error_set(e, "transform.pad: %ld needs transform.crop (the random crop it pads for)",
                         c->transform.pad);
    if ((c->transform.mean.n == 0) != (c->transform.std.n == 0))
        return error_set(e, "transform.%s: give transform.mean and transform.std together",
                         c->transform.mean.n ? "std" : "mean");
    double floats = (double)c->dataset.length * (double)(c->dataset.features + c->model.out_features);
    if (floats > 1e12)
        return error_set(e, "dataset: %ld x %ld is too large to generate", c->dataset.length,
                         c->dataset.features);
    return 0;
}

/* The rounds' bounds: where only one is given, the other yields to it
 * (app/measure.c plan_of); both given must agree. */
static int validate_rounds(const struct config *c, struct error *e)
{
    if (c->bench.min_rounds > c->bench.max_rounds && config_is_explicit(c, "bench.min_rounds") &&
        config_is_explicit(c, "bench.max_rounds"))
        return error_set(e, "bench.min_rounds: %ld is more than bench.max_rounds %ld",
                         c->bench.min_rounds, c->bench.max_rounds);
    return 0;
}

/* The rules that tie keys together, in this order (those registered from
 * above, which say whether a key applies to the plug-in at all, then the
 * core's): the first broken one is the error. */
static int rules_check(const struct config *c, struct error *e)
{
    for (int i = 0; i < n_rules; i++)
        if (rules[i](c, e))
            return -1;
    if (validate_devices(c, e) || validate_workers(c, e) || validate_sizes(c, e) ||
        validate_ddp(c, e) || validate_data(c, e) || validate_rounds(c, e))
        return -1;
    return 0;
}

int config_validate(const struct config *c, struct error *e)
{
    return rules_check(c, e) ? config_error_at(c, e) : 0;
}

int config_error_at(const struct config *c, struct error *e)
{
    size_t len = strcspn(e->msg, ": ");
    for (size_t i = 0; i < config_n_keys && c->source[0]; i++)
        if (strlen(config_keys[i].path) == len && strncmp(e->msg, config_keys[i].path, len) == 0 &&
            c->key_line[i] > 0)
            return error_wrap(e, "%s:%d", c->source, c->key_line[i]);
    return -1;
}

int config_validate_sweep(const struct config *c, struct error *e)
{
    long points = 1;
    for (int i = 0; i < c->n_sweep; i++) { // at most 64 values a key: no overflow before the cap
        if (c->sweep[i].n_values == 0)
            return error_set(e, "sweep: %s: expected at least one value", c->sweep[i].key);
        if ((points *= c->sweep[i].n_values) > CONFIG_MAX_SWEEP_POINTS)
            return error_set(e, "sweep: more than %d points (the product of the swept keys' "
                                "value counts); split the sweep into several runs",
                             CONFIG_MAX_SWEEP_POINTS);
    }
    return 0;
}

