/* Whether the CUDA backend can run here, and the one line that names the
 * devices and the driver and runtime versions. */
#include <stdbool.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

/* ---- probing and describing --------------------------------------------- */

int cuda_probe(struct error *e)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        bool driver = access("/proc/driver/nvidia/version", F_OK) == 0;
        return error_set(e, "no CUDA device: cudaGetDeviceCount: %s (%s)%s",
                         cudaGetErrorString(err), cudaGetErrorName(err),
                         driver ? "" : "; no NVIDIA driver is loaded (no /proc/driver/nvidia)");
    }
    if (count == 0)
        return error_set(e, "no CUDA device: cudaGetDeviceCount found none");
    /* a device can exist and still refuse a context (exclusive mode, busy):
     * one that opens is enough here; the run checks its own devices */
    for (int i = 0; i < count; i++)
        if ((err = cudaSetDevice(i)) == cudaSuccess && (err = cudaFree(NULL)) == cudaSuccess)
            return 0;
    return error_set(e, "no usable CUDA device: none of %d opens: %s (%s)", count,
                     cudaGetErrorString(err), cudaGetErrorName(err));
}

/* "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB) x1; driver 13.0, runtime 13.0" */
void cuda_describe(char *buf, size_t n)
{
    int count = 0, drv = 0, rt = 0;
    size_t used = 0;
    buf[0] = '\0';
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
        return;
    for (int i = 0; i < count && used < n;) {
        struct cudaDeviceProp p, q;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
            break;
        int same = 1; // a run of identical devices prints once
        while (i + same < count && cudaGetDeviceProperties(&q, i + same) == cudaSuccess &&
               strcmp(q.name, p.name) == 0 && q.totalGlobalMem == p.totalGlobalMem)
            same++;
        used += (size_t)snprintf(buf + used, n - used, "%s%s (sm_%d%d, %.1f GiB) x%d",
                                 i ? ", " : "", p.name, p.major, p.minor,
                                 (double)p.totalGlobalMem / (1 << 30), same);
        i += same;
    }
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    if (used < n)
        snprintf(buf + used, n - used, "; driver %d.%d, runtime %d.%d", drv / 1000,
                 drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
}

