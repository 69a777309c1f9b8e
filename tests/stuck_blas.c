/* A BLAS call that never returns, for tests/limits_test.sh (LD_PRELOAD): a
 * cblas_sgemm creates the file $STUCK_MARK, then waits forever, signals or
 * not, as a library stuck in a retry loop or a collective does. Without
 * $STUCK_TRIGGER the first call does; with it, calls go to the real
 * cblas_sgemm until that file exists, so the test picks the phase. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

typedef void sgemm_fn(int order, int ta, int tb, int m, int n, int k, float alpha,
                      const float *a, int lda, const float *b, int ldb, float beta, float *c,
                      int ldc);

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    const char *trigger = getenv("STUCK_TRIGGER");
    if (trigger && access(trigger, F_OK) != 0) {
        sgemm_fn *real = (sgemm_fn *)dlsym(RTLD_NEXT, "cblas_sgemm");
        real(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    const char *mark = getenv("STUCK_MARK");
    if (mark)
        close(open(mark, O_WRONLY | O_CREAT, 0644));
    for (;;)
        pause();
}
