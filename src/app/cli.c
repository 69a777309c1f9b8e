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

