/* The command line: builds the options and the config, nothing else. Two
 * passes over argv: every flag but the config's overrides first (the config
 * file it names is read then), then --set, --sweep, --format and --out on
 * top, in the order given. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "comm.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dpbench [--config FILE.yaml] [--set key=value]... [--sweep key=v1,v2]...\n"
            "               [--format text|json|csv|markdown] [--out DIR] [--max-memory BYTES]\n"
            "\n"
            "Trains Linear(features, out_features) on a seeded random dataset with\n"
            "nn.DataParallel's semantics (torch.chunk scatter, broadcast, parallel forward,\n"
            "gather, MSE, reduce-add of gradients, SGD) and times every epoch.\n"
            "\n"
            "  -c, --config FILE     YAML config (defaults reproduce the tutorial)\n"
            "  -s, --set KEY=VALUE   override one key; repeatable\n"
            "  -w, --sweep KEY=V1,V2 run every combination of the swept keys; repeatable\n"
            "  -f, --format FMT      text (default), json, csv or markdown (a table) on stdout\n"
            "  -o, --out DIR         also write NAME-YYYYmmdd-HHMMSS.json, .csv and -summary.csv\n"
            "                        (UTC) into DIR\n"
            "  -m, --max-memory N    refuse runs estimated above N bytes (suffixes K, M, G)\n"
            "  -r, --repeat N        exactly N rounds (each round runs every point once, in a\n"
            "                        shuffled order); default: a sweep adds rounds until every\n"
            "                        verdict is decided, one point runs once\n"
            "      --threshold PCT   noise threshold (default 3%%): B/A within 1 +- PCT is \"same\"\n"
            "      --precision PCT   add rounds until each point's median is known within +- PCT\n"
            "      --budget SECONDS  time the rounds may take (default 480; 10m, 90s); then\n"
            "                        undecided verdicts are reported as undecided\n"
            "  -v, --verbose         text: each point's BLAS choice, verdict and device details\n"
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
            "  compare A.json B.json [--format FMT] [--fail-on slower[=PCT]]\n"
            "  compare -c A.yaml -c B.yaml [options]   (interleaved, in one run)\n"
            "                        is B faster, slower or the same as A? (dpbench compare --help)\n"
            "  -V, --version         version and the backends compiled in\n"
            "  -h, --help            this text\n"
            "\n"
            "Exit status: 0 done, 1 run failed, 2 bad config or usage, 129/130/143 interrupted\n"
            "(SIGHUP/SIGINT/SIGTERM).\n");
}

/* Whether strtod or strtol read from s to end just the number the config's
 * grammar reads there (no sign, space, hex, inf or nan, which they take). */
static bool decimal(const char *s, const char *end, bool real)
{
    size_t n = config_number_span(s, real, false);
    return n > 0 && end == s + n;
}

static int parse_bytes(const char *s, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    double mult = 1;
    if (!decimal(s, end, true) || errno || !isfinite(x) || x < 0)
        return -1;
    switch (*end) {
    case 'K': case 'k': mult = 1024.0; end++; break;
    case 'M': case 'm': mult = 1024.0 * 1024; end++; break;
    case 'G': case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mult > 1 && *end == 'i') // 4Gi, 4GiB: "i" only after a unit
        end++;
    end += *end == 'B';
    if (*end || x * mult < 1) // under a byte: no limit to keep (0 would mean none at all)
        return -1;
    *out = x * mult;
    return 0;
}

static int parse_repeat(const char *s, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    return !decimal(s, end, false) || *end || errno || *out < 1 || *out > 1000 ? -1 : 0;
}

double cli_share(const char *in)
{
    char *end;
    errno = 0;
    double x = strtod(in, &end);
    bool pct = *end == '%';
    if (!decimal(in, end, true) || errno || !isfinite(x) || (pct ? end[1] : *end) || x < 0)
        return -1;
    return pct ? x / 100 : x;
}

/* "3%" or "0.03" as the share "0.03"; 0, or -1 when it is neither. */
static int share_text(const char *in, char *out, size_t n)
{
    double x = cli_share(in);
    if (x < 0)
        return -1;
    snprintf(out, n, "%.17g", x);
    return 0;
}

/* "90", "90s", "10m", "1h" as seconds; 0, or -1 when it is none of them. */
static int seconds_text(const char *in, char *out, size_t n)
{
    char *end;
    errno = 0;
    double x = strtod(in, &end);
    double unit = *end == 'm' ? 60 : *end == 'h' ? 3600 : 1;
    if (!decimal(in, end, true) || errno || !isfinite(x) || x < 0 ||
        (*end && (strchr("smh", *end) == NULL || end[1])))
        return -1;
    snprintf(out, n, "%.17g", x * unit);
    return 0;
}

enum { OPT_HELP_CONFIG = 1000, OPT_H2D_BANDWIDTH, OPT_EXPORT, OPT_ALLREDUCE_BANDWIDTH,
       OPT_NO_SWEEP, OPT_TUNE, OPT_THRESHOLD, OPT_PRECISION, OPT_BUDGET };
#define SHORTOPTS ":c:s:w:f:o:m:r:qvVh"

/* The flags that set config keys, applied on top of the config file in the
 * order given (the value converted first where conv says how). Each may be
 * given once. */
static const struct key_flag {
    int ch;
    const char *flag;
    const char *key, *key2;   // key2: a second key set to the same value
    int (*conv)(const char *in, char *out, size_t n);
    const char *expected;     // what conv takes, for its error
    const char *value;        // a flag without a value sets this
} key_flags[] = {
    {'f', "--format", "report.format", NULL, NULL, NULL, NULL},
    {'o', "--out", "report.out", NULL, NULL, NULL, NULL},
    {'r', "--repeat", "bench.min_rounds", "bench.max_rounds", NULL, NULL, NULL},
    {OPT_THRESHOLD, "--threshold", "bench.threshold", NULL, share_text,
     "a share such as 3% or 0.03", NULL},
    {OPT_PRECISION, "--precision", "bench.precision", NULL, share_text,
     "a share such as 2% or 0.02", NULL},
    {OPT_BUDGET, "--budget", "bench.budget_s", NULL, seconds_text,
     "seconds, such as 300, 90s or 10m", NULL},
    {'v', "--verbose", "report.verbose", NULL, NULL, NULL, "true"},
};
enum { N_KEY_FLAGS = sizeof key_flags / sizeof key_flags[0] };
_Static_assert(N_KEY_FLAGS <= 16, "parse_flags keeps a --set key2's bit 16 above its key's");
static const struct option longopts[] = {
    {"config", required_argument, NULL, 'c'},
    {"set", required_argument, NULL, 's'},
    {"sweep", required_argument, NULL, 'w'},
    {"format", required_argument, NULL, 'f'},
    {"out", required_argument, NULL, 'o'},
    {"max-memory", required_argument, NULL, 'm'},
    {"repeat", required_argument, NULL, 'r'},
    {"threshold", required_argument, NULL, OPT_THRESHOLD},
    {"precision", required_argument, NULL, OPT_PRECISION},
    {"budget", required_argument, NULL, OPT_BUDGET},
    {"verbose", no_argument, NULL, 'v'},
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

/* The commands with a run of their own (--tune first: it is named first),
 * and the flags each would ignore: refused rather than dropped. */
static const struct command {
    int ch;
    const char *flag;
    int ignored[7]; // 0 ends
    const char *why;
} commands[] = {
    {OPT_TUNE, "--tune", {'r', OPT_PRECISION, OPT_BUDGET},
     "--tune decides its own rounds; tune.budget_s bounds its time"},
    {OPT_EXPORT, "--export", {'f', 'o', 'r', OPT_THRESHOLD, OPT_PRECISION, OPT_BUDGET},
     "--export writes its files into its folder and times nothing"},
    {OPT_H2D_BANDWIDTH, "--h2d-bandwidth",
     {'f', 'r', OPT_THRESHOLD, OPT_PRECISION, OPT_BUDGET, 'v'},
     "it prints a table of its own, also into --out"},
    {OPT_ALLREDUCE_BANDWIDTH, "--allreduce-bandwidth",
     {'f', 'r', OPT_THRESHOLD, OPT_PRECISION, OPT_BUDGET, 'v'},
     "it prints a table of its own, also into --out"},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

/* Whether --set's argument sets key ("KEY=VALUE"). */
static bool sets_key(const char *arg, const char *key)
{
    size_t n = key ? strlen(key) : 0;
    return n && !strncmp(arg, key, n) && arg[n] == '=';
}

/* The key flags whose key (bit k) or key2 (bit k + 16) --set's argument sets. */
static unsigned set_key_bits(const char *arg)
{
    unsigned bits = 0;
    for (int k = 0; k < N_KEY_FLAGS; k++)
        bits |= (unsigned)sets_key(arg, key_flags[k].key) << k |
                (unsigned)sets_key(arg, key_flags[k].key2) << (k + 16);
    return bits;
}

/* A --set of a key command c does not use (one whose flag it refuses): a
 * note, not an error (a script may pass the same --set to every command),
 * once under mpirun. */
static void note_unused_sets(const struct command *c, unsigned set_keys)
{
    int rank = 0;
    comm_launched_world(&rank); // under mpirun, rank 0 says it
    for (size_t j = 0; rank == 0 && j < sizeof c->ignored / sizeof *c->ignored && c->ignored[j]; j++)
        for (int k = 0; k < N_KEY_FLAGS; k++)
            for (int two = 0; two < 2; two++) { // key, key2
                const char *key = two ? key_flags[k].key2 : key_flags[k].key;
                if (key && key_flags[k].ch == c->ignored[j] && set_keys >> (k + 16 * two) & 1)
                    fprintf(stderr, "dpbench: note: %s does not use %s (%s)\n", c->flag, key,
                            c->why);
            }
}

/* At most one command, once, without a flag it would ignore (seen: the key
 * flags given, a bit each; given: each command's count). */
static int command_alone(unsigned seen, const int *given, bool swept, unsigned set_keys,
                         struct error *e)
{
    const struct command *c = NULL;
    for (int i = 0; i < N_COMMANDS; i++) {
        if (given[i] > 1)
            return error_set(e, "%s given twice", commands[i].flag);
        if (given[i] && c)
            return error_set(e, "%s cannot be combined with %s (each is a command of its own)",
                             c->flag, commands[i].flag);
        c = given[i] ? &commands[i] : c;
    }
    if (c && c->ch == OPT_TUNE && swept) // a config file's sweep block is set aside, with a note
        return error_set(e, "--tune cannot be combined with --sweep (--tune searches the loader "
                            "settings of one workload: run it once per swept value)");
    if (c && c->ch != OPT_EXPORT && swept) // --export writes every point's files
        return error_set(e, "%s cannot be combined with --sweep (%s)", c->flag, c->why);
    for (int k = 0; c && k < N_KEY_FLAGS; k++)
        for (size_t i = 0; i < sizeof c->ignored / sizeof *c->ignored && c->ignored[i]; i++)
            if (key_flags[k].ch == c->ignored[i] && seen & 1u << k)
                return error_set(e, "%s cannot be combined with %s (%s)", c->flag,
                                 key_flags[k].flag, c->why);
    if (c)
        note_unused_sets(c, set_keys);
    return 0;
}

/* --repeat fixes the rounds that --budget and --precision adapt: refused together. */
static int repeat_alone(unsigned seen, struct error *e)
{
    int repeat = -1, adapts = -1;
    for (int k = 0; k < N_KEY_FLAGS; k++) {
        if (!(seen >> k & 1))
            continue;
        if (key_flags[k].ch == 'r')
            repeat = k;
        else if (key_flags[k].ch == OPT_BUDGET || key_flags[k].ch == OPT_PRECISION)
            adapts = k;
    }
    if (repeat >= 0 && adapts >= 0)
        return error_set(e, "--repeat cannot be combined with %s (--repeat N runs exactly N "
                            "rounds; %s decides when adaptive rounds stop)", key_flags[adapts].flag,
                         key_flags[adapts].flag);
    return 0;
}

/* A key both --set and --swept on a run's command line: the sweep's values
 * run (a script's base --set, a sweep over it), said in a note, once under
 * mpirun. */
static void set_and_swept(const struct options *o, char **sets, int n_sets, char **sweeps,
                          int n_sweeps)
{
    int rank = 0;
    comm_launched_world(&rank);
    for (int i = 0; rank == 0 && !o->compare_side && i < n_sets; i++)
        for (int j = 0; j < n_sweeps; j++) {
            size_t n = strcspn(sweeps[j], "=");
            if (sweeps[j][n] == '=' && !strncmp(sets[i], sweeps[j], n) && sets[i][n] == '=')
                fprintf(stderr, "dpbench: note: --sweep %s runs its values; --set %s is not run\n",
                        sweeps[j], sets[i]);
        }
}

static int unknown_option(char *const argv[], struct error *e)
{
    char hint[160];
    const char *r = getopt_refused(argv, (char[3]){0});
    return error_set(e, "unknown option '%s'%s (dpbench --help lists them)", r,
                     getopt_hint(r, longopts, hint, sizeof hint));
}

/* The first pass over argv: every flag but the config overrides. -1 with e
 * set on bad usage, 1 when a help or version text was printed. */
static int parse_flags(int argc, char **argv, struct options *opts, struct error *e)
{
    unsigned seen = 0, set_keys = 0; // the key flags given so far, and the keys --set sets, a bit each
    int ch, given[N_COMMANDS] = {0}, n_sets = 0, n_sweeps = 0;
    char *sets[argc + 1], *sweeps[argc + 1];
    opterr = 0;
    optind = 0; // getopt starts afresh (compare -c parses two command lines)
    while ((ch = getopt_long(argc, argv, SHORTOPTS, longopts, NULL)) != -1) {
        for (int i = 0; i < N_COMMANDS; i++)
            given[i] += commands[i].ch == ch;
        for (int k = 0; k < N_KEY_FLAGS; k++)
            if (key_flags[k].ch == ch && (seen & 1u << k) && !key_flags[k].value)
                return error_set(e, "%s given twice (it takes one value)", key_flags[k].flag);
            else if (key_flags[k].ch == ch)
                seen |= 1u << k;
        switch (ch) {
        case 'c':
            if (opts->config)
                return error_set(e, "--config given twice");
            opts->config = optarg;
            break;
        case 'm':
            if (opts->max_memory > 0 || seen & 1u << 31)
                return error_set(e, "--max-memory given twice (it takes one value)");
            seen |= 1u << 31;
            if (parse_bytes(optarg, &opts->max_memory))
                return error_set(e, "--max-memory: expected bytes, 1 or more (e.g. 512M, 4G), found '%s'",
                                 optarg);
            break;
        case 'r':
            if (parse_repeat(optarg, &opts->repeat))
                return error_set(e, "--repeat: expected a whole number from 1 to 1000, found '%s'",
                                 optarg);
            break;
        case 's': set_keys |= set_key_bits(sets[n_sets++] = optarg); break;
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
        case 'w': sweeps[n_sweeps++] = optarg; break;
        case ':': return error_set(e, "%s needs a value", argv[optind - 1]);
        case '?':
            return unknown_option(argv, e);
        default: break;
        }
    }
    if (optind < argc)
        return error_set(e, "unexpected argument '%s' (the config goes after --config)",
                         argv[optind]);
    set_and_swept(opts, sets, n_sets, sweeps, n_sweeps);
    return repeat_alone(seen, e) ? -1 : opts->compare_side ? 0
                                       : command_alone(seen, given, n_sweeps > 0, set_keys, e);
}

/* One key flag's value into the config. */
static int apply_key_flag(const struct key_flag *k, const char *arg, struct config *c,
                          struct error *e)
{
    char v[CONFIG_STR];
    const char *value = k->value ? k->value : arg;
    if (k->conv && k->conv(arg, v, sizeof v))
        return error_set(e, "%s: expected %s, found '%s'", k->flag, k->expected, arg);
    if (k->conv)
        value = v;
    if (config_set(c, k->key, value, e) || (k->key2 && config_set(c, k->key2, value, e))) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg);
        return k->conv ? error_set(e, "%s: expected %s, found '%s' (%s)", k->flag, k->expected,
                                   arg, why) // what was typed: 5 reads as 500%
                       : error_wrap(e, "%s", k->flag);
    }
    return 0;
}

/* The second pass: --set, --sweep and the key flags on top of the config
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
        for (int k = 0; k < N_KEY_FLAGS && rc == 0; k++)
            if (key_flags[k].ch == ch)
                rc = apply_key_flag(&key_flags[k], optarg, c, e);
        if (rc)
            return -1;
    }
    return 0;
}

/* Parses argv into opts and the config; returns -1 with e set on bad usage,
 * 1 when a help or version text was printed. Two passes: the config file
 * first, then overrides on top, whatever order they were given in. */
int cli_parse(int argc, char **argv, struct options *opts, struct config *c, struct error *e)
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

