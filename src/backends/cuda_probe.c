/* Whether the CUDA backend can run here, and the one line that names the
 * devices and the driver and runtime versions. Neither opens a context: a
 * context is the run's, on the devices it uses (backend_cuda.c), so that a
 * probe never takes a device (device 0, say) the run does not use. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_backend.h"

/* The oldest driver branch for each CUDA major (NVIDIA's release notes):
 * what to ask for when the driver is too old. */
static int driver_branch(int major)
{
    return major >= 13 ? 580 : major == 12 ? 525 : major == 11 ? 450 : 0;
}

/* The driver against the runtime this dpbench was built with: the same
 * major or a later one (a CUDA 13 runtime needs a driver for CUDA 13). */
static int check_versions(struct error *e)
{
    int drv = 0, rt = 0, built = CUDART_VERSION / 1000;
    cudaError_t err = cudaDriverGetVersion(&drv); // loads cudart; no context
    if (err != cudaSuccess)
        return error_set(e, "no CUDA device: cudaDriverGetVersion: %s (%s)",
                         cudaGetErrorString(err), cudaGetErrorName(err));
    if (drv == 0) {
        bool loaded = access("/proc/driver/nvidia/version", F_OK) == 0;
        return error_set(e, "no CUDA device: no NVIDIA driver%s",
                         loaded ? " that cudart can use (is libcuda.so.1 installed?)"
                                : " is loaded (no /proc/driver/nvidia)");
    }
    if (cudaRuntimeGetVersion(&rt) == cudaSuccess && rt / 1000 != built)
        return error_set(e, "the CUDA runtime loaded is %d.%d, this dpbench was built with CUDA "
                            "%d.%d's headers: rebuild it against this runtime, or point "
                            "DPBENCH_CUDART at a CUDA %d libcudart", rt / 1000, rt % 1000 / 10,
                         built, CUDART_VERSION % 1000 / 10, built);
    if (drv / 1000 < built)
        return error_set(e, "the NVIDIA driver supports CUDA %d.%d, this dpbench was built with "
                            "CUDA %d.%d, which needs a driver for CUDA %d (R%d or later): rebuild "
                            "dpbench here with this machine's CUDA %d toolkit (make clean; make), "
                            "or update the driver", drv / 1000, drv % 1000 / 10, built,
                         CUDART_VERSION % 1000 / 10, built, driver_branch(built), drv / 1000);
    return 0;
}

int cuda_probe(struct error *e)
{
    if (check_versions(e))
        return -1;
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess)
        return error_set(e, "no CUDA device: cudaGetDeviceCount: %s (%s)",
                         cudaGetErrorString(err), cudaGetErrorName(err));
    if (count == 0)
        return error_set(e, "no CUDA device: cudaGetDeviceCount found none");
    return 0; // whether the run's own devices open is for the run to say
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

