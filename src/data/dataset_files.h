/* The labelled, file-backed dataset kinds behind struct dataset (idx,
 * cifar10, folder: kind_*.c): loading both splits through the kind, the
 * checks they share, and per-sample access. Everything that can be checked
 * before training is checked at load. */
#ifndef DPBENCH_DATASET_FILES_H
#define DPBENCH_DATASET_FILES_H

#include <stdbool.h>

#include "dataset.h"
#include "transform.h"

/* What a labelled dataset will hold in memory, found from its headers alone
 * (idx: the header's count and dims, so a gzip file's decompressed size;
 * cifar10: the files' sizes), both splits, for the memory estimate before
 * anything is loaded. */
struct files_size {
    long length;   // training samples
    int features;  // floats per sample after the transforms
    int classes;
    size_t bytes;  // peak host bytes of loading both splits and keeping them
};
/* false when the sizes cannot be found (folder, or a file missing or
 * malformed: loading reports why). */
bool dataset_files_size(const struct config *c, struct files_size *s);
/* c's transforms against its files' image size, from their headers: -1 with
 * e set where they cannot apply (a crop larger than the padded image); 0
 * also where the sizes cannot be found (loading reports why). */
int dataset_files_check(const struct config *c, struct error *e);

/* dataset.make: when the dataset is not at dataset.path, writes it with
 * the key's --make-dataset options into the folder dataset.path lies in,
 * saying so on stderr (a lock on that folder: concurrent runs make it once).
 * 0 when there was nothing to do. */
int dataset_files_make(const struct config *c, struct error *e);
/* Loads dataset.path and the eval split; on failure the caller frees d. */
int dataset_files_load(struct dataset *d, const struct config *c, struct error *e);
int dataset_files_get(const struct dataset *d, long i, long epoch, float *x, float *y,
                      long *bytes_read, struct error *e);
/* Sample i's random transform choices in `epoch` (what transform_apply
 * draws for it); false when the split's transforms draw none. */
bool dataset_files_choice(const struct dataset *d, long i, long epoch,
                          struct transform_choice *ch);
int dataset_files_drop_cache(const struct dataset *d, struct error *e);
void dataset_files_free(struct dataset *d);

#endif
