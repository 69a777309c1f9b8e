/* dpbench: trains PyTorch's "Data Parallelism" tutorial workload the way
 * nn.DataParallel does, while the DataLoader's knobs are toggled, and reports
 * where each epoch's time went. This file owns the command line, the sweep
 * over config points and the choice of output; it alone decides the exit
 * status. */
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
#include "config.h"
#include "dataset.h"
#include "estimate.h"
#include "export.h"
#include "gen.h"
#include "ddp.h"
#include "loader.h"
#include "report.h"
#include "train.h"

enum exit_code { EXIT_OK = 0, EXIT_RUN = 1, EXIT_USAGE = 2 };

struct options {
    const char *config;
    double max_memory; // bytes, 0 = what the machine has available
    bool h2d_bandwidth; // measure host-to-device bandwidth instead of training
    const char *export_dir; // write every point's config, data and orders here instead
    bool allreduce_bandwidth; // measure the comm engine's allreduce instead of training
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
            "  -o, --out DIR         also write NAME-YYYYmmdd-HHMMSS.json and .csv (UTC) into DIR\n"
            "  -m, --max-memory N    refuse runs estimated above N bytes (suffixes K, M, G)\n"
            "      --h2d-bandwidth   measure host-to-device copy bandwidth (cuda), then exit\n"
            "      --export DIR      write each point's config, data, initial parameters and\n"
            "                        sample orders into DIR (for a reference run), then exit\n"
            "      --make-dataset KIND DIR [...]  write a labelled dataset (folder, cifar10, idx);\n"
            "                        dpbench --make-dataset --help for its options\n"
            "      --allreduce-bandwidth  allreduce size sweep on parallel.comm's engine, as\n"
            "                        nccl-tests prints it (under mpirun: across its ranks)\n"
            "      --help-config     list every config key with its default and range\n"
            "  -V, --version         version and the backends compiled in\n"
            "  -h, --help            this text\n"
            "\n"
            "Exit status: 0 done, 1 run failed, 2 bad config or usage, 130/143 interrupted.\n");
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

/* Parses argv into opts and the config; returns -1 with e set on bad usage,
 * 1 when a help or version text was printed. */
static int parse_cli(int argc, char **argv, struct options *opts, struct config *c,
                     struct error *e)
{
    enum { OPT_HELP_CONFIG = 1000, OPT_H2D_BANDWIDTH, OPT_EXPORT, OPT_ALLREDUCE_BANDWIDTH };
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"set", required_argument, NULL, 's'},
        {"sweep", required_argument, NULL, 'w'},
        {"format", required_argument, NULL, 'f'},
        {"out", required_argument, NULL, 'o'},
        {"max-memory", required_argument, NULL, 'm'},
        {"help-config", no_argument, NULL, OPT_HELP_CONFIG},
        {"h2d-bandwidth", no_argument, NULL, OPT_H2D_BANDWIDTH},
        {"export", required_argument, NULL, OPT_EXPORT},
        {"allreduce-bandwidth", no_argument, NULL, OPT_ALLREDUCE_BANDWIDTH},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    /* Two passes: the config file first, then overrides on top, whatever
     * order they were given in. */
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":c:s:w:f:o:m:Vh", longopts, NULL)) != -1) {
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
        case 'h': usage(stdout); return 1;
        case 'V':
            printf("dpbench %s\nbackends: %s\ncomm: %s\n", DPBENCH_VERSION, backend_list(),
                   comm_engines()[0] ? comm_engines() : "none");
            return 1;
        case OPT_HELP_CONFIG: config_print_help(stdout); return 1;
        case OPT_H2D_BANDWIDTH: opts->h2d_bandwidth = true; break;
        case OPT_EXPORT: opts->export_dir = optarg; break;
        case OPT_ALLREDUCE_BANDWIDTH: opts->allreduce_bandwidth = true; break;
        case ':': return error_set(e, "%s needs a value", argv[optind - 1]);
        case '?':
            return error_set(e, "unknown option '%s' (dpbench --help lists them)", argv[optind - 1]);
        default: break;
        }
    }
    if (optind < argc)
        return error_set(e, "unexpected argument '%s' (the config goes after --config)",
                         argv[optind]);
    if (opts->config && config_load(c, opts->config, e))
        return -1;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":c:s:w:f:o:m:Vh", longopts, NULL)) != -1) {
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
    return config_validate_sweep(c, e); // each point's own rules: check_points
}

static long n_points(const struct config *c)
{
    long n = 1;
    for (int i = 0; i < c->n_sweep; i++)
        n *= c->sweep[i].n_values;
    return n;
}

/* parallel.device auto resolved to `name`; on the cpu, device ids become
 * that many replicas (the cpu has no device ids). */
static void resolve_auto(struct config *c, const char *name)
{
    if (!name || strcmp(c->parallel.device, "auto") != 0)
        return;
    snprintf(c->parallel.device, sizeof c->parallel.device, "%s", name);
    if (strcmp(name, "cpu") == 0 && c->parallel.n_devices > 0) {
        c->parallel.replicas = c->parallel.n_devices;
        c->parallel.n_devices = 0;
    }
}

/* The config of sweep point p (first sweep key outermost) and its label;
 * parallel.device auto becomes auto_device unless that is NULL. The point
 * keeps the sweep's keys (for its label in results), not their values: a
 * point costs the same whatever the sweep's size. */
static int point_config(const struct config *base, long p, struct config *out, char *label,
                        size_t n, const char *auto_device, struct error *e)
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
    if (config_validate(out, e)) {
        config_free(out);
        return label[0] ? error_wrap(e, "sweep point %s", label) : -1;
    }
    resolve_auto(out, auto_device);
    return 0;
}

static const struct backend *pick_backend(const char *dev, struct error *e)
{
    if (strcmp(dev, "auto") == 0) {
        const struct backend *cuda = backend_find("cuda");
        struct error why;
        if (cuda && cuda->probe(&why) == 0)
            return cuda;
        fprintf(stderr, "dpbench: parallel.device auto: using cpu (%s)\n",
                cuda ? why.msg : "this build has no cuda backend");
        return &backend_cpu;
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
struct backends {
    const char *names[3];          // cpu, cuda, auto
    const struct backend *be[3];   // NULL: not used by any point
};

static int backends_resolve(const struct config *c, struct backends *b, struct error *e)
{
    *b = (struct backends){.names = {"cpu", "cuda", "auto"}};
    const char *used[CONFIG_MAX_SWEEP_VALUES + 1] = {c->parallel.device};
    int n_used = 1;
    for (int i = 0; i < c->n_sweep; i++)
        if (strcmp(c->sweep[i].key, "parallel.device") == 0) {
            n_used = 0; // the base's value is never run
            for (int j = 0; j < c->sweep[i].n_values; j++)
                used[n_used++] = c->sweep[i].values[j];
        }
    for (int i = 0; i < n_used; i++)
        for (int k = 0; k < 3; k++)
            if (strcmp(used[i], b->names[k]) == 0 && !b->be[k] &&
                !(b->be[k] = pick_backend(used[i], e)))
                return -1;
    /* a point whose auto was resolved names the backend it got */
    for (int k = 0; k < 2; k++)
        if (b->be[2] && !b->be[k] && strcmp(b->be[2]->name, b->names[k]) == 0)
            b->be[k] = b->be[2];
    return 0;
}

static const struct backend *backends_get(const struct backends *b, const char *name)
{
    for (int k = 0; k < 3; k++)
        if (strcmp(name, b->names[k]) == 0)
            return b->be[k];
    return NULL;
}

/* Runs every sweep point; the dataset is generated (or loaded) once per
 * distinct data config and shared. On interruption, keeps what completed.
 * Returns -2 when a dataset cannot be loaded (bad data: a usage error, found
 * before any epoch of that point). */
static int run_points(const struct config *c, const struct backends *bes, struct results *res,
                      struct error *e)
{
    long n = n_points(c);
    res->runs = calloc((size_t)n, sizeof *res->runs);
    if (!res->runs)
        return error_set(e, "out of memory");
    struct dataset d = {0};
    struct config data_cfg = {0};
    bool have_data = false;
    int rc = 0;
    bool text = strcmp(c->report.format, "text") == 0;
    for (long p = 0; p < n && !stop_requested(); p++) {
        struct config pc;
        char label[512];
        const struct backend *auto_be = backends_get(bes, "auto");
        if ((rc = point_config(c, p, &pc, label, sizeof label, auto_be ? auto_be->name : NULL, e)))
            break;
        const struct backend *be = backends_get(bes, pc.parallel.device);
        if (point_dataset(&d, &data_cfg, &have_data, &pc, e)) {
            config_free(&pc);
            rc = stop_requested() ? 0 : -2; // interrupted, or bad data
            break;
        }
        if (n > 1 && isatty(STDERR_FILENO))
            fprintf(stderr, "dpbench: point %ld/%ld: %s\n", p + 1, n, label);
        FILE *trace = pc.report.trace ? (text ? stdout : stderr) : NULL;
        struct run_result *run = &res->runs[res->n_runs];
        rc = train_run(&pc, &d, be, run, trace, e);
        config_free(&pc);
        if (rc && (run->failed || stop_requested())) {
            /* a failure mid-run: the complete epochs (maybe none) are kept and
             * reported as partial results; a stop keeps only complete epochs */
            if (run->failed && (run->n_epochs > 0 || !stop_requested())) {
                snprintf(run->label, sizeof run->label, "%s", label);
                res->n_runs++;
                res->interrupted = true;
            } else if (run->failed) {
                run_result_free(run);
            }
            if (stop_requested())
                rc = 0; // interrupted, not failed
            else if (label[0])
                error_wrap(e, "sweep point %s", label);
            break;
        }
        if (rc) {
            if (label[0])
                error_wrap(e, "sweep point %s", label);
            break;
        }
        snprintf(run->label, sizeof run->label, "%s", label);
        if (run->n_epochs == 0) { // stopped before a measured epoch: nothing to report
            run_result_free(run);
            break;
        }
        res->n_runs++;
    }
    if (have_data)
        dataset_free(&d);
    res->n_points = n;
    res->interrupted |= stop_requested();
    return rc;
}

static const char *signal_name(int sig) { return sig == SIGINT ? "SIGINT" : "SIGTERM"; }

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

/* --h2d-bandwidth: the cuda backend's copy-bandwidth table on stdout. */
static int h2d_bandwidth(void)
{
    const struct backend *be = backend_find("cuda");
    struct error e;
    if (!be || !be->bandwidth) {
        fprintf(stderr, "dpbench: --h2d-bandwidth needs the cuda backend; this dpbench was "
                        "built without it (backends: %s)\n", backend_list());
        return EXIT_RUN;
    }
    if (be->probe(&e) || be->bandwidth(stdout, &e)) {
        fprintf(stderr, "dpbench: --h2d-bandwidth: %s\n", e.msg);
        return EXIT_RUN;
    }
    return EXIT_OK;
}

/* The result files first, then stdout: a file that cannot be written never
 * costs the results on stdout, and a stdout nobody reads any more (mpirun
 * stops forwarding its ranks' output once told to end the job) never costs
 * the files. */
static int emit(const struct results *res, struct error *e)
{
    int rc = 0;
    if (res->cfg.report.out[0]) {
        char path[4400];
        if (report_write_files(res, res->cfg.report.out, path, sizeof path, e))
            rc = error_wrap(e, "result files not written (results are on stdout)");
        else
            fprintf(stderr, "dpbench: results written to %s (and .csv)\n", path);
    }
    const char *fmt = res->cfg.report.format;
    char *json = strcmp(fmt, "json") == 0 ? report_json(res) : NULL;
    if (json) {
        puts(json);
        free(json);
    } else if (strcmp(fmt, "csv") == 0) {
        report_csv(stdout, res);
    } else if (strcmp(fmt, "text") == 0) {
        report_text(stdout, res);
    }
    const char *fail = strcmp(fmt, "json") == 0 && !json ? "out of memory rendering JSON"
                       : fflush(stdout) != 0             ? strerror(errno)
                                                         : NULL;
    if (fail) {
        if (rc)
            fprintf(stderr, "dpbench: %s\n", e->msg);
        rc = error_set(e, "cannot write results to stdout: %s", fail);
    }
    return rc;
}

int main(int argc, char **argv)
{
    struct options opts = {0};
    struct results res = {0};
    struct error e = {{0}};
    config_defaults(&res.cfg);
    if (argc > 1 && strcmp(argv[1], "--make-dataset") == 0)
        return gen_main(argc - 1, argv + 1);

    int rc = parse_cli(argc, argv, &opts, &res.cfg, &e);
    if (rc) {
        config_free(&res.cfg);
        if (rc > 0)
            return EXIT_OK;
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return EXIT_USAGE;
    }
    if (opts.h2d_bandwidth) {
        config_free(&res.cfg);
        return h2d_bandwidth();
    }
    /* From here on every long phase (the checks, generation, epochs) stops at
     * a first SIGINT/SIGTERM; a second one also drops the batches in flight. */
    struct sigaction sa = {.sa_handler = stop_request};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (opts.export_dir) {
        rc = export_points(&res.cfg, opts.export_dir, opts.max_memory);
        config_free(&res.cfg);
        return rc;
    }
    if (opts.allreduce_bandwidth) { // the ddp engine, without training
        snprintf(res.cfg.parallel.mode, sizeof res.cfg.parallel.mode, "%s", "ddp");
        snprintf(res.cfg.parallel.comm, sizeof res.cfg.parallel.comm, "%s",
                 strcmp(res.cfg.parallel.comm, "auto") == 0 ? "mpi" : res.cfg.parallel.comm);
    }
    if (res.cfg.report.out[0] && report_check_out(res.cfg.report.out, res.cfg.name, &e)) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
        config_free(&res.cfg);
        return EXIT_USAGE; // refused before the run, not after it
    }
    /* config errors first (exit 2), then whether each backend can run (exit 1) */
    struct backends bes;
    size_t estimate = 0;
    if (check_points(&res.cfg, opts.max_memory, &estimate, &e))
        rc = EXIT_USAGE;
    else if (!stop_requested() && backends_resolve(&res.cfg, &bes, &e))
        rc = EXIT_RUN;
    if (rc) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
        config_free(&res.cfg);
        return rc;
    }
    if (stop_requested()) {
        fprintf(stderr, "dpbench: interrupted by %s before the run\n", signal_name(train_stop));
        config_free(&res.cfg);
        return 128 + train_stop;
    }
    const struct backend *auto_be = backends_get(&bes, "auto");
    if (auto_be && strcmp(res.cfg.parallel.device, "auto") == 0 && res.cfg.parallel.n_devices &&
        strcmp(auto_be->name, "cpu") == 0)
        fprintf(stderr, "dpbench: parallel.device auto: parallel.devices' %d ids run as %d "
                        "replicas on the cpu\n",
                res.cfg.parallel.n_devices, res.cfg.parallel.n_devices);
    resolve_auto(&res.cfg, auto_be ? auto_be->name : NULL);
    /* the device line names the first accelerator any point uses */
    const struct backend *be = &backend_cpu;
    for (int k = 0; k < 3; k++)
        if (bes.be[k] && bes.be[k] != &backend_cpu)
            be = bes.be[k];
    struct comm comm = {.world = 1};
    if (strcmp(res.cfg.parallel.mode, "ddp") == 0) {
        if (ddp_open(&comm, &res.cfg, be, &e)) {
            if (e.msg[0]) // rank 0's, or every rank's before the engine opened
                fprintf(stderr, "dpbench: %s\n", e.msg);
            config_free(&res.cfg);
            return EXIT_USAGE;
        }
        train_comm = &comm;
    }
    if (opts.allreduce_bandwidth) {
        rc = allreduce_bandwidth_emit(&comm, &res.cfg, &e);
        if (rc)
            fprintf(stderr, "dpbench: --allreduce-bandwidth: %s\n", e.msg);
        if (rc && comm.world > 1)
            comm_abort(&comm, EXIT_RUN);
        comm_close(&comm);
        config_free(&res.cfg);
        return rc ? EXIT_RUN : EXIT_OK;
    }

    res.estimate_bytes = (double)estimate;
    machine_describe(&res.machine);
    be->describe(res.machine.devices, sizeof res.machine.devices);
    time_t t = time(NULL);
    struct tm utc;
    gmtime_r(&t, &utc);
    strftime(res.date, sizeof res.date, "%Y-%m-%dT%H:%M:%SZ", &utc);
    strftime(res.stamp, sizeof res.stamp, "%Y%m%d-%H%M%S", &utc); // the same UTC as date

    train_progress = isatty(STDERR_FILENO);
    if (comm.rank > 0)
        train_progress = false;
    rc = run_points(&res.cfg, &bes, &res, &e);
    int status = EXIT_OK;
    /* a failure every rank had after the same step leaves the ranks in step:
     * rank 0 reports the job as a single process does; any other failure
     * leaves the other ranks waiting in a collective: end the job */
    bool together = rc && res.n_runs > 0 && res.runs[res.n_runs - 1].together;
    if (rc && comm.world > 1 && !together) {
        fprintf(stderr, "dpbench: rank %d (%s): %s\n", comm.rank, comm.host, e.msg);
        fflush(stderr);
        comm_abort(&comm, rc == -2 ? EXIT_USAGE : EXIT_RUN); // mpirun's exit status
    }
    if (rc && comm.rank == 0) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
    }
    if (rc)
        status = rc == -2 ? EXIT_USAGE : EXIT_RUN;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        res.peak_rss_bytes = (double)ru.ru_maxrss * 1024; // Linux reports KiB
    if (res.n_runs > 0) {
        report_summarize(&res);
        if (emit(&res, &e)) {
            fprintf(stderr, "dpbench: %s\n", e.msg);
            status = EXIT_RUN;
        }
    }
    if (res.interrupted && train_stop) {
        if (comm.rank > 0)
            ; // rank 0 says it, once
        else if (res.n_runs == 0)
            fprintf(stderr, "dpbench: interrupted by %s before any epoch completed; no results\n",
                    signal_name(train_stop));
        else
            fprintf(stderr, "dpbench: interrupted by %s; only what completed is reported\n",
                    signal_name(train_stop));
        status = 128 + train_stop;
    }
    results_free(&res);
    comm_close(&comm);
    return status;
}
