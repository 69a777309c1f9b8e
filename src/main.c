/* dpbench: trains PyTorch's "Data Parallelism" tutorial workload the way
 * nn.DataParallel does, while the DataLoader's knobs are toggled, and reports
 * where each epoch's time went. This file owns the command line, the sweep
 * over config points and the choice of output; it alone decides the exit
 * status. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "allreduce_bw.h"
#include "backend.h"
#include "comm.h"
#include "compare.h"
#include "config.h"
#include "dataset.h"
#include "effect.h"
#include "emulate_profile.h"
#include "estimate.h"
#include "export.h"
#include "gen.h"
#include "rlimits.h"
#include "signals.h"
#include "ddp.h"
#include "loader.h"
#include "progress.h"
#include "report.h"
#include "train.h"
#include "tune.h"

enum exit_code { EXIT_OK = 0, EXIT_RUN = 1, EXIT_USAGE = 2 };

struct options {
    const char *config;
    double max_memory; // bytes, 0 = what the machine has available
    bool h2d_bandwidth; // measure host-to-device bandwidth instead of training
    const char *export_dir; // write every point's config, data and orders here instead
    bool allreduce_bandwidth; // measure the comm engine's allreduce instead of training
    long repeat;        // runs of each point in a row (--repeat), 0 = 1
    bool quiet;         // --quiet: no progress lines
    bool no_sweep;      // --no-sweep: the config's sweep is ignored
    bool tune;          // --tune: search the loader settings instead of running the points
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dpbench [--config FILE.yaml] [--set key=value]... [--sweep key=v1,v2]...\n"
            "               [--format text|json|csv] [--out DIR] [--max-memory BYTES]\n"
            "\n"
            "Trains Linear(features, out_features) on a seeded random dataset with\n"
            "nn.DataParallel's semantics (torch.chunk scatter, broadcast, parallel forward,\n"
            "gather, MSE, reduce-add of gradients, SGD) and times every epoch.\n"
            "\n"
            "  -c, --config FILE     YAML config (defaults reproduce the tutorial)\n"
            "  -s, --set KEY=VALUE   override one key; repeatable\n"
            "  -w, --sweep KEY=V1,V2 run every combination of the swept keys; repeatable\n"
            "  -f, --format FMT      text (default), json or csv on stdout\n"
            "  -o, --out DIR         also write NAME-YYYYmmdd-HHMMSS.json, .csv and -summary.csv\n"
            "                        (UTC) into DIR\n"
            "  -m, --max-memory N    refuse runs estimated above N bytes (suffixes K, M, G)\n"
            "  -r, --repeat N        run each point N times in a row; statistics over all epochs\n"
            "      --no-sweep        ignore the config's sweep (--sweep flags still apply)\n"
            "  -q, --quiet           no progress lines on stderr\n"
            "      --h2d-bandwidth   measure host-to-device copy bandwidth (cuda), then exit\n"
            "      --export DIR      write each point's config, data, initial parameters and\n"
            "                        sample orders into DIR (for a reference run), then exit\n"
            "      --make-dataset KIND DIR [...]  write a labelled dataset (folder, cifar10, idx);\n"
            "                        dpbench --make-dataset --help for its options\n"
            "      --allreduce-bandwidth  allreduce size sweep on parallel.comm's engine, as\n"
            "                        nccl-tests prints it (under mpirun: across its ranks)\n"
            "      --tune            search the loader settings for this config's workload\n"
            "                        and recommend the fastest (tune.* keys; docs/tune.md)\n"
            "      --help-config     list every config key with its default and range\n"
            "  compare A.json B.json [--format text|json]\n"
            "                        is B faster, slower or the same as A? (dpbench compare --help)\n"
            "  -V, --version         version and the backends compiled in\n"
            "  -h, --help            this text\n"
            "\n"
            "Exit status: 0 done, 1 run failed, 2 bad config or usage, 129/130/143 interrupted\n"
            "(SIGHUP/SIGINT/SIGTERM).\n");
}

static int parse_bytes(const char *s, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    double mult = 1;
    if (end == s || errno || !isfinite(x) || x < 0)
        return -1;
    switch (*end) {
    case 'K': case 'k': mult = 1024.0; end++; break;
    case 'M': case 'm': mult = 1024.0 * 1024; end++; break;
    case 'G': case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'B')
        end += *end == 'i' ? 1 : 0, end += *end == 'B';
    if (*end)
        return -1;
    *out = x * mult;
    return 0;
}

static int parse_repeat(const char *s, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    return end == s || *end || errno || *out < 1 || *out > 1000 ? -1 : 0;
}

enum { OPT_HELP_CONFIG = 1000, OPT_H2D_BANDWIDTH, OPT_EXPORT, OPT_ALLREDUCE_BANDWIDTH,
       OPT_NO_SWEEP, OPT_TUNE };
#define SHORTOPTS ":c:s:w:f:o:m:r:qVh"
static const struct option longopts[] = {
    {"config", required_argument, NULL, 'c'},
    {"set", required_argument, NULL, 's'},
    {"sweep", required_argument, NULL, 'w'},
    {"format", required_argument, NULL, 'f'},
    {"out", required_argument, NULL, 'o'},
    {"max-memory", required_argument, NULL, 'm'},
    {"repeat", required_argument, NULL, 'r'},
    {"quiet", no_argument, NULL, 'q'},
    {"no-sweep", no_argument, NULL, OPT_NO_SWEEP},
    {"tune", no_argument, NULL, OPT_TUNE},
    {"help-config", no_argument, NULL, OPT_HELP_CONFIG},
    {"h2d-bandwidth", no_argument, NULL, OPT_H2D_BANDWIDTH},
    {"export", required_argument, NULL, OPT_EXPORT},
    {"allreduce-bandwidth", no_argument, NULL, OPT_ALLREDUCE_BANDWIDTH},
    {"version", no_argument, NULL, 'V'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

/* The first pass over argv: every flag but the config overrides. -1 with e
 * set on bad usage, 1 when a help or version text was printed. */
static int parse_flags(int argc, char **argv, struct options *opts, struct error *e)
{
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, SHORTOPTS, longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            if (opts->config)
                return error_set(e, "--config given twice");
            opts->config = optarg;
            break;
        case 'm':
            if (parse_bytes(optarg, &opts->max_memory))
                return error_set(e, "--max-memory: expected bytes (e.g. 512M, 4G), found '%s'",
                                 optarg);
            break;
        case 'r':
            if (parse_repeat(optarg, &opts->repeat))
                return error_set(e, "--repeat: expected a whole number from 1 to 1000, found '%s'",
                                 optarg);
            break;
        case 'q': opts->quiet = true; break;
        case OPT_NO_SWEEP: opts->no_sweep = true; break;
        case 'h': usage(stdout); return 1;
        case 'V':
            printf("dpbench %s\nbackends: %s\ncomm: %s\n", DPBENCH_VERSION, backend_list(),
                   comm_engines()[0] ? comm_engines() : "none");
            return 1;
        case OPT_HELP_CONFIG: config_print_help(stdout); return 1;
        case OPT_H2D_BANDWIDTH: opts->h2d_bandwidth = true; break;
        case OPT_EXPORT: opts->export_dir = optarg; break;
        case OPT_ALLREDUCE_BANDWIDTH: opts->allreduce_bandwidth = true; break;
        case OPT_TUNE: opts->tune = true; break;
        case ':': return error_set(e, "%s needs a value", argv[optind - 1]);
        case '?':
            return error_set(e, "unknown option '%s' (dpbench --help lists them)", argv[optind - 1]);
        default: break;
        }
    }
    if (optind < argc)
        return error_set(e, "unexpected argument '%s' (the config goes after --config)",
                         argv[optind]);
    return 0;
}

/* The second pass: --set, --sweep, --format and --out on top of the config
 * file, in the order given. */
static int apply_overrides(int argc, char **argv, struct config *c, struct error *e)
{
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, SHORTOPTS, longopts, NULL)) != -1) {
        int rc = 0;
        if (ch == 's')
            rc = config_set_arg(c, optarg, e);
        else if (ch == 'w')
            rc = config_sweep_arg(c, optarg, e);
        else if (ch == 'f' && config_set(c, "report.format", optarg, e))
            rc = error_wrap(e, "--format");
        else if (ch == 'o' && config_set(c, "report.out", optarg, e))
            rc = error_wrap(e, "--out");
        if (rc)
            return -1;
    }
    return 0;
}

/* Parses argv into opts and the config; returns -1 with e set on bad usage,
 * 1 when a help or version text was printed. Two passes: the config file
 * first, then overrides on top, whatever order they were given in. */
static int parse_cli(int argc, char **argv, struct options *opts, struct config *c,
                     struct error *e)
{
    int rc = parse_flags(argc, argv, opts, e);
    if (rc)
        return rc;
    if (opts->config && config_load(c, opts->config, e))
        return -1;
    if (opts->no_sweep)
        config_clear_sweep(c);
    if (apply_overrides(argc, argv, c, e))
        return -1;
    return config_validate_sweep(c, e); // each point's own rules: check_points
}

static long n_points(const struct config *c)
{
    long n = 1;
    for (int i = 0; i < c->n_sweep; i++)
        n *= c->sweep[i].n_values;
    return n;
}

/* parallel.device auto resolved to backend be; on a backend without device
 * ids (the cpu), device ids become that many replicas. */
static void resolve_auto(struct config *c, const struct backend *be)
{
    if (!be || strcmp(c->parallel.device, "auto") != 0)
        return;
    snprintf(c->parallel.device, sizeof c->parallel.device, "%s", be->name);
    if (!be->has_devices && c->parallel.n_devices > 0) {
        c->parallel.replicas = c->parallel.n_devices;
        c->parallel.n_devices = 0;
    }
}

/* The config of sweep point p (first sweep key outermost) and its label;
 * parallel.device auto becomes auto_be unless that is NULL. The point
 * keeps the sweep's keys (for its label in results), not their values: a
 * point costs the same whatever the sweep's size. */
static int point_config(const struct config *base, long p, struct config *out, char *label,
                        size_t n, const struct backend *auto_be, struct error *e)
{
    *out = *base;
    for (int i = 0; i < out->n_sweep; i++) {
        memset(out->sweep[i].values, 0, sizeof out->sweep[i].values);
        out->sweep[i].n_values = 0;
    }
    label[0] = '\0';
    size_t used = 0;
    for (int i = base->n_sweep - 1; i >= 0; i--) { // innermost first: mixed radix
        const struct config_sweep *s = &base->sweep[i];
        const char *v = s->values[p % s->n_values];
        p /= s->n_values;
        if (config_set(out, s->key, v, e)) {
            config_free(out);
            return -1;
        }
    }
    for (int i = 0; i < base->n_sweep && used < n; i++) {
        char v[CONFIG_STR];
        config_get_text(out, base->sweep[i].key, v, sizeof v);
        used += (size_t)snprintf(label + used, n - used, "%s%s=%s", i ? " " : "",
                                 base->sweep[i].key, v);
    }
    if (emulate_profile_apply(out, e) || config_validate(out, e)) {
        config_free(out);
        return label[0] ? error_wrap(e, "sweep point %s", label) : -1;
    }
    resolve_auto(out, auto_be);
    return 0;
}

static const struct backend *pick_backend(const char *dev, struct error *e)
{
    if (strcmp(dev, "auto") == 0) {
        char why[sizeof e->msg];
        const struct backend *be = backend_auto(why, sizeof why);
        if (why[0])
            fprintf(stderr, "dpbench: parallel.device auto: using %s (%s)\n", be->name, why);
        return be;
    }
    const struct backend *be = backend_find(dev);
    if (!be) {
        error_set(e, "parallel.device %s: this dpbench was built without it (backends: %s); "
                     "rebuild with the CUDA toolkit installed",
                  dev, backend_list());
        return NULL;
    }
    if (be->probe(e)) {
        error_wrap(e, "parallel.device %s", dev);
        return NULL;
    }
    return be;
}

/* Checks every point before any runs: its config (the rules that tie keys
 * together) and its estimated host footprint (estimate.c) against the limit,
 * before any allocation (a device backend checks its own memory in init,
 * before allocating there). Points run one after the other, but each keeps
 * its results until the end. Sets *peak to the largest need. */
static int check_points(const struct config *c, double max_memory, size_t *peak,
                        struct error *e)
{
    char what[96] = "--max-memory";
    size_t limit = max_memory > 0 ? (max_memory >= 0x1p64 ? SIZE_MAX : (size_t)max_memory) : 0;
    if (!limit) { // keep a margin free: a run at the edge of memory thrashes
        size_t avail = estimate_available();
        limit = avail > estimate_margin(avail) ? avail - estimate_margin(avail) : 0;
        snprintf(what, sizeof what, "%.2f GiB available memory less a %.2f GiB margin",
                 (double)avail / (1 << 30), (double)estimate_margin(avail) / (1 << 30));
    }
    long n = n_points(c);
    size_t kept = 0; // results of the points before
    *peak = 0;
    for (long p = 0; p < n && !stop_requested(); p++) {
        struct config pc;
        char label[512];
        if (point_config(c, p, &pc, label, sizeof label, NULL, e))
            return -1;
        struct estimate est;
        int rc = estimate_host(&pc, &est);
        if (rc == 0 && rlimits_check_run(&pc, &est, e)) {
            config_free(&pc);
            return label[0] ? error_wrap(e, "sweep point %s", label) : -1;
        }
        config_free(&pc);
        if (rc || __builtin_add_overflow(est.total, kept, &est.total))
            return error_set(e, "%s%sdataset %ld x %ld -> %ld: the sizes overflow this "
                                "machine's address space",
                             label, label[0] ? ": " : "", pc.dataset.length,
                             pc.dataset.features, pc.model.out_features);
        kept += est.results;
        if (est.total > *peak)
            *peak = est.total;
        if (limit && est.total > limit)
            return error_set(e, "%s%sthe run needs about %.2f GiB of host memory (dataset %.2f, "
                                "loader %.2f, model %.2f, results %.2f, runtime %.2f), more "
                                "than the %s",
                             label, label[0] ? ": " : "", (double)est.total / (1 << 30),
                             (double)est.dataset / (1 << 30), (double)est.loader / (1 << 30),
                             (double)est.model / (1 << 30), (double)est.results / (1 << 30),
                             (double)est.runtime / (1 << 30),
                             max_memory > 0 ? "--max-memory limit" : what);
    }
    return 0;
}

static bool same_data(const struct config *a, const struct config *b)
{
    return a->seed == b->seed && a->dataset.length == b->dataset.length &&
           a->dataset.features == b->dataset.features && a->dataset.noise == b->dataset.noise &&
           a->model.out_features == b->model.out_features &&
           strcmp(a->dataset.kind, b->dataset.kind) == 0 &&
           strcmp(a->dataset.path, b->dataset.path) == 0 &&
           strcmp(a->dataset.eval_path, b->dataset.eval_path) == 0 &&
           memcmp(&a->transform, &b->transform, sizeof a->transform) == 0;
}

/* Makes d the dataset of point config pc, generating it again only when pc's
 * data keys differ from data_cfg's (the config d was built for). */
static int point_dataset(struct dataset *d, struct config *data_cfg, bool *have_data,
                         const struct config *pc, struct error *e)
{
    if (!*have_data || !same_data(data_cfg, pc)) {
        if (*have_data)
            dataset_free(d);
        *have_data = false;
        if (dataset_init(d, pc, e))
            return -1;
        *have_data = true;
        *data_cfg = *pc;
        data_cfg->n_sweep = 0;
    }
    dataset_set_sample_cost(d, pc->dataset.sample_cost_us);
    return 0;
}

/* The backends that parallel.device names (the base's and a sweep's values),
 * each probed once before any run: every point runs on the backend it
 * names, and one that cannot run fails up front as a single run would. */
#define MAX_BACKENDS 8
struct backends {
    const char *names[MAX_BACKENDS];        // the backend table's, then auto
    const struct backend *be[MAX_BACKENDS]; // NULL: not used by any point
    int n;
};

static int backends_resolve(const struct config *c, struct backends *b, struct error *e)
{
    *b = (struct backends){0};
    for (const char *t; b->n < MAX_BACKENDS - 1 && (t = backend_name((size_t)b->n));)
        b->names[b->n++] = t;
    b->names[b->n++] = "auto";
    const char *used[CONFIG_MAX_SWEEP_VALUES + 1] = {c->parallel.device};
    int n_used = 1;
    for (int i = 0; i < c->n_sweep; i++)
        if (strcmp(c->sweep[i].key, "parallel.device") == 0) {
            n_used = 0; // the base's value is never run
            for (int j = 0; j < c->sweep[i].n_values; j++)
                used[n_used++] = c->sweep[i].values[j];
        }
    bool known = false;
    for (int i = 0; i < n_used; i++, known = false) {
        for (int k = 0; k < b->n; k++)
            if (strcmp(used[i], b->names[k]) == 0) {
                known = true;
                if (!b->be[k] && !(b->be[k] = pick_backend(used[i], e)))
                    return -1;
            }
        if (!known && !pick_backend(used[i], e)) // not built: says so
            return -1;
    }
    /* a point whose auto was resolved names the backend it got */
    const struct backend *a = b->be[b->n - 1];
    for (int k = 0; k < b->n - 1; k++)
        if (a && !b->be[k] && strcmp(a->name, b->names[k]) == 0)
            b->be[k] = a;
    return 0;
}

static const struct backend *backends_get(const struct backends *b, const char *name)
{
    for (int k = 0; k < b->n; k++)
        if (strcmp(name, b->names[k]) == 0)
            return b->be[k];
    return NULL;
}

/* The longest point label of the sweep: the table's first column, known
 * before its first row is printed. */
static int label_width(const struct config *c)
{
    int w = 0;
    for (long p = 0; p < n_points(c); p++) {
        struct config pc;
        char label[512];
        struct error e;
        if (point_config(c, p, &pc, label, sizeof label, NULL, &e))
            continue;
        config_free(&pc);
        if ((int)strlen(label) > w)
            w = (int)strlen(label);
    }
    return w;
}

/* The text table's newest row on stdout (the header with the first). */
static void show_row(struct results *res)
{
    int i = res->n_runs - 1;
    report_summarize_run(res, i);
    if (i == 0)
        report_text_head(stdout, res);
    report_text_row(stdout, res, i);
    fflush(stdout);
    res->rows_shown = true;
}

/* Appends more's measured epochs (and each rank's) to into's, numbered on. */
static int append_epochs(struct run_result *into, const struct run_result *more)
{
    int n = into->n_epochs, m = more->n_epochs;
    struct epoch_result *ep = realloc(into->epochs, (size_t)(n + m + 1) * sizeof *ep);
    if (!ep)
        return -1;
    into->epochs = ep;
    for (int r = 0; into->ranks && more->ranks && r < into->world_size; r++) {
        struct epoch_result *re = realloc(into->ranks[r].epochs, (size_t)(n + m + 1) * sizeof *re);
        if (!re)
            return -1;
        into->ranks[r].epochs = re;
        memcpy(re + n, more->ranks[r].epochs, (size_t)m * sizeof *re);
        for (int k = 0; k < m; k++)
            re[n + k].epoch = n + k + 1;
    }
    memcpy(ep + n, more->epochs, (size_t)m * sizeof *ep);
    for (int k = 0; k < m; k++)
        ep[n + k].epoch = n + k + 1;
    into->n_epochs = n + m;
    return 0;
}

/* train_run `repeat` times in a row into run, its measured epochs pooled: a
 * short config still gives a tight interval. Same contract as train_run. */
static int run_repeated(const struct config *pc, const struct dataset *d,
                        const struct backend *be, struct comm *cm, struct run_result *run,
                        FILE *trace, int repeat, struct error *e)
{
    int rc = train_run(pc, d, be, cm, run, trace, e);
    run->repeats = 1;
    for (int k = 1; k < repeat && rc == 0 && !run->interrupted && !stop_requested(); k++) {
        struct run_result more;
        progress_repeat(k);
        rc = train_run(pc, d, be, cm, &more, NULL, e);
        if (rc && !more.failed) { // nothing of this repeat: the run stands as it was
            run_result_free(run);
            return rc;
        }
        if (append_epochs(run, &more)) {
            run_result_free(&more);
            run_result_free(run);
            return error_set(e, "out of memory");
        }
        run->repeats++;
        run->interrupted |= more.interrupted;
        run->failed |= more.failed;
        run->together = more.together;
        if (more.stopped[0])
            snprintf(run->stopped, sizeof run->stopped, "repeat %d: %s", k + 1, more.stopped);
        run_result_free(&more);
    }
    return rc;
}

/* The earlier run whose effective settings (effect.c) equal mine, or -1. */
static int same_as_earlier(const struct results *res, cJSON *const *eff, const cJSON *mine)
{
    for (int k = 0; mine && k < res->n_runs; k++)
        if (eff[k] && !res->runs[k].same && cJSON_Compare(eff[k], mine, 1))
            return k;
    return -1;
}

/* A point that is not run again: its config and label, and which run holds
 * its measurement. */
static int record_same(struct run_result *run, const struct config *pc, const char *label,
                       const struct backend *be, int k, struct error *e)
{
    memset(run, 0, sizeof *run);
    if (config_copy(&run->cfg, pc))
        return error_set(e, "out of memory");
    snprintf(run->label, sizeof run->label, "%s", label);
    run->backend = be->name;
    run->same = true;
    run->same_as = k;
    effect_notes(pc, be, run->notes, sizeof run->notes); // why it is the same
    return 0;
}

/* Records point pc as the next run without running it when its effective
 * settings equal an earlier run's: 1 when recorded, 0 when it must run, -1
 * on an error. eff[i] keeps run i's effective settings. */
static int skip_same(struct results *res, cJSON **eff, const struct config *pc, const char *label,
                     const struct backend *be, struct error *e)
{
    cJSON *mine = effect_config(pc, be);
    int k = same_as_earlier(res, eff, mine);
    eff[res->n_runs] = mine;
    if (k < 0)
        return 0;
    if (record_same(&res->runs[res->n_runs], pc, label, be, k, e))
        return -1;
    res->n_runs++;
    return 1;
}

/* After run_repeated returned rc != 0: a failure mid-run keeps the complete
 * epochs (maybe none) as partial results; a stop keeps only complete epochs
 * and is not a failure. Returns the status for run_points. */
static int point_failed(struct results *res, struct run_result *run, const char *label, int rc,
                        struct error *e)
{
    if (run->failed || stop_requested()) {
        if (run->failed && (run->n_epochs > 0 || !stop_requested())) {
            snprintf(run->label, sizeof run->label, "%s", label);
            res->n_runs++;
            res->interrupted = true;
        } else if (run->failed) {
            run_result_free(run);
        }
        if (stop_requested())
            return 0; // interrupted, not failed
    }
    if (label[0])
        error_wrap(e, "sweep point %s", label);
    return rc;
}

/* Runs every sweep point; the dataset is generated (or loaded) once per
 * distinct data config and shared. On interruption, keeps what completed.
 * Returns -2 when a dataset cannot be loaded (bad data: a usage error, found
 * before any epoch of that point). */
static int run_points(const struct config *c, const struct backends *bes, struct comm *cm,
                      struct results *res, bool quiet, struct error *e)
{
    long n = n_points(c);
    res->runs = calloc((size_t)n, sizeof *res->runs);
    cJSON **eff = calloc((size_t)n, sizeof *eff); // each run's effective settings
    if (!res->runs || !eff) {
        free(eff);
        return error_set(e, "out of memory");
    }
    struct dataset d = {0};
    struct config data_cfg = {0};
    bool have_data = false;
    int rc = 0;
    bool text = strcmp(c->report.format, "text") == 0;
    res->label_width = label_width(c);
    for (long p = 0; p < n && !stop_requested(); p++) {
        struct config pc;
        char label[512];
        const struct backend *auto_be = backends_get(bes, "auto");
        if ((rc = point_config(c, p, &pc, label, sizeof label, auto_be, e)))
            break;
        const struct backend *be = backends_get(bes, pc.parallel.device);
        int same = skip_same(res, eff, &pc, label, be, e);
        if (same) { // the same work as an earlier run: not run again
            config_free(&pc);
            if (same < 0 && (rc = -1))
                break;
            if (text && n > 1)
                show_row(res);
            continue;
        }
        if (point_dataset(&d, &data_cfg, &have_data, &pc, e)) {
            config_free(&pc);
            rc = stop_requested() ? 0 : -2; // interrupted, or bad data
            break;
        }
        if (n > 1 && isatty(STDERR_FILENO) && !quiet)
            fprintf(stderr, "dpbench: point %ld/%ld: %s\n", p + 1, n, label);
        progress_point(p, pc.train.warmup_epochs + pc.train.epochs);
        FILE *trace = pc.report.trace ? (text ? stdout : stderr) : NULL;
        struct run_result *run = &res->runs[res->n_runs];
        rc = run_repeated(&pc, &d, be, cm, run, trace, res->repeat > 1 ? res->repeat : 1, e);
        config_free(&pc);
        if (rc) {
            rc = point_failed(res, run, label, rc, e);
            break;
        }
        snprintf(run->label, sizeof run->label, "%s", label);
        if (run->n_epochs == 0) { // stopped before a measured epoch: nothing to report
            run_result_free(run);
            break;
        }
        res->n_runs++;
        if (text && n > 1) // each row as soon as its point finishes
            show_row(res);
    }
    progress_done();
    for (long p = 0; p < n; p++)
        cJSON_Delete(eff[p]);
    free(eff);
    if (have_data)
        dataset_free(&d);
    res->n_points = n;
    res->interrupted |= stop_requested();
    return rc;
}

static const char *signal_name(int sig) { return signals_name(sig); }

/* --export DIR: every point's config, data, initial parameters and sample
 * orders, written for a reference implementation; nothing is trained. */
static int export_points(const struct config *c, const char *dir, double max_memory)
{
    struct error e;
    struct export x;
    size_t estimate;
    signal(SIGXFSZ, SIG_IGN); // a file size limit fails the write (EFBIG): the export is removed
    if (check_points(c, max_memory, &estimate, &e) || export_init(&x, dir, &e)) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return EXIT_USAGE;
    }
    struct dataset d = {0};
    struct config data_cfg = {0};
    bool have_data = false;
    long n = n_points(c);
    int rc = 0;
    bool bad_data = false; // refused as training refuses it: exit 2
    for (long p = 0; p < n && rc == 0 && !stop_requested(); p++) {
        struct config pc;
        char label[512];
        if ((rc = point_config(c, p, &pc, label, sizeof label, NULL, &e)))
            break;
        bad_data = point_dataset(&d, &data_cfg, &have_data, &pc, &e) != 0;
        rc = bad_data || export_point(&x, &pc, label, &d, &e);
        if (rc && label[0])
            error_wrap(&e, "sweep point %s", label);
        config_free(&pc);
    }
    if (rc == 0 && !stop_requested())
        rc = export_finish(&x, c, &e);
    if (have_data)
        dataset_free(&d);
    export_free(&x);
    if (stop_requested()) { // export_free removed the staging folder
        fprintf(stderr, "dpbench: interrupted by %s; nothing exported to %s\n",
                signal_name(train_stop), dir);
        return 128 + train_stop;
    }
    if (rc) {
        fprintf(stderr, "dpbench: %s (nothing exported to %s)\n", e.msg, dir);
        return bad_data ? EXIT_USAGE : EXIT_RUN;
    }
    fprintf(stderr, "dpbench: exported %ld point%s to %s\n", n, n == 1 ? "" : "s", dir);
    return EXIT_OK;
}

/* --h2d-bandwidth: the cuda backend's copy-bandwidth table on stdout; with
 * --out DIR also the profile emulate.profile replays (DIR/h2d-profile.json). */
static int h2d_bandwidth(const char *out_dir)
{
    const struct backend *be = NULL; // the first with a bandwidth table
    for (size_t i = 0; backend_name(i) && !be; i++)
        if (backend_at(i) && backend_at(i)->bandwidth)
            be = backend_at(i);
    struct h2d_profile prof = {0};
    struct error e;
    char path[4400];
    if (!be) {
        fprintf(stderr, "dpbench: --h2d-bandwidth needs the cuda backend; this dpbench was "
                        "built without it (backends: %s)\n", backend_list());
        return EXIT_RUN;
    }
    if (out_dir[0] && report_check_out(out_dir, "h2d-profile", &e)) {
        fprintf(stderr, "dpbench: --h2d-bandwidth: %s\n", e.msg);
        return EXIT_USAGE;
    }
    if (be->probe(&e) || be->bandwidth(stdout, out_dir[0] ? &prof : NULL, &e) ||
        (out_dir[0] && h2d_profile_write(&prof, out_dir, path, sizeof path, &e))) {
        fprintf(stderr, "dpbench: --h2d-bandwidth: %s\n", e.msg);
        return EXIT_RUN;
    }
    if (out_dir[0])
        fprintf(stderr, "dpbench: profile written to %s (emulate.profile: %s replays it)\n",
                path, path);
    return EXIT_OK;
}

/* The result files first, then stdout: a file that cannot be written never
 * costs the results on stdout, and a stdout nobody reads any more (mpirun
 * stops forwarding its ranks' output once told to end the job) never costs
 * the files. */
static int emit(const struct results *res, const struct tune_report *tune, bool *placed,
                struct error *e)
{
    int rc = 0;
    if (res->cfg.report.out[0]) {
        char path[4400];
        char tuned[4400];
        if (report_write_files(res, res->cfg.report.out, path, sizeof path, e))
            rc = error_wrap(e, "result files not written (results are on stdout)");
        else
            fprintf(stderr, "dpbench: results written to %s (and .csv, -summary.csv)\n", path);
        *placed = rc == 0;
        if (!rc && tune && tune_write_yaml(tune, res->cfg.report.out, tuned, sizeof tuned, e))
            rc = error_wrap(e, "tuned config not written");
        else if (!rc && tune && tuned[0])
            fprintf(stderr, "dpbench: tuned config written to %s\n", tuned);
    }
    if (signals_pending())
        return -1; // a signal came while they were written: nothing more
    /* stdout through a stream that a signal cuts short */
    fflush(stdout);
    FILE *out = signals_fdopen(STDOUT_FILENO);
    FILE *f = out ? out : stdout;
    const char *fmt = res->cfg.report.format;
    char *json = strcmp(fmt, "json") == 0 ? report_json(res) : NULL;
    if (json) {
        fputs(json, f);
        fputc('\n', f);
        free(json);
    } else if (strcmp(fmt, "csv") == 0) {
        report_csv(f, res);
    } else if (strcmp(fmt, "text") == 0 && tune) {
        tune_print(f, res, tune);
    } else if (strcmp(fmt, "text") == 0) {
        report_text(f, res);
    }
    int err = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
    if (out && fclose(out) != 0 && !err)
        err = errno ? errno : EIO;
    char why[256];
    const char *fail = strcmp(fmt, "json") == 0 && !json ? "out of memory rendering JSON"
                       : err ? rlimits_write_error(err, why, sizeof why)
                             : NULL;
    if (fail && !signals_pending()) {
        if (rc)
            fprintf(stderr, "dpbench: %s\n", e->msg);
        rc = error_set(e, "cannot write results to stdout: %s", fail);
    }
    return rc;
}

/* The watchdog's rescue (signals_on_stuck): a stop came while rank 0 of a
 * ddp job waited in a collective for a rank that will never come (it died;
 * mpirun's SIGTERM). The runs before and the complete epochs of the run in
 * progress are written as a stop writes them, with rank 0's figures alone;
 * the main thread is held in its call meanwhile. */
static struct comm *stuck_comm;
static void write_stuck(void *arg)
{
    struct results *res = arg;
    if (stuck_comm->rank > 0 || !res->runs)
        return;
    struct run_result *run = &res->runs[res->n_runs]; // in progress: see run_points
    if (run->epochs && run->n_epochs > 0) {
        run->interrupted = true;
        run->w = run->b = NULL; // mid-step: no final parameters to report
        ddp_alone(stuck_comm, run);
        res->n_runs++;
    }
    fprintf(stderr, "dpbench: interrupted by %s while waiting for the other ranks (one stopped "
                    "responding)\n", signal_name(train_stop));
    if (res->n_runs == 0)
        return;
    struct error e;
    bool placed = false;
    res->interrupted = true;
    report_summarize(res);
    if (emit(res, NULL, &placed, &e))
        fprintf(stderr, "dpbench: %s\n", e.msg);
}

/* The checks before any run, in the order their failures rank: the result
 * folder and every point's config (exit 2), then whether each backend a
 * point names can run (exit 1), then a stop that came meanwhile. Resolves
 * parallel.device auto in the base config and sets *be to the backend the
 * device line names. EXIT_OK or the exit status, said on stderr. */
static int prepare(struct results *res, const struct options *opts, struct backends *bes,
                   const struct backend **be, size_t *estimate)
{
    struct config *c = &res->cfg;
    struct error e;
    int rc = EXIT_OK;
    if (c->report.out[0] && report_check_out(c->report.out, c->name, &e))
        rc = EXIT_USAGE; // refused before the run, not after it
    else if (ddp_check_launch(c, &e)) // a dp process among mpirun's ranks: refused at once
        rc = EXIT_USAGE;
    else if (check_points(c, opts->max_memory, estimate, &e))
        rc = EXIT_USAGE;
    else if (!stop_requested() && backends_resolve(c, bes, &e))
        rc = EXIT_RUN;
    if (rc) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return rc;
    }
    if (stop_requested()) {
        fprintf(stderr, "dpbench: interrupted by %s before the run\n", signal_name(train_stop));
        return 128 + train_stop;
    }
    const struct backend *auto_be = backends_get(bes, "auto");
    if (auto_be && strcmp(c->parallel.device, "auto") == 0 && c->parallel.n_devices &&
        !auto_be->has_devices)
        fprintf(stderr, "dpbench: parallel.device auto: parallel.devices' %d ids run as %d "
                        "replicas on the %s\n",
                c->parallel.n_devices, c->parallel.n_devices, auto_be->name);
    resolve_auto(c, auto_be);
    /* the device line names the first accelerator any point uses */
    *be = &backend_cpu;
    for (int k = 0; k < bes->n; k++)
        if (bes->be[k] && bes->be[k] != &backend_cpu)
            *be = bes->be[k];
    return EXIT_OK;
}

/* --allreduce-bandwidth on the opened communicator; closes it. */
static int allreduce_bandwidth_run(struct comm *comm, const struct config *c)
{
    struct error e;
    int rc = allreduce_bandwidth_emit(comm, c, &e);
    if (rc)
        fprintf(stderr, "dpbench: --allreduce-bandwidth: %s\n", e.msg);
    if (rc && comm->world > 1)
        comm_abort(comm, EXIT_RUN);
    comm_close(comm);
    return rc ? EXIT_RUN : EXIT_OK;
}

/* What the results say about the run before any epoch: the memory
 * estimate, the machine and its devices, the date. */
static void results_begin(struct results *res, const struct options *opts, size_t estimate,
                          const struct backend *be)
{
    res->estimate_bytes = (double)estimate;
    res->repeat = (int)opts->repeat;
    machine_describe(&res->machine);
    be->describe(res->machine.devices, sizeof res->machine.devices);
    time_t t = time(NULL);
    struct tm utc;
    gmtime_r(&t, &utc);
    strftime(res->date, sizeof res->date, "%Y-%m-%dT%H:%M:%SZ", &utc);
    strftime(res->stamp, sizeof res->stamp, "%Y%m%d-%H%M%S", &utc); // the same UTC as date
}

/* run_points' rc as the exit status. A failure every rank had after the
 * same step leaves the ranks in step: rank 0 reports the job as a single
 * process does; any other failure leaves the other ranks waiting in a
 * collective: end the job. */
static int run_status(int rc, const struct results *res, struct comm *comm,
                      const struct error *e)
{
    bool together = rc && res->n_runs > 0 && res->runs[res->n_runs - 1].together;
    if (rc && comm->world > 1 && !together) {
        fprintf(stderr, "dpbench: rank %d (%s): %s\n", comm->rank, comm->host, e->msg);
        fflush(stderr);
        comm_abort(comm, rc == -2 ? EXIT_USAGE : EXIT_RUN); // mpirun's exit status
    }
    if (rc && comm->rank == 0)
        fprintf(stderr, "dpbench: %s\n", e->msg);
    return !rc ? EXIT_OK : rc == -2 ? EXIT_USAGE : EXIT_RUN;
}

/* Writes what the runs measured (the result files, then stdout) and says
 * how a stop cut the run short; returns the exit status. */
static int finish(struct results *res, const struct tune_report *tune, const struct comm *comm,
                  int status)
{
    struct error e;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        res->peak_rss_bytes = (double)ru.ru_maxrss * 1024; // Linux reports KiB
    bool placed = false; // the result files have their names
    if (res->n_runs > 0) {
        signals_phase("writing the results");
        report_summarize(res);
        if (emit(res, tune, &placed, &e) && !signals_pending()) {
            fprintf(stderr, "dpbench: %s\n", e.msg);
            status = EXIT_RUN;
        }
    }
    if (signals_pending()) { // while the results were written: they were cut short
        fprintf(stderr, "dpbench: interrupted by %s while writing the results; %s\n",
                signal_name(train_stop), placed ? "the result files were written, stdout was cut "
                                                  "short" : "no result files written");
        return 128 + train_stop;
    }
    if (res->interrupted && train_stop) {
        if (comm->rank > 0)
            ; // rank 0 says it, once
        else if (res->n_runs == 0)
            fprintf(stderr, "dpbench: interrupted by %s before any epoch completed; no results\n",
                    signal_name(train_stop));
        else
            fprintf(stderr, "dpbench: interrupted by %s; only what completed is reported\n",
                    signal_name(train_stop));
        status = 128 + train_stop;
    }
    return status;
}

/* Every point of the sweep, measured, then the results written: the
 * training command. The communicator is open (a world of one for dp). */
static int train_points(struct results *res, const struct options *opts,
                        const struct backends *bes, struct comm *comm, struct comm *cm)
{
    struct error e = {{0}};
    train_progress = !opts->quiet && comm->rank == 0;
    progress_init(!train_progress ? PROGRESS_OFF
                  : isatty(STDERR_FILENO) ? PROGRESS_LIVE : PROGRESS_LINES,
                  n_points(&res->cfg), opts->repeat > 1 ? (int)opts->repeat : 1);
    stuck_comm = comm;
    signals_on_stuck(write_stuck, res);
    struct tune_report *tune = NULL; // --tune's search
    int rc;
    if (opts->tune && comm->world > 1) {
        error_set(&e, "--tune: parallel.mode ddp is not tuned (run it without mpirun)");
        rc = -2;
    } else if (opts->tune)
        rc = tune_main(res, backends_get(bes, res->cfg.parallel.device), &tune, &e);
    else
        rc = run_points(&res->cfg, bes, cm, res, opts->quiet, &e);
    signals_on_stuck(NULL, NULL); // no run in progress any more
    signals_settle(); // stopped: what completed is written unless another signal comes
    int status = finish(res, tune, comm, run_status(rc, res, comm, &e));
    tune_report_free(tune);
    return status;
}

/* The side commands that run instead of training, before any point is
 * checked: 1 with *status set when one ran. */
static int side_command(const struct options *opts, struct config *c, int *status)
{
    if (opts->h2d_bandwidth) {
        *status = h2d_bandwidth(c->report.out);
        return 1;
    }
    /* From here on every long phase (the checks, generation, epochs) stops at
     * a first SIGINT/SIGTERM/SIGHUP (dropping the batch in flight, or for a
     * ddp rank after the next step); one while the results are written stops
     * the writing. */
    signals_init();
    if (opts->export_dir) {
        *status = export_points(c, opts->export_dir, opts->max_memory);
        return 1;
    }
    if (opts->allreduce_bandwidth) { // the ddp engine, without training
        snprintf(c->parallel.mode, sizeof c->parallel.mode, "%s", "ddp");
        if (strcmp(c->parallel.comm, "auto") == 0) // the host engine
            snprintf(c->parallel.comm, sizeof c->parallel.comm, "%s", comm_auto(false));
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options opts = {0};
    struct results res = {0};
    struct error e = {{0}};
    config_defaults(&res.cfg);
    if (argc > 1 && strcmp(argv[1], "--make-dataset") == 0)
        return gen_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "compare") == 0) {
        config_free(&res.cfg);
        return compare_main(argc - 1, argv + 1);
    }
    int rc = parse_cli(argc, argv, &opts, &res.cfg, &e);
    if (rc) {
        config_free(&res.cfg);
        if (rc > 0)
            return EXIT_OK;
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return EXIT_USAGE;
    }
    struct backends bes = {0};
    const struct backend *be = NULL;
    size_t estimate = 0;
    if (side_command(&opts, &res.cfg, &rc) ||
        (rc = prepare(&res, &opts, &bes, &be, &estimate)) != EXIT_OK) {
        config_free(&res.cfg);
        return rc;
    }
    struct comm comm = {.world = 1};
    struct comm *cm = NULL; // the runs' communicator: ddp's
    if (strcmp(res.cfg.parallel.mode, "ddp") == 0) {
        if (ddp_open(&comm, &res.cfg, be, &e)) {
            if (e.msg[0]) // every rank's before the engine opened (then ddp_open says it)
                fprintf(stderr, "dpbench: %s\n", e.msg);
            config_free(&res.cfg);
            return EXIT_USAGE;
        }
        cm = &comm;
    }
    if (opts.allreduce_bandwidth) {
        rc = allreduce_bandwidth_run(&comm, &res.cfg);
        config_free(&res.cfg);
        return rc;
    }
    results_begin(&res, &opts, estimate, be);
    int status = train_points(&res, &opts, &bes, &comm, cm);
    results_free(&res);
    comm_close(&comm);
    return status;
}
