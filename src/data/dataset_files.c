/* What the labelled kinds (idx, cifar10, folder) share: a split loaded by
 * its kind (dataset_kind.h), then its transforms and labels checked; the
 * held-out split; the sizes before loading; per-sample access (decode,
 * transform, one-hot label). */
#include "dataset_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "dataset_kind.h"
#include "files.h"
#include "gen.h"
#include "image.h"
#include "transform.h"

/* ---- labels ---------------------------------------------------------------- */

/* The model's outputs for the labels of d: model.out_features when it is
 * given and covers every label (it says how many classes there are: some may
 * have no sample), else the classes found. A smaller model.out_features is
 * replaced by the classes found, as every shipped config sets one for the
 * random data. idx files number their classes only through the labels, so a
 * stray byte (255 among 0-9) would silently make 256 classes: without a
 * covering model.out_features the training labels must number 0 to K-1 with
 * no class empty. The held-out split is checked against the result. */
static int labels_check(const struct dataset *d, const struct file_data *f,
                        const struct config *c, bool train, long *outputs, struct error *e)
{
    *outputs = d->classes;
    if (!train)
        return 0;
    if (config_is_explicit(c, "model.out_features") && c->model.out_features >= d->classes) {
        *outputs = c->model.out_features;
        return 0;
    }
    if (!f->kind->dense_labels)
        return 0;
    char *seen = calloc((size_t)d->classes, 1);
    if (!seen)
        return error_set(e, "out of memory");
    for (long i = 0; i < d->length; i++)
        seen[f->labels[i]] = 1;
    int gap = 0;
    while (gap < d->classes && seen[gap])
        gap++;
    free(seen);
    if (gap == d->classes)
        return 0;
    long i = 0;
    while (f->labels[i] < gap) // a label above the gap exists: the largest one is
        i++;
    char where[PATH_MAX + 64];
    f->kind->label_where(f, i, where, sizeof where);
    return error_set(e, "%s: label %d, but no sample has label %d: the labels must number the "
                        "classes 0 to K-1 with none empty (set model.out_features to the number "
                        "of classes if some have no sample)", where, f->labels[i], gap);
}

/* ---- loading --------------------------------------------------------------- */

/* A sample of oh x ow x c floats against the cap dataset.features has:
 * the transforms (or the images' own size) must not get around it. */
static int features_check(const struct transform *tf, int oh, int ow, const char *path,
                          struct error *e)
{
    double features = (double)tf->channels * oh * ow;
    if (features <= CONFIG_MAX_FEATURES)
        return 0;
    const char *key = tf->crop ? "transform.crop" : "transform.resize";
    if (tf->resize || tf->crop)
        return error_set(e, "%s %d: %d x %d x %d channel%s = %.0f features per sample, more "
                            "than the %d dataset.features allows: lower %s",
                         key, tf->crop ? tf->crop : tf->resize, ow, oh, tf->channels,
                         tf->channels == 1 ? "" : "s", features, CONFIG_MAX_FEATURES, key);
    return error_set(e, "%s: images of %dx%d x %d channel%s = %.0f features per sample, more "
                        "than the %d dataset.features allows: set transform.resize or "
                        "transform.crop",
                     path, ow, oh, tf->channels, tf->channels == 1 ? "" : "s", features,
                     CONFIG_MAX_FEATURES);
}

/* Loads one split at `path`; `train` turns the random transforms on. */
static int load_split(struct dataset *d, const struct config *c, const char *path, bool train,
                      struct error *e)
{
    memset(d, 0, sizeof *d);
    struct file_data *f = calloc(1, sizeof *f);
    if (!f)
        return error_set(e, "out of memory");
    d->files = f;
    f->kind = dataset_kind_of(c);
    int rc = f->kind->load(d, f, path, train, c->transform.resize > 0, e);
    if (rc)
        return -1;
    int *oh = &f->oh, *ow = &f->ow;
    if (transform_init(&f->tf, c, f->c, train, e) ||
        transform_shape(&f->tf, f->h ? f->h : 1, f->w ? f->w : 1, oh, ow, e) ||
        features_check(&f->tf, *oh, *ow, path, e))
        return -1;
    long outputs;
    if (labels_check(d, f, c, train, &outputs, e))
        return -1;
    d->features = f->c * *oh * *ow;
    d->out_features = (int)outputs;
    return 0;
}

/* The held-out split's path: eval_path, else the kind's default when it
 * exists ("" when none). */
static void eval_path(const struct config *c, char *out, size_t n)
{
    out[0] = '\0';
    if (c->dataset.eval_path[0]) {
        snprintf(out, n, "%s", c->dataset.eval_path);
        return;
    }
    const struct dataset_kind *k = dataset_kind_of(c);
    if (k->eval_path)
        k->eval_path(c->dataset.path, out, n);
    if (out[0] && !files_exist(out))
        out[0] = '\0';
}

/* Whether the dataset's first file (the kind's probe) is at dataset.path. */
static bool dataset_present(const struct config *c)
{
    const struct dataset_kind *k = dataset_kind_of(c);
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s%s%s", c->dataset.path, k->probe ? "/" : "",
             k->probe ? *k->probe : "");
    return files_exist(probe);
}

/* The folder `dpbench --make-dataset KIND DIR` writes so that dataset.path
 * finds it, into dir; false when DIR's files land one level below
 * dataset.path (a folder root not ending in /train: dataset.path must then
 * be DIR/train). */
static bool made_dir(const struct config *c, char *dir, size_t n)
{
    const char *path = c->dataset.path;
    const struct dataset_kind *k = dataset_kind_of(c);
    /* idx files and a folder's train/ live in the directory --make-dataset writes */
    const char *slash = strrchr(path, '/');
    bool parent = k->made_in == MADE_IN_PARENT ||
                  (k->made_in == MADE_IN_PARENT_OF_TRAIN && slash && strcmp(slash, "/train") == 0);
    if (!parent)
        snprintf(dir, n, "%s", path);
    else if (slash)
        snprintf(dir, n, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    else
        snprintf(dir, n, ".");
    return !(k->made_in == MADE_IN_PARENT_OF_TRAIN && !parent);
}

/* A dataset that is not there: the `dpbench --make-dataset` command that
 * writes one where dataset.path looks for it, appended to e. Debian's
 * packaged datasets have their own advice (idx_load). */
static void make_dataset_hint(const struct config *c, struct error *e)
{
    char dir[PATH_MAX];
    struct stat st;
    if (dataset_present(c) || strstr(e->msg, "apt-get install") ||
        (stat(c->dataset.path, &st) == 0 && S_ISREG(st.st_mode))) // a file is there: the msg says
        return;
    bool here = made_dir(c, dir, sizeof dir);
    const char *path = c->dataset.path;
    size_t len = strlen(path), used = strlen(e->msg);
    bool gz = len > 3 && strcmp(path + len - 3, ".gz") == 0;
    char tail[PATH_MAX + 64] = "";
    if (!here)
        snprintf(tail, sizeof tail, ", then set dataset.path to %s/train", dir);
    snprintf(e->msg + used, sizeof e->msg - used,
             "; no such dataset: `dpbench --make-dataset %s %s%s` writes one%s (or dataset.make: "
             "\"%s%s\" in the config, on first use)", c->dataset.kind, dir, gz ? " --gzip" : "",
             tail, c->dataset.kind, gz ? " --gzip" : "");
}

int dataset_files_make(const struct config *c, struct error *e)
{
    char dir[PATH_MAX], name[64];
    const struct dataset_kind *made;
    struct stat st;
    if (!c->dataset.make[0] || !dataset_kind_of(c)->labelled || dataset_present(c) ||
        (stat(c->dataset.path, &st) == 0 && S_ISREG(st.st_mode))) // a file: the reader says why
        return 0;
    if (gen_spec_check(c->dataset.make, &made, name, sizeof name, e))
        return error_wrap(e, "dataset.make");
    /* dataset.path is DIR/name (the config's rule checked it) */
    const char *path = c->dataset.path, *slash = strrchr(path, '/');
    if (!name[0])
        snprintf(dir, sizeof dir, "%s", path);
    else if (slash)
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    else
        snprintf(dir, sizeof dir, ".");
    int lock = files_lock_dir(dir, e); // ranks or runs on this host make it once
    if (lock < 0)
        return -1;
    int rc = 0;
    if (!dataset_present(c)) { // not made meanwhile by the lock's holder
        fprintf(stderr, "dpbench: dataset.path %s is not there: making it (dataset.make: %s) "
                        "in %s ...\n", c->dataset.path, c->dataset.make, dir);
        double t0 = now_seconds();
        rc = gen_make(c->dataset.make, dir, e);
        if (!rc && !dataset_present(c))
            rc = error_set(e, "dataset.make: \"%s\" wrote %s, but dataset.path %s is not among "
                              "its files", c->dataset.make, dir, c->dataset.path);
        if (!rc)
            fprintf(stderr, "dpbench: made %s in %.1f s\n", dir, now_seconds() - t0);
    }
    files_unlock_dir(lock);
    return rc;
}

int dataset_files_load(struct dataset *d, const struct config *c, struct error *e)
{
    char ev[PATH_MAX];
    if (load_split(d, c, c->dataset.path, true, e)) {
        make_dataset_hint(c, e);
        return -1;
    }
    eval_path(c, ev, sizeof ev);
    if (!ev[0])
        return 0;
    struct dataset *v = calloc(1, sizeof *v);
    if (!v)
        return error_set(e, "out of memory");
    d->eval = v;
    if (load_split(v, c, ev, false, e)) {
        error_wrap(e, "dataset.eval_path");
        return -1;
    }
    const struct file_data *tf = d->files, *vf = v->files;
    int rc = 0; // the caller frees d (and v with it)
    if (v->features != d->features) {
        rc = error_set(e, "dataset.eval_path %s: its samples have %d features, the training "
                          "set's %d (different image sizes?)", ev, v->features, d->features);
    } else if (vf->oh != tf->oh || vf->ow != tf->ow) { // as many pixels, another shape
        rc = error_set(e, "dataset.eval_path %s: its samples are %dx%d (width x height, after the "
                          "transforms), the training set's %dx%d", ev, vf->ow, vf->oh, tf->ow, tf->oh);
    } else if (tf->class_names) { // classes named by their folders
        bool same = v->classes == d->classes;
        for (int k = 0; same && k < d->classes; k++)
            same = strcmp(tf->class_names[k], vf->class_names[k]) == 0;
        if (!same)
            rc = error_set(e, "dataset.eval_path %s: its class folders differ from %s's", ev,
                           c->dataset.path);
    } else if (v->classes > d->out_features) {
        char where[PATH_MAX + 64];
        long i = 0;
        while (vf->labels[i] < d->out_features)
            i++;
        vf->kind->label_where(vf, i, where, sizeof where);
        rc = error_set(e, "dataset.eval_path: %s: label %d, but the training set has %d classes",
                       where, vf->labels[i], d->out_features);
    }
    if (rc)
        return -1;
    v->classes = d->classes;
    v->out_features = d->out_features;
    return 0;
}

/* ---- sizes before loading --------------------------------------------------- */

/* One split's sizes, from its kind. */
static bool split_size(const struct config *c, const char *path, bool train,
                       struct split_size *s)
{
    const struct dataset_kind *k = dataset_kind_of(c);
    return k->size && k->size(path, train, s);
}

int dataset_files_check(const struct config *c, struct error *e)
{
    struct split_size t;
    struct transform tf;
    int oh, ow;
    if (!split_size(c, c->dataset.path, true, &t)) // unreadable: loading says why
        return 0;
    return transform_init(&tf, c, t.c, true, e) || transform_shape(&tf, t.h, t.w, &oh, &ow, e)
               ? -1
               : 0;
}

bool dataset_files_size(const struct config *c, struct files_size *s)
{
    struct split_size t, v = {0};
    int oh, ow;
    char ev[PATH_MAX];
    struct transform tf;
    struct error e;
    if (!split_size(c, c->dataset.path, true, &t) || transform_init(&tf, c, t.c, true, &e) ||
        transform_shape(&tf, t.h, t.w, &oh, &ow, &e))
        return false;
    eval_path(c, ev, sizeof ev);
    if (ev[0] && !split_size(c, ev, false, &v))
        v.kept = v.transient = 0; // loading reports a bad eval split
    s->length = t.length;
    s->features = (double)t.c * oh * ow > INT_MAX ? INT_MAX : t.c * oh * ow; // loading refuses
    // more than CONFIG_MAX_FEATURES; the estimate sees them, the memory they would take
    s->classes = t.classes;
    s->bytes = t.kept + v.kept + (t.transient > v.transient ? t.transient : v.transient);
    return true;
}

/* ---- samples --------------------------------------------------------------- */

int dataset_files_get(const struct dataset *d, long i, long epoch, float *x, float *y,
                      long *bytes_read, struct error *e)
{
    const struct file_data *f = d->files;
    memset(y, 0, (size_t)d->out_features * sizeof(float));
    y[f->labels[i]] = 1.0f;
    if (!f->paths) { // in memory
        const uint8_t *px = f->pixels + (size_t)i * (size_t)(f->h * f->w * f->c);
        return transform_apply(&f->tf, px, f->h, f->w, epoch, i, x, e);
    }
    uint8_t *buf, *rgb;
    size_t n;
    int w, h;
    const char *path = f->paths[i];
    if (files_read_plain(path, 0, &buf, &n, NULL, e))
        return -1;
    *bytes_read += (long)n;
    int rc = image_decode(buf, n, &rgb, &w, &h, e);
    free(buf);
    if (rc)
        return error_wrap(e, "%s", path);
    if (f->w && (w != f->w || h != f->h))
        rc = error_set(e, "%s: %dx%d, but the other images are %dx%d (set transform.resize)",
                       path, w, h, f->w, f->h);
    else
        rc = transform_apply(&f->tf, rgb, h, w, epoch, i, x, e);
    free(rgb);
    return rc;
}

bool dataset_files_choice(const struct dataset *d, long i, long epoch,
                          struct transform_choice *ch)
{
    const struct file_data *f = d->files;
    if (!f || !transform_is_random(&f->tf))
        return false;
    int h = f->tf.resize ? f->tf.resize : f->h, w = f->tf.resize ? f->tf.resize : f->w;
    transform_choose(&f->tf, h, w, epoch, i, ch);
    return true;
}

int dataset_files_drop_cache(const struct dataset *d, struct error *e)
{
    const struct file_data *f = d->files;
    long n = f->paths ? d->length : f->n_sources;
    for (long i = 0; i < n; i++) {
        const char *path = f->paths ? f->paths[i] : f->sources[i];
        int fd = open(path, O_RDONLY | O_NONBLOCK);
        if (fd < 0)
            return error_set(e, "dataset.drop_cache: %s: cannot open: %s", path, strerror(errno));
        int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
        if (rc)
            return error_set(e, "dataset.drop_cache: %s: posix_fadvise: %s", path, strerror(rc));
    }
    return 0;
}

void dataset_files_free(struct dataset *d)
{
    struct file_data *f = d->files;
    if (f->paths)
        for (long i = 0; i < d->length; i++)
            free(f->paths[i]);
    free(f->paths);
    files_free_names(f->class_names, d->classes);
    files_free_names(f->sources, f->n_sources);
    free(f->pixels);
    free(f->labels);
    free(f);
    d->files = NULL;
}
