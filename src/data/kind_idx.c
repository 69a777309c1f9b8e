/* dataset.kind idx: MNIST / Fashion-MNIST idx files, plain or gzip, loaded
 * up front. dataset.path is the *-images-idx3-ubyte[.gz] file; its labels
 * file lies beside it; the eval split is t10k* beside a train* file. */
#include "dataset_kind.h"

#include <errno.h>
#include <zlib.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "files.h"
#include "gen.h"


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
    if (files_exist(out))
        return 0;
    snprintf(out, n, "%.*slabels-idx1-ubyte%s", (int)pre, images, gz ? "" : ".gz");
    if (files_exist(out))
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
              : files_be32(b) == magic && n < size)
        return error_set(e, "%s: truncated: %zu bytes, shorter than an idx %s file's %zu-byte "
                            "header", path, n, what, size);
    if (n < 4 || files_be32(b) != magic)
        return error_set(e, "%s: not an idx %s file (it starts with 0x%08x, expected 0x%08x)",
                         path, what, n >= 4 ? files_be32(b) : 0, magic);
    return 0;
}

/* The labels file lb (ln bytes read) for `count` images: its header, its count, its size. */
static int idx_labels_check(const char *images, uint32_t count, const char *labels,
                            const uint8_t *lb, size_t ln, struct error *e)
{
    if (idx_header(labels, lb, ln, 0x801, 8, "labels", e))
        return -1;
    if (files_be32(lb + 4) != count)
        return error_set(e, "images/labels count mismatch: %s has %u images, %s has %u labels",
                         images, count, labels, files_be32(lb + 4));
    size_t want = 8 + (size_t)count;
    if (ln != want)
        return error_set(e, "%s: %s: %s%zu bytes, expected %zu for the %u labels its header "
                            "declares", labels, ln > want ? "trailing data" : "truncated",
                         ln > want ? "more than " : "", ln > want ? want : ln, want, count);
    return 0;
}

/* Whether images is a plain file shorter than `want` bytes (truncated, then,
 * whatever its header declares: reading it costs only what it holds). */
static bool plain_and_shorter(const char *images, unsigned long long want)
{
    uint8_t *b = NULL;
    size_t n = 0;
    bool whole, gz = files_read_plain(images, 2, &b, &n, &whole, &(struct error){{0}}) ||
                     (n == 2 && b[0] == 0x1f && b[1] == 0x8b);
    struct stat st;
    free(b);
    return !gz && stat(images, &st) == 0 && (unsigned long long)st.st_size < want;
}

/* The images file and its labels (whose path goes to labels) into *ib and
 * *lb: the header first, then no more content than it declares (plus one
 * byte to tell a longer file), and never more than this machine's memory
 * (a plain file shorter than its header declares is read: it is truncated).
 * The caller frees both, whatever the result. */
static int idx_read(const char *images, char *labels, size_t labels_n, uint8_t **ib, size_t *in,
                    uint8_t **lb, size_t *ln, struct error *e)
{
    if (files_read_all(images, 16, ib, in, e) || idx_labels_path(images, labels, labels_n, e))
        return -1; // a missing images file named as such, before its labels
    const uint8_t *h = *ib;
    if (*in < 16 || files_be32(h) != 0x00000803 || files_be32(h + 8) > 4096 ||
        files_be32(h + 12) > 4096)
        return files_read_all(labels, 8, lb, ln, e); // idx_header says what is wrong
    uint32_t n = files_be32(h + 4), rows = files_be32(h + 8), cols = files_be32(h + 12);
    unsigned long long want = 16ULL + (unsigned long long)n * rows * cols,
                       mem = (unsigned long long)sysconf(_SC_PHYS_PAGES) *
                             (unsigned long long)sysconf(_SC_PAGESIZE);
    if (want > mem && !plain_and_shorter(images, want))
        return error_set(e, "%s: declares %u images of %ux%u (%llu bytes), more than this "
                            "machine's memory", images, n, rows, cols, want);
    free(*ib);
    *ib = NULL;
    return files_read_all(images, (size_t)want, ib, in, e) ||
                   files_read_all(labels, 8 + (size_t)n, lb, ln, e)
               ? -1
               : 0;
}

static int idx_load(struct dataset *d, struct file_data *f, const char *images, bool train,
                    bool resize, struct error *e)
{
    (void)train, (void)resize;
    char labels[PATH_MAX];
    for (size_t i = 0; i < sizeof known_idx / sizeof *known_idx; i++)
        if (strncmp(images, known_idx[i].dir, strlen(known_idx[i].dir)) == 0 && !files_exist(images))
            return error_set(e, "%s: missing; Debian's package %s installs it: "
                                "sudo apt-get install %s", images, known_idx[i].package,
                             known_idx[i].package);
    uint8_t *ib = NULL, *lb = NULL;
    size_t in = 0, ln = 0;
    int rc = -1;
    if (idx_read(images, labels, sizeof labels, &ib, &in, &lb, &ln, e))
        goto out;
    if (idx_header(images, ib, in, 0x803, 16, "images", e))
        goto out;
    uint32_t count = files_be32(ib + 4), rows = files_be32(ib + 8), cols = files_be32(ib + 12);
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
    rc = files_add_source(f, images, e) || files_add_source(f, labels, e) ? -1 : 0;
out:
    free(ib);
    free(lb);
    return rc;
}

/* One split's sizes: read_all's buffer grows by doubling, so up to twice
 * the content is held while loading. */
static bool idx_size(const char *path, bool train, struct split_size *s)
{
    (void)train;
    struct error e;
    char labels[PATH_MAX];
    uint8_t *hd = NULL, *lb = NULL;
    size_t hn = 0, ln = 0;
    if (idx_labels_path(path, labels, sizeof labels, &e) || files_read_all(path, 16, &hd, &hn, &e))
        return false;
    bool ok = hn >= 16 && files_be32(hd) == 0x00000803 && files_be32(hd + 8) - 1 < 4096 &&
              files_be32(hd + 12) - 1 < 4096 && files_be32(hd + 4) > 0;
    if (ok) {
        s->length = files_be32(hd + 4), s->h = (int)files_be32(hd + 8), s->w = (int)files_be32(hd + 12), s->c = 1;
        ok = files_read_all(labels, 8 + (size_t)s->length, &lb, &ln, &e) == 0 &&
             ln == 8 + (size_t)s->length;
    }
    free(hd);
    s->classes = 0;
    for (size_t i = 8; ok && i < ln; i++)
        if (lb[i] >= s->classes)
            s->classes = lb[i] + 1;
    free(lb);
    size_t px = (size_t)s->length * (size_t)s->h * (size_t)s->w;
    s->kept = px + (size_t)s->length * sizeof(int32_t);
    s->transient = 2 * (16 + px) + 8 + (size_t)s->length;
    return ok && !plain_and_shorter(path, 16 + (unsigned long long)px); // truncated: the load says so
}

/* train*-images-idx3-ubyte[.gz] -> t10k*-images-idx3-ubyte[.gz] */
static void idx_eval_path(const char *p, char *out, size_t n)
{
    const char *base = strrchr(p, '/');
    base = base ? base + 1 : p;
    if (strncmp(base, "train", 5) == 0)
        snprintf(out, n, "%.*st10k%s", (int)(base - p), p, base + 5);
}

static void idx_label_where(const struct file_data *f, long i, char *buf, size_t n)
{
    snprintf(buf, n, "%s: index %ld (byte %ld)", f->sources[1], i, 8 + i);
}

/* ---- --make-dataset idx ------------------------------------------------ */

/* A gzip write error with its cause: the system's (a full disk, EFBIG) or zlib's. */
static int gz_failed(gzFile z, const char *path, struct error *e)
{
    int err = errno, zerr;
    const char *msg = gzerror(z, &zerr);
    if (zerr == Z_ERRNO)
        return gen_write_failed(path, " (gzip)", err, e);
    return error_set(e, "%s: cannot write (gzip): %s", path, msg);
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* One idx pair (images + labels), plain or gzip. */
static int write_idx(const struct gen *g, const char *prefix, int per_class, uint64_t base,
                     struct error *e)
{
    uint32_t n = (uint32_t)per_class * (uint32_t)g->classes;
    size_t img = (size_t)g->w * g->h;
    uint8_t *images = malloc(16 + (size_t)n * img), *labels = malloc(8 + (size_t)n);
    int rc = 0;
    if (!images || !labels) {
        free(images);
        free(labels);
        return error_set(e, "out of memory");
    }
    put_be32(images, 0x803), put_be32(images + 4, n);
    put_be32(images + 8, (uint32_t)g->h), put_be32(images + 12, (uint32_t)g->w);
    put_be32(labels, 0x801), put_be32(labels + 4, n);
    for (uint32_t j = 0; j < n && !stop_requested(); j++) {
        int k = (int)(j % (uint32_t)g->classes);
        labels[8 + j] = (uint8_t)k;
        gen_image(g, k, base + j, 1, images + 16 + (size_t)j * img);
    }
    const char *what[2] = {"images-idx3-ubyte", "labels-idx1-ubyte"};
    const uint8_t *data[2] = {images, labels};
    size_t size[2] = {16 + (size_t)n * img, 8 + (size_t)n};
    for (int i = 0; i < 2 && !rc && !stop_requested(); i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s-%s%s", g->dir, prefix, what[i], g->gzip ? ".gz" : "");
        if (g->gzip) {
            gzFile z = gzopen(path, "wb");
            if (!z)
                rc = gen_write_failed(path, "", errno, e);
            else if (gzwrite(z, data[i], (unsigned)size[i]) != (int)size[i])
                rc = gz_failed(z, path, e);
            errno = 0;
            if (z && gzclose(z) != Z_OK && !rc)
                rc = gen_write_failed(path, " (gzip)", errno ? errno : EIO, e);
        } else {
            FILE *f = fopen(path, "wb");
            if (!f)
                rc = gen_write_failed(path, "", errno, e);
            else
                rc = gen_close_file(f, path, gen_write_bytes(f, data[i], size[i], path, e), e);
        }
    }
    free(images);
    free(labels);
    return rc;
}

static int idx_make_check(struct gen *g, bool sized, struct error *e)
{
    if (!sized)
        g->w = g->h = 28;
    if (g->w > 4096 || g->h > 4096)
        return error_set(e, "--make-dataset idx --size: at most 4096x4096 (what dataset.kind "
                            "idx reads), found %dx%d", g->w, g->h);
    return 0;
}

static int idx_make_write(const struct gen *g, struct error *e)
{
    uint64_t eval_base = gen_eval_base(g);
    int rc = write_idx(g, "train", g->per_class, 0, e);
    if (!rc && g->eval_per_class)
        rc = write_idx(g, "t10k", g->eval_per_class, eval_base, e);
    return rc;
}

static const struct kind_maker idx_maker = {idx_make_check, idx_make_write,
                                            "train-images-idx3-ubyte", " format quality "};

const struct dataset_kind dataset_kind_idx = {
    .name = "idx",
    .labelled = true,
    .load = idx_load,
    .size = idx_size,
    .eval_path = idx_eval_path,
    .label_where = idx_label_where,
    .dense_labels = true,
    .made_in = MADE_IN_PARENT,
    .make = &idx_maker,
};
