/* dpbench --h2d-bandwidth: host-to-device copies from pinned and pageable
 * memory, timed with CUDA events on one stream. */
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

#include "emulate_profile.h"

/* ---- host-to-device bandwidth ------------------------------------------- */

struct bw {
    size_t max;          // bytes, the largest size
    void *pinned, *check; // (max) page-locked source; page-locked copy-back
    void *pageable;      // (max) malloc'd source
    void *dev;           // (max) on device 0
    cudaStream_t stream;
    cudaEvent_t t0, t1;
};

/* GB/s of `iters` cudaMemcpyAsync of `bytes` from src, after one warm-up.
 * The device buffer is zeroed first, so that bw_wrong sees a copy that did
 * not land. */
static int bw_async(struct bw *bw, const void *src, size_t bytes, int iters, double *gbps,
                    struct error *e)
{
    float ms = 0;
    CUDA_CHECK(cudaMemsetAsync(bw->dev, 0, bytes, bw->stream));
    CUDA_CHECK(cudaMemcpyAsync(bw->dev, src, bytes, cudaMemcpyHostToDevice, bw->stream));
    CUDA_CHECK(cudaEventRecord(bw->t0, bw->stream));
    for (int i = 0; i < iters; i++)
        CUDA_CHECK(cudaMemcpyAsync(bw->dev, src, bytes, cudaMemcpyHostToDevice, bw->stream));
    CUDA_CHECK(cudaEventRecord(bw->t1, bw->stream));
    CUDA_CHECK(cudaEventSynchronize(bw->t1));
    CUDA_CHECK(cudaEventElapsedTime(&ms, bw->t0, bw->t1));
    *gbps = (double)bytes * iters / (ms * 1e-3) / 1e9;
    return 0;
}

/* Words of the device buffer that differ from src after the copies. */
static int bw_wrong(struct bw *bw, const void *src, size_t bytes, long *wrong, struct error *e)
{
    const unsigned *a = src, *b = bw->check;
    CUDA_CHECK(cudaMemcpy(bw->check, bw->dev, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes / sizeof *a; i++)
        *wrong += a[i] != b[i];
    return 0;
}

static int bw_table(struct bw *bw, FILE *out, struct h2d_profile *prof, struct error *e)
{
    double best = 0;
    size_t best_size = 0;
    fprintf(out, "#%12s %6s %10s %10s %10s %7s\n", "size", "count", "pinned", "pageable",
            "ratio", "#wrong");
    fprintf(out, "#%12s %6s %10s %10s\n", "(B)", "", "(GB/s)", "(GB/s)");
    for (size_t size = (size_t)1 << 20; size <= bw->max; size *= 2) {
        int iters = (int)(((size_t)1 << 30) / size); // about 1 GiB per measurement
        iters = iters < 4 ? 4 : iters > 200 ? 200 : iters;
        double pinned = 0, pageable = 0;
        long wrong = 0;
        if (bw_async(bw, bw->pinned, size, iters, &pinned, e) ||
            bw_wrong(bw, bw->pinned, size, &wrong, e) ||
            bw_async(bw, bw->pageable, size, iters, &pageable, e) ||
            bw_wrong(bw, bw->pageable, size, &wrong, e))
            return error_wrap(e, "%zu bytes", size);
        /* plain blocking cudaMemcpy in a loop, host clock: what naive code gets */
        double t0 = now_seconds();
        for (int i = 0; i < iters; i++)
            CUDA_CHECK(cudaMemcpy(bw->dev, bw->pinned, size, cudaMemcpyHostToDevice));
        double plain = (double)size * iters / (now_seconds() - t0) / 1e9;
        if (plain > best) {
            best = plain;
            best_size = size;
        }
        fprintf(out, " %12zu %6d %10.2f %10.2f %10.2f %7ld\n", size, iters, pinned, pageable,
                pinned / pageable, wrong);
        if (prof && prof->n < H2D_PROFILE_MAX_ROWS && wrong == 0) {
            prof->rows[prof->n].bytes = (double)size;
            prof->rows[prof->n].pinned_gbps = pinned;
            prof->rows[prof->n++].pageable_gbps = pageable;
        }
    }
    fprintf(out, "# best plain cudaMemcpy loop (pinned, host clock): %.2f GB/s at %zu B\n",
            best, best_size);
    return 0;
}

static int bw_setup(struct bw *bw, struct error *e)
{
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cuda_pin_alloc(&bw->pinned, bw->max, cudaHostAllocDefault));
    CUDA_CHECK(cuda_pin_alloc(&bw->check, bw->max, cudaHostAllocDefault));
    CUDA_CHECK(cuda_mem_alloc(&bw->dev, bw->max));
    CUDA_CHECK(cudaStreamCreateWithFlags(&bw->stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&bw->t0));
    CUDA_CHECK(cudaEventCreateWithFlags(&bw->t1, cuda_blocking(1, 1) ? cudaEventBlockingSync : 0));
    if (!(bw->pageable = malloc(bw->max)))
        return error_set(e, "out of memory (%zu bytes)", bw->max);
    unsigned *p = bw->pinned, *q = bw->pageable;
    for (size_t i = 0; i < bw->max / sizeof *p; i++) { // touched: no first-use page faults
        p[i] = (unsigned)(i * 2654435761u) | 1; // never 0, never the other's word
        q[i] = ~p[i];
    }
    return 0;
}

int cuda_bandwidth(FILE *out, struct h2d_profile *prof, struct error *e)
{
    struct bw bw = {.max = (size_t)256 << 20};
    char dev[512];
    cuda_describe(dev, sizeof dev);
    if (prof)
        snprintf(prof->device, sizeof prof->device, "%s", dev);
    fprintf(out, "# dpbench %s h2d-bandwidth: host to device 0, cudaMemcpyAsync on one stream, "
                 "timed with CUDA events\n# devices: %s\n",
            DPBENCH_VERSION, dev);
    int rc = bw_setup(&bw, e) || bw_table(&bw, out, prof, e) ? -1 : 0;
    if (bw.t0)
        CUDA_WARN(cudaEventDestroy(bw.t0));
    if (bw.t1)
        CUDA_WARN(cudaEventDestroy(bw.t1));
    if (bw.stream)
        CUDA_WARN(cudaStreamDestroy(bw.stream));
    if (bw.pinned)
        CUDA_WARN(cuda_pin_free(bw.pinned));
    if (bw.check)
        CUDA_WARN(cuda_pin_free(bw.check));
    CUDA_WARN(cuda_mem_free(bw.dev));
    free(bw.pageable);
    fflush(out);
    return rc;
}

