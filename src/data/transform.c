/* Image transforms. The resize is PIL's bilinear filter (a triangle whose
 * support grows with the downscale factor, i.e. antialiased), done as PIL
 * does it for 8-bit images: two separable passes (horizontal first) with
 * weights in 22-bit fixed point and rounding to 8 bits between them, so the
 * pixels are PIL's exactly; only the centre crop it feeds is computed. */
#include "transform.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "rng.h"

int transform_init(struct transform *t, const struct config *c, int channels, bool random,
                   struct error *e)
{
    memset(t, 0, sizeof *t);
    t->resize = (int)c->transform.resize;
    t->crop = (int)c->transform.crop;
    t->pad = (int)c->transform.pad;
    t->hflip = c->transform.hflip;
    t->channels = channels;
    t->random = random;
    t->seed = (unsigned long)c->seed;
    const struct float_list *m = &c->transform.mean, *s = &c->transform.std;
    for (int k = 0; k < channels; k++) {
        t->mean[k] = 0.0f;
        t->std[k] = 1.0f;
    }
    if (m->n == 0)
        return 0;
    if ((m->n != 1 && m->n != channels) || (s->n != 1 && s->n != channels))
        return error_set(e, "transform.mean/std: expected 1 or %d values (the images have %d "
                            "channel%s), found %d and %d",
                         channels, channels, channels == 1 ? "" : "s", m->n, s->n);
    for (int k = 0; k < channels; k++) {
        t->mean[k] = (float)m->v[m->n == 1 ? 0 : k];
        t->std[k] = (float)s->v[s->n == 1 ? 0 : k];
    }
    return 0;
}

/* The resized size: shorter side to n, the longer one scaled (truncated), as
 * torchvision computes it. */
static void resized(int n, int h, int w, int *rh, int *rw)
{
    if (h <= w) {
        *rh = n;
        *rw = (int)((long)n * w / h);
    } else {
        *rw = n;
        *rh = (int)((long)n * h / w);
    }
}

int transform_shape(const struct transform *t, int h, int w, int *out_h, int *out_w,
                    struct error *e)
{
    if (t->resize)
        h = w = t->resize;
    if (t->crop) {
        if (t->crop > h + 2 * t->pad || t->crop > w + 2 * t->pad)
            return error_set(e, "transform.crop: %d is larger than the %dx%d image padded by %d",
                             t->crop, w, h, t->pad);
        h = w = t->crop;
    }
    *out_h = h;
    *out_w = w;
    return 0;
}

/* Triangle-filter weights of output pixels [first, first + count) of a
 * resize from `in` to `out` samples: for output i, taps [lo[i], lo[i] + n[i]). */
enum { PRECISION_BITS = 32 - 8 - 2 }; // PIL's, for 8-bit samples

/* On x86-64 the resize is compiled twice, for AVX2 and the baseline, and the
 * loader picks one at start-up (an ifunc). Not under ThreadSanitizer, whose
 * instrumented resolver would run before its runtime is up. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DPBENCH_TSAN 1
#endif
#endif
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(DPBENCH_TSAN)
#define RESIZE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define RESIZE_CLONES
#endif

struct taps {
    int *lo, *n;  // (count)
    int32_t *w;   // (count, width), in 1 << PRECISION_BITS units
    int width;    // taps per output, at most
};

static double triangle(double x)
{
    x = fabs(x);
    return x < 1 ? 1 - x : 0.0;
}

static int taps_init(struct taps *tp, int in, int out, int first, int count)
{
    double scale = (double)in / out, fs = scale > 1 ? scale : 1;
    double support = fs; // bilinear's support is 1, widened when downscaling
    tp->width = (int)ceil(support) * 2 + 1;
    tp->lo = malloc((size_t)count * sizeof(int));
    tp->n = malloc((size_t)count * sizeof(int));
    tp->w = malloc((size_t)count * (size_t)tp->width * sizeof(int32_t));
    if (!tp->lo || !tp->n || !tp->w)
        return -1;
    for (int i = 0; i < count; i++) {
        double centre = (first + i + 0.5) * scale;
        int lo = (int)(centre - support + 0.5), hi = (int)(centre + support + 0.5);
        if (lo < 0)
            lo = 0;
        if (hi > in)
            hi = in;
        if (hi - lo > tp->width)
            hi = lo + tp->width;
        double sum = 0;
        int32_t *w = tp->w + (size_t)i * (size_t)tp->width;
        for (int j = lo; j < hi; j++)
            sum += triangle((j - centre + 0.5) / fs);
        for (int j = lo; j < hi; j++) { // weights >= 0: PIL adds 0.5 and truncates
            double v = sum != 0 ? triangle((j - centre + 0.5) / fs) / sum : 0.0;
            w[j - lo] = (int32_t)(0.5 + v * (1 << PRECISION_BITS));
        }
        tp->lo[i] = lo;
        tp->n[i] = hi - lo;
    }
    return 0;
}

static void taps_free(struct taps *tp)
{
    free(tp->lo);
    free(tp->n);
    free(tp->w);
}

/* The sums are int32, as PIL's: a tap's weight is at most 1 << 22 and the
 * weights of an output add up to about that, so 255 times their sum plus the
 * half unit stays below 2^31. acc started at half a unit: the shift rounds. */
static uint8_t clamp8(int32_t acc)
{
    int32_t v = acc >> PRECISION_BITS;
    return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/* out[i] = the rounded sum over taps j of w[j] * rows[lo + j][i], i < len:
 * one output line of either pass, over whole lines of `stride` bytes so the
 * loops over i vectorise. */
static inline __attribute__((always_inline)) void
combine_rows(const uint8_t *rows, size_t stride, int lo, int taps, const int32_t *w, size_t len,
             int32_t *acc, uint8_t *out)
{
    for (size_t i = 0; i < len; i++)
        acc[i] = 1 << (PRECISION_BITS - 1);
    for (int j = 0; j < taps; j++) {
        const uint8_t *r = rows + (size_t)(lo + j) * stride;
        int32_t wj = w[j];
        for (size_t i = 0; i < len; i++)
            acc[i] += wj * r[i];
    }
    for (size_t i = 0; i < len; i++)
        out[i] = clamp8(acc[i]);
}

/* dst (cols, rows, c) = src (rows, cols, c) transposed; src rows `stride` bytes apart */
static inline __attribute__((always_inline)) void transpose(const uint8_t *src, size_t stride,
                                                            int rows, int cols, int c, uint8_t *dst)
{
    size_t dcol = (size_t)rows * (size_t)c;
    for (int y = 0; y < rows; y++) {
        const uint8_t *s = src + (size_t)y * stride;
        uint8_t *d = dst + (size_t)y * (size_t)c;
        for (int x = 0; x < cols; x++, s += c, d += dcol) {
            if (c == 3) // spelt out: a loop over k becomes a memcpy call per pixel
                d[0] = s[0], d[1] = s[1], d[2] = s[2];
            else if (c == 1)
                d[0] = s[0];
            else
                for (int k = 0; k < c; k++)
                    d[k] = s[k];
        }
    }
}

/* Resize so the shorter side is t->resize and keep the centre crop of that
 * size: dst (n, n, c). PIL's order: the horizontal pass (over the source
 * rows the vertical pass reads), rounding to 8 bits, then the vertical pass.
 * The horizontal pass runs on transposed blocks of BLOCK source rows, so that
 * both passes add whole lines and the extra memory stays a few blocks'. */
enum { BLOCK = 64 };

RESIZE_CLONES
static int resize_centre(const struct transform *t, const uint8_t *src, int h, int w,
                         uint8_t *dst)
{
    int n = t->resize, c = t->channels, rh, rw;
    size_t row = (size_t)n * (size_t)c;
    resized(n, h, w, &rh, &rw);
    /* Python's round(): halves to even, as torchvision's centre crop */
    int top = (int)nearbyint((rh - n) / 2.0), left = (int)nearbyint((rw - n) / 2.0);
    struct taps th = {0}, tv = {0};
    int rc = -1;
    uint8_t *srcT = NULL, *midT = NULL, *mid = NULL;
    int32_t *acc = NULL;
    if (taps_init(&th, w, rw, left, n) || taps_init(&tv, h, rh, top, n))
        goto out;
    int y0 = tv.lo[0], y1 = tv.lo[n - 1] + tv.n[n - 1], ny = y1 - y0; // the source rows read
    size_t bcol = (size_t)(ny < BLOCK ? ny : BLOCK) * (size_t)c; // a column of a block
    srcT = malloc((size_t)w * bcol); // (w, block, c)
    midT = malloc((size_t)n * bcol); // (n, block, c) after the horizontal pass
    mid = malloc((size_t)ny * row);  // (ny, n, c)
    acc = malloc((bcol > row ? bcol : row) * sizeof(int32_t));
    if (!srcT || !midT || !mid || !acc)
        goto out;
    size_t stride = (size_t)w * (size_t)c;
    for (int b = 0; b < ny; b += BLOCK) {
        int bn = ny - b < BLOCK ? ny - b : BLOCK;
        size_t col = (size_t)bn * (size_t)c;
        transpose(src + (size_t)(y0 + b) * stride, stride, bn, w, c, srcT);
        for (int x = 0; x < n; x++)
            combine_rows(srcT, col, th.lo[x], th.n[x], th.w + (size_t)x * (size_t)th.width, col,
                         acc, midT + (size_t)x * col);
        transpose(midT, col, n, bn, c, mid + (size_t)b * row);
    }
    for (int y = 0; y < n; y++)
        combine_rows(mid, row, tv.lo[y] - y0, tv.n[y], tv.w + (size_t)y * (size_t)tv.width, row,
                     acc, dst + (size_t)y * row);
    rc = 0;
out:
    free(srcT);
    free(midT);
    free(mid);
    free(acc);
    taps_free(&th);
    taps_free(&tv);
    return rc;
}

bool transform_is_random(const struct transform *t)
{
    return t->random && (t->crop || t->hflip);
}

void transform_choose(const struct transform *t, int h, int w, long epoch, long index,
                      struct transform_choice *ch)
{
    /* RandomCrop then RandomHorizontalFlip, drawn in that order from one
     * stream; without a crop, top = left = pad = 0 */
    ch->top = ch->left = t->pad;
    ch->flip = false;
    if (t->crop && !t->random) { // torchvision's CenterCrop: round((size - crop) / 2), halves to even
        ch->top = (int)nearbyint((h + 2 * t->pad - t->crop) / 2.0);
        ch->left = (int)nearbyint((w + 2 * t->pad - t->crop) / 2.0);
    }
    if (!t->random || (!t->crop && !t->hflip))
        return;
    struct rng r;
    rng_init(&r, t->seed, RNG_AUGMENT, ((uint64_t)epoch << 40) ^ (uint64_t)index);
    if (t->crop) {
        ch->top = (int)rng_below(&r, (uint64_t)(h + 2 * t->pad - t->crop + 1));
        ch->left = (int)rng_below(&r, (uint64_t)(w + 2 * t->pad - t->crop + 1));
    }
    ch->flip = t->hflip && rng_uniform(&r) < 0.5;
}

int transform_apply(const struct transform *t, const uint8_t *src, int h, int w, long epoch,
                    long index, float *out, struct error *e)
{
    int c = t->channels;
    uint8_t *tmp = NULL;
    if (t->resize) {
        tmp = malloc((size_t)t->resize * (size_t)t->resize * (size_t)c);
        if (!tmp || resize_centre(t, src, h, w, tmp)) {
            free(tmp);
            return error_set(e, "out of memory resizing a %dx%d image", w, h);
        }
        src = tmp;
        h = w = t->resize;
    }
    struct transform_choice ch;
    transform_choose(t, h, w, epoch, index, &ch);
    int oh = t->crop ? t->crop : h, ow = t->crop ? t->crop : w, top = ch.top, left = ch.left;
    bool flip = ch.flip;
    /* ToTensor + Normalize: (v / 255 - mean) / std, channel-major, through a
     * table of the 256 values (padding reads 0) */
    for (int k = 0; k < c; k++) {
        float scale = 1.0f / (255.0f * t->std[k]), shift = -t->mean[k] / t->std[k];
        float lut[256];
        for (int v = 0; v < 256; v++)
            lut[v] = (float)v * scale + shift;
        float *o = out + (size_t)k * (size_t)oh * (size_t)ow;
        for (int y = 0; y < oh; y++) {
            int sy = y + top - t->pad;
            float *row = o + (size_t)y * (size_t)ow;
            if (sy < 0 || sy >= h) { // a padding row
                for (int x = 0; x < ow; x++)
                    row[x] = lut[0];
                continue;
            }
            const uint8_t *in = src + (size_t)sy * (size_t)w * (size_t)c + (size_t)k;
            int dx = left - t->pad; // output x reads source column x + dx (before the flip)
            if (!flip && dx >= 0 && dx + ow <= w) { // the common case, no bounds to check
                in += (size_t)dx * (size_t)c;
                if (c == 1)
                    for (int x = 0; x < ow; x++)
                        row[x] = lut[in[x]];
                else
                    for (int x = 0; x < ow; x++)
                        row[x] = lut[in[(size_t)x * (size_t)c]];
                continue;
            }
            for (int x = 0; x < ow; x++) {
                int sx = (flip ? ow - 1 - x : x) + dx;
                row[x] = lut[sx >= 0 && sx < w ? in[(size_t)sx * (size_t)c] : 0];
            }
        }
    }
    free(tmp);
    return 0;
}
