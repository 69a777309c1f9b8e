/* The export writer: .npy arrays and JSON files, each through a temporary
 * file and a rename. The .npy v1.0 format is small: the magic "\x93NUMPY",
 * version 1.0, a little-endian uint16 header length, then a Python dict
 * literal (descr, fortran_order, shape) padded with spaces and ended by a
 * newline so that the data starts at a multiple of 64 bytes. */
#include "export.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset_files.h"
#include "dataset_kind.h"
#include "files.h"
#include "loader.h"
#include "rlimits.h"
#include "staging.h"
#include "train.h"

enum { EXPORT_FORMAT = 1 }; // bumped when the layout changes

/* A file being written: data goes to `tmp`, renamed to `path` on commit. */
struct out_file {
    FILE *f;
    char path[4200];
    char tmp[4208];
};

/* A write that failed with err; a file past RLIMIT_FSIZE (EFBIG) names it. */
static int write_failed(const char *path, int err, struct error *e)
{
    char why[256];
    return error_set(e, "export: %s: cannot write: %s", path,
                     rlimits_write_error(err, why, sizeof why));
}

static int out_open(struct out_file *o, const char *dir, const char *name, struct error *e)
{
    snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp", o->path);
    o->f = fopen(o->tmp, "wb");
    if (!o->f)
        return write_failed(o->tmp, errno, e);
    return 0;
}

static void out_abort(struct out_file *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    unlink(o->tmp);
}

static int out_commit(struct out_file *o, struct error *e)
{
    int failed = ferror(o->f) || fflush(o->f) != 0;
    int err = errno;
    if (fclose(o->f) != 0 && !failed) {
        failed = 1;
        err = errno;
    }
    o->f = NULL;
    if (!failed && rename(o->tmp, o->path) == 0)
        return 0;
    if (!failed)
        err = errno;
    unlink(o->tmp);
    return write_failed(o->path, err ? err : EIO, e);
}

/* The .npy header for an array of `descr` ("<f4", "<i8") and shape. */
static void npy_header(FILE *f, const char *descr, const long *shape, int ndim)
{
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (int i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%ld,%s", shape[i],
                      i + 1 < ndim ? " " : "");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    int total = (10 + n + 1 + 63) / 64 * 64; // magic + version + length + dict + '\n'
    int hlen = total - 10;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    fwrite(pre, 1, sizeof pre, f);
    fprintf(f, "%s%*s\n", dict, hlen - n - 1, "");
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NPY_F4 "<f4"
#define NPY_I8 "<i8"
#else
#define NPY_F4 ">f4"
#define NPY_I8 ">i8"
#endif

static int npy_write_floats(const char *dir, const char *name, const float *a, const long *shape,
                            int ndim, struct error *e)
{
    struct out_file o;
    if (out_open(&o, dir, name, e))
        return -1;
    size_t count = 1;
    for (int i = 0; i < ndim; i++)
        count *= (size_t)shape[i];
    npy_header(o.f, NPY_F4, shape, ndim);
    if (fwrite(a, sizeof *a, count, o.f) != count) {
        int err = errno;
        out_abort(&o);
        return write_failed(o.path, err, e);
    }
    return out_commit(&o, e);
}

/* orders.npy: row k is epoch k's order, exactly what the loader draws. */
static int write_orders(const char *dir, const struct config *c, long length, struct error *e)
{
    long epochs = c->train.warmup_epochs + c->train.epochs;
    long shape[2] = {epochs, length};
    long *order = malloc((size_t)length * sizeof *order);
    int64_t *row = malloc((size_t)length * sizeof *row);
    struct out_file o = {0};
    int rc = -1;
    if (!order || !row) {
        error_set(e, "export: out of memory for the sample orders (%ld samples)", length);
        goto out;
    }
    if (out_open(&o, dir, "orders.npy", e))
        goto out;
    npy_header(o.f, NPY_I8, shape, 2);
    for (long ep = 0; ep < epochs; ep++) {
        loader_order(order, length, c->loader.shuffle, (unsigned long)c->seed, ep, true);
        for (long i = 0; i < length; i++)
            row[i] = order[i];
        if (fwrite(row, sizeof *row, (size_t)length, o.f) != (size_t)length) {
            write_failed(o.path, errno, e);
            out_abort(&o);
            goto out;
        }
    }
    rc = out_commit(&o, e);
out:
    free(order);
    free(row);
    return rc;
}

/* augment.npy: [epoch, sample] = (top, left, flip), the random crop's
 * offsets in the padded image and the flip that sample gets in that epoch;
 * only when the training split's transforms are random. */
static int write_augment(const char *dir, const struct config *c, const struct dataset *d,
                         struct error *e)
{
    struct transform_choice ch;
    if (d->length == 0 || !dataset_files_choice(d, 0, 0, &ch))
        return 0;
    long epochs = c->train.warmup_epochs + c->train.epochs, length = d->length;
    long shape[3] = {epochs, length, 3};
    int64_t *row = malloc((size_t)length * 3 * sizeof *row);
    struct out_file o = {0};
    if (!row)
        return error_set(e, "export: out of memory for the transform choices");
    if (out_open(&o, dir, "augment.npy", e)) {
        free(row);
        return -1;
    }
    npy_header(o.f, NPY_I8, shape, 3);
    for (long ep = 0; ep < epochs; ep++) {
        for (long i = 0; i < length; i++) {
            dataset_files_choice(d, i, ep, &ch);
            row[3 * i] = ch.top, row[3 * i + 1] = ch.left, row[3 * i + 2] = ch.flip;
        }
        if (fwrite(row, sizeof *row, (size_t)length * 3, o.f) != (size_t)length * 3) {
            write_failed(o.path, errno, e);
            out_abort(&o);
            free(row);
            return -1;
        }
    }
    free(row);
    return out_commit(&o, e);
}

static int write_json(const char *dir, const char *name, cJSON *doc, struct error *e)
{
    char *text = cJSON_Print(doc);
    if (!text)
        return error_set(e, "export: out of memory rendering %s", name);
    struct out_file o;
    int rc = out_open(&o, dir, name, e);
    if (rc == 0) {
        fputs(text, o.f);
        fputc('\n', o.f);
        rc = out_commit(&o, e);
    }
    free(text);
    return rc;
}

bool export_has_data(const struct config *c)
{
    return !dataset_kind_of(c)->labelled;
}

int export_init(struct export *x, const char *dir, struct error *e)
{
    memset(x, 0, sizeof *x);
    if (staging_open(&x->stage, dir, "--export", e))
        return -1;
    snprintf(x->dir, sizeof x->dir, "%s", x->stage.path);
    x->points = cJSON_CreateArray();
    if (!x->points)
        return error_set(e, "export: out of memory");
    return 0;
}

int export_point(struct export *x, const struct config *pc, const char *label,
                 const struct dataset *d, struct error *e)
{
    char name[32], dir[4300];
    snprintf(name, sizeof name, "point-%03ld", x->n_points);
    snprintf(dir, sizeof dir, "%s/%s", x->dir, name);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return error_set(e, "export: %s: cannot create: %s", dir, strerror(errno));

    struct config plain = *pc;
    plain.n_sweep = 0; // the point's own config, without the sweep it came from
    dataset_resolve_config(d, &plain);
    cJSON *cfg = config_to_json(&plain);
    int rc = cfg ? write_json(dir, "config.json", cfg, e) : error_set(e, "export: out of memory");
    cJSON_Delete(cfg);
    if (rc)
        return -1;

    long N = d->length, F = d->features, O = d->out_features;
    bool data = export_has_data(pc);
    if (data) { // the step a file-backed dataset skips: its files are the data
        long xs[2] = {N, F}, ys[2] = {N, O};
        if (npy_write_floats(dir, "x.npy", d->x, xs, 2, e) ||
            npy_write_floats(dir, "y.npy", d->y, ys, 2, e))
            return -1;
    }

    float *w0 = malloc((size_t)(O * F + O) * sizeof *w0);
    if (!w0)
        return error_set(e, "export: out of memory");
    train_init_params((unsigned long)pc->seed, (int)F, (int)O, w0, w0 + O * F);
    long ws[2] = {O, F}, bs[1] = {O};
    rc = npy_write_floats(dir, "w0.npy", w0, ws, 2, e) ||
         npy_write_floats(dir, "b0.npy", w0 + O * F, bs, 1, e) ||
         write_orders(dir, pc, N, e) || write_augment(dir, pc, d, e);
    free(w0);
    if (rc)
        return -1;

    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "dir", name);
    cJSON_AddStringToObject(p, "point", label);
    cJSON_AddItemToObject(p, "overrides", config_overrides_json(pc));
    cJSON_AddBoolToObject(p, "data", data);
    cJSON_AddItemToArray(x->points, p);
    x->n_points++;
    return 0;
}

/* How many points the export whose index is path has: its points[] where
 * it is one of this format whose points are point-000, point-001, ... in
 * order (what export_point writes); else 0 (none of its folders are ours). */
static long earlier_points(const char *path)
{
    uint8_t *text = NULL;
    size_t n = 0;
    struct error e;
    if (files_read_plain(path, 1 << 24, &text, &n, NULL, &e))
        return 0;
    cJSON *doc = cJSON_ParseWithLength((const char *)text, n), *p;
    free(text);
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(doc, "format");
    long k = 0;
    const cJSON *points = cJSON_IsNumber(format) && format->valuedouble == EXPORT_FORMAT
                              ? cJSON_GetObjectItemCaseSensitive(doc, "points") : NULL;
    cJSON_ArrayForEach(p, points) {
        const cJSON *dir = cJSON_GetObjectItemCaseSensitive(p, "dir");
        char want[32];
        snprintf(want, sizeof want, "point-%03ld", k);
        if (!cJSON_IsString(dir) || strcmp(dir->valuestring, want) != 0)
            break;
        k++;
    }
    cJSON_Delete(doc);
    return k;
}

int export_finish(struct export *x, const struct config *base, struct error *e)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddNumberToObject(doc, "format", EXPORT_FORMAT);
    cJSON_AddStringToObject(doc, "dpbench_version", DPBENCH_VERSION);
    cJSON_AddItemToObject(doc, "config", config_to_json(base));
    cJSON_AddItemReferenceToObject(doc, "points", x->points);
    int rc = write_json(x->dir, "export.json", doc, e);
    cJSON_Delete(doc);
    if (rc)
        return -1;
    /* an earlier export's index goes first: while the points move in, the
     * folder reads as incomplete, never as that export over new files */
    char index[sizeof x->stage.target + 16];
    snprintf(index, sizeof index, "%s/export.json", x->stage.target);
    long earlier = earlier_points(index);
    if (unlink(index) != 0 && errno != ENOENT)
        return error_set(e, "--export %s: cannot remove the earlier %s: %s", x->stage.target,
                         index, strerror(errno));
    if (staging_commit(&x->stage, "export.json", e))
        return -1;
    /* then the earlier one's points beyond this one's (the others were
     * replaced): a glob of point-* must not mix two exports */
    for (long k = x->n_points; k < earlier; k++) {
        char old[sizeof x->stage.target + 32];
        struct stat st;
        snprintf(old, sizeof old, "%s/point-%03ld", x->stage.target, k);
        if (lstat(old, &st) == 0 && S_ISDIR(st.st_mode))
            staging_tree_remove(old);
    }
    return 0;
}

void export_free(struct export *x)
{
    staging_abort(&x->stage); // nothing of an export that did not finish
    cJSON_Delete(x->points);
    memset(x, 0, sizeof *x);
}
