/* `dpbench compare A.json B.json`: is B faster than, slower than or the same
 * as A? Reads any two result files (dpbench's, or scripts/torch_reference.py's
 * in the same schema), pairs their points, and decides each pair from the
 * epoch samples with stats_compare (docs/statistics.md says how).
 *
 * A point's workload is what it computes: the data (seed, dataset, transform),
 * the model and its loss, the batch and what makes the batches (shuffle,
 * drop_last), the epochs and the learning rate. Its settings are how it
 * computes them: the loader's other knobs, the parallel section, BLAS, the
 * backend. Two files of one point each are compared whatever their settings
 * (the differing ones are listed); with several points, a point pairs with one
 * of the same workload and settings. Different workloads are never compared. */
#include "compare.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "util.h"

enum { MAX_DIFFS = 24 };

struct point {
    int run;               // index in the file's runs
    const char *label;     // "key=value ..." or "" (borrowed from the document)
    cJSON *workload;       // what is computed (owned)
    cJSON *settings;       // how (owned)
    double *ms;            // (n) measured epoch times, ms
    int n;
    struct stats st;       // over ms
    bool paired;
};

struct result_file {
    const char *path;
    cJSON *doc;
    char tool[160];        // "dpbench 0.1.0 (0fa7ea6)" or "torch-1.13.1 (...)"
    struct point *pts;     // (n)
    int n;
};

/* keys of a config section that belong to the workload; NULL: all of them */
static const struct {
    const char *section;
    const char *keys[4];
} workload_keys[] = {
    {"dataset", {NULL}},
    {"transform", {NULL}},
    {"model", {NULL}},
    {"loader", {"batch_size", "shuffle", "drop_last", NULL}},
    {"train", {"epochs", "lr", NULL}},
};

static bool is_workload(const char *section, const char *key)
{
    if (strcmp(section, "dataset") == 0 && strcmp(key, "drop_cache") == 0)
        return false; // how the files are read, not what
    for (size_t i = 0; i < sizeof workload_keys / sizeof workload_keys[0]; i++) {
        if (strcmp(workload_keys[i].section, section) != 0)
            continue;
        if (!workload_keys[i].keys[0])
            return true;
        for (int k = 0; workload_keys[i].keys[k]; k++)
            if (strcmp(workload_keys[i].keys[k], key) == 0)
                return true;
    }
    return false;
}

/* Splits a run's config into its workload and its settings; the name, the
 * report section and the sweep are neither. The backend stands for
 * parallel.device ("torch-cpu" is the cpu: the PyTorch side of one setting). */
static void split_config(const cJSON *cfg, const char *backend, cJSON *work, cJSON *set)
{
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(cfg, "seed");
    cJSON_AddItemToObject(work, "seed", seed ? cJSON_Duplicate(seed, 1) : cJSON_CreateNull());
    const cJSON *sec;
    cJSON_ArrayForEach(sec, cfg)
    {
        if (!cJSON_IsObject(sec) || strcmp(sec->string, "report") == 0 ||
            strcmp(sec->string, "sweep") == 0)
            continue;
        cJSON *w = cJSON_AddObjectToObject(work, sec->string);
        cJSON *s = cJSON_AddObjectToObject(set, sec->string);
        const cJSON *k;
        cJSON_ArrayForEach(k, sec)
        {
            if (strcmp(sec->string, "parallel") == 0 && strcmp(k->string, "device") == 0)
                continue;
            cJSON_AddItemToObject(is_workload(sec->string, k->string) ? w : s, k->string,
                                  cJSON_Duplicate(k, 1));
        }
    }
    if (strncmp(backend, "torch-", 6) == 0)
        backend += 6;
    cJSON_AddStringToObject(set, "backend", backend);
}

/* "section.key: A vs B" for each leaf that differs, at most max. */
static int config_diffs(const cJSON *a, const cJSON *b, const char *prefix, char diffs[][256],
                        int n, int max)
{
    const cJSON *pair[2] = {a, b};
    for (int side = 0; side < 2; side++) {
        const cJSON *k;
        cJSON_ArrayForEach(k, pair[side])
        {
            const cJSON *other = cJSON_GetObjectItemCaseSensitive(pair[1 - side], k->string);
            if (side == 1 && other)
                continue; // seen from a's side
            char path[128];
            snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", k->string);
            if (other && cJSON_IsObject(k) && cJSON_IsObject(other)) {
                n = config_diffs(side ? other : k, side ? k : other, path, diffs, n, max);
            } else if (!other || !cJSON_Compare(k, other, 1)) {
                if (n >= max)
                    return n;
                char *vk = cJSON_PrintUnformatted(k);
                char *vo = other ? cJSON_PrintUnformatted(other) : NULL;
                const char *mine = vk ? vk : "?", *theirs = vo ? vo : "(absent)";
                snprintf(diffs[n++], 256, "%s: %s vs %s", path, side ? theirs : mine,
                         side ? mine : theirs); // always a's value, then b's
                free(vk);
                free(vo);
            }
        }
    }
    return n;
}

/* The measured epoch times of run i (following same_as), in ms. */
static int run_epochs(const struct result_file *f, const cJSON *runs, int i, struct point *p,
                      struct error *e)
{
    const cJSON *run = cJSON_GetArrayItem(runs, i);
    const cJSON *same = cJSON_GetObjectItemCaseSensitive(run, "same_as");
    if (cJSON_IsNumber(same)) {
        int k = same->valueint;
        if (k < 0 || k >= i)
            return error_set(e, "%s: run %d: same_as %d is not an earlier run", f->path, i, k);
        run = cJSON_GetArrayItem(runs, k);
    }
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(run, "epochs");
    if (!cJSON_IsArray(eps))
        return error_set(e, "%s: run %d has no \"epochs\" array (per-epoch times)", f->path, i);
    int n = cJSON_GetArraySize(eps);
    p->ms = malloc((size_t)(n ? n : 1) * sizeof *p->ms);
    if (!p->ms)
        return error_set(e, "out of memory");
    const cJSON *ep;
    cJSON_ArrayForEach(ep, eps)
    {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(ep, "seconds");
        if (!cJSON_IsNumber(s) || !isfinite(s->valuedouble) || s->valuedouble <= 0)
            return error_set(e, "%s: run %d, epoch %d: \"seconds\" is not a positive number",
                             f->path, i, p->n + 1);
        p->ms[p->n++] = 1e3 * s->valuedouble;
    }
    stats_compute(p->ms, (size_t)p->n, &p->st);
    return 0;
}

static int read_point(struct result_file *f, const cJSON *runs, int i, struct error *e)
{
    const cJSON *run = cJSON_GetArrayItem(runs, i);
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(run, "config");
    const cJSON *label = cJSON_GetObjectItemCaseSensitive(run, "point");
    const cJSON *backend = cJSON_GetObjectItemCaseSensitive(run, "backend");
    if (!cJSON_IsObject(run) || !cJSON_IsObject(cfg))
        return error_set(e, "%s: run %d has no \"config\" object", f->path, i);
    struct point *p = &f->pts[f->n++];
    *p = (struct point){.run = i, .label = cJSON_IsString(label) ? label->valuestring : "",
                        .workload = cJSON_CreateObject(), .settings = cJSON_CreateObject()};
    if (!p->workload || !p->settings)
        return error_set(e, "out of memory");
    split_config(cfg, cJSON_IsString(backend) ? backend->valuestring : "?", p->workload,
                 p->settings);
    return run_epochs(f, runs, i, p, e);
}

/* The whole file as a string (caller frees), at most max bytes. */
static char *slurp(const char *path, size_t max, size_t *len, struct error *e)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        error_set(e, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(max + 1);
    *len = buf ? fread(buf, 1, max + 1, f) : 0;
    bool bad = !buf || ferror(f) || *len > max;
    if (bad)
        error_set(e, "%s: %s", path, !buf ? "out of memory" : ferror(f) ? strerror(errno)
                                                                        : "larger than 1 GiB");
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[*len] = '\0';
    return buf;
}

static int file_read(struct result_file *f, const char *path, struct error *e)
{
    *f = (struct result_file){.path = path};
    size_t len;
    char *text = slurp(path, (size_t)1 << 30, &len, e);
    if (!text)
        return -1;
    f->doc = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(f->doc, "runs");
    if (!f->doc)
        return error_set(e, "%s: not valid JSON (a result of dpbench --format json or --out)",
                         path);
    if (!cJSON_IsArray(runs) || cJSON_GetArraySize(runs) == 0)
        return error_set(e, "%s: not a dpbench result (no \"runs\" with at least one run)",
                         path);
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(f->doc, "dpbench");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(tool, "version");
    const cJSON *git = cJSON_GetObjectItemCaseSensitive(tool, "git_commit");
    snprintf(f->tool, sizeof f->tool, "%s%s (%s)",
             cJSON_IsString(ver) && strncmp(ver->valuestring, "torch-", 6) ? "dpbench " : "",
             cJSON_IsString(ver) ? ver->valuestring : "?",
             cJSON_IsString(git) ? git->valuestring : "?");
    int n = cJSON_GetArraySize(runs);
    f->pts = calloc((size_t)n, sizeof *f->pts);
    if (!f->pts)
        return error_set(e, "out of memory");
    for (int i = 0; i < n; i++)
        if (read_point(f, runs, i, e))
            return -1;
    return 0;
}

static void file_free(struct result_file *f)
{
    for (int i = 0; i < f->n; i++) {
        cJSON_Delete(f->pts[i].workload);
        cJSON_Delete(f->pts[i].settings);
        free(f->pts[i].ms);
    }
    free(f->pts);
    cJSON_Delete(f->doc);
}

struct pair {
    const struct point *a, *b;
    struct comparison c;
    char diffs[MAX_DIFFS][256]; // settings that differ (one point each)
    int n_diffs;
};

/* Pairs the points: one each of one workload whatever their settings, else
 * by workload and settings, each point at most once. Returns the pairs. */
static int match(struct result_file *a, struct result_file *b, struct pair *pairs)
{
    int n = 0;
    bool single = a->n == 1 && b->n == 1;
    for (int i = 0; i < a->n; i++) {
        struct point *pa = &a->pts[i];
        for (int j = 0; j < b->n && !pa->paired; j++) {
            struct point *pb = &b->pts[j];
            if (pb->paired || !cJSON_Compare(pa->workload, pb->workload, 1) ||
                (!single && !cJSON_Compare(pa->settings, pb->settings, 1)))
                continue;
            pa->paired = pb->paired = true;
            struct pair *p = &pairs[n++];
            p->a = pa;
            p->b = pb;
            p->n_diffs = config_diffs(pa->settings, pb->settings, "", p->diffs, 0, MAX_DIFFS);
            stats_compare(pa->ms, (size_t)pa->n, pb->ms, (size_t)pb->n, &p->c);
        }
    }
    return n;
}

static const char *point_name(const struct point *p) { return p->label[0] ? p->label : "(base)"; }

/* Why an unpaired point found no partner in other: the first workload
 * difference from other's first point when no point there has its workload,
 * else the first setting that differs from one that has, else that those
 * points are paired already. */
static void unmatched_why(const struct point *p, const struct result_file *other, char *buf,
                          size_t n)
{
    char d[1][256];
    const struct point *q = &other->pts[0];
    for (int j = 0; j < other->n; j++)
        if (cJSON_Compare(p->workload, other->pts[j].workload, 1))
            q = &other->pts[j];
    if (config_diffs(p->workload, q->workload, "", d, 0, 1))
        snprintf(buf, n, "different workload (%s)", d[0]);
    else if (config_diffs(p->settings, q->settings, "", d, 0, 1))
        snprintf(buf, n, "same workload, other settings (%s)", d[0]);
    else
        snprintf(buf, n, "the points of its workload and settings there are paired already");
}

static void print_text(const struct result_file *a, const struct result_file *b,
                       const struct pair *pairs, int n)
{
    printf("# A: %s  %s\n# B: %s  %s\n", a->tool, a->path, b->tool, b->path);
    printf("# ratio = median B / median A (below 1: B takes less time); verdict from the "
           "Mann-Whitney U test (p < 0.05) and the ratio's 95%% bootstrap interval\n");
    int w = 5;
    for (int i = 0; i < n; i++)
        w = (int)fmax(w, (double)strlen(point_name(pairs[i].a)));
    printf("%-*s %10s %10s %8s %17s %8s  %s\n", w, "point", "A median", "B median", "ratio",
           "95% CI", "p", "B vs A");
    printf("%-*s %10s %10s %8s %17s %8s\n", w, "", "ms", "ms", "B/A", "", "");
    for (int i = 0; i < n; i++) {
        const struct pair *p = &pairs[i];
        char ci[48] = "-";
        if (!isnan(p->c.ci95[0]))
            snprintf(ci, sizeof ci, "%.3f-%.3f", p->c.ci95[0], p->c.ci95[1]);
        printf("%-*s %10.4f %10.4f %8.3f %17s %8.3g  %s\n", w, point_name(p->a), p->a->st.median,
               p->b->st.median, p->c.ratio, ci, p->c.p_value, verdict_name(p->c.verdict));
        if (strcmp(point_name(p->a), point_name(p->b)) != 0)
            printf("#   %s: B's point is %s\n", point_name(p->a), point_name(p->b));
        for (int k = 0; k < p->n_diffs; k++)
            printf("#   %s: settings differ: %s\n", point_name(p->a), p->diffs[k]);
        if (p->a->n < 3 || p->b->n < 3)
            printf("#   %s: fewer than 3 epochs on a side: no test can decide, \"same\"\n",
                   point_name(p->a));
    }
}

static void print_unmatched_text(const struct result_file *f, const struct result_file *other,
                                 const char *side)
{
    for (int i = 0; i < f->n; i++) {
        char why[320];
        if (f->pts[i].paired)
            continue;
        unmatched_why(&f->pts[i], other, why, sizeof why);
        printf("# unmatched in %s: %s: %s\n", side, point_name(&f->pts[i]), why);
    }
}

static cJSON *point_json(const struct result_file *f, const struct point *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", f->path);
    cJSON_AddNumberToObject(o, "run", p->run);
    cJSON_AddStringToObject(o, "point", p->label);
    cJSON_AddNumberToObject(o, "epochs", p->n);
    cJSON_AddNumberToObject(o, "median_ms", p->st.median);
    return o;
}

static cJSON *num(double x) { return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull(); }

static cJSON *unmatched_json(const struct result_file *f, const struct result_file *other)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < f->n; i++) {
        char why[320];
        if (f->pts[i].paired)
            continue;
        unmatched_why(&f->pts[i], other, why, sizeof why);
        cJSON *o = point_json(f, &f->pts[i]);
        cJSON_AddStringToObject(o, "why", why);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static int print_json(const struct result_file *a, const struct result_file *b,
                      const struct pair *pairs, int n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "test", "Mann-Whitney U, p < 0.05, and the 95% bootstrap "
                                          "interval of median(B) / median(A) excluding 1");
    cJSON *arr = cJSON_AddArrayToObject(root, "pairs");
    for (int i = 0; i < n; i++) {
        const struct pair *p = &pairs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "a", point_json(a, p->a));
        cJSON_AddItemToObject(o, "b", point_json(b, p->b));
        cJSON_AddItemToObject(o, "ratio", num(p->c.ratio));
        cJSON *ci = cJSON_AddArrayToObject(o, "ci95");
        cJSON_AddItemToArray(ci, num(p->c.ci95[0]));
        cJSON_AddItemToArray(ci, num(p->c.ci95[1]));
        cJSON_AddItemToObject(o, "p_value", num(p->c.p_value));
        cJSON_AddStringToObject(o, "verdict", verdict_name(p->c.verdict));
        cJSON *d = cJSON_AddArrayToObject(o, "settings_differ");
        for (int k = 0; k < p->n_diffs; k++)
            cJSON_AddItemToArray(d, cJSON_CreateString(p->diffs[k]));
        cJSON_AddItemToArray(arr, o);
    }
    cJSON *un = cJSON_AddObjectToObject(root, "unmatched");
    cJSON_AddItemToObject(un, "a", unmatched_json(a, b));
    cJSON_AddItemToObject(un, "b", unmatched_json(b, a));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return -1;
    puts(text);
    free(text);
    return 0;
}

static void compare_usage(FILE *f)
{
    fprintf(f,
            "usage: dpbench compare A.json B.json [--format text|json]\n"
            "\n"
            "Says for each pair of points whether B is faster than, slower than or the same\n"
            "as A: both medians, the ratio B/A with its 95%% interval, and the verdict of a\n"
            "Mann-Whitney U test on the epoch times. A and B are result files of dpbench\n"
            "(--format json, --out) or of scripts/torch_reference.py. One point each: compared\n"
            "whatever their settings (listed when they differ); several: paired by workload and\n"
            "settings. Points of different workloads are listed as unmatched, never compared.\n"
            "\n"
            "Exit status: 0 compared, 2 unusable input or nothing to compare.\n");
}

/* The command line: the two paths and the format; 1 after --help. */
static int compare_args(int argc, char **argv, const char **paths, bool *json, struct error *e)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {0}};
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, ":f:h", longopts, NULL)) != -1) {
        if (ch == 'h') {
            compare_usage(stdout);
            return 1;
        } else if (ch == 'f' && (strcmp(optarg, "json") == 0 || strcmp(optarg, "text") == 0)) {
            *json = strcmp(optarg, "json") == 0;
        } else if (ch == 'f') {
            return error_set(e, "compare --format: expected text or json, found '%s'", optarg);
        } else if (ch == ':') {
            return error_set(e, "compare: %s needs a value", argv[optind - 1]);
        } else {
            return error_set(e, "compare: unknown option '%s' (dpbench compare --help)",
                             argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return error_set(e, "compare: expected two result files, A.json B.json (found %d)",
                         argc - optind);
    paths[0] = argv[optind];
    paths[1] = argv[optind + 1];
    return 0;
}

int compare_main(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    bool json = false;
    struct error e = {{0}};
    struct result_file a = {0}, b = {0};
    int rc = compare_args(argc, argv, paths, &json, &e);
    if (rc > 0)
        return 0;
    if (rc == 0 && (file_read(&a, paths[0], &e) || file_read(&b, paths[1], &e)))
        rc = -1;
    struct pair *pairs = rc ? NULL : calloc((size_t)(a.n < b.n ? a.n : b.n), sizeof *pairs);
    if (rc == 0 && !pairs)
        rc = error_set(&e, "out of memory");
    int n = rc ? 0 : match(&a, &b, pairs);
    if (rc == 0 && json)
        rc = print_json(&a, &b, pairs, n) ? error_set(&e, "out of memory") : 0;
    else if (rc == 0) {
        print_text(&a, &b, pairs, n);
        print_unmatched_text(&a, &b, "A");
        print_unmatched_text(&b, &a, "B");
    }
    if (rc == 0 && n == 0)
        rc = error_set(&e, "compare: no point of %s has a point of the same workload in %s: "
                           "nothing compared", a.path, b.path);
    free(pairs);
    file_free(&a);
    file_free(&b);
    if (rc)
        fprintf(stderr, "dpbench: %s\n", e.msg);
    return rc ? 2 : 0;
}
