/* dataset.kind folder: torchvision's ImageFolder layout (dataset.path is
 * the root, each class a folder below it), each JPEG/PNG read and decoded
 * when its sample is loaded (by a loader worker). */
#include "dataset_kind.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "dataset.h"
#include "files.h"
#include "gen.h"
#include "image.h"

enum {
    HEADER_BYTES = 64 * 1024, // enough for any JPEG/PNG header we meet
    FOLDER_MAX_DEPTH = 64,    // folders below a class folder, nested (walk_dir recurses)
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of dir's entries, hidden ones too (torchvision's os.scandir
 * and os.walk list them). */
static int list_dir(const char *dir, char ***names, int *n, struct error *e)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return error_set(e, "%s: cannot open folder: %s", dir, strerror(errno));
    char **v = NULL;
    int len = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dp))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (len == cap) {
            cap = cap ? cap * 2 : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv)
                goto oom;
            v = nv;
        }
        if (!(v[len] = strdup(de->d_name)))
            goto oom;
        len++;
    }
    closedir(dp);
    if (len) // an empty folder has no array (qsort wants one)
        qsort(v, (size_t)len, sizeof *v, cmp_str);
    *names = v;
    *n = len;
    return 0;
oom:
    closedir(dp);
    for (int i = 0; i < len; i++)
        free(v[i]);
    free(v);
    return error_set(e, "%s: out of memory listing the folder", dir);
}


/* torchvision's IMG_EXTENSIONS, matched as it does (the lower-cased name
 * ends with one): 1 for those dpbench decodes, -1 for the others (ImageFolder
 * would load them: refused, not skipped, or the dataset would differ), 0 for
 * any other name (skipped, as ImageFolder skips it). */
static int image_name(const char *name)
{
    static const char *const exts[] = {".jpg", ".jpeg", ".png", // decoded here
                                       ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof exts / sizeof *exts; i++) {
        size_t k = strlen(exts[i]);
        if (n >= k && strcasecmp(name + n - k, exts[i]) == 0)
            return i < 3 ? 1 : -1;
    }
    return 0;
}

/* A class folder as torchvision's make_dataset walks it: os.walk(followlinks
 * = True) gives every folder below it, symlinks followed; sorted() orders
 * them by path; each one's files (every entry that is not a folder) sorted
 * by name. */
struct walked {
    char *path;
    char **files; // (n_files) names, sorted
    int n_files;
};

#define LINKED_TIMES 8 // a folder symlinks reach more often: refused (walk_link)

struct walk {
    struct walked *dirs; // (n) in the order met; sorted by path afterwards
    int n, cap;
    struct { dev_t dev; ino_t ino; int at; } *up; // (depth) the folders above, for loops
    int depth, up_cap;
    struct { dev_t dev; ino_t ino; int at, times; } *linked; // (n_linked) folders symlinks reach
    int n_linked, linked_cap;
};

static int cmp_walked(const void *a, const void *b)
{
    return strcmp(((const struct walked *)a)->path, ((const struct walked *)b)->path);
}

static void walk_free(struct walk *w)
{
    for (int i = 0; i < w->n; i++) {
        free(w->dirs[i].path);
        files_free_names(w->dirs[i].files, w->dirs[i].n_files);
    }
    free(w->dirs);
    free(w->up);
    free(w->linked);
}

/* Folder path (st), reached by a symlink. Reached again, it is walked
 * again (its images count twice, as in torchvision); reached more than
 * LINKED_TIMES times, an error: a chain of links, each folder linking twice
 * to the next, walks 2^depth folders (minutes, hours). */
static int walk_link(struct walk *w, const char *path, const struct stat *st, struct error *e)
{
    for (int i = 0; i < w->n_linked; i++)
        if (w->linked[i].dev == st->st_dev && w->linked[i].ino == st->st_ino)
            return ++w->linked[i].times <= LINKED_TIMES ? 0
                   : error_set(e, "%s: symlinks reach this folder more than %d times (first as "
                                  "%s): a chain of links that reach folders over and over",
                               path, LINKED_TIMES, w->dirs[w->linked[i].at].path);
    if (w->n_linked == w->linked_cap) {
        int cap = w->linked_cap ? 2 * w->linked_cap : 16;
        void *l = realloc(w->linked, (size_t)cap * sizeof *w->linked);
        if (!l)
            return error_set(e, "%s: out of memory listing the folder", path);
        w->linked = l, w->linked_cap = cap;
    }
    w->linked[w->n_linked].dev = st->st_dev;
    w->linked[w->n_linked].ino = st->st_ino;
    w->linked[w->n_linked].times = 1;
    w->linked[w->n_linked++].at = w->n; // walk_dir adds it next
    return 0;
}

/* Adds dir and the folders below it. A folder that is one of its own
 * ancestors (a symlink loop, which os.walk would follow until the path is
 * too long) is an error. */
static int walk_dir(struct walk *w, const char *dir, struct error *e)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return error_set(e, "%s: cannot open folder: %s", dir, strerror(errno));
    for (int i = 0; i < w->depth; i++)
        if (w->up[i].dev == st.st_dev && w->up[i].ino == st.st_ino)
            return error_set(e, "%s: a symlink loop (it is %s again)", dir,
                             w->dirs[w->up[i].at].path);
    char **names;
    int n;
    if (list_dir(dir, &names, &n, e))
        return -1;
    if (w->n == w->cap || w->depth == w->up_cap) {
        w->cap = w->n == w->cap ? (w->cap ? 2 * w->cap : 16) : w->cap;
        w->up_cap = w->depth == w->up_cap ? (w->up_cap ? 2 * w->up_cap : 16) : w->up_cap;
        struct walked *d = realloc(w->dirs, (size_t)w->cap * sizeof *d);
        if (d)
            w->dirs = d;
        void *u = d ? realloc(w->up, (size_t)w->up_cap * sizeof *w->up) : NULL;
        if (u)
            w->up = u;
        if (!d || !u) {
            files_free_names(names, n);
            return error_set(e, "%s: out of memory listing the folder", dir);
        }
    }
    int at = w->n++, files = 0, rc = 0;
    w->dirs[at] = (struct walked){.path = strdup(dir)};
    w->up[w->depth].dev = st.st_dev;
    w->up[w->depth].ino = st.st_ino;
    w->up[w->depth++].at = at;
    if (!w->dirs[at].path)
        rc = error_set(e, "%s: out of memory listing the folder", dir);
    for (int i = 0; i < n; i++) { // the path on the heap: a frame a level stays small
        char *path = NULL;
        struct stat s;
        if (!rc && asprintf(&path, "%s/%s", dir, names[i]) < 0)
            rc = error_set(e, "%s: out of memory listing the folder", dir);
        else if (!rc && strlen(path) >= PATH_MAX)
            rc = error_set(e, "%s/%s: path too long", dir, names[i]);
        struct stat l;
        if (!rc && stat(path, &s) == 0 && S_ISDIR(s.st_mode)) { // a folder: walked, not a file
            rc = w->depth > FOLDER_MAX_DEPTH
                     ? error_set(e, "%s: folders nested more than %d deep in a class folder "
                                    "(the limit)", path, FOLDER_MAX_DEPTH)
                     : lstat(path, &l) == 0 && S_ISLNK(l.st_mode) && walk_link(w, path, &s, e)
                     ? -1 : walk_dir(w, path, e);
            free(names[i]);
        } else if (rc) {
            free(names[i]);
        } else {
            names[files++] = names[i];
        }
        free(path);
    }
    w->depth--;
    w->dirs[at].files = names;
    w->dirs[at].n_files = files;
    return rc;
}

/* Width and height of an image file from its first bytes. A file larger
 * than its image can need (16 bytes a pixel, twice a 16-bit RGBA PNG's raw
 * size, and 64 MiB of metadata) is refused: each read of a sample reads the
 * whole file, where PIL stops at the image's end (3 GB after a 16x16 JPEG
 * took 3 GB a sample, past --max-memory). */
static int file_header(const char *path, int *w, int *h, struct error *e)
{
    uint8_t *buf;
    size_t n;
    bool whole;
    struct stat st;
    if (stat(path, &st) != 0) // files_read_plain says why
        st.st_size = 0;
    if (files_read_plain(path, HEADER_BYTES, &buf, &n, &whole, e))
        return -1;
    int rc = image_header(buf, n, w, h, e);
    free(buf);
    if (rc && !whole && st.st_size <= 64 << 20) { // a longer header
        if (files_read_plain(path, 0, &buf, &n, NULL, e))
            return -1;
        rc = image_header(buf, n, w, h, e);
        free(buf);
    }
    if (rc)
        return error_wrap(e, "%s", path);
    double most = 16.0 * *w * *h + (64 << 20);
    if ((double)st.st_size > most)
        return error_set(e, "%s: %lld bytes, more than a %dx%d image can need (%.0f): data "
                            "after the image's end?", path, (long long)st.st_size, *w, *h, most);
    return 0;
}

/* The images found so far and the first one's size. */
struct folder_scan {
    long cap;
    int w0, h0;            // the first image's size
    char first[PATH_MAX];  // and its path
    bool resize;           // sizes may differ
};

/* Adds the image at path to class k after reading its header. */
static int folder_add(struct dataset *d, struct file_data *f, struct folder_scan *sc,
                      const char *path, int k, struct error *e)
{
    int w, h;
    if (file_header(path, &w, &h, e))
        return -1;
    if (!sc->w0) {
        sc->w0 = w, sc->h0 = h;
        snprintf(sc->first, sizeof sc->first, "%s", path);
    } else if (!sc->resize && (w != sc->w0 || h != sc->h0)) {
        return error_set(e, "%s is %dx%d but %s is %dx%d: images of different sizes need "
                            "transform.resize", path, w, h, sc->first, sc->w0, sc->h0);
    }
    if (d->length == sc->cap) {
        sc->cap = sc->cap ? sc->cap * 2 : 1024;
        char **p = realloc(f->paths, (size_t)sc->cap * sizeof *p);
        if (p)
            f->paths = p;
        int32_t *l = realloc(f->labels, (size_t)sc->cap * sizeof *l);
        if (l)
            f->labels = l;
        if (!p || !l)
            return error_set(e, "out of memory listing %s", path);
    }
    f->labels[d->length] = k;
    if (!(f->paths[d->length] = strdup(path)))
        return error_set(e, "out of memory listing %s", path);
    d->length++;
    return 0;
}

/* torchvision's ImageFolder's classes: root's folders (symlinks to folders
 * too, hidden ones too), sorted. */
static int folder_classes(const char *root, char ***classes, int *n_classes, struct error *e)
{
    if (list_dir(root, classes, n_classes, e))
        return -1;
    int kept = 0;
    for (int k = 0; k < *n_classes; k++) { // class folders only; files at the root are ignored
        char dir[PATH_MAX];
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%s", root, (*classes)[k]);
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
            (*classes)[kept++] = (*classes)[k];
        else
            free((*classes)[k]);
    }
    *n_classes = kept;
    if (kept > 0)
        return 0;
    free(*classes);
    *classes = NULL;
    return error_set(e, "%s: no class folders (expected ROOT/<class>/<image>)", root);
}

/* Every folder below class folder `dir`, in struct walk's order. */
static int class_walk(const char *dir, struct walk *w, struct error *e)
{
    *w = (struct walk){0};
    int rc = walk_dir(w, dir, e);
    if (w->n) // none when the class folder could not be read
        qsort(w->dirs, (size_t)w->n, sizeof *w->dirs, cmp_walked);
    return rc;
}

/* Each class's images are found through the whole tree below its folder,
 * kept when the name has one of torchvision's image extensions. */
/* Whether the class folders are a dataset's splits: "train" and one to
 * three of the names a held-out split goes by, and nothing else. */
static bool split_names(char **classes, int n)
{
    static const char *const splits[] = {"train", "val", "valid", "validation", "test"};
    bool train = false;
    for (int k = 0; k < n; k++) {
        size_t i = 0;
        while (i < sizeof splits / sizeof *splits && strcmp(classes[k], splits[i]))
            i++;
        if (i == sizeof splits / sizeof *splits)
            return false;
        train |= i == 0;
    }
    return train && n >= 2 && n <= 4;
}

static int folder_load(struct dataset *d, struct file_data *f, const char *root, bool train,
                       bool resize, struct error *e)
{
    char **classes = NULL;
    int n_classes = 0;
    struct folder_scan sc = {.resize = resize};
    if (folder_classes(root, &classes, &n_classes, e))
        return -1;
    f->class_names = classes;
    d->classes = n_classes;
    f->c = 3;
    if (split_names(classes, n_classes))
        fprintf(stderr, "dpbench: note: %s's classes are named as a dataset's splits (\"train\", "
                        "\"%s\"): its root? (a split's folder, %s/train, holds the class "
                        "folders)\n", root, strcmp(classes[0], "train") ? classes[0] : classes[1],
                root);
    if (train && n_classes == 1) // torchvision takes it too
        fprintf(stderr, "dpbench: note: %s has one class folder ('%s'): every sample is class 0, "
                        "so a classifier has nothing to learn (the epochs' times are still "
                        "the pipeline's)\n", root, classes[0]);
    for (int k = 0; k < n_classes; k++) {
        char dir[PATH_MAX];
        struct walk w;
        long before = d->length;
        snprintf(dir, sizeof dir, "%s/%s", root, classes[k]);
        int rc = class_walk(dir, &w, e);
        for (int i = 0; !rc && i < w.n; i++)
            for (int j = 0; !rc && j < w.dirs[i].n_files; j++) {
                char path[PATH_MAX];
                const char *name = w.dirs[i].files[j];
                snprintf(path, sizeof path, "%s/%s", w.dirs[i].path, name);
                int kind = image_name(name);
                if (kind < 0)
                    rc = error_set(e, "%s: torchvision's ImageFolder would load this image, "
                                      "but dpbench decodes only JPEG and PNG", path);
                else if (kind > 0)
                    rc = folder_add(d, f, &sc, path, k, e);
            }
        walk_free(&w);
        if (!rc && d->length == before)
            rc = error_set(e, "%s: empty class folder (no .jpg, .jpeg or .png file in it or "
                              "below it; every class needs at least one image)", dir);
        if (rc)
            return -1;
    }
    f->h = resize ? 0 : sc.h0;
    f->w = resize ? 0 : sc.w0;
    return 0;
}

/* The sizes before loading, from the walk that loading repeats and the
 * first image's header: its shape is every image's (else loading refuses
 * them without transform.resize, which makes their size its own). Bytes
 * kept: each image's path and label. false where loading would fail. */
static bool folder_walk_size(const char *root, struct split_size *s)
{
    char **classes = NULL;
    struct error e;
    int n_classes = 0;
    if (folder_classes(root, &classes, &n_classes, &e))
        return false;
    *s = (struct split_size){.c = 3, .classes = n_classes, .transient = HEADER_BYTES};
    bool ok = true;
    for (int k = 0; ok && k < n_classes; k++) {
        char dir[PATH_MAX], path[PATH_MAX];
        struct walk w;
        snprintf(dir, sizeof dir, "%s/%s", root, classes[k]);
        ok = class_walk(dir, &w, &e) == 0;
        for (int i = 0; ok && i < w.n; i++)
            for (int j = 0; ok && j < w.dirs[i].n_files; j++) {
                int kind = image_name(w.dirs[i].files[j]);
                ok = kind >= 0;
                if (kind <= 0)
                    continue;
                snprintf(path, sizeof path, "%s/%s", w.dirs[i].path, w.dirs[i].files[j]);
                if (s->length++ == 0)
                    ok = file_header(path, &s->w, &s->h, &e) == 0;
                s->kept += strlen(path) + 1 + sizeof(char *) + sizeof(int32_t);
            }
        walk_free(&w);
    }
    files_free_names(classes, n_classes);
    return ok && s->length > 0;
}

/* Every point of a sweep asks for the same folder's sizes: the last walk is
 * kept (the estimates run on the main thread, before any run). */
static bool folder_size(const char *root, bool train, struct split_size *s)
{
    (void)train;
    static struct {
        char root[PATH_MAX];
        struct split_size s;
        bool ok;
    } last;
    if (!last.root[0] || strcmp(last.root, root) != 0) {
        last.ok = folder_walk_size(root, &last.s);
        snprintf(last.root, sizeof last.root, "%s", root);
    }
    *s = last.s;
    return last.ok;
}

static void folder_label_where(const struct file_data *f, long i, char *buf, size_t n)
{
    snprintf(buf, n, "%s", f->paths[i]);
}

/* ---- --make-dataset folder --------------------------------------------- */

/* Sample j of a split: class j % K, so every split and file mixes classes. */
static int write_folder(const struct gen *g, const char *split, int per_class, uint64_t base,
                        struct error *e)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", g->dir, split);
    if (gen_mkdir(dir, e))
        return -1;
    uint8_t *px = malloc((size_t)g->w * g->h * 3);
    if (!px)
        return error_set(e, "out of memory");
    int rc = 0;
    for (int k = 0; k < g->classes && !rc; k++) {
        char cdir[4200];
        snprintf(cdir, sizeof cdir, "%s/class_%02d", dir, k);
        rc = gen_mkdir(cdir, e);
    }
    for (long j = 0; j < (long)per_class * g->classes && !rc; j++) {
        if (stop_requested()) {
            rc = -1;
            break;
        }
        int k = (int)(j % g->classes);
        char path[4400];
        snprintf(path, sizeof path, "%s/class_%02d/%06ld.%s", dir, k, j / g->classes,
                 g->format == IMAGE_PNG ? "png" : "jpg");
        gen_image(g, k, base + (uint64_t)j, 3, px);
        rc = image_write(path, g->format, px, g->w, g->h, g->quality, e);
    }
    free(px);
    return rc;
}

/* New images beside old ones (other classes, counts or format) would make a
 * dataset that is neither. */
static int folder_make_check(struct gen *g, bool sized, struct error *e)
{
    if (g->gzip)
        return error_set(e, "--make-dataset folder: --gzip is for idx files");
    if (g->quality && g->format != IMAGE_JPEG)
        return error_set(e, "--make-dataset folder: --quality is for --format jpeg");
    g->quality = g->quality ? g->quality : 90;
    if (!sized)
        g->w = g->h = 32;
    static const char *const splits[] = {"train", "val"};
    for (int i = 0; i < 2 && *g->dir; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", g->dir, splits[i]);
        DIR *dp = opendir(dir);
        if (!dp)
            continue;
        struct dirent *de;
        while ((de = readdir(dp)) && de->d_name[0] == '.')
            ;
        closedir(dp);
        if (de)
            return error_set(e, "--make-dataset: %s is not empty: remove it or choose another "
                                "DIR (new images would mix with the old)", dir);
    }
    return 0;
}

/* The eval samples follow the training ones (eval_base), so they differ. */
static int folder_make_write(const struct gen *g, struct error *e)
{
    uint64_t eval_base = gen_eval_base(g);
    int rc = write_folder(g, "train", g->per_class, 0, e);
    if (!rc && g->eval_per_class)
        rc = write_folder(g, "val", g->eval_per_class, eval_base, e);
    return rc;
}

static const struct kind_maker folder_maker = {folder_make_check, folder_make_write, "train",
                                               NULL};

const struct dataset_kind dataset_kind_folder = {
    .name = "folder",
    .labelled = true,
    .load = folder_load,
    .size = folder_size,
    .label_where = folder_label_where,
    .made_in = MADE_IN_PARENT_OF_TRAIN,
    .make = &folder_maker,
};
