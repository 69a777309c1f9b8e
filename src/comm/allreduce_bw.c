/* dpbench --allreduce-bandwidth: the run's comm engine summing float
 * buffers of growing size across the ranks, timed and checked the way
 * nccl-tests' all_reduce_perf prints it: size, count, time per call, algbw =
 * size / time, busbw = algbw x 2(W-1)/W, and #wrong, the elements that differ
 * from the expected sum on any rank. */
#include "allreduce_bw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"

#define MAX_BYTES ((size_t)32 << 20)

/* Element i of rank r's buffer: small integers, so every sum is exact. */
static float value(int rank, size_t i) { return (float)((rank + 1) * (long)(i % 7 + 1)); }

int allreduce_bandwidth(struct comm *c, FILE *out, struct error *e)
{
    size_t max_n = MAX_BYTES / sizeof(float);
    float *buf = malloc(max_n * sizeof(float));
    if (!buf)
        return error_set(e, "out of memory (%zu bytes)", MAX_BYTES);
    int W = c->world;
    double ranks_sum = (double)W * (W + 1) / 2;
    fprintf(out, "# dpbench %s allreduce-bandwidth: engine %s, %d rank%s, float sum in place, "
                 "host memory\n",
            DPBENCH_VERSION, c->name, W, W == 1 ? "" : "s");
    fprintf(out, "# time: mean over the ranks of the mean call over `iters` calls after 5 "
                 "warm-up calls; #wrong: elements off the expected sum, all ranks\n");
    fprintf(out, "#%12s %12s %6s %6s %7s %11s %10s %10s %7s\n", "size", "count", "type",
            "redop", "iters", "time", "algbw", "busbw", "#wrong");
    fprintf(out, "#%12s %12s %6s %6s %7s %11s %10s %10s %7s\n", "(B)", "(elements)", "", "",
            "", "(us)", "(GB/s)", "(GB/s)", "");
    int rc = 0;
    double best = 0;
    size_t best_size = 0;
    for (size_t n = 1; n <= max_n && !rc; n *= 4) {
        size_t bytes = n * sizeof(float);
        long iters = (long)((1 << 24) / bytes);
        iters = iters < 10 ? 10 : iters > 1000 ? 1000 : iters;
        memset(buf, 0, bytes); // sums of zeros while timing: the values stay finite
        for (int k = 0; k < 5 && !rc; k++)
            rc = comm_sum(c, buf, n, e);
        float t[1] = {0};
        rc = rc ? rc : comm_sum(c, t, 1, e); // all ranks start together
        double t0 = now_seconds();
        for (long k = 0; k < iters && !rc; k++)
            rc = comm_sum(c, buf, n, e);
        t[0] = (float)((now_seconds() - t0) / (double)iters);
        /* the checked call */
        for (size_t i = 0; i < n; i++)
            buf[i] = value(c->rank, i);
        rc = rc ? rc : comm_sum(c, buf, n, e);
        float wrong[1] = {0};
        for (size_t i = 0; i < n && !rc; i++)
            wrong[0] += buf[i] != (float)((double)(i % 7 + 1) * ranks_sum);
        rc = rc ? rc : comm_sum(c, t, 1, e);
        rc = rc ? rc : comm_sum(c, wrong, 1, e);
        if (rc)
            break;
        double sec = t[0] / W, algbw = (double)bytes / sec / 1e9;
        double busbw = algbw * 2.0 * (W - 1) / W;
        if (busbw > best) {
            best = busbw;
            best_size = bytes;
        }
        fprintf(out, " %12zu %12zu %6s %6s %7ld %11.2f %10.3f %10.3f %7.0f\n", bytes, n, "float",
                "sum", iters, 1e6 * sec, algbw, busbw, wrong[0]);
    }
    if (!rc)
        fprintf(out, "# best busbw %.3f GB/s at %zu B\n", best, best_size);
    free(buf);
    fflush(out);
    return rc;
}

int allreduce_bandwidth_emit(struct comm *c, const struct config *cfg, struct error *e)
{
    if (!cfg->report.out[0] || c->rank > 0)
        return allreduce_bandwidth(c, stdout, e);
    char *text = NULL, stamp[32], path[4400];
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    if (!m)
        return error_set(e, "out of memory");
    int rc = allreduce_bandwidth(c, m, e);
    if (fclose(m) != 0 && !rc)
        rc = error_set(e, "out of memory");
    if (text)
        fputs(text, stdout);
    fflush(stdout);
    if (!rc) {
        time_t t = time(NULL);
        struct tm utc;
        gmtime_r(&t, &utc);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
        rc = report_write_text(cfg->report.out, cfg->name, stamp, "allreduce.txt", text, path,
                               sizeof path, e);
        if (rc)
            error_wrap(e, "the table is not written to report.out (it is on stdout)");
        else
            fprintf(stderr, "dpbench: table written to %s\n", path);
    }
    free(text);
    return rc;
}
