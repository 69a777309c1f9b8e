/* dataset.kind cifar10: the CIFAR-10 binary batches, loaded up front.
 * dataset.path is their directory; the eval split is its test batch, or
 * dataset.eval_path's directory or file. */
#include "dataset_kind.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dataset.h"
#include "files.h"
#include "gen.h"

const char *const cifar10_train_files[CIFAR10_TRAIN_FILES] = {
    "data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
    "data_batch_5.bin"};
const char cifar10_test_file[] = "test_batch.bin";

enum { CIFAR_RECORD = 1 + 3072 };

static int cifar_read(struct dataset *d, struct file_data *f, char **files, int n_files,
                      struct error *e)
{
    uint8_t *bufs[8] = {0};
    size_t sizes[8] = {0}, records = 0;
    int rc = -1;
    for (int i = 0; i < n_files; i++) {
        if (files_read_plain(files[i], 0, &bufs[i], &sizes[i], NULL, e))
            goto out;
        if (sizes[i] == 0) {
            error_set(e, "%s: empty file (0 bytes), expected CIFAR-10 records of %d bytes (1 label "
                         "byte + 3072 pixel bytes)", files[i], CIFAR_RECORD);
            goto out;
        }
        if (sizes[i] % CIFAR_RECORD) { // CIFAR-100's records have two label bytes
            error_set(e, "%s: %zu bytes is not a multiple of %d (1 label byte + 3072 pixel bytes "
                         "per record): %s, its last record has %zu of its %d bytes", files[i],
                      sizes[i], CIFAR_RECORD, sizes[i] % (CIFAR_RECORD + 1) ? "truncated" :
                      "CIFAR-100's binary file (3074-byte records), which dpbench does not read? "
                      "else truncated", sizes[i] % CIFAR_RECORD, CIFAR_RECORD);
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
        rc = files_add_source(f, files[i], e);
out:
    for (int i = 0; i < n_files; i++)
        free(bufs[i]);
    return rc;
}

/* The split's files: the five training batches, else the test batch in
 * path or the file path itself. */
static int cifar_files(const char *path, bool train, char names[][PATH_MAX])
{
    struct stat st;
    if (train) {
        for (int k = 0; k < CIFAR10_TRAIN_FILES; k++)
            snprintf(names[k], PATH_MAX, "%s/%s", path, cifar10_train_files[k]);
        return CIFAR10_TRAIN_FILES;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(names[0], PATH_MAX, "%s/%s", path, cifar10_test_file);
    else
        snprintf(names[0], PATH_MAX, "%s", path); // the eval file itself
    return 1;
}

static int cifar_load(struct dataset *d, struct file_data *f, const char *path, bool train,
                      bool resize, struct error *e)
{
    (void)resize;
    char names[CIFAR10_TRAIN_FILES][PATH_MAX], *files[CIFAR10_TRAIN_FILES];
    struct stat st;
    const char *slash = strrchr(path, '/');
    if (train && stat(path, &st) == 0 && S_ISREG(st.st_mode)) // one of the batches, say
        return error_set(e, "%s: a file, where cifar10 reads the folder that holds "
                            "data_batch_1.bin to data_batch_5.bin and test_batch.bin: set the "
                            "path to its folder (%.*s)", path,
                         slash ? (int)(slash == path ? 1 : slash - path) : 1, slash ? path : ".");
    int n = cifar_files(path, train, names);
    for (int k = 0; k < n; k++)
        files[k] = names[k];
    return cifar_read(d, f, files, n, e);
}

/* One split's sizes: every file is read at once while loading. */
static bool cifar_size(const char *path, bool train, struct split_size *s)
{
    char names[CIFAR10_TRAIN_FILES][PATH_MAX];
    int n = cifar_files(path, train, names);
    size_t bytes = 0;
    for (int k = 0; k < n; k++) {
        struct stat st;
        if (stat(names[k], &st) != 0 || !S_ISREG(st.st_mode))
            return false;
        bytes += (size_t)st.st_size;
    }
    s->length = (long)(bytes / CIFAR_RECORD), s->h = s->w = 32, s->c = 3, s->classes = 10;
    s->kept = (size_t)s->length * (3072 + sizeof(int32_t));
    s->transient = bytes;
    return true;
}

static void cifar_eval_path(const char *path, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", path, cifar10_test_file);
}

/* The file and record of sample i. */
static void cifar_label_where(const struct file_data *f, long i, char *buf, size_t n)
{
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

/* ---- --make-dataset cifar10 -------------------------------------------- */

/* CIFAR-10 binary: files[i] takes samples j with j % n_files == i. */
static int write_cifar(const struct gen *g, const char *const *names, int n_files,
                       int per_class, uint64_t base, struct error *e)
{
    uint8_t px[3072], rec[3073];
    long total = (long)per_class * g->classes;
    for (int i = 0; i < n_files; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", g->dir, names[i]);
        FILE *f = fopen(path, "wb");
        if (!f)
            return gen_write_failed(path, "", errno, e);
        int rc = 0;
        for (long j = i; j < total && !rc && !stop_requested(); j += n_files) {
            int k = (int)(j % g->classes);
            gen_image(g, k, base + (uint64_t)j, 3, px);
            rec[0] = (uint8_t)k;
            for (int p = 0; p < 1024; p++) // (32, 32, 3) -> planes R, G, B
                for (int ch = 0; ch < 3; ch++)
                    rec[1 + ch * 1024 + p] = px[p * 3 + ch];
            rc = gen_write_bytes(f, rec, sizeof rec, path, e);
        }
        if (gen_close_file(f, path, rc, e))
            return -1;
    }
    return 0;
}

static int cifar_make_check(struct gen *g, bool sized, struct error *e)
{
    if (g->gzip)
        return error_set(e, "--make-dataset cifar10: --gzip is for idx files");
    if ((sized && (g->w != 32 || g->h != 32)) || g->classes != 10)
        return error_set(e, "--make-dataset cifar10: the format is 10 classes of 32x32");
    g->w = g->h = 32;
    return 0;
}

static int cifar_make_write(const struct gen *g, struct error *e)
{
    uint64_t eval_base = gen_eval_base(g);
    const char *const test[] = {cifar10_test_file};
    int rc = write_cifar(g, cifar10_train_files, CIFAR10_TRAIN_FILES, g->per_class, 0, e);
    if (!rc && g->eval_per_class)
        rc = write_cifar(g, test, 1, g->eval_per_class, eval_base, e);
    return rc;
}

static const struct kind_maker cifar10_maker = {cifar_make_check, cifar_make_write, "",
                                                 " format quality "}; // raw bytes, no codec

const struct dataset_kind dataset_kind_cifar10 = {
    .name = "cifar10",
    .labelled = true,
    .load = cifar_load,
    .size = cifar_size,
    .eval_path = cifar_eval_path,
    .label_where = cifar_label_where,
    .probe = &cifar10_train_files[0],
    .made_in = MADE_IN_PATH,
    .make = &cifar10_maker,
};
