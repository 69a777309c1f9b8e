/* Reading result files for `dpbench compare`: every point's workload and
 * settings, its epochs, its rounds' medians, the machine's load and its BLAS
 * choice, and what the file says of itself (schema, machine, build,
 * warnings, a stop). A file that is not a result dpbench can read is refused
 * with its path and what is wrong, before anything is compared.
 *
 * A point's workload is what it computes: the data (seed, dataset, transform),
 * the model and its loss, the batch and what makes the batches (shuffle,
 * drop_last), the epochs and the learning rate. Its settings are how it
 * computes them: the loader's other knobs, the parallel section, BLAS, the
 * backend. */
#include "compare.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "files.h"

/* An epoch outside these is no time dpbench measured (the statistics of
 * such numbers would not be finite; its clock counts nanoseconds). */
#define MIN_EPOCH_S 1e-9
#define MAX_EPOCH_S 1e7
/* The result files larger than this are refused before they are read. */
#define MAX_FILE_BYTES ((off_t)1 << 30)

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
 * report, bench and tune sections and the sweep are neither (how a result
 * was measured or searched, not what ran). The backend stands for
 * parallel.device ("torch-cpu" is the cpu: the PyTorch side of one setting). */
static void split_config(const cJSON *cfg, const char *backend, cJSON *work, cJSON *set)
{
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(cfg, "seed");
    cJSON_AddItemToObject(work, "seed", seed ? cJSON_Duplicate(seed, 1) : cJSON_CreateNull());
    const cJSON *sec;
    cJSON_ArrayForEach(sec, cfg)
    {
        if (!cJSON_IsObject(sec) || strcmp(sec->string, "report") == 0 ||
            strcmp(sec->string, "sweep") == 0 || strcmp(sec->string, "bench") == 0 ||
            strcmp(sec->string, "tune") == 0)
            continue;
        if (cJSON_GetObjectItemCaseSensitive(work, sec->string) || !strcmp(sec->string, "backend"))
            continue; // a name twice once scrubbed ("a\u0001", "a\u0002"): the first, as a
        cJSON *w = cJSON_AddObjectToObject(work, sec->string); // lookup finds it ("backend": below)
        cJSON *s = cJSON_AddObjectToObject(set, sec->string);
        const cJSON *k;
        cJSON_ArrayForEach(k, sec)
        {
            cJSON *to = is_workload(sec->string, k->string) ? w : s;
            if ((strcmp(sec->string, "parallel") == 0 && strcmp(k->string, "device") == 0) ||
                cJSON_GetObjectItemCaseSensitive(w, k->string) ||
                cJSON_GetObjectItemCaseSensitive(s, k->string))
                continue;
            cJSON_AddItemToObject(to, k->string, cJSON_Duplicate(k, 1));
        }
    }
    cJSON_AddStringToObject(set, "backend", strncmp(backend, "torch-", 6) ? backend : backend + 6);
}

/* x's number: a number's, or a raw item's digits (config.c writes a large integer so) */
static bool number_of(const cJSON *x, double *v)
{
    char *end = NULL;
    *v = cJSON_IsNumber(x) ? x->valuedouble : cJSON_IsRaw(x) ? strtod(x->valuestring, &end) : NAN;
    return cJSON_IsNumber(x) || (end && end != x->valuestring && !*end);
}

bool compare_same(const cJSON *a, const cJSON *b)
{
    double u, v;
    if (number_of(a, &u) && number_of(b, &v))
        return u == v;
    if (!a || !b || (a->type & 0xFF) != (b->type & 0xFF))
        return false;
    if (!cJSON_IsArray(a) && !cJSON_IsObject(a))
        return cJSON_Compare(a, b, 1);
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b))
        return false;
    const cJSON *x, *y = b->child;
    cJSON_ArrayForEach(x, a)
    {
        const cJSON *other = cJSON_IsObject(a) ? cJSON_GetObjectItemCaseSensitive(b, x->string) : y;
        if (!compare_same(x, other))
            return false;
        y = y ? y->next : NULL;
    }
    if (cJSON_IsObject(a)) // both ways round: a key twice (once scrubbed) is looked up by its first
        cJSON_ArrayForEach(y, b)
        {
            if (!compare_same(cJSON_GetObjectItemCaseSensitive(a, y->string), y))
                return false;
        }
    return true;
}

/* A 64-bit finaliser: each bit of x moves about half of the result's. */
static uint64_t mix(uint64_t x)
{
    x = (x ^ x >> 30) * 0xbf58476d1ce4e5b9u;
    x = (x ^ x >> 27) * 0x94d049bb133111ebu;
    return x ^ x >> 31;
}

static uint64_t text_hash(const char *s) // FNV-1a
{
    uint64_t h = 0xcbf29ce484222325u;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3u;
    return h;
}

/* Equal wherever compare_same finds a and b alike, so pairing compares the
 * trees only where the hashes agree. An object's keys count in any order at
 * the top two levels (the workload or settings and their sections: each key
 * named once there, as split_config makes them); deeper (no config value
 * dpbench writes is an object) an object counts by its size alone, as a key
 * twice there (once scrubbed) would make a sum of its items unequal. */
static uint64_t tree_hash(const cJSON *x, int depth)
{
    double v;
    uint64_t h = x ? (uint64_t)(x->type & 0xFF) : 0;
    if (number_of(x, &v)) {
        v = v == 0 ? 0 : v; // -0 == 0
        memcpy(&h, &v, sizeof h);
        return mix(h);
    }
    if (cJSON_IsString(x) || cJSON_IsRaw(x))
        return mix(h ^ text_hash(x->valuestring));
    if (cJSON_IsObject(x) && depth >= 2)
        return mix(h ^ (uint64_t)cJSON_GetArraySize(x));
    const cJSON *c;
    cJSON_ArrayForEach(c, x)
    {
        if (cJSON_IsObject(x))
            h += mix(text_hash(c->string) ^ tree_hash(c, depth + 1)); // a sum: in any order
        else
            h = mix(h ^ tree_hash(c, depth + 1));
    }
    return h;
}

/* x as JSON, an integer with all its digits (cJSON's 15 can print two seeds
 * alike); allocated. */
static char *number_text(const cJSON *x)
{
    char *t = NULL;
    bool whole = cJSON_IsNumber(x) && x->valuedouble == trunc(x->valuedouble) &&
                 fabs(x->valuedouble) < 1e17;
    return whole && asprintf(&t, "%.17g", x->valuedouble) >= 0 ? t : cJSON_PrintUnformatted(x);
}

/* "section.key: A vs B" for each leaf that differs, at most max. */
int compare_diffs(const cJSON *a, const cJSON *b, const char *prefix, char diffs[][256],
                        int n, int max)
{
    const cJSON *pair[2] = {a, b};
    for (int side = 0; side < 2; side++) {
        const cJSON *k;
        cJSON_ArrayForEach(k, pair[side])
        {
            const cJSON *other = cJSON_GetObjectItemCaseSensitive(pair[1 - side], k->string);
            if (side == 1 && other && cJSON_GetObjectItemCaseSensitive(b, k->string) == k)
                continue; // seen from a's side (a key twice once scrubbed: its second is not)
            char path[128];
            snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", k->string);
            if (other && cJSON_IsObject(k) && cJSON_IsObject(other)) {
                n = compare_diffs(side ? other : k, side ? k : other, path, diffs, n, max);
            } else if (!compare_same(k, other)) {
                if (n >= max)
                    return n;
                char *vk = number_text(k), *vo = other ? number_text(other) : NULL;
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

/* -1 with e set where o's field key is there (not null) but not of the type
 * `is` tests (what: its name), at JSON path where (printf-style, e.g.
 * "runs[2]."); else 0. A field of another type is never read as absent. */
__attribute__((format(printf, 7, 8)))
static int wrong_type(const struct compare_file *f, struct error *e, const cJSON *o,
                      const char *key, cJSON_bool (*is)(const cJSON *const), const char *what,
                      const char *where, ...)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v) || is(v))
        return 0;
    char at[64];
    va_list ap;
    va_start(ap, where);
    vsnprintf(at, sizeof at, where, ap);
    va_end(ap);
    return error_set(e, "%s: %s%s: expected %s, not what dpbench writes", f->path, at, key, what);
}

/* Run i's JSON object, following same_as to the run that holds its
 * measurement (an earlier run, itself measured). */
static const cJSON *measured_run(const struct compare_file *f, const cJSON *runs,
                                 const cJSON *run, int i, struct error *e)
{
    const cJSON *same = cJSON_GetObjectItemCaseSensitive(run, "same_as");
    if (wrong_type(f, e, run, "same_as", cJSON_IsNumber, "a run's index", "runs[%d].", i))
        return NULL;
    if (!cJSON_IsNumber(same))
        return run;
    int k = same->valueint;
    const cJSON *m = k >= 0 && k < i && k == same->valuedouble ? cJSON_GetArrayItem(runs, k) : NULL;
    if (!m || cJSON_GetObjectItemCaseSensitive(m, "same_as")) {
        error_set(e, "%s: runs[%d].same_as %g is not an earlier run that was measured itself",
                  f->path, i, same->valuedouble);
        return NULL;
    }
    return m;
}

/* One measured time (epoch seconds or a round's median ms, in `unit`s) as
 * ms: finite, positive and below MAX_EPOCH_S. */
static int time_ms(const struct compare_file *f, const cJSON *v, double unit, int i,
                   const char *what, int k, double *ms, struct error *e)
{
    double x = cJSON_IsNumber(v) ? v->valuedouble * unit : NAN;
    if (!(x >= 1e3 * MIN_EPOCH_S) || !(x < 1e3 * MAX_EPOCH_S))
        return error_set(e, "%s: run %d, %s %d: not a time dpbench measured (runs[%d].%ss[%d]"
                            ".%s: from %g to below %g %s)", f->path, i, what, k + 1, i, what, k,
                         unit == 1 ? "median_ms" : "seconds", 1e3 / unit * MIN_EPOCH_S,
                         1e3 / unit * MAX_EPOCH_S, unit == 1 ? "ms" : "s");
    *ms = x;
    return 0;
}

/* The measured epoch times of run (ms) and, where it ran in rounds, the
 * rounds' medians and their round numbers. */
static int run_times(const struct compare_file *f, const cJSON *run, int i,
                     struct compare_point *p, struct error *e)
{
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(run, "epochs");
    const cJSON *rounds = cJSON_GetObjectItemCaseSensitive(run, "rounds"), *x;
    if (!cJSON_IsArray(eps))
        return error_set(e, "%s: run %d has no \"epochs\" array (per-epoch times)", f->path, i);
    if (wrong_type(f, e, run, "rounds", cJSON_IsArray, "an array", "runs[%d].", i))
        return -1;
    int n = cJSON_GetArraySize(eps), nr = cJSON_IsArray(rounds) ? cJSON_GetArraySize(rounds) : 0;
    p->ms = malloc((size_t)(n ? n : 1) * sizeof *p->ms);
    p->round_ms = malloc((size_t)(nr ? nr : 1) * sizeof *p->round_ms);
    p->round_of = malloc((size_t)(nr ? nr : 1) * sizeof *p->round_of);
    if (!p->ms || !p->round_ms || !p->round_of)
        return error_set(e, "out of memory");
    cJSON_ArrayForEach(x, eps)
    if (time_ms(f, cJSON_GetObjectItemCaseSensitive(x, "seconds"), 1e3, i, "epoch", p->n,
                &p->ms[p->n], e))
        return -1;
    else
        p->n++;
    int j = 0;
    cJSON_ArrayForEach(x, rounds)
    {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(x, "round");
        const cJSON *ran = cJSON_GetObjectItemCaseSensitive(x, "epochs");
        const cJSON *load = cJSON_GetObjectItemCaseSensitive(x, "load");
        if (wrong_type(f, e, x, "round", cJSON_IsNumber, "a number", "runs[%d].rounds[%d].", i, j) ||
            wrong_type(f, e, x, "epochs", cJSON_IsNumber, "a number", "runs[%d].rounds[%d].", i, j) ||
            wrong_type(f, e, x, "load", cJSON_IsObject, "an object", "runs[%d].rounds[%d].", i, j) ||
            wrong_type(f, e, load, "seconds", cJSON_IsNumber, "a number", "runs[%d].rounds[%d].load.", i, j))
            return -1;
        if (cJSON_IsNumber(ran) && ran->valuedouble == 0 &&
            cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(x, "median_ms")) && ++j)
            continue; // a round in which the point measured nothing (it failed or stopped)
        if (time_ms(f, cJSON_GetObjectItemCaseSensitive(x, "median_ms"), 1, i, "round", j++,
                    &p->round_ms[p->n_rounds], e))
            return -1;
        p->round_of[p->n_rounds] = cJSON_IsNumber(r) ? r->valueint : p->n_rounds;
        p->n_rounds++;
    }
    stats_compute(p->ms, (size_t)p->n, &p->st);
    return 0;
}

/* The load others put on the machine while the run ran, and its BLAS choice. */
static int run_context(const struct compare_file *f, const cJSON *run, int i,
                       struct compare_point *p, struct error *e)
{
    const cJSON *load = cJSON_GetObjectItemCaseSensitive(run, "load");
    if (wrong_type(f, e, run, "load", cJSON_IsObject, "an object", "runs[%d].", i) ||
        wrong_type(f, e, run, "failed", cJSON_IsBool, "true or false", "runs[%d].", i) ||
        wrong_type(f, e, run, "blas_library", cJSON_IsString, "a string", "runs[%d].", i) ||
        wrong_type(f, e, run, "blas_threads", cJSON_IsNumber, "a number", "runs[%d].", i) ||
        wrong_type(f, e, load, "others_cpu", cJSON_IsNumber, "a share from 0 to 1", "runs[%d].load.", i))
        return -1;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(load, "others_cpu");
    const cJSON *lib = cJSON_GetObjectItemCaseSensitive(run, "blas_library");
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(run, "blas_threads");
    const cJSON *failed = cJSON_GetObjectItemCaseSensitive(run, "failed");
    p->others_cpu = cJSON_IsNumber(o) ? o->valuedouble : NAN;
    if (p->others_cpu < 0 || p->others_cpu > 1)
        return error_set(e, "%s: runs[%d].load.others_cpu: expected a share from 0 to 1, not "
                         "what dpbench writes", f->path, i);
    if (cJSON_IsString(lib) && cJSON_IsNumber(th))
        snprintf(p->blas, sizeof p->blas, "%s, %d thread%s", lib->valuestring, th->valueint,
                 th->valueint == 1 ? "" : "s");
    p->failed = cJSON_IsTrue(failed);
    return 0;
}

static int read_point(struct compare_file *f, const cJSON *runs, const cJSON *run, int i,
                      struct error *e)
{
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(run, "config");
    const cJSON *label = cJSON_GetObjectItemCaseSensitive(run, "point");
    const cJSON *backend = cJSON_GetObjectItemCaseSensitive(run, "backend");
    if (!cJSON_IsObject(run) || !cJSON_IsObject(cfg))
        return error_set(e, "%s: run %d has no \"config\" object", f->path, i);
    if (wrong_type(f, e, run, "point", cJSON_IsString, "a string", "runs[%d].", i) ||
        wrong_type(f, e, run, "backend", cJSON_IsString, "a string", "runs[%d].", i))
        return -1;
    struct compare_point *p = &f->pts[f->n++];
    *p = (struct compare_point){.run = i, .label = cJSON_IsString(label) ? label->valuestring : "",
                                .workload = cJSON_CreateObject(), .settings = cJSON_CreateObject(),
                                .others_cpu = NAN};
    if (!p->workload || !p->settings)
        return error_set(e, "out of memory");
    split_config(cfg, cJSON_IsString(backend) ? backend->valuestring : "?", p->workload,
                 p->settings);
    p->hash[0] = tree_hash(p->workload, 0), p->hash[1] = tree_hash(p->settings, 0);
    const cJSON *m = measured_run(f, runs, run, i, e);
    if (!m)
        return -1;
    return run_context(f, m, i, p, e) ? -1 : run_times(f, m, i, p, e);
}

/* The whole file as a string (caller frees): a regular file (not a FIFO, a
 * device or a directory, whose reading could block or never end) of at most
 * MAX_FILE_BYTES, checked before it is read and as it is read. */
static char *slurp(const char *path, size_t *len, struct error *e)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    char *buf = NULL;
    if (fd < 0 || fstat(fd, &st) != 0) {
        error_set(e, "%s: cannot read: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        error_set(e, "%s: not a regular file (a result file of dpbench --format json or --out)",
                  path);
    } else if (st.st_size > MAX_FILE_BYTES) {
        error_set(e, "%s: larger than 1 GiB: not a result file", path);
    } else if (!(buf = malloc((size_t)st.st_size + 4096))) {
        error_set(e, "%s: out of memory", path);
    } else {
        /* to its end, whatever st_size said (0 for a /proc file; a file may grow) */
        size_t cap = (size_t)st.st_size + 4096, got = 0;
        ssize_t r = 1;
        while (r > 0 && got <= (size_t)MAX_FILE_BYTES) {
            char *more = got + 1 < cap ? buf : realloc(buf, cap *= 2);
            if (!more) {
                r = -2;
                break;
            }
            buf = more;
            if ((r = read(fd, buf + got, cap - 1 - got)) > 0)
                got += (size_t)r;
        }
        if (r < 0 || got > (size_t)MAX_FILE_BYTES) {
            if (r == -2)
                error_set(e, "%s: out of memory", path);
            else if (r < 0)
                error_set(e, "%s: cannot read: %s", path, strerror(errno));
            else
                error_set(e, "%s: larger than 1 GiB: not a result file", path);
            free(buf);
            buf = NULL;
        } else {
            buf[got] = '\0';
            *len = got;
        }
    }
    if (fd >= 0)
        close(fd);
    return buf;
}

/* schema_version: the versions this binary reads, 1 (one run per point)
 * and 2 (rounds); torch_reference.py writes 1. */
static int file_schema(struct compare_file *f, const cJSON *doc, struct error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "schema_version");
    if (!v)
        return error_set(e, "%s: no \"schema_version\": not a dpbench result (this dpbench "
                            "reads versions 1 and 2)", f->path);
    if (cJSON_IsString(v))
        return error_set(e, "%s: schema_version \"%s\" is a string: this dpbench reads the "
                            "versions 1 and 2, numbers", f->path, v->valuestring);
    if (!cJSON_IsNumber(v) || (v->valuedouble != 1 && v->valuedouble != 2)) {
        char *t = cJSON_PrintUnformatted(v);
        error_set(e, "%s: schema_version %.40s: this dpbench reads versions 1 and 2", f->path,
                  t ? t : "?");
        free(t);
        return -1;
    }
    f->schema = (int)v->valuedouble;
    return 0;
}

/* A string field of an object, "" when absent. */
static const char *field(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* What the file says of where and how it ran: the tool and build, the
 * machine, a stop, its warnings. */
static int file_context(struct compare_file *f, const cJSON *doc, struct error *e)
{
    if (wrong_type(f, e, doc, "dpbench", cJSON_IsObject, "an object", "%s", "") ||
        wrong_type(f, e, doc, "machine", cJSON_IsObject, "an object", "%s", "") ||
        wrong_type(f, e, doc, "interrupted", cJSON_IsBool, "true or false", "%s", "") ||
        wrong_type(f, e, doc, "warnings", cJSON_IsArray, "an array", "%s", ""))
        return -1;
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(doc, "dpbench");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(doc, "machine");
    const char *ver = field(tool, "version");
    snprintf(f->tool, sizeof f->tool, "%s%s (%s)",
             ver[0] && strncmp(ver, "torch-", 6) ? "dpbench " : "", ver[0] ? ver : "?",
             field(tool, "git_commit")[0] ? field(tool, "git_commit") : "?");
    snprintf(f->machine, sizeof f->machine, "%s; %s; BLAS core %s; %s", field(m, "cpu"),
             field(m, "kernel"), field(m, "openblas_core"), field(m, "compiler"));
    f->interrupted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "interrupted"));
    f->warnings = cJSON_GetObjectItemCaseSensitive(doc, "warnings");
    const cJSON *run, *rd;
    cJSON_ArrayForEach(run, cJSON_GetObjectItemCaseSensitive(doc, "runs"))
    cJSON_ArrayForEach(rd, cJSON_GetObjectItemCaseSensitive(run, "rounds"))
    {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(rd, "load"), "seconds"); // its type: run_times
        f->span_s += cJSON_IsNumber(s) && s->valuedouble > 0 ? s->valuedouble : 0;
    }
    return 0;
}

int compare_file_from(struct compare_file *f, const cJSON *doc, const char *path, int only,
                      struct error *e)
{
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(doc, "runs");
    f->path = path;
    if (file_schema(f, doc, e))
        return -1;
    if (!cJSON_IsArray(runs) || cJSON_GetArraySize(runs) <= (only > 0 ? only : 0))
        return error_set(e, "%s: not a dpbench result (no \"runs\" with at least one run)",
                         path);
    int n = cJSON_GetArraySize(runs), i = 0;
    if (n > CONFIG_MAX_SWEEP_POINTS) // what no run of dpbench writes; pairing it would take hours
        return error_set(e, "%s: %d runs, more than a dpbench result holds (%d)", path, n,
                         CONFIG_MAX_SWEEP_POINTS);
    if (file_context(f, doc, e))
        return -1;
    f->pts = calloc((size_t)n, sizeof *f->pts);
    if (!f->pts)
        return error_set(e, "out of memory");
    const cJSON *run;
    cJSON_ArrayForEach(run, runs)
    if ((only < 0 || i == only) && read_point(f, runs, run, i, e))
        return -1;
    else
        i++;
    return 0;
}

/* Text without control bytes (C0, DEL, C1 in UTF-8: '?'): a file's text is
 * printed to a terminal. */
static void scrub_text(char *text)
{
    for (unsigned char *c = (unsigned char *)text; c && *c; c++)
        if (*c < ' ' || *c == 0x7f)
            *c = '?';
        else if (*c == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f)
            c[0] = c[1] = '?';
}

/* Every string and key of a document, scrubbed. */
static void scrub(cJSON *j)
{
    for (; j; j = j->next) {
        scrub_text(j->string);
        scrub_text(j->valuestring);
        scrub(j->child); // as deep as cJSON parses: CJSON_NESTING_LIMIT
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* seg added to the path in path[0..at) of a buffer of n: its new end, or n
 * where it did not fit (then "..." ends it, cut between characters). */
static size_t path_add(char *path, size_t n, size_t at, const char *seg)
{
    size_t len = strlen(seg), k;
    if (at >= n)
        return n;
    if (at + len + 4 <= n) {
        memcpy(path + at, seg, len + 1);
        return at + len;
    }
    for (k = n - 4 > at ? n - 4 - at : 0; k > 0 && (seg[k] & 0xc0) == 0x80;) // a UTF-8
        k--;                                                                    // continuation
    memcpy(path + at, seg, k);
    memcpy(path + at + k, "...", 4);
    return n;
}

/* An object's key added to the path (".name", or "name" at its start). */
static size_t key_add(char *path, size_t n, size_t at, const char *name)
{
    return path_add(path, n, path_add(path, n, at, at ? "." : ""), name);
}

/* Whether an object in o (o itself too) names a key twice: JSON readers keep
 * one or the other (cJSON the first, Python's json the last), so compare and
 * a script would read different results. Its path then in path
 * ("runs[2].summary.median_seconds"); -1: out of memory. */
static int named_twice(const cJSON *o, char *path, size_t n, size_t at)
{
    int size = cJSON_GetArraySize(o), i = 0, rc = 0;
    if (cJSON_IsObject(o) && size > 1) { // sorted, equal names meet (a file may hold many)
        const cJSON **keys = malloc((size_t)size * sizeof *keys);
        if (!keys)
            return -1;
        for (const cJSON *a = o->child; a; a = a->next)
            keys[i++] = a;
        qsort(keys, (size_t)size, sizeof *keys, by_name);
        for (i = 1; i < size && !rc; i++)
            if (!strcmp(keys[i - 1]->string, keys[i]->string))
                rc = 1, key_add(path, n, at, keys[i]->string);
        free(keys);
    }
    i = 0;
    for (const cJSON *a = o->child; a && !rc; a = a->next, i++) {
        char index[24];
        snprintf(index, sizeof index, "[%d]", i);
        rc = named_twice(a, path, n, cJSON_IsArray(o) ? path_add(path, n, at, index)
                                                      : key_add(path, n, at, a->string));
    }
    return rc;
}

int compare_file_read(struct compare_file *f, const char *path, struct error *e)
{
    *f = (struct compare_file){.path = path};
    size_t len = 0;
    char *text = slurp(path, &len, e);
    uint8_t *plain = NULL; // gzip'd (as bench_results keeps large results): inflated
    if (text && len >= 2 && (uint8_t)text[0] == 0x1f && (uint8_t)text[1] == 0x8b) {
        free(text);
        text = files_read_all(path, MAX_FILE_BYTES, &plain, &len, e) ? NULL : (char *)plain;
        if (text && len > MAX_FILE_BYTES)
            free(text), text = NULL, error_set(e, "%s: larger than 1 GiB: not a result file", path);
    }
    if (!text)
        return -1;
    const char *end = NULL; // where parsing stopped: the error, or past the document
    f->doc = len ? cJSON_ParseWithLengthOpts(text, len, &end, false) : NULL;
    size_t rest = end ? (size_t)(end - text) : 0; // the error, or what follows the document
    while (f->doc && rest < len && text[rest] && strchr(" \t\r\n", text[rest]))
        rest++;
    int line = 1, column = 1;
    for (size_t i = 0; i < rest && i < len; i++)
        line += text[i] == '\n', column = text[i] == '\n' ? 1 : column + 1;
    free(text);
    if (!len)
        return error_set(e, "%s: an empty file (a result of dpbench --format json or --out)", path);
    if (!f->doc)
        return error_set(e, "%s:%d: not valid JSON at column %d (a result of dpbench --format "
                         "json or --out)", path, line, column);
    if (rest < len)
        return error_set(e, "%s:%d: more after the JSON document at column %d (two results in "
                         "one file?)", path, line, column);
    char key[256] = "";
    int twice = named_twice(f->doc, key, sizeof key, 0); // before scrub: "a\u0001" is not "a\u0002"
    scrub(f->doc);
    scrub_text(key);
    if (twice < 0)
        return error_set(e, "%s: out of memory", path);
    if (twice)
        return error_set(e, "%s: the key %s is given twice in one object (JSON readers keep one "
                            "or the other: not a file dpbench wrote)", path, key);
    return compare_file_from(f, f->doc, path, -1, e);
}

void compare_file_free(struct compare_file *f)
{
    for (int i = 0; f->pts && i < f->n; i++) {
        cJSON_Delete(f->pts[i].workload);
        cJSON_Delete(f->pts[i].settings);
        free(f->pts[i].ms);
        free(f->pts[i].round_ms);
        free(f->pts[i].round_of);
    }
    free(f->pts);
    cJSON_Delete(f->doc);
    memset(f, 0, sizeof *f);
}
