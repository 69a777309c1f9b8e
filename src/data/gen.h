/* dpbench --make-dataset KIND DIR [options], and the config's dataset.make:
 * writes a learnable labelled dataset for tests, benchmarks and users
 * without data at hand. gen.c parses the options, draws the images and
 * stages the files; each kind that can be made writes its own format
 * (its struct dataset_kind's .make, in kind_*.c). */
#ifndef DPBENCH_GEN_H
#define DPBENCH_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "image.h"
#include "util.h"

struct dataset_kind;

/* What to write: the options, with each kind's defaults filled in. */
struct gen {
    const struct dataset_kind *kind;
    const char *dir; // where the kind writes: the staging folder
    int classes, per_class, eval_per_class;
    int w, h, quality;
    enum image_format format;
    unsigned long seed;
    bool gzip;
};

/* A kind's writer. check fills the kind's defaults (sized: --size was
 * given) and refuses what the format cannot hold or what is already at
 * g->dir ("": the options alone are checked); write writes the training
 * split and then eval_per_class samples per class (from gen_eval_base on)
 * into g->dir, stopping at stop_requested(). */
struct kind_maker {
    int (*check)(struct gen *g, bool sized, struct error *e);
    int (*write)(const struct gen *g, struct error *e);
    const char *train_name; // what dataset.path names in DIR ("": DIR itself)
    const char *unused;     // options it has no use for, refused: " format quality " (spaced)
};

/* Sample `index` of class cls, c channels, into px (h, w, c). */
void gen_image(const struct gen *g, int cls, uint64_t index, int c, uint8_t *px);
/* The first eval sample's index: after every training sample, so they differ. */
uint64_t gen_eval_base(const struct gen *g);
int gen_mkdir(const char *path, struct error *e);
/* A write to path that failed with err (how: "" or " (gzip)"); a file past
 * RLIMIT_FSIZE (EFBIG) names the limit. */
int gen_write_failed(const char *path, const char *how, int err, struct error *e);
int gen_write_bytes(FILE *f, const void *p, size_t n, const char *path, struct error *e);
/* fclose, reporting its failure unless rc already failed; returns rc or -1. */
int gen_close_file(FILE *f, const char *path, int rc, struct error *e);

/* argv[0] is "--make-dataset"; returns the exit status (0, 1, 2 or 128 + a
 * signal). */
int gen_main(int argc, char **argv);
void gen_usage(FILE *f);
/* dataset.make: spec is "KIND [options]" as --make-dataset takes them
 * (checked by gen_spec_check when the config is read); writes into dir.
 * Returns 0, or -1 with e (a stop request: e says so and nothing is left
 * in dir). */
int gen_make(const char *spec, const char *dir, struct error *e);
/* Whether spec parses; the kind it makes in *kind, and the training split's
 * name in the folder it writes (what dataset.path names there; "": the
 * folder itself) in name. */
int gen_spec_check(const char *spec, const struct dataset_kind **kind, char *name, size_t n,
                   struct error *e);

#endif
