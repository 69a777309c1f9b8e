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

/* acc started at half a unit: the shift rounds */
static uint8_t clamp8(int64_t acc)
{
    int64_t v = acc >> PRECISION_BITS;
    return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/* One output row of the horizontal pass: out (n, c) from in (w, c). */
static void resample_row(const struct taps *th, const uint8_t *in, int n, int c, uint8_t *out)
{
    const int64_t half = 1 << (PRECISION_BITS - 1);
    for (int x = 0; x < n; x++) {
        const int32_t *wt = th->w + (size_t)x * (size_t)th->width;
        const uint8_t *p = in + (size_t)th->lo[x] * (size_t)c;
        int taps = th->n[x];
        if (c == 3) {
            int64_t a0 = half, a1 = half, a2 = half;
            for (int j = 0; j < taps; j++, p += 3) {
                a0 += (int64_t)wt[j] * p[0];
                a1 += (int64_t)wt[j] * p[1];
                a2 += (int64_t)wt[j] * p[2];
            }
            out[3 * x] = clamp8(a0), out[3 * x + 1] = clamp8(a1), out[3 * x + 2] = clamp8(a2);
        } else {
            for (int k = 0; k < c; k++) {
                int64_t a = half;
                for (int j = 0; j < taps; j++)
                    a += (int64_t)wt[j] * p[(size_t)j * (size_t)c + (size_t)k];
                out[(size_t)x * (size_t)c + (size_t)k] = clamp8(a);
            }
        }
    }
}

/* Resize so the shorter side is t->resize and keep the centre crop of that
 * size: dst (n, n, c). The horizontal pass runs only over the source rows
 * the vertical pass reads; the vertical pass adds whole rows. */
static int resize_centre(const struct transform *t, const uint8_t *src, int h, int w,
                         uint8_t *dst)
{
    int n = t->resize, c = t->channels, rh, rw;
    size_t row = (size_t)n * (size_t)c;
    resized(n, h, w, &rh, &rw);
    /* Python's round(): halves to even, as torchvision's centre crop */
    int top = (int)nearbyint((rh - n) / 2.0), left = (int)nearbyint((rw - n) / 2.0);
    struct taps th = {0}, tv = {0};
    uint8_t *mid = malloc((size_t)h * row); // (h, n, c) after the horizontal pass
    int64_t *acc = malloc(row * sizeof(int64_t)); // (n, c) one output row's sums
    int rc = -1;
    if (!mid || !acc || taps_init(&th, w, rw, left, n) || taps_init(&tv, h, rh, top, n))
        goto out;
    int y0 = tv.lo[0], y1 = tv.lo[n - 1] + tv.n[n - 1]; // the source rows read
    for (int y = y0; y < y1; y++)
        resample_row(&th, src + (size_t)y * (size_t)w * (size_t)c, n, c, mid + (size_t)y * row);
    for (int y = 0; y < n; y++) {
        const int32_t *wt = tv.w + (size_t)y * (size_t)tv.width;
        for (size_t i = 0; i < row; i++)
            acc[i] = 1 << (PRECISION_BITS - 1);
        for (int j = 0; j < tv.n[y]; j++) {
            const uint8_t *m = mid + (size_t)(tv.lo[y] + j) * row;
            for (size_t i = 0; i < row; i++)
                acc[i] += (int64_t)wt[j] * m[i];
        }
        for (size_t i = 0; i < row; i++)
            dst[(size_t)y * row + i] = clamp8(acc[i]);
    }
    rc = 0;
out:
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
