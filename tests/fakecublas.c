/* Test double: the cuBLAS calls dpbench makes, on tests/fakecuda.c's
 * streams (fakecuda.h). Each call checks the handle's device against the
 * calling thread's current device and every array against the handle's
 * device, then queues the math as a compute op (FAKE_KERNEL_US). */
#include <cublas_v2.h>
#include <stdarg.h>
#include <stdlib.h>

#include "fakecuda.h"

static struct op *compute_op(void (*fn)(struct op *))
{
    struct op *o = op_new(fn);
    o->compute = true;
    return o;
}

struct cublasContext {
    int dev;
    cudaStream_t s;
    cublasPointerMode_t mode;
};

const char *cublasGetStatusString(cublasStatus_t st) { return st ? "fake cublas error" : "ok"; }

cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
    fake_init();
    if (n_dev <= 0 || need_ctx())
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *h = calloc(1, sizeof **h);
    (*h)->dev = cur_dev;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
    if (s && s->dev != h->dev)
        complain("cublas handle of device %d given a stream of device %d", h->dev, s->dev);
    h->s = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t m)
{
    h->mode = m;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m)
{
    (void)h, (void)m;
    return CUBLAS_STATUS_SUCCESS;
}

/* checks common to every call; `arrays` pairs (pointer, floats) */
static bool blas_ok(cublasHandle_t h, const char *what, int n_arrays, ...)
{
    bool ok = true;
    if (cur_dev != h->dev) {
        complain("%s: current device %d, handle's %d", what, cur_dev, h->dev);
        ok = false;
    }
    if (!h->s) {
        complain("%s: handle without stream", what);
        ok = false;
    }
    va_list ap;
    va_start(ap, n_arrays);
    for (int i = 0; i < n_arrays; i++) {
        const float *p = va_arg(ap, const float *);
        long n = va_arg(ap, long);
        if (n > 0 && !is_dev(p, (size_t)n * sizeof(float), h->dev)) {
            complain("%s: array %d (%p, %ld floats) is not on device %d", what, i, (void *)p, n,
                     h->dev);
            ok = false;
        }
    }
    va_end(ap);
    return ok;
}

static float scalar(cublasHandle_t h, const float *p)
{
    if (h->mode == CUBLAS_POINTER_MODE_DEVICE)
        complain("scalar in device pointer mode (unexpected here)");
    return *p;
}

static void op_gemm(struct op *o)
{
    int ta = o->i[0], tb = o->i[1], m = o->i[2], n = o->i[3], k = o->i[4];
    int lda = o->i[5], ldb = o->i[6], ldc = o->i[7];
    const float *A = o->p[0], *B = o->p[1];
    float *C = o->p[2], alpha = o->f[0], beta = o->f[1];
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0;
            for (int l = 0; l < k; l++) {
                float a = ta == CUBLAS_OP_N ? A[i + (size_t)l * lda] : A[l + (size_t)i * lda];
                float b = tb == CUBLAS_OP_N ? B[l + (size_t)j * ldb] : B[j + (size_t)l * ldb];
                acc += (double)a * b;
            }
            float *c = &C[i + (size_t)j * ldc];
            *c = (float)(alpha * acc + (beta != 0 ? beta * *c : 0));
        }
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta, float *C, int ldc)
{
    long asz = ta == CUBLAS_OP_N ? (long)lda * (k - 1) + m : (long)lda * (m - 1) + k;
    long bsz = tb == CUBLAS_OP_N ? (long)ldb * (n - 1) + k : (long)ldb * (k - 1) + n;
    if (lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m)
        complain("gemm: bad leading dimensions");
    if (!blas_ok(h, "gemm", 3, A, asz, B, bsz, C, (long)ldc * (n - 1) + m))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = compute_op(op_gemm);
    o->i[0] = ta, o->i[1] = tb, o->i[2] = m, o->i[3] = n, o->i[4] = k;
    o->i[5] = lda, o->i[6] = ldb, o->i[7] = ldc;
    o->p[0] = dmem(A), o->p[1] = dmem(B), o->p[2] = dmem(C);
    o->f[0] = scalar(h, alpha), o->f[1] = scalar(h, beta);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_gemv(struct op *o)
{
    int t = o->i[0], m = o->i[1], n = o->i[2], lda = o->i[3], incx = o->i[4], incy = o->i[5];
    const float *A = o->p[0], *x = o->p[1];
    float *y = o->p[2];
    int ny = t == CUBLAS_OP_N ? m : n, nx = t == CUBLAS_OP_N ? n : m;
    for (int i = 0; i < ny; i++) {
        double acc = 0;
        for (int j = 0; j < nx; j++)
            acc += (double)(t == CUBLAS_OP_N ? A[i + (size_t)j * lda] : A[j + (size_t)i * lda]) *
                   x[j * incx];
        float *yi = &y[i * incy];
        *yi = (float)(o->f[0] * acc + (o->f[1] != 0 ? o->f[1] * *yi : 0));
    }
}

cublasStatus_t cublasSgemv_v2(cublasHandle_t h, cublasOperation_t t, int m, int n,
                              const float *alpha, const float *A, int lda, const float *x,
                              int incx, const float *beta, float *y, int incy)
{
    int ny = t == CUBLAS_OP_N ? m : n, nx = t == CUBLAS_OP_N ? n : m;
    if (!blas_ok(h, "gemv", 3, A, (long)lda * (n - 1) + m, x, (long)(nx - 1) * incx + 1, y,
                 (long)(ny - 1) * incy + 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = compute_op(op_gemv);
    o->i[0] = t, o->i[1] = m, o->i[2] = n, o->i[3] = lda, o->i[4] = incx, o->i[5] = incy;
    o->p[0] = dmem(A), o->p[1] = dmem(x), o->p[2] = dmem(y);
    o->f[0] = scalar(h, alpha), o->f[1] = scalar(h, beta);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_ger(struct op *o)
{
    int m = o->i[0], n = o->i[1], incx = o->i[2], incy = o->i[3], lda = o->i[4];
    const float *x = o->p[0], *y = o->p[1];
    float *A = o->p[2];
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            A[i + (size_t)j * lda] += o->f[0] * x[i * incx] * y[j * incy];
}

cublasStatus_t cublasSger_v2(cublasHandle_t h, int m, int n, const float *alpha, const float *x,
                             int incx, const float *y, int incy, float *A, int lda)
{
    if (!blas_ok(h, "ger", 3, x, (long)(m - 1) * incx + 1, y, (long)(n - 1) * incy + 1, A,
                 (long)lda * (n - 1) + m))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = compute_op(op_ger);
    o->i[0] = m, o->i[1] = n, o->i[2] = incx, o->i[3] = incy, o->i[4] = lda;
    o->p[0] = dmem(x), o->p[1] = dmem(y), o->p[2] = dmem(A);
    o->f[0] = scalar(h, alpha);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_axpy(struct op *o) // y (i[0] floats) += alpha (f[0]) x
{
    const float *x = o->p[0];
    float *y = o->p[1];
    for (int i = 0; i < o->i[0]; i++)
        y[i] += o->f[0] * x[i];
}

cublasStatus_t cublasSaxpy_v2(cublasHandle_t h, int n, const float *alpha, const float *x,
                              int incx, float *y, int incy)
{
    if (incx != 1 || incy != 1 || !blas_ok(h, "axpy", 2, x, (long)n, y, (long)n))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = compute_op(op_axpy);
    o->i[0] = n, o->p[0] = dmem(x), o->p[1] = dmem(y), o->f[0] = scalar(h, alpha);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_scal(struct op *o) // x (i[0] floats) *= alpha (f[0])
{
    float *x = o->p[0];
    for (int i = 0; i < o->i[0]; i++)
        x[i] *= o->f[0];
}

cublasStatus_t cublasSscal_v2(cublasHandle_t h, int n, const float *alpha, float *x, int incx)
{
    if (incx != 1 || !blas_ok(h, "scal", 1, x, (long)n))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = compute_op(op_scal);
    o->i[0] = n, o->p[0] = dmem(x), o->f[0] = scalar(h, alpha);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_geam(struct op *o) // C = alpha A + beta B, no transposes
{
    int m = o->i[0], n = o->i[1], lda = o->i[2], ldb = o->i[3], ldc = o->i[4];
    const float *A = o->p[0], *B = o->p[1];
    float *C = o->p[2];
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            C[i + (size_t)j * ldc] = o->f[0] * A[i + (size_t)j * lda] +
                                     o->f[1] * B[i + (size_t)j * ldb];
}

cublasStatus_t cublasSgeam(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, const float *alpha, const float *A, int lda, const float *beta,
                           const float *B, int ldb, float *C, int ldc)
{
    if (ta != CUBLAS_OP_N || tb != CUBLAS_OP_N || lda < m || ldb < m || ldc < m) {
        complain("geam: only untransposed operands with leading dimensions >= m are emulated");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (!blas_ok(h, "geam", 3, A, (long)lda * (n - 1) + m, B, (long)ldb * (n - 1) + m, C,
                 (long)ldc * (n - 1) + m))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = compute_op(op_geam);
    o->i[0] = m, o->i[1] = n, o->i[2] = lda, o->i[3] = ldb, o->i[4] = ldc;
    o->p[0] = dmem(A), o->p[1] = dmem(B), o->p[2] = dmem(C);
    o->f[0] = scalar(h, alpha), o->f[1] = scalar(h, beta);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_dot(struct op *o)
{
    const float *x = o->p[0], *y = o->p[1];
    double acc = 0;
    for (int i = 0; i < o->i[0]; i++)
        acc += (double)x[i] * y[i];
    *(float *)o->p[2] = (float)acc;
}

cublasStatus_t cublasSdot_v2(cublasHandle_t h, int n, const float *x, int incx, const float *y,
                             int incy, float *result)
{
    if (incx != 1 || incy != 1 || !blas_ok(h, "dot", 2, x, (long)n, y, (long)n))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (h->mode != CUBLAS_POINTER_MODE_DEVICE || !is_dev(result, sizeof(float), h->dev)) {
        complain("dot: result must be a device pointer in device mode here");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    struct op *o = compute_op(op_dot);
    o->i[0] = n, o->p[0] = dmem(x), o->p[1] = dmem(y), o->p[2] = dmem(result);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}
