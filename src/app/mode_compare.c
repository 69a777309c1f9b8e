/* `dpbench compare`: is B faster than, slower than or the same as A?
 *   dpbench compare A.json B.json [--format FMT] [--threshold PCT] [--fail-on slower[=PCT]]
 *   dpbench compare -c A.yaml -c B.yaml [run flags] [--fail-on slower[=PCT]]
 * The first reads two result files; the second measures the two configs
 * itself, interleaved in rounds in one run, so that drift falls on both
 * alike. compare.c pairs and decides; the renderer the format names prints. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "app.h"
#include "cli.h"
#include "compare.h"
#include "emulate_profile.h"
#include "session.h"
#include "signals.h"

/* Exit status when --fail-on's condition holds: B slower than A beyond the
 * margin. */
enum { EXIT_SLOWER = 3 };

static void compare_usage(FILE *f)
{
    fprintf(f,
            "usage: dpbench compare A.json B.json [--format text|json|csv|markdown]\n"
            "                       [--threshold PCT] [--fail-on slower[=PCT]]\n"
            "       dpbench compare -c A.yaml -c B.yaml [--set KEY=VALUE]... [--repeat N]\n"
            "                       [--budget S] [--out DIR] [--format FMT] [--fail-on ...]\n"
            "\n"
            "Says for each pair of points whether B is faster than, slower than or the same\n"
            "as A: both medians, the ratio B/A with its 95%% interval, and the verdict:\n"
            "faster / slower when the whole interval lies beyond 1 -+ the noise threshold\n"
            "(default 3%%), same when it lies inside, undecided otherwise. The unit is the\n"
            "best both sides have: interleaved rounds (-c), each file's rounds, or, where a\n"
            "side ran once, its epochs (a verdict about noise within one run only, said so).\n"
            "A and B are result files of dpbench (--format json, --out) or of\n"
            "scripts/torch_reference.py. One point each: compared whatever their settings\n"
            "(listed when they differ); several: paired by workload and settings. Points of\n"
            "different workloads are listed as unmatched, never compared.\n"
            "\n"
            "  -c, --config FILE      two of them: run A and B interleaved in rounds, in this\n"
            "                         process (the other flags of a run apply to both)\n"
            "  --fail-on slower[=PCT] exit 3 when a pair is slower beyond PCT (default: the\n"
            "                         noise threshold), for a CI gate; pairs decided on one\n"
            "                         run's epochs are not gated (--repeat N, or compare -c)\n"
            "\n"
            "Exit status: 0 compared, 1 a run (compare -c) failed or stdout could not be\n"
            "written, 2 unusable input or nothing to compare, 3 --fail-on held.\n");
}

/* A share from 0 to 50% as "3%" or 0.03 (--threshold, --fail-on's margin):
 * the fraction, or -1 when the text is not one. */
static double share_of(const char *text)
{
    double x = cli_share(text);
    return x <= 0.5 ? x : -1;
}

/* --fail-on slower[=PCT]: the margin, or -1 when the text is not that. */
static double fail_on_margin(const char *arg, double threshold)
{
    if (strcmp(arg, "slower") == 0)
        return threshold;
    return strncmp(arg, "slower=", 7) == 0 ? share_of(arg + 7) : -1;
}

/* --fail-on's text refused where it is not that (NULL: no gate). 0, -1. */
static int fail_on_check(const char *arg, struct error *e)
{
    if (arg && fail_on_margin(arg, 0) < 0)
        return error_set(e, "compare --fail-on: expected slower or slower=PCT, a share from 0 "
                            "to 50%% (slower=5%% or slower=0.05), found '%s'", arg);
    return 0;
}

/* --fail-on arg's gate: whether a pair decided on runs or interleaved rounds
 * is slower beyond the margin, said on stderr. A pair decided on one run's
 * epochs is not gated (identical runs differ there most of the time:
 * docs/statistics.md); stderr says so where it would have held. */
static bool fails(const struct compare_result *r, const char *arg, double threshold)
{
    double margin = fail_on_margin(arg, threshold);
    int held = 0, epochs = 0;
    for (int i = 0; margin >= 0 && i < r->n_pairs; i++) {
        const struct ratio *q = &r->pairs[i].q;
        epochs += r->pairs[i].unit == COMPARE_EPOCHS;
        held += q->verdict == VERDICT_SLOWER && q->ci95[0] > 1 + margin &&
                r->pairs[i].unit != COMPARE_EPOCHS;
    }
    if (epochs)
        fprintf(stderr, "dpbench: compare: --fail-on %s does not gate %d of %d pair%s, decided on "
                        "one run's epochs alone (identical runs often differ there); gate on "
                        "runs (--repeat N) or interleaved rounds (compare -c A.yaml -c B.yaml)\n",
                arg, epochs, r->n_pairs, r->n_pairs == 1 ? "" : "s");
    if (held)
        fprintf(stderr, "dpbench: compare: B is slower than A beyond --fail-on %s\n", arg);
    return held > 0;
}

/* ---- two result files ---------------------------------------------------- */

struct file_args {
    const char *paths[2];
    const struct renderer *out;
    double threshold;
    const char *fail_on; // NULL: no gate
};

/* The command line of a file compare: 1 after --help, -1 with e set. */
static int file_args(int argc, char **argv, struct file_args *f, struct error *e)
{
    enum { OPT_THRESHOLD = 1000, OPT_FAIL_ON };
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'}, {"threshold", required_argument, NULL, OPT_THRESHOLD},
        {"fail-on", required_argument, NULL, OPT_FAIL_ON}, {"help", no_argument, NULL, 'h'}, {0}};
    int ch, seen = 0;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, ":f:h", longopts, NULL)) != -1) {
        int bit = ch == 'f' ? 1 : ch == OPT_THRESHOLD ? 2 : ch == OPT_FAIL_ON ? 4 : 0;
        if (bit & seen)
            return error_set(e, "compare: %s given twice (it takes one value)",
                             bit == 1 ? "--format" : bit == 2 ? "--threshold" : "--fail-on");
        seen |= bit;
        if (ch == 'h') {
            compare_usage(stdout);
            return 1;
        } else if (ch == 'f') {
            f->out = renderer_find(optarg);
            if (!f->out || !f->out->compare)
                return error_set(e, "compare --format: expected text, json, csv or markdown, "
                                    "found '%s'", optarg);
        } else if (ch == OPT_THRESHOLD) {
            if ((f->threshold = share_of(optarg)) < 0)
                return error_set(e, "compare --threshold: expected a share from 0 to 50%% "
                                    "(3%% or 0.03), found '%s'", optarg);
        } else if (ch == OPT_FAIL_ON) {
            f->fail_on = optarg;
        } else if (ch == ':') {
            return error_set(e, "compare: %s needs a value", argv[optind - 1]);
        } else {
            char hint[160];
            const char *r = getopt_refused(argv, (char[3]){0});
            return error_set(e, "compare: unknown option '%s'%s (dpbench compare --help)", r,
                             getopt_hint(r, longopts, hint, sizeof hint));
        }
    }
    if (fail_on_check(f->fail_on, e))
        return -1;
    if (argc - optind != 2)
        return error_set(e, "compare: expected two result files, A.json B.json (found %d), or "
                            "two configs, -c A.yaml -c B.yaml", argc - optind);
    f->paths[0] = argv[optind];
    f->paths[1] = argv[optind + 1];
    return 0;
}

static int compare_files(int argc, char **argv)
{
    struct file_args f = {.out = renderer_find("text"), .threshold = STATS_THRESHOLD};
    struct error e = {{0}};
    struct compare_result r = {0};
    int rc = file_args(argc, argv, &f, &e);
    if (rc > 0)
        return EXIT_OK;
    if (rc == 0 && compare_read(&r, f.paths[0], f.paths[1], f.threshold, &e))
        rc = -1;
    if (rc == 0 && f.out->compare(stdout, &r))
        rc = error_set(&e, "out of memory");
    char why[320] = "";
    if (rc == 0 && r.n_pairs == 0 && r.a.n > 0)
        compare_unmatched_why(&r.a.pts[0], &r.b, why, sizeof why);
    if (rc == 0 && r.n_pairs == 0)
        rc = error_set(&e, "compare: no point of %s pairs with a point of %s (a pair has one "
                           "workload, and one setting where a side has several points): nothing "
                           "compared; A's first point: %s", r.a.path, r.b.path, why);
    bool failed = rc == 0 && f.fail_on && fails(&r, f.fail_on, f.threshold);
    compare_free(&r);
    if (rc)
        fprintf(stderr, "dpbench: %s\n", e.msg);
    return rc ? EXIT_USAGE : failed ? EXIT_SLOWER : EXIT_OK;
}

/* ---- two configs, interleaved ----------------------------------------------- */

static const char *fail_on_arg; // --fail-on of compare -c
static int fail_status;         // EXIT_SLOWER when it held

static int both_measure(struct app *a, const struct backends *bes, struct comm *comm,
                        struct comm *cm, struct error *e)
{
    (void)comm;
    return sweep_run(&a->res.cfg, &a->points, bes, cm, &a->res, a->rebuild, a->opts.quiet, e);
}

/* The two points of the run as a compare: its JSON read back as A and B. */
static int both_print(FILE *f, struct app *a, const struct renderer *r)
{
    struct compare_result cr = {0};
    struct error e;
    char *json = a->res.n_runs == 2 ? report_json(&a->res) : NULL;
    cJSON *doc = json ? cJSON_Parse(json) : NULL;
    free(json);
    if (a->res.n_runs == 1) { // one side failed or stopped first: its run, under its config
        struct results one = a->res;
        one.cfg = a->res.runs[0].cfg;
        fprintf(stderr, "dpbench: compare -c: only %s ran before the run ended; nothing "
                        "compared\n", a->res.runs[0].label);
        return r->results(f, &one);
    }
    if (a->res.n_runs < 2) // a stop before either ran: the run, as it stands
        return r->results(f, &a->res);
    if (!doc || compare_interleaved(&cr, doc, a->points.cfg[0].source, a->points.cfg[1].source,
                                    a->res.cfg.bench.threshold, &e)) { // the files; the labels: points
        if (!doc)
            return -1;
        compare_free(&cr);
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return 0;
    }
    int rc = r->compare(f, &cr);
    if (fail_on_arg && fails(&cr, fail_on_arg, a->res.cfg.bench.threshold))
        fail_status = EXIT_SLOWER;
    compare_free(&cr);
    return rc;
}

/* One side's config: the run's flags, then -c PATH, through the command line
 * every run has. */
static int side_config(int n_rest, char **rest, const char *path, struct options *o,
                       struct config *c, struct error *e)
{
    char **argv = calloc((size_t)n_rest + 3, sizeof *argv);
    if (!argv)
        return error_set(e, "out of memory");
    memcpy(argv, rest, (size_t)n_rest * sizeof *argv);
    argv[n_rest] = "-c";
    argv[n_rest + 1] = (char *)path;
    config_defaults(c);
    o->compare_side = true; // a command among the flags: plain_run says so
    int rc = cli_parse(n_rest + 2, argv, o, c, e);
    free(argv);
    if (rc == 0 && c->n_sweep)
        rc = error_set(e, "compare -c: %s with these flags has a sweep; compare -c compares "
                          "two single configs (drop --sweep; --no-sweep leaves out a file's "
                          "sweep:)", path);
    size_t n = strlen(path); // the error names which side's config, once
    if (rc == 0 && (emulate_profile_apply(c, e) || config_validate(c, e)))
        rc = strncmp(e->msg, path, n) || e->msg[n] != ':' ? error_wrap(e, "%s", path) : -1;
    return rc;
}

/* a is the flag s (-c) or l (--config), or sVALUE (-cA.yaml), or l=VALUE */
static bool is_flag(const char *a, const char *s, const char *l)
{
    size_t n = strlen(l);
    return (s && strncmp(a, s, 2) == 0) || strcmp(a, l) == 0 || (strncmp(a, l, n) == 0 && a[n] == '=');
}

/* compare -c A.yaml -c B.yaml [run flags]: the two configs' paths and
 * --fail-on out of argv, the rest left for both sides' command lines. */
static int config_args(int argc, char **argv, const char **paths, char **rest, int *n_rest,
                       struct error *e)
{
    int n = 0;
    rest[(*n_rest)++] = "dpbench";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], **slot = NULL;
        if (is_flag(a, "-c", "--config") && n == 2)
            return error_set(e, "compare: -c takes two configs, A and B (a third: '%s')",
                             i + 1 < argc ? argv[i + 1] : a);
        if (is_flag(a, "-c", "--config"))
            slot = &paths[n++];
        else if (is_flag(a, NULL, "--fail-on") && fail_on_arg)
            return error_set(e, "compare: --fail-on given twice (it takes one value)");
        else if (is_flag(a, NULL, "--fail-on"))
            slot = &fail_on_arg;
        else
            rest[(*n_rest)++] = argv[i];
        if (slot && strchr(a, '=') && a[1] == '-')
            *slot = strchr(a, '=') + 1;
        else if (slot && a[1] != '-' && a[2]) // -cA.yaml
            *slot = a + 2;
        else if (slot && i + 1 < argc)
            *slot = argv[++i];
        else if (slot)
            return error_set(e, "compare: %s needs a value", a);
    }
    if (n != 2)
        return error_set(e, "compare: -c takes two configs, -c A.yaml -c B.yaml (found %d)", n);
    return 0;
}

/* A side's config that the run's other modes would take: refused here. */
static int plain_run(const struct options *o, struct error *e)
{
    if (o->tune || o->export_dir || o->h2d_bandwidth || o->allreduce_bandwidth)
        return error_set(e, "compare -c: %s is a command of its own, not a flag of a compare",
                         o->tune ? "--tune" : o->export_dir ? "--export"
                         : o->h2d_bandwidth ? "--h2d-bandwidth" : "--allreduce-bandwidth");
    return 0;
}

static int compare_configs(int argc, char **argv)
{
    static const struct session_ops ops = {.measure = both_measure, .print = both_print};
    const char *paths[2] = {NULL, NULL};
    struct app a = {.opts = {.argc = argc, .argv = argv}};
    struct options ob = {0};
    struct config cb = {0};
    struct error e = {{0}};
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int n_rest = 0, rc = rest ? 0 : error_set(&e, "out of memory");
    rc = rc ? rc : config_args(argc, argv, paths, rest, &n_rest, &e);
    rc = rc ? rc : side_config(n_rest, rest, paths[0], &a.opts, &a.res.cfg, &e);
    rc = rc ? rc : side_config(n_rest, rest, paths[1], &ob, &cb, &e);
    if (rc == 0 && (plain_run(&a.opts, &e) || fail_on_check(fail_on_arg, &e)))
        rc = -1;
    char label[2][512]; // the paths; one path twice: the sides told apart
    bool same = rc == 0 && !strcmp(paths[0], paths[1]);
    for (int s = 0; s < 2; s++) { // a long path by its end (where two differ), whole characters
        const char *p = paths[s] ? paths[s] : "";
        size_t n = strlen(p), from = n > 480 ? n - 480 : 0;
        while (from > 0 && (p[from] & 0xC0) == 0x80)
            from++;
        snprintf(label[s], sizeof label[s], "%s%s%s", same ? (s ? "(B) " : "(A) ") : "",
                 from ? "..." : "", p + from);
    }
    if (rc == 0 && (points_add(&a.points, &a.res.cfg, label[0], &e) ||
                    points_add(&a.points, &cb, label[1], &e)))
        rc = -1;
    a.points.each = true; // A against itself is a fair question
    int status = rc > 0 ? EXIT_OK : rc ? EXIT_USAGE : EXIT_OK;
    if (rc < 0)
        fprintf(stderr, "dpbench: %s\n", e.msg);
    if (rc == 0) {
        signals_init();
        status = session_run(&a, &ops);
    }
    free(rest);
    config_free(&cb);
    results_free(&a.res);
    points_free(&a.points);
    return status == EXIT_OK && fail_status ? fail_status : status;
}

static int compare_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (is_flag(argv[i], "-c", "--config"))
            return compare_configs(argc, argv);
    return compare_files(argc, argv);
}

const struct mode mode_compare = {.name = "compare", .command = "compare",
                                  .command_main = compare_main};
