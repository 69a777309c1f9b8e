/* idx, cifar10 and folder datasets: loading, checks, and per-sample access
 * (decode, transform, one-hot label). */
#include "dataset_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "config.h"
#include "image.h"
#include "transform.h"

enum file_kind { FILES_IDX, FILES_CIFAR10, FILES_FOLDER };

struct file_data {
    enum file_kind kind;
    int c, h, w;          // stored image shape; folder with resize: h = w = 0 (sizes vary)
    uint8_t *pixels;      // (length, h, w, c) idx and cifar10, in memory
    int32_t *labels;      // (length) class of each sample
    char **paths;         // (length) folder: the image files
    char **class_names;   // (classes) folder: the class folder names, sorted
    char **sources;       // (n_sources) every file read, for drop_cache
    int n_sources;
    struct transform tf;
};

enum { HEADER_BYTES = 64 * 1024 }; // enough for any JPEG/PNG header we meet

static int add_source(struct file_data *f, const char *path, struct error *e)
{
    char **s = realloc(f->sources, (size_t)(f->n_sources + 1) * sizeof *s);
    if (!s)
        return error_set(e, "out of memory");
    f->sources = s;
    if (!(s[f->n_sources] = strdup(path)))
        return error_set(e, "out of memory");
    f->n_sources++;
    return 0;
}

/* Opens a regular file for reading; anything else (a FIFO would block the
 * open itself, hence O_NONBLOCK, which regular files ignore) is refused. */
static int open_regular(const char *path, struct error *e)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        return error_set(e, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return error_set(e, "%s: not a regular file", path);
    }
    return fd;
}

/* Reads a file (gzip-compressed or plain: zlib reads both), at most `max`
 * bytes of its content, so that a small gzip file cannot expand without
 * bound (*n = max + 1 flags more). A truncated gzip stream is an error. */
static int read_all(const char *path, size_t max, uint8_t **buf, size_t *n, struct error *e)
{
    int fd = open_regular(path, e);
    if (fd < 0)
        return -1;
    gzFile g = gzdopen(fd, "rb");
    if (!g) {
        close(fd);
        return error_set(e, "%s: cannot open: out of memory", path);
    }
    size_t cap = 1 << 20, len = 0;
    uint8_t *b = malloc(cap);
    for (;;) {
        if (!b) {
            gzclose(g);
            return error_set(e, "%s: out of memory", path);
        }
        size_t room = (max + 1 < cap ? max + 1 : cap) - len;
        unsigned want = (unsigned)(room > (1u << 30) ? (1u << 30) : room);
        int got = gzread(g, b + len, want);
        if (got < 0) {
            int zerr;
            const char *msg = gzerror(g, &zerr);
            char why[256];
            snprintf(why, sizeof why, "%s", zerr == Z_ERRNO ? strerror(errno) : msg);
            free(b);
            gzclose(g);
            return error_set(e, "%s: cannot read: %s", path, why);
        }
        len += (size_t)got;
        if (got == 0 || len > max)
            break;
        if (len == cap) {
            uint8_t *nb = realloc(b, cap * 2);
            if (!nb)
                free(b);
            b = nb;
            cap *= 2;
        }
    }
    int zerr;
    gzerror(g, &zerr);
    gzclose(g);
    if (zerr == Z_BUF_ERROR) {
        free(b);
        return error_set(e, "%s: truncated gzip data", path);
    }
    *buf = b;
    *n = len;
    return 0;
}

/* Reads at most `max` bytes of a plain file (all of it when max is 0). */
static int read_plain(const char *path, size_t max, uint8_t **buf, size_t *n, bool *whole,
                      struct error *e)
{
    int fd = open_regular(path, e);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return error_set(e, "%s: cannot read: %s", path, strerror(errno));
    }
    size_t size = (size_t)st.st_size, want = max && max < size ? max : size;
    uint8_t *b = malloc(want ? want : 1);
    if (!b) {
        close(fd);
        return error_set(e, "%s: out of memory (%zu bytes)", path, want);
    }
    size_t got = 0;
    while (got < want) {
        ssize_t r = read(fd, b + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int err = r < 0 ? errno : 0;
            free(b);
            close(fd);
            return error_set(e, "%s: cannot read: %s", path, err ? strerror(err) : "file shrank");
        }
        got += (size_t)r;
    }
    close(fd);
    *buf = b;
    *n = got;
    if (whole)
        *whole = got == size;
    return 0;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- idx ------------------------------------------------------------------- */

/* The labels file beside an images file: *-images-idx3-ubyte[.gz] ->
 * *-labels-idx1-ubyte[.gz] (either compression). */
static int idx_labels_path(const char *images, char *out, size_t n, struct error *e)
{
    const char *base = strrchr(images, '/');
    base = base ? base + 1 : images;
    const char *at = strstr(base, "images-idx3-ubyte");
    if (!at)
        return error_set(e, "%s: an idx images file is named *-images-idx3-ubyte[.gz]", images);
    size_t pre = (size_t)(at - images);
    const char *rest = at + strlen("images-idx3-ubyte");
    bool gz = strcmp(rest, ".gz") == 0;
    snprintf(out, n, "%.*slabels-idx1-ubyte%s", (int)pre, images, rest);
    if (exists(out))
        return 0;
    snprintf(out, n, "%.*slabels-idx1-ubyte%s", (int)pre, images, gz ? "" : ".gz");
    if (exists(out))
        return 0;
    snprintf(out, n, "%.*slabels-idx1-ubyte%s", (int)pre, images, rest);
    return error_set(e, "%s: its labels file %s is missing", images, out);
}

/* Debian packages that install idx datasets, for the message when one is missing. */
static const struct {
    const char *dir, *package;
} known_idx[] = {
    {"/usr/share/datasets/fashion-mnist/", "dataset-fashion-mnist"},
};

/* An idx header of `size` bytes with magic `magic` at the start of b (n
 * bytes read): an empty or cut file is named as such, not as a wrong magic. */
static int idx_header(const char *path, const uint8_t *b, size_t n, uint32_t magic, size_t size,
                      const char *what, struct error *e)
{
    if (n == 0)
        return error_set(e, "%s: empty file (0 bytes), expected an idx %s file (a header of %zu "
                            "bytes starting with 0x%08x)", path, what, size, magic);
    if (n < 4 ? memcmp(b, (uint8_t[]){0, 0, magic >> 8, magic & 0xff}, n) == 0
              : be32(b) == magic && n < size)
        return error_set(e, "%s: truncated: %zu bytes, shorter than an idx %s file's %zu-byte "
                            "header", path, n, what, size);
    if (n < 4 || be32(b) != magic)
        return error_set(e, "%s: not an idx %s file (it starts with 0x%08x, expected 0x%08x)",
                         path, what, n >= 4 ? be32(b) : 0, magic);
    return 0;
}

/* The labels file lb (ln bytes read) for `count` images: its header, its count, its size. */
static int idx_labels_check(const char *images, uint32_t count, const char *labels,
                            const uint8_t *lb, size_t ln, struct error *e)
{
    if (idx_header(labels, lb, ln, 0x801, 8, "labels", e))
        return -1;
    if (be32(lb + 4) != count)
        return error_set(e, "images/labels count mismatch: %s has %u images, %s has %u labels",
                         images, count, labels, be32(lb + 4));
    size_t want = 8 + (size_t)count;
    if (ln != want)
        return error_set(e, "%s: %s: %s%zu bytes, expected %zu for the %u labels its header "
                            "declares", labels, ln > want ? "trailing data" : "truncated",
                         ln > want ? "more than " : "", ln > want ? want : ln, want, count);
    return 0;
}

static int idx_load(struct dataset *d, struct file_data *f, const char *images, struct error *e)
{
    char labels[PATH_MAX];
    for (size_t i = 0; i < sizeof known_idx / sizeof *known_idx; i++)
        if (strncmp(images, known_idx[i].dir, strlen(known_idx[i].dir)) == 0 && !exists(images))
            return error_set(e, "%s: missing; Debian's package %s installs it: "
                                "sudo apt-get install %s", images, known_idx[i].package,
                             known_idx[i].package);
    uint8_t *ib = NULL, *lb = NULL;
    size_t in = 0, ln = 0;
    int rc = -1;
    /* the header first, then no more content than it declares (plus one byte
     * to tell a longer file), and never more than this machine's memory */
    if (read_all(images, 16, &ib, &in, e) || idx_labels_path(images, labels, sizeof labels, e))
        goto out; // a missing images file named as such, before its labels
    if (in >= 16 && be32(ib) == 0x00000803 && be32(ib + 8) <= 4096 && be32(ib + 12) <= 4096) {
        uint32_t n = be32(ib + 4);
        unsigned long long want = 16ULL + (unsigned long long)n * be32(ib + 8) * be32(ib + 12),
                           mem = (unsigned long long)sysconf(_SC_PHYS_PAGES) *
                                 (unsigned long long)sysconf(_SC_PAGESIZE);
        if (want > mem) {
            error_set(e, "%s: declares %u images of %ux%u (%llu bytes), more than this machine's "
                         "memory", images, n, be32(ib + 8), be32(ib + 12), want);
            goto out;
        }
        free(ib);
        ib = NULL;
        if (read_all(images, (size_t)want, &ib, &in, e) ||
            read_all(labels, 8 + (size_t)n, &lb, &ln, e))
            goto out;
    } else if (read_all(labels, 8, &lb, &ln, e)) {
        goto out;
    }
    if (idx_header(images, ib, in, 0x803, 16, "images", e))
        goto out;
    uint32_t count = be32(ib + 4), rows = be32(ib + 8), cols = be32(ib + 12);
    if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096 || count == 0) {
        error_set(e, "%s: bad idx dimensions %u images of %ux%u", images, count, rows, cols);
        goto out;
    }
    unsigned long long want = 16ULL + (unsigned long long)count * rows * cols;
    if (in != want) {
        error_set(e, "%s: %s: %s%zu bytes, expected %llu for the %u images of %ux%u its header "
                     "declares", images, in > want ? "trailing data" : "truncated",
                  in > want ? "more than " : "", in > want ? (size_t)want : in, want, count, rows,
                  cols);
        goto out;
    }
    if (idx_labels_check(images, count, labels, lb, ln, e))
        goto out;
    f->c = 1;
    f->h = (int)rows;
    f->w = (int)cols;
    d->length = count;
    f->labels = malloc((size_t)count * sizeof *f->labels);
    f->pixels = malloc((size_t)count * rows * cols);
    if (!f->labels || !f->pixels) {
        error_set(e, "%s: out of memory", images);
        goto out;
    }
    memcpy(f->pixels, ib + 16, (size_t)count * rows * cols);
    int max = 0;
    for (uint32_t i = 0; i < count; i++) {
        f->labels[i] = lb[8 + i];
        if (f->labels[i] > max)
            max = f->labels[i];
    }
    d->classes = max + 1;
    rc = add_source(f, images, e) || add_source(f, labels, e) ? -1 : 0;
out:
    free(ib);
    free(lb);
    return rc;
}

/* ---- cifar10 --------------------------------------------------------------- */

enum { CIFAR_RECORD = 1 + 3072 };

static int cifar_load(struct dataset *d, struct file_data *f, char **files, int n_files,
                      struct error *e)
{
    uint8_t *bufs[8] = {0};
    size_t sizes[8] = {0}, records = 0;
    int rc = -1;
    for (int i = 0; i < n_files; i++) {
        if (read_plain(files[i], 0, &bufs[i], &sizes[i], NULL, e))
            goto out;
        if (sizes[i] == 0) {
            error_set(e, "%s: empty file (0 bytes), expected CIFAR-10 records of %d bytes (1 label "
                         "byte + 3072 pixel bytes)", files[i], CIFAR_RECORD);
            goto out;
        }
        if (sizes[i] % CIFAR_RECORD) {
            error_set(e, "%s: %zu bytes is not a multiple of %d (1 label byte + 3072 pixel bytes "
                         "per record): truncated, its last record has %zu of its %d bytes",
                      files[i], sizes[i], CIFAR_RECORD, sizes[i] % CIFAR_RECORD, CIFAR_RECORD);
            goto out;
        }
        records += sizes[i] / CIFAR_RECORD;
    }
    f->c = 3;
    f->h = f->w = 32;
    d->length = (long)records;
    d->classes = 10;
    f->labels = malloc(records * sizeof *f->labels);
    f->pixels = malloc(records * 3072);
    if (!f->labels || !f->pixels) {
        error_set(e, "cifar10: out of memory");
        goto out;
    }
    size_t k = 0;
    for (int i = 0; i < n_files; i++)
        for (size_t r = 0; r < sizes[i] / CIFAR_RECORD; r++, k++) {
            const uint8_t *rec = bufs[i] + r * CIFAR_RECORD;
            if (rec[0] > 9) {
                error_set(e, "%s: record %zu has label %d, expected 0-9", files[i], r, rec[0]);
                goto out;
            }
            f->labels[k] = rec[0];
            uint8_t *px = f->pixels + k * 3072; // planes (3, 32, 32) -> (32, 32, 3)
            for (int p = 0; p < 1024; p++)
                for (int ch = 0; ch < 3; ch++)
                    px[p * 3 + ch] = rec[1 + ch * 1024 + p];
        }
    rc = 0;
    for (int i = 0; i < n_files && !rc; i++)
        rc = add_source(f, files[i], e);
out:
    for (int i = 0; i < n_files; i++)
        free(bufs[i]);
    return rc;
}

/* ---- folder ---------------------------------------------------------------- */

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

static void free_names(char **v, int n)
{
    for (int i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
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

struct walk {
    struct walked *dirs; // (n) in the order met; sorted by path afterwards
    int n, cap;
    struct { dev_t dev; ino_t ino; int at; } *up; // (depth) the folders above, for loops
    int depth, up_cap;
};

static int cmp_walked(const void *a, const void *b)
{
    return strcmp(((const struct walked *)a)->path, ((const struct walked *)b)->path);
}

static void walk_free(struct walk *w)
{
    for (int i = 0; i < w->n; i++) {
        free(w->dirs[i].path);
        free_names(w->dirs[i].files, w->dirs[i].n_files);
    }
    free(w->dirs);
    free(w->up);
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
            free_names(names, n);
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
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        struct stat s;
        if (!rc && snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path)
            rc = error_set(e, "%s/%s: path too long", dir, names[i]);
        if (!rc && stat(path, &s) == 0 && S_ISDIR(s.st_mode)) { // a folder: walked, not a file
            rc = walk_dir(w, path, e);
            free(names[i]);
        } else if (rc) {
            free(names[i]);
        } else {
            names[files++] = names[i];
        }
    }
    w->depth--;
    w->dirs[at].files = names;
    w->dirs[at].n_files = files;
    return rc;
}

/* Width and height of an image file from its first bytes. */
static int file_header(const char *path, int *w, int *h, struct error *e)
{
    uint8_t *buf;
    size_t n;
    bool whole;
    if (read_plain(path, HEADER_BYTES, &buf, &n, &whole, e))
        return -1;
    int rc = image_header(buf, n, w, h, e);
    free(buf);
    if (rc && !whole) { // a header longer than the prefix: try the whole file
        if (read_plain(path, 0, &buf, &n, NULL, e))
            return -1;
        rc = image_header(buf, n, w, h, e);
        free(buf);
    }
    return rc ? error_wrap(e, "%s", path) : 0;
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

/* torchvision's ImageFolder: the classes are root's folders (symlinks to
 * folders too, hidden ones too), sorted; each class's images are found
 * through the whole tree below its folder (struct walk's order), kept when
 * the name has one of torchvision's image extensions. */
static int folder_load(struct dataset *d, struct file_data *f, const char *root, bool resize,
                       struct error *e)
{
    char **classes = NULL;
    int n_classes = 0;
    struct folder_scan sc = {.resize = resize};
    if (list_dir(root, &classes, &n_classes, e))
        return -1;
    int kept = 0;
    for (int k = 0; k < n_classes; k++) { // class folders only; files at the root are ignored
        char dir[PATH_MAX];
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%s", root, classes[k]);
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
            classes[kept++] = classes[k];
        else
            free(classes[k]);
    }
    n_classes = kept;
    if (n_classes == 0) {
        free(classes);
        return error_set(e, "%s: no class folders (expected ROOT/<class>/<image>)", root);
    }
    f->class_names = classes;
    d->classes = n_classes;
    f->c = 3;
    for (int k = 0; k < n_classes; k++) {
        char dir[PATH_MAX];
        struct walk w = {0};
        long before = d->length;
        int rc = 0;
        snprintf(dir, sizeof dir, "%s/%s", root, classes[k]);
        rc = walk_dir(&w, dir, e);
        qsort(w.dirs, (size_t)w.n, sizeof *w.dirs, cmp_walked);
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

/* ---- labels ---------------------------------------------------------------- */

/* Where sample i's label is, for messages: the labels file and index, the
 * CIFAR-10 file and record, or the image's path. */
static void label_where(const struct file_data *f, long i, char *buf, size_t n)
{
    if (f->kind == FILES_FOLDER) {
        snprintf(buf, n, "%s", f->paths[i]);
    } else if (f->kind == FILES_IDX) {
        snprintf(buf, n, "%s: index %ld (byte %ld)", f->sources[1], i, 8 + i);
    } else {
        long first = 0;
        for (int s = 0; s < f->n_sources; s++) {
            struct stat st;
            long records = stat(f->sources[s], &st) == 0 ? (long)(st.st_size / CIFAR_RECORD) : 0;
            if (i < first + records || s == f->n_sources - 1) {
                snprintf(buf, n, "%s: record %ld", f->sources[s], i - first);
                return;
            }
            first += records;
        }
    }
}

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
    if (f->kind != FILES_IDX)
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
    label_where(f, i, where, sizeof where);
    return error_set(e, "%s: label %d, but no sample has label %d: the labels must number the "
                        "classes 0 to K-1 with none empty (set model.out_features to the number "
                        "of classes if some have no sample)", where, f->labels[i], gap);
}

/* ---- loading --------------------------------------------------------------- */

/* Loads one split at `path`; `train` turns the random transforms on. */
static int load_split(struct dataset *d, const struct config *c, const char *path, bool train,
                      struct error *e)
{
    memset(d, 0, sizeof *d);
    struct file_data *f = calloc(1, sizeof *f);
    if (!f)
        return error_set(e, "out of memory");
    d->files = f;
    const char *kind = c->dataset.kind;
    int rc;
    if (strcmp(kind, "idx") == 0) {
        f->kind = FILES_IDX;
        rc = idx_load(d, f, path, e);
    } else if (strcmp(kind, "cifar10") == 0) {
        f->kind = FILES_CIFAR10;
        char names[5][PATH_MAX], *files[5];
        struct stat st;
        int n = 0;
        if (!train && !(stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
            snprintf(names[n], PATH_MAX, "%s", path); // the eval file itself
            files[n] = names[n];
            n++;
        } else if (!train) {
            snprintf(names[n], PATH_MAX, "%s/test_batch.bin", path);
            files[n] = names[n];
            n++;
        } else {
            for (; n < 5; n++) {
                snprintf(names[n], PATH_MAX, "%s/data_batch_%d.bin", path, n + 1);
                files[n] = names[n];
            }
        }
        rc = cifar_load(d, f, files, n, e);
    } else {
        f->kind = FILES_FOLDER;
        rc = folder_load(d, f, path, c->transform.resize > 0, e);
    }
    if (rc)
        return -1;
    int oh, ow;
    if (transform_init(&f->tf, c, f->c, train, e) ||
        transform_shape(&f->tf, f->h ? f->h : 1, f->w ? f->w : 1, &oh, &ow, e))
        return -1;
    long outputs;
    if (labels_check(d, f, c, train, &outputs, e))
        return -1;
    d->features = f->c * oh * ow;
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
    const char *p = c->dataset.path;
    if (strcmp(c->dataset.kind, "idx") == 0) {
        const char *base = strrchr(p, '/');
        base = base ? base + 1 : p;
        if (strncmp(base, "train", 5) == 0)
            snprintf(out, n, "%.*st10k%s", (int)(base - p), p, base + 5);
    } else if (strcmp(c->dataset.kind, "cifar10") == 0) {
        snprintf(out, n, "%s/test_batch.bin", p);
    }
    if (out[0] && !exists(out))
        out[0] = '\0';
}

/* A dataset that is not there: the `dpbench --make-dataset` command that
 * writes one where dataset.path looks for it, appended to e. Debian's
 * packaged datasets have their own advice (idx_load). */
static void make_dataset_hint(const struct config *c, struct error *e)
{
    const char *kind = c->dataset.kind, *path = c->dataset.path;
    char probe[PATH_MAX], dir[PATH_MAX];
    snprintf(probe, sizeof probe, "%s%s", path,
             strcmp(kind, "cifar10") == 0 ? "/data_batch_1.bin" : "");
    if (exists(probe) || strstr(e->msg, "apt-get install"))
        return;
    /* idx files and a folder's train/ live in the directory --make-dataset writes */
    const char *slash = strrchr(path, '/');
    bool parent = strcmp(kind, "idx") == 0 ||
                  (strcmp(kind, "folder") == 0 && slash && strcmp(slash, "/train") == 0);
    if (!parent)
        snprintf(dir, sizeof dir, "%s", path);
    else if (slash)
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    else
        snprintf(dir, sizeof dir, ".");
    size_t len = strlen(path), used = strlen(e->msg);
    bool gz = len > 3 && strcmp(path + len - 3, ".gz") == 0;
    char tail[PATH_MAX + 64] = "";
    if (strcmp(kind, "folder") == 0 && !parent)
        snprintf(tail, sizeof tail, ", then set dataset.path to %s/train", dir);
    snprintf(e->msg + used, sizeof e->msg - used,
             "; no such dataset: `dpbench --make-dataset %s %s%s` writes one%s", kind, dir,
             gz ? " --gzip" : "", tail);
}

int dataset_files_load(struct dataset *d, const struct config *c, struct error *e)
{
    char ev[PATH_MAX];
    if (load_split(d, c, c->dataset.path, true, e)) {
        make_dataset_hint(c, e);
        dataset_free(d);
        return -1;
    }
    eval_path(c, ev, sizeof ev);
    if (!ev[0])
        return 0;
    struct dataset *v = calloc(1, sizeof *v);
    if (!v) {
        dataset_free(d);
        return error_set(e, "out of memory");
    }
    d->eval = v;
    if (load_split(v, c, ev, false, e)) {
        error_wrap(e, "dataset.eval_path");
        dataset_free(d);
        return -1;
    }
    const struct file_data *tf = d->files, *vf = v->files;
    int rc = 0; // messages first: dataset_free(d) frees v too
    if (v->features != d->features) {
        rc = error_set(e, "dataset.eval_path %s: its samples have %d features, the training "
                          "set's %d (different image sizes?)", ev, v->features, d->features);
    } else if (tf->kind == FILES_FOLDER) {
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
        label_where(vf, i, where, sizeof where);
        rc = error_set(e, "dataset.eval_path: %s: label %d, but the training set has %d classes",
                       where, vf->labels[i], d->out_features);
    }
    if (rc) {
        dataset_free(d);
        return -1;
    }
    v->classes = d->classes;
    v->out_features = d->out_features;
    return 0;
}

/* ---- sizes before loading --------------------------------------------------- */

/* One split's bytes: kept (pixels and labels) and the transient read
 * buffers while loading (idx: read_all's buffer grows by doubling, so up to
 * twice the content; cifar10: every file at once). */
static bool split_size(const struct config *c, const char *path, bool train, long *n, int *h,
                       int *w, int *ch, int *classes, size_t *kept, size_t *transient)
{
    struct error e;
    if (strcmp(c->dataset.kind, "idx") == 0) {
        char labels[PATH_MAX];
        uint8_t *hd = NULL, *lb = NULL;
        size_t hn = 0, ln = 0;
        if (idx_labels_path(path, labels, sizeof labels, &e) || read_all(path, 16, &hd, &hn, &e))
            return false;
        bool ok = hn >= 16 && be32(hd) == 0x00000803 && be32(hd + 8) - 1 < 4096 &&
                  be32(hd + 12) - 1 < 4096 && be32(hd + 4) > 0;
        if (ok) {
            *n = be32(hd + 4), *h = (int)be32(hd + 8), *w = (int)be32(hd + 12), *ch = 1;
            ok = read_all(labels, 8 + (size_t)*n, &lb, &ln, &e) == 0 && ln == 8 + (size_t)*n;
        }
        free(hd);
        *classes = 0;
        for (size_t i = 8; ok && i < ln; i++)
            if (lb[i] >= *classes)
                *classes = lb[i] + 1;
        free(lb);
        size_t px = (size_t)*n * (size_t)*h * (size_t)*w;
        *kept = px + (size_t)*n * sizeof(int32_t);
        *transient = 2 * (16 + px) + 8 + (size_t)*n;
        return ok;
    }
    if (strcmp(c->dataset.kind, "cifar10") != 0)
        return false;
    struct stat st;
    size_t bytes = 0;
    bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    for (int k = 1; k <= (train ? 5 : 1); k++) {
        char file[PATH_MAX];
        if (train)
            snprintf(file, sizeof file, "%s/data_batch_%d.bin", path, k);
        else
            snprintf(file, sizeof file, dir ? "%s/test_batch.bin" : "%s", path);
        if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
            return false;
        bytes += (size_t)st.st_size;
    }
    *n = (long)(bytes / CIFAR_RECORD), *h = *w = 32, *ch = 3, *classes = 10;
    *kept = (size_t)*n * (3072 + sizeof(int32_t));
    *transient = bytes;
    return true;
}

bool dataset_files_size(const struct config *c, struct files_size *s)
{
    long n, vn;
    int h, w, ch, classes, vh, vw, vch, vclasses, oh, ow;
    size_t kept, transient, vkept = 0, vtransient = 0;
    char ev[PATH_MAX];
    struct transform tf;
    struct error e;
    if (!split_size(c, c->dataset.path, true, &n, &h, &w, &ch, &classes, &kept, &transient) ||
        transform_init(&tf, c, ch, true, &e) || transform_shape(&tf, h, w, &oh, &ow, &e))
        return false;
    eval_path(c, ev, sizeof ev);
    if (ev[0] && !split_size(c, ev, false, &vn, &vh, &vw, &vch, &vclasses, &vkept, &vtransient))
        vkept = vtransient = 0; // loading reports a bad eval split
    s->length = n;
    s->features = ch * oh * ow;
    s->classes = classes;
    s->bytes = kept + vkept + (transient > vtransient ? transient : vtransient);
    return true;
}

/* ---- samples --------------------------------------------------------------- */

int dataset_files_get(const struct dataset *d, long i, long epoch, float *x, float *y,
                      long *bytes_read, struct error *e)
{
    const struct file_data *f = d->files;
    memset(y, 0, (size_t)d->out_features * sizeof(float));
    y[f->labels[i]] = 1.0f;
    if (f->kind != FILES_FOLDER) {
        const uint8_t *px = f->pixels + (size_t)i * (size_t)(f->h * f->w * f->c);
        return transform_apply(&f->tf, px, f->h, f->w, epoch, i, x, e);
    }
    uint8_t *buf, *rgb;
    size_t n;
    int w, h;
    const char *path = f->paths[i];
    if (read_plain(path, 0, &buf, &n, NULL, e))
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
    long n = f->kind == FILES_FOLDER ? d->length : f->n_sources;
    for (long i = 0; i < n; i++) {
        const char *path = f->kind == FILES_FOLDER ? f->paths[i] : f->sources[i];
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
    free_names(f->class_names, d->classes);
    free_names(f->sources, f->n_sources);
    free(f->pixels);
    free(f->labels);
    free(f);
    d->files = NULL;
}
