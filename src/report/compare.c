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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "util.h"

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
static int run_epochs(const struct compare_file *f, const cJSON *runs, int i, struct compare_point *p,
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

static int read_point(struct compare_file *f, const cJSON *runs, int i, struct error *e)
{
    const cJSON *run = cJSON_GetArrayItem(runs, i);
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(run, "config");
    const cJSON *label = cJSON_GetObjectItemCaseSensitive(run, "point");
    const cJSON *backend = cJSON_GetObjectItemCaseSensitive(run, "backend");
    if (!cJSON_IsObject(run) || !cJSON_IsObject(cfg))
        return error_set(e, "%s: run %d has no \"config\" object", f->path, i);
    struct compare_point *p = &f->pts[f->n++];
    *p = (struct compare_point){.run = i, .label = cJSON_IsString(label) ? label->valuestring : "",
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

static int file_read(struct compare_file *f, const char *path, struct error *e)
{
    *f = (struct compare_file){.path = path};
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

static void file_free(struct compare_file *f)
{
    for (int i = 0; i < f->n; i++) {
        cJSON_Delete(f->pts[i].workload);
        cJSON_Delete(f->pts[i].settings);
        free(f->pts[i].ms);
    }
    free(f->pts);
    cJSON_Delete(f->doc);
}

/* Pairs the points: one each of one workload whatever their settings, else
 * by workload and settings, each point at most once. Returns the pairs. */
static int match(struct compare_file *a, struct compare_file *b, struct compare_pair *pairs)
{
    int n = 0;
    bool single = a->n == 1 && b->n == 1;
    for (int i = 0; i < a->n; i++) {
        struct compare_point *pa = &a->pts[i];
        for (int j = 0; j < b->n && !pa->paired; j++) {
            struct compare_point *pb = &b->pts[j];
            if (pb->paired || !cJSON_Compare(pa->workload, pb->workload, 1) ||
                (!single && !cJSON_Compare(pa->settings, pb->settings, 1)))
                continue;
            pa->paired = pb->paired = true;
            struct compare_pair *p = &pairs[n++];
            p->a = pa;
            p->b = pb;
            p->n_diffs = config_diffs(pa->settings, pb->settings, "", p->diffs, 0, COMPARE_MAX_DIFFS);
            stats_compare(pa->ms, (size_t)pa->n, pb->ms, (size_t)pb->n, &p->c);
        }
    }
    return n;
}

const char *compare_point_name(const struct compare_point *p) { return p->label[0] ? p->label : "(base)"; }

/* Why an unpaired point found no partner in other: the first workload
 * difference from other's first point when no point there has its workload,
 * else the first setting that differs from one that has, else that those
 * points are paired already. */
void compare_unmatched_why(const struct compare_point *p, const struct compare_file *other, char *buf,
                          size_t n)
{
    char d[1][256];
    const struct compare_point *q = &other->pts[0];
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

int compare_read(struct compare_result *r, const char *path_a, const char *path_b,
                 struct error *e)
{
    *r = (struct compare_result){0};
    if (file_read(&r->a, path_a, e) || file_read(&r->b, path_b, e))
        return -1;
    r->pairs = calloc((size_t)(r->a.n < r->b.n ? r->a.n : r->b.n), sizeof *r->pairs);
    if (!r->pairs)
        return error_set(e, "out of memory");
    r->n_pairs = match(&r->a, &r->b, r->pairs);
    return 0;
}

void compare_free(struct compare_result *r)
{
    free(r->pairs);
    file_free(&r->a);
    file_free(&r->b);
    memset(r, 0, sizeof *r);
}
