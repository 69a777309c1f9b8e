/* hostmm.h's products. Layouts: x (rows, F), w (O, F) then b (O), out and
 * dout (rows, O), all row-major. libxsmm's kernels are column-major, where
 * the same memory reads transposed: out is an (O x rows) matrix, x is
 * (F x rows), dout is (O x rows). So
 *   forward:  out = wᵀᵀ · x, i.e. C (O x rows) = Wt (O x F) · X (F x rows),
 *             with Wt the weight transposed once per call (libxsmm 1.17
 *             generates no kernel with A transposed), and out filled with
 *             the bias first (beta = 1);
 *   backward: g = doutᵀ · x as the (F x O) column-major matrix it is,
 *             C (F x O) = X (F x rows) · Dout (O x rows)ᵀ (B transposed).
 * A shape libxsmm gives no kernel for runs on CBLAS. */
#include "hostmm.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#ifdef DPBENCH_HAVE_XSMM
#include <libxsmm.h>
#endif

/* OpenBLAS's pthreads build stops its threads with this (its fork handler);
 * other builds (OpenMP) lack it, and their threads keep their own policy */
extern int blas_thread_shutdown_(void) __attribute__((weak));

void hostmm_blas_threads(int n)
{
    openblas_set_num_threads(n);
    if (n <= 1 && blas_thread_shutdown_)
        blas_thread_shutdown_();
}

const char *hostmm_lib_name(enum hostmm_lib lib)
{
    return lib == HOSTMM_LIBXSMM ? "libxsmm" : "OpenBLAS";
}

#ifdef DPBENCH_HAVE_XSMM
static void *dispatch(long m, long n, long k, long lda, long ldb, long ldc, float beta,
                      char transb)
{
    libxsmm_blasint M = m, N = n, K = k, A = lda, B = ldb, C = ldc;
    float alpha = 1.0f;
    int flags = LIBXSMM_GEMM_FLAGS('N', transb);
    return (void *)libxsmm_smmdispatch(M, N, K, &A, &B, &C, &alpha, &beta, &flags, NULL);
}
#endif

bool hostmm_have_libxsmm(void)
{
#ifdef DPBENCH_HAVE_XSMM
    static int have = -1; // first asked on the training thread, before any replica starts
    if (have < 0)
        have = dispatch(8, 8, 8, 8, 8, 8, 0.0f, 'N') != NULL;
    return have == 1;
#else
    return false;
#endif
}

int hostmm_init(struct hostmm *k, enum hostmm_lib lib, int features, int out_features,
                long max_rows, struct error *e)
{
    memset(k, 0, sizeof *k);
    k->lib = lib == HOSTMM_LIBXSMM && hostmm_have_libxsmm() ? HOSTMM_LIBXSMM : HOSTMM_OPENBLAS;
    k->F = features;
    k->O = out_features;
    k->max_rows = max_rows > 0 ? max_rows : 1;
    k->ones = floats_alloc((size_t)k->max_rows);
    k->wt = floats_alloc((size_t)features * (size_t)out_features);
    if (!k->ones || !k->wt) {
        hostmm_free(k);
        return error_set(e, "out of memory for the matrix kernels (%ld rows)", max_rows);
    }
    for (long i = 0; i < k->max_rows; i++)
        k->ones[i] = 1.0f;
    return 0;
}

void hostmm_free(struct hostmm *k)
{
    free(k->ones);
    free(k->wt);
    memset(k, 0, sizeof *k);
}

/* This instance's kernels for `rows` rows, made on first use; NULL kernels
 * mean CBLAS. */
static void kernels_for(struct hostmm *k, long rows, void **fwd, void **bwd)
{
    *fwd = *bwd = NULL;
#ifdef DPBENCH_HAVE_XSMM
    if (k->lib != HOSTMM_LIBXSMM)
        return;
    for (int i = 0; i < k->n_kernels; i++)
        if (k->kernels[i].rows == rows) {
            *fwd = k->kernels[i].fwd;
            *bwd = k->kernels[i].bwd;
            return;
        }
    long F = k->F, O = k->O;
    *fwd = dispatch(O, rows, F, O, F, O, 1.0f, 'N');
    *bwd = dispatch(F, O, rows, F, O, F, 0.0f, 'T');
    if (k->n_kernels < HOSTMM_KERNELS) // libxsmm keeps every kernel it made anyway
        k->kernels[k->n_kernels++] = (struct hostmm_kernel){rows, *fwd, *bwd};
#else
    (void)k, (void)rows;
#endif
}

void hostmm_forward(struct hostmm *k, const float *x, long rows, const float *w, float *out)
{
    int F = k->F, O = k->O;
    for (long i = 0; i < rows; i++)
        memcpy(out + (size_t)i * O, w + (size_t)O * F, (size_t)O * sizeof(float));
    void *fwd, *bwd;
    kernels_for(k, rows, &fwd, &bwd);
#ifdef DPBENCH_HAVE_XSMM
    if (fwd) {
        if ((size_t)O * F <= 256) // libxsmm's transpose costs ~0.2 us a call
            for (int o = 0; o < O; o++)
                for (int f = 0; f < F; f++)
                    k->wt[(size_t)f * O + o] = w[(size_t)o * F + f];
        else
            libxsmm_otrans(k->wt, w, sizeof(float), F, O, F, O);
        ((libxsmm_smmfunction)fwd)(k->wt, x, out);
        return;
    }
#endif
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, O, F, 1.0f, x, F, w, F,
                1.0f, out, O);
}

void hostmm_backward(struct hostmm *k, const float *x, const float *dout, long rows, float alpha,
                     float *g)
{
    int F = k->F, O = k->O;
    void *fwd, *bwd;
    kernels_for(k, rows, &fwd, &bwd);
#ifdef DPBENCH_HAVE_XSMM
    if (bwd) {
        ((libxsmm_smmfunction)bwd)(x, dout, g);
        cblas_sscal(O * F, alpha, g, 1);
    } else
#endif
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, F, (int)rows, alpha, dout, O, x,
                    F, 0.0f, g, F);
    cblas_sgemv(CblasRowMajor, CblasTrans, (int)rows, O, alpha, dout, O, k->ones, 1, 0.0f,
                g + (size_t)O * F, 1);
}
