/* dpbench's own kernels (cuda_kernels.cu) on a device. nvcc builds them at
 * build time into a fatbin, machine code for the GPU generations the
 * Makefile lists and PTX for later ones; this file embeds that fatbin in
 * the binary and loads it into a device's context through the driver API
 * (cuModuleLoadData, cuLaunchKernel), which cuda_dl.c opens with dlopen
 * like cudart. The runtime's primary context is the one current after
 * cudaSetDevice, so the module and the runtime's streams share it. The host
 * emulation (tests/fakedriver.c) runs a host version of each kernel by
 * name. */
#include <cuda.h>
#include <stdio.h>

#include "cuda_backend.h"
#include "cuda_kernels.h"

/* The fatbin, as the Makefile built it (DPBENCH_FATBIN: its path). */
__asm__(".pushsection .rodata.dpbench_fatbin, \"a\"\n"
        ".balign 64\n"
        "dpbench_fatbin:\n"
        ".incbin \"" DPBENCH_FATBIN "\"\n"
        ".popsection\n");
extern const unsigned char dpbench_fatbin[];

int cu_fail(struct error *e, CUresult rc, const char *call, const char *file, int line)
{
    const char *why = NULL;
    if (cuGetErrorString(rc, &why) != CUDA_SUCCESS || !why)
        why = "unknown driver error";
    return error_set(e, "%s:%d: %s: %s (CUresult %d)", file, line, call, why, (int)rc);
}

int cuda_kernels_load(struct cuda_kernels *k, int dev, struct error *e)
{
    k->dev = dev;
    CUDA_CHECK(cudaSetDevice(dev)); // its primary context current: the module's
    CU_CHECK(cuInit(0));
    CUresult rc = cuModuleLoadData(&k->mod, dpbench_fatbin);
    if (rc == CUDA_ERROR_NO_BINARY_FOR_GPU || rc == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
        rc == CUDA_ERROR_INVALID_PTX)
        return error_set(e, "device %d: dpbench's kernels have no code this GPU and driver can "
                            "run (CUresult %d): rebuild dpbench on this machine (make clean; "
                            "make), or set CUDA_ARCHS to include this GPU", dev, (int)rc);
    if (rc != CUDA_SUCCESS)
        return cu_fail(e, rc, "cuModuleLoadData(&k->mod, dpbench_fatbin)", __FILE__, __LINE__);
    return cuda_kernel_find(k, "dpbench_count_correct", &k->correct, e);
}

void cuda_kernels_free(struct cuda_kernels *k)
{
    if (!k->mod)
        return;
    if (cudaSetDevice(k->dev) == cudaSuccess) // the context it was loaded into
        cuModuleUnload(k->mod);
    k->mod = NULL;
}

int cuda_kernel_find(struct cuda_kernels *k, const char *name, CUfunction *f, struct error *e)
{
    CUresult rc = cuModuleGetFunction(f, k->mod, name);
    if (rc != CUDA_SUCCESS)
        return cu_fail(e, rc, name, __FILE__, __LINE__);
    return 0;
}

int cuda_kernel_launch(CUfunction f, cudaStream_t s, void **args, struct error *e)
{
    CU_CHECK(cuLaunchKernel(f, 1, 1, 1, DP_KERNEL_THREADS, 1, 1, 0, (CUstream)s, args, NULL));
    return 0;
}
