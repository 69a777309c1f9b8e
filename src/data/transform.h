/* torchvision's image transforms, in its order: Resize(N) + CenterCrop(N),
 * RandomCrop(N, padding=P), RandomHorizontalFlip(0.5), ToTensor, Normalize.
 * Input is 8-bit (h, w, c); output floats (c, out_h, out_w) in [0, 1], then
 * normalised. The random choices come from a stream seeded by (seed, epoch,
 * sample index), so a sample looks the same whichever thread loads it. */
#ifndef DPBENCH_TRANSFORM_H
#define DPBENCH_TRANSFORM_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

struct config;

struct transform {
    int resize;          // shorter side to N then centre crop N x N, 0 = off
    int crop, pad;       // random crop N x N after zero padding P, 0 = off
    bool hflip;          // p = 0.5
    int channels;        // c of the input and output
    float mean[4], std[4]; // (channels) identity when not configured
    bool random;         // false: crop/flip off (evaluation), as a test transform
    unsigned long seed;
};

/* Fills t from the config for images of `channels`; checks mean/std lengths. */
int transform_init(struct transform *t, const struct config *c, int channels, bool random,
                   struct error *e);

/* Output height and width for an input of h x w; error when the crop does
 * not fit. */
int transform_shape(const struct transform *t, int h, int w, int *out_h, int *out_w,
                    struct error *e);

/* One sample's random choices: the crop's offsets in the padded image (as
 * torchvision's RandomCrop draws i, j) and the flip. */
struct transform_choice {
    int top, left; // 0 <= top <= h + 2 pad - crop; = pad without a crop
    bool flip;
};

/* The choices for sample `index` in `epoch` of an h x w input (after the
 * resize): a splitmix64/xoshiro256** stream for (seed, RNG_AUGMENT,
 * epoch << 40 ^ index) draws top = below(h + 2 pad - crop + 1), then left =
 * below(w + 2 pad - crop + 1) (crop only), then flip = uniform() < 0.5
 * (hflip only). Not random (evaluation): the centre crop, no flip. */
void transform_choose(const struct transform *t, int h, int w, long epoch, long index,
                      struct transform_choice *ch);
/* Whether the transforms draw random choices (crop or hflip on a training split). */
bool transform_is_random(const struct transform *t);

/* Applies the transforms to src (h, w, channels) into out (channels, oh, ow)
 * for sample `index` of epoch `epoch`. Returns -1 only when out of memory. */
int transform_apply(const struct transform *t, const uint8_t *src, int h, int w, long epoch,
                    long index, float *out, struct error *e);

#endif
