/* A BLAS call that never returns, for tests/limits_test.sh (LD_PRELOAD): the
 * first cblas_sgemm creates the file $STUCK_MARK, then waits forever, signals
 * or not, as a library stuck in a retry loop or a collective does. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

void cblas_sgemm(void)
{
    const char *mark = getenv("STUCK_MARK");
    if (mark)
        close(open(mark, O_WRONLY | O_CREAT, 0644));
    for (;;)
        pause();
}
