/* What the labelled, file-backed dataset kinds share: struct file_data (one
 * split's images and labels) and the file readers. */
#ifndef DPBENCH_FILES_H
#define DPBENCH_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transform.h"
#include "util.h"

struct dataset_kind;

struct file_data {
    const struct dataset_kind *kind;
    int c, h, w;          // stored image shape; folder with resize: h = w = 0 (sizes vary)
    int oh, ow;           // a sample's height and width after the transforms
    uint8_t *pixels;      // (length, h, w, c) idx and cifar10, in memory
    int32_t *labels;      // (length) class of each sample
    char **paths;         // (length) folder: the image files, each decoded when read
    char **class_names;   // (classes) folder: the class folder names, sorted
    char **sources;       // (n_sources) every file read, for drop_cache
    int n_sources;
    struct transform tf;
};

int files_add_source(struct file_data *f, const char *path, struct error *e);
/* Reads a file (gzip-compressed or plain), at most `max` bytes of its
 * content, so that a small gzip file cannot expand without bound (*n = max
 * + 1 flags more). gzip as Python's gzip module reads it: members one after
 * another, zero bytes after one; truncated data or trailing garbage is an
 * error. */
int files_read_all(const char *path, size_t max, uint8_t **buf, size_t *n, struct error *e);
/* Reads at most `max` bytes of a plain file (all of it when max is 0). */
int files_read_plain(const char *path, size_t max, uint8_t **buf, size_t *n, bool *whole,
                     struct error *e);
uint32_t files_be32(const uint8_t *p);
bool files_exist(const char *path);
void files_free_names(char **v, int n);
/* An exclusive lock (flock) on the folder path would be made in: its
 * parent, or the nearest ancestor that exists; waits for another holder,
 * ends at a stop request. Returns the descriptor, or -1 with e. */
int files_lock_dir(const char *path, struct error *e);
void files_unlock_dir(int fd);

#endif
