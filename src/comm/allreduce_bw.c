/* dpbench --allreduce-bandwidth: the run's comm engine summing float
 * buffers of growing size across the ranks, timed and checked the way
 * nccl-tests' all_reduce_perf prints it: size, count, time per call, algbw =
 * size / time, busbw = algbw x 2(W-1)/W, and #wrong, the elements that differ
 * from the expected sum on any rank. The buffers are in the memory the
 * engine sums (comm_buffer): the host's for mpi, the rank's GPU for nccl
 * (its local rank's, or its entry of parallel.devices; the calls on the
 * engine's own stream). */
#include "allreduce_bw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"

#define MAX_BYTES ((size_t)32 << 20)

/* Element i of rank r's buffer: small integers, so every sum is exact. */
static float value(int rank, size_t i) { return (float)((rank + 1) * (long)(i % 7 + 1)); }

static void header(struct comm *c, FILE *out)
{
    int W = c->world;
    char memory[64] = "host memory";
    if (c->device >= 0 && comm_engine_device_memory(c->name))
        snprintf(memory, sizeof memory, "device memory (GPU %d)", c->device);
    fprintf(out, "# dpbench %s allreduce-bandwidth: engine %s, %d rank%s, float sum in place, "
                 "%s\n", DPBENCH_VERSION, c->name, W, W == 1 ? "" : "s", memory);
    fprintf(out, "# time: mean over the ranks of the mean call over `iters` calls after 5 "
                 "warm-up calls; #wrong: elements off the expected sum, all ranks\n");
    fprintf(out, "#%12s %12s %6s %6s %7s %11s %10s %10s %7s\n", "size", "count", "type",
            "redop", "iters", "time", "algbw", "busbw", "#wrong");
    fprintf(out, "#%12s %12s %6s %6s %7s %11s %10s %10s %7s\n", "(B)", "(elements)", "", "",
            "", "(us)", "(GB/s)", "(GB/s)", "");
}

/* On rank 0: the ranks' mean of *sec and total of *wrong (a gather: a
 * device engine's sum takes device memory only). */
static int across(struct comm *c, double *sec, double *wrong, struct error *e)
{
    double mine[2] = {*sec, *wrong}, *all = NULL;
    if (c->rank == 0 && !(all = calloc(2 * (size_t)c->world, sizeof *all)))
        return error_set(e, "out of memory");
    int rc = comm_gather(c, mine, sizeof mine, all, e);
    for (int r = 1; c->rank == 0 && !rc && r < c->world; r++) {
        mine[0] += all[2 * r];
        mine[1] += all[2 * r + 1];
    }
    *sec = mine[0] / c->world;
    *wrong = mine[1];
    free(all);
    return rc;
}

/* One size: seconds per call and elements off the expected sum, through
 * the engine's buffer buf and the host's h. */
static int one_size(struct comm *c, float *buf, float *h, size_t n, long iters, double *sec,
                    double *wrong, struct error *e)
{
    double ranks_sum = (double)c->world * (c->world + 1) / 2;
    long ready = 0;
    memset(h, 0, n * sizeof(float)); // sums of zeros while timing: the values stay finite
    int rc = comm_buffer_put(c, buf, h, n, e);
    for (int k = 0; k < 5 && !rc; k++)
        rc = comm_sum(c, buf, n, e);
    rc = rc ? rc : comm_max(c, 0, &ready, e); // all ranks start together
    double t0 = now_seconds();
    for (long k = 0; k < iters && !rc; k++)
        rc = comm_sum(c, buf, n, e);
    *sec = (now_seconds() - t0) / (double)iters;
    for (size_t i = 0; i < n; i++) // the checked call
        h[i] = value(c->rank, i);
    if (rc || comm_buffer_put(c, buf, h, n, e) || comm_sum(c, buf, n, e) ||
        comm_buffer_get(c, h, buf, n, e))
        return -1;
    *wrong = 0;
    for (size_t i = 0; i < n; i++)
        *wrong += h[i] != (float)((double)(i % 7 + 1) * ranks_sum);
    return across(c, sec, wrong, e);
}

int allreduce_bandwidth(struct comm *c, FILE *out, struct error *e)
{
    size_t max_n = MAX_BYTES / sizeof(float);
    float *h = malloc(max_n * sizeof(float)), *buf = h ? comm_buffer(c, max_n, e) : NULL;
    if (!h || !buf) {
        free(h);
        return h ? -1 : error_set(e, "out of memory (%zu bytes)", MAX_BYTES);
    }
    header(c, out);
    int rc = 0, W = c->world;
    double best = 0;
    size_t best_size = 0;
    for (size_t n = 1; n <= max_n && !rc; n *= 4) {
        size_t bytes = n * sizeof(float);
        long iters = (long)((1 << 24) / bytes);
        iters = iters < 10 ? 10 : iters > 1000 ? 1000 : iters;
        double sec = 0, wrong = 0;
        if ((rc = one_size(c, buf, h, n, iters, &sec, &wrong, e)))
            break;
        double algbw = (double)bytes / sec / 1e9, busbw = algbw * 2.0 * (W - 1) / W;
        if (busbw > best) {
            best = busbw;
            best_size = bytes;
        }
        fprintf(out, " %12zu %12zu %6s %6s %7ld %11.2f %10.3f %10.3f %7.0f\n", bytes, n, "float",
                "sum", iters, 1e6 * sec, algbw, busbw, wrong);
    }
    if (!rc)
        fprintf(out, "# best busbw %.3f GB/s at %zu B\n", best, best_size);
    comm_buffer_free(c, buf);
    free(h);
    fflush(out);
    return rc;
}

int allreduce_bandwidth_emit(struct comm *c, const struct config *cfg, struct error *e)
{
    if (comm_bind(c, comm_device(c, cfg->parallel.devices, cfg->parallel.n_devices), NULL, e))
        return -1; // the rank's device, for a device engine
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
