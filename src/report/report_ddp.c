/* The DDP parts of the report: per-rank figures gathered on rank 0 (the
 * rank table), the straggler ratio, and the gradient allreduce's time and
 * bandwidth in nccl-tests' terms (algbw = bytes / time per call; busbw =
 * algbw x 2(W-1)/W, what each rank's link carries in a ring allreduce). */
#include "report_ddp.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* algbw and busbw (GB/s) of a run's gradient allreduce at `seconds` per
 * epoch (n_batches calls); NAN without a measured time. */
static void bandwidth(const struct run_result *run, double seconds, double *algbw, double *busbw)
{
    int W = run->world_size;
    double calls = (double)run->n_batches;
    *algbw = *busbw = NAN;
    if (calls > 0 && seconds > 0) {
        *algbw = run->allreduce_bytes / (seconds / calls) / 1e9;
        *busbw = *algbw * 2.0 * (W - 1) / W;
    }
}

bool report_ddp_epoch(const struct run_result *run, int k, double *seconds, double *wait,
                      double *busbw)
{
    *seconds = *wait = *busbw = NAN;
    if (run->world_size <= 1 || !run->ranks || k >= run->n_epochs)
        return false;
    double ar = 0, w = 0, algbw;
    for (int r = 0; r < run->world_size; r++) {
        ar += run->ranks[r].epochs[k].st.allreduce_s;
        w += run->ranks[r].epochs[k].st.allreduce_wait_s;
    }
    *seconds = ar / run->world_size;
    *wait = w / run->world_size;
    bandwidth(run, *seconds, &algbw, busbw);
    return true;
}

void report_ddp_summarize(struct run_result *run)
{
    struct run_summary *s = &run->sum;
    s->allreduce_s = s->allreduce_wait_s = s->algbw_gbps = s->busbw_gbps = s->straggler = NAN;
    if (run->world_size <= 1 || !run->ranks || run->n_epochs == 0)
        return;
    int W = run->world_size, n = run->n_epochs;
    double slow = 0, fast = INFINITY, ar = 0, wait = 0;
    for (int r = 0; r < W; r++) {
        double m = epochs_median(run->ranks[r].epochs, n);
        slow = m > slow ? m : slow;
        fast = m < fast ? m : fast;
        for (int k = 0; k < n; k++) {
            ar += run->ranks[r].epochs[k].st.allreduce_s;
            wait += run->ranks[r].epochs[k].st.allreduce_wait_s;
        }
    }
    s->straggler = slow / fast;
    s->allreduce_s = ar / W / n; // per epoch, mean over ranks
    s->allreduce_wait_s = wait / W / n;
    bandwidth(run, s->allreduce_s, &s->algbw_gbps, &s->busbw_gbps);
}

void report_ddp_text(FILE *f, const struct run_result *run)
{
    if (run->world_size <= 1 || !run->ranks)
        return;
    int n = run->n_epochs;
    fprintf(f, "# ranks (per epoch, mean over the measured epochs):\n");
    fprintf(f, "# %5s %-20s %10s %10s %11s %11s %11s %11s\n", "rank", "host", "samples", "epoch",
            "wait", "compute", "allreduce", "ar wait");
    fprintf(f, "# %5s %-20s %10s %10s %11s %11s %11s %11s\n", "", "", "", "ms", "ms", "ms", "ms",
            "ms");
    for (int r = 0; r < run->world_size; r++) {
        const struct rank_result *rk = &run->ranks[r];
        double t = 0, w = 0, c = 0, a = 0, aw = 0, smp = 0;
        for (int k = 0; k < n; k++) {
            t += rk->epochs[k].seconds;
            w += rk->epochs[k].st.wait_s;
            c += rk->epochs[k].st.compute_s;
            a += rk->epochs[k].st.allreduce_s;
            aw += rk->epochs[k].st.allreduce_wait_s;
            smp += (double)rk->epochs[k].st.samples;
        }
        if (n == 0)
            n = 1;
        fprintf(f, "# %5d %-20.20s %10.0f %10.4f %11.4f %11.4f %11.4f %11.4f\n", rk->rank,
                rk->host, smp / n, 1e3 * t / n, 1e3 * w / n, 1e3 * c / n, 1e3 * a / n,
                1e3 * aw / n);
    }
    const struct run_summary *s = &run->sum;
    fprintf(f, "# straggler: slowest / fastest rank's median epoch = %.3f\n", s->straggler);
    fprintf(f, "# allreduce: %.4f ms per epoch (%.4f ms of it waiting for the last rank to "
               "arrive), %ld calls of %.0f B: algbw %.3f GB/s, busbw %.3f GB/s (%d ranks, %s)\n",
            1e3 * s->allreduce_s, 1e3 * s->allreduce_wait_s, run->n_batches, run->allreduce_bytes, s->algbw_gbps,
            s->busbw_gbps, run->world_size, run->comm);
}

static cJSON *num(double x) { return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull(); }

void report_ddp_json(struct cJSON *o, struct cJSON *summary, const struct run_result *run)
{
    cJSON_AddNumberToObject(o, "world_size", run->world_size > 0 ? run->world_size : 1);
    cJSON_AddItemToObject(summary, "busbw_gbps", num(run->sum.busbw_gbps));
    if (run->world_size <= 1 || !run->ranks)
        return;
    cJSON_AddStringToObject(o, "comm", run->comm);
    cJSON_AddItemToObject(summary, "algbw_gbps", num(run->sum.algbw_gbps));
    cJSON_AddItemToObject(summary, "allreduce_seconds_per_epoch", num(run->sum.allreduce_s));
    cJSON_AddItemToObject(summary, "allreduce_wait_seconds_per_epoch",
                          num(run->sum.allreduce_wait_s));
    cJSON_AddItemToObject(summary, "straggler_ratio", num(run->sum.straggler));
    cJSON *ranks = cJSON_AddArrayToObject(o, "ranks");
    for (int r = 0; r < run->world_size; r++) {
        const struct rank_result *rk = &run->ranks[r];
        cJSON *jr = cJSON_CreateObject();
        cJSON_AddNumberToObject(jr, "rank", rk->rank);
        cJSON_AddStringToObject(jr, "host", rk->host);
        cJSON *eps = cJSON_AddArrayToObject(jr, "epochs");
        for (int k = 0; k < run->n_epochs; k++) {
            const struct epoch_result *ep = &rk->epochs[k];
            cJSON *je = cJSON_CreateObject();
            cJSON_AddNumberToObject(je, "epoch", (double)ep->epoch);
            cJSON_AddItemToObject(je, "seconds", num(ep->seconds));
            cJSON_AddItemToObject(je, "samples_per_second", num(ep->samples_per_s));
            cJSON_AddItemToObject(je, "loss", num(ep->loss));
            cJSON_AddNumberToObject(je, "samples", (double)ep->st.samples);
            cJSON_AddItemToObject(je, "wait_seconds", num(ep->st.wait_s));
            cJSON_AddItemToObject(je, "copy_seconds", num(ep->st.copy_s));
            cJSON_AddItemToObject(je, "compute_seconds", num(ep->st.compute_s));
            cJSON_AddItemToObject(je, "allreduce_seconds", num(ep->st.allreduce_s));
            cJSON_AddItemToObject(je, "allreduce_wait_seconds", num(ep->st.allreduce_wait_s));
            cJSON_AddItemToArray(eps, je);
        }
        cJSON_AddItemToArray(ranks, jr);
    }
}
