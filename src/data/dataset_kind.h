/* The dataset kinds (dataset.kind): one struct each, in its own file
 * (kind_random.c, kind_idx.c, kind_cifar10.c, kind_folder.c), registered in
 * dataset_kinds.c's table. The config's allowed values, the loaders and
 * every decision about a kind read that table; no other file spells a kind's
 * name. The labelled kinds fill struct file_data (files.h) for one split at
 * a time; dataset_files.c does what they share (transforms, labels, the eval
 * split, samples). */
#ifndef DPBENCH_DATASET_KIND_H
#define DPBENCH_DATASET_KIND_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

struct config;
struct dataset;
struct file_data;
struct kind_maker;

/* One split's sizes from its headers, before anything is loaded. */
struct split_size {
    long length;      // samples
    int h, w, c;      // stored image shape
    int classes;
    size_t kept;      // bytes kept: pixels and labels
    size_t transient; // bytes of the read buffers while loading
};

/* Where `dpbench --make-dataset KIND DIR` writes a dataset that
 * dataset.path names: DIR itself, the folder holding the file, or the
 * folder holding DIR/train (else DIR itself, then dataset.path is DIR/train). */
enum kind_made_in { MADE_IN_PATH, MADE_IN_PARENT, MADE_IN_PARENT_OF_TRAIN };

struct dataset_kind {
    const char *name; // dataset.kind
    bool labelled;    // labelled files at dataset.path (images, classes); else built in memory
    /* random: builds d from the config (seed, shapes) on `threads` threads;
     * d is zeroed and its arrays are left for dataset_free on failure. */
    int (*build)(struct dataset *d, const struct config *c, int threads, struct error *e);
    /* labelled files at dataset.path: loads one split at path (train: the
     * training split, else the eval split) into d (length, classes) and f
     * (stored shape, labels, pixels or paths, sources); what it allocated is
     * left for dataset_files_free on failure. */
    int (*load)(struct dataset *d, struct file_data *f, const char *path, bool train,
                bool resize, struct error *e);
    /* one split's sizes from its headers; NULL or false: unknown (loading
     * reports why) */
    bool (*size)(const char *path, bool train, struct split_size *s);
    /* the default eval split beside the training split at path, "" when the
     * kind has none; NULL: none */
    void (*eval_path)(const char *path, char *out, size_t n);
    /* where sample i's label is, for messages */
    void (*label_where)(const struct file_data *f, long i, char *buf, size_t n);
    bool dense_labels;       // the labels alone number the classes: 0 to K-1, none empty
    const char *const *probe; // a file in dataset.path that the dataset has (NULL: the path)
    enum kind_made_in made_in;
    const struct kind_maker *make; // what --make-dataset KIND writes (gen.h); NULL: none
};

extern const struct dataset_kind dataset_kind_random, dataset_kind_idx, dataset_kind_cifar10,
    dataset_kind_folder;

/* The CIFAR-10 binary batches, named once: the training files and the test file. */
enum { CIFAR10_TRAIN_FILES = 5 };
extern const char *const cifar10_train_files[CIFAR10_TRAIN_FILES];
extern const char cifar10_test_file[];

/* The kind called name, NULL if none. */
const struct dataset_kind *dataset_kind_find(const char *name);
/* The table's i-th name, NULL past the last (the config's choices). */
const char *dataset_kind_name(size_t i);
/* The config's kind (dataset.kind is checked against the table). */
const struct dataset_kind *dataset_kind_of(const struct config *c);

#endif
