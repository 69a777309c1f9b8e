/* The emulated device's report: engine times, AU, the verdict from the
 * engines' busy time, and the pipeline model next to the measurement.
 *
 * The model (docs/emulated.md) follows backend_emulated.c's rules and
 * queueing. Per batch k: X_k its copies (pinned: the devices' engines side by
 * side, the slowest; pageable: staged one after another by the host), C_k
 * its step on the devices (launch + rows x compute per replica, replicas of
 * one device in turn, then the reduce); L the loader's time per batch and H
 * the host's per step, both measured in the same epoch. The period of batch
 * k is the pipeline model's (pipeline.c) for X_k and C_k, without the
 * hand-off and the core bound that --tune fits and applies,
 * and the epoch is L + X_0 + sum over k >= 1 of the periods + C_last. */
#include "report_emulated.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

/* Replica i's emulated device, as backend_emulated.c maps them. */
static int device_of(const struct config *c, int i, int *G, long *seen)
{
    long id = c->parallel.n_devices ? c->parallel.devices[i] : i;
    int g = 0;
    while (g < *G && seen[g] != id)
        g++;
    if (g == *G)
        seen[(*G)++] = id;
    return g;
}

/* Batch k's copy and step seconds under the run's emulate.* settings. */
static void batch_times(const struct run_result *run, long k, double *x, double *c)
{
    const struct config *cf = &run->cfg;
    const struct config_emulate *em = &cf->emulate;
    int n = run->replicas, G = 0, used = 0;
    long seen[n > 0 ? n : 1];
    double bytes[n > 0 ? n : 1], busy[n > 0 ? n : 1];
    long rows = 0, F = cf->dataset.features, O = cf->model.out_features;
    for (int g = 0; g < n; g++)
        bytes[g] = busy[g] = 0;
    for (int i = 0; i < n; i++) {
        long s = run->splits[k * n + i];
        int g = device_of(cf, i, &G, seen);
        rows += s;
        if (s == 0)
            continue;
        used += busy[g] == 0;
        bytes[g] += (double)s * (double)F * sizeof(float);
        busy[g] += 1e-6 * (em->launch_us + (double)s * em->compute_us);
    }
    bytes[0] += (double)rows * (double)O * sizeof(float);
    *x = *c = 0;
    for (int g = 0; g < G; g++) {
        if (cf->loader.pin_memory)
            *x = fmax(*x, bytes[g] / (1e9 * em->h2d_gbps));
        else
            *x += bytes[g] / (1e9 * em->pageable_gbps);
        *c = fmax(*c, busy[g]);
    }
    if (em->p2p_gbps > 0 && used > 1)
        *c += (double)(used - 1) * (double)(O * F + O) * sizeof(float) / (1e9 * em->p2p_gbps);
}

/* The period of a batch: the pipeline model (pipeline.c) with the loader's
 * and host's times measured in the epoch, no hand-off or core bound. */
static double period(const struct config *cf, double L, double H, double X, double C)
{
    struct pipeline_costs c = {.load = L, .host = H};
    struct pipeline_knobs k = pipeline_knobs_of(cf);
    return pipeline_period(&c, &k, X, C);
}

double emu_predict_epoch(const struct run_result *run, double load_s, double host_s)
{
    long n = run->n_split_batches;
    if (n <= 0)
        return NAN;
    double L = load_s / (double)n, H = host_s / (double)n, x, c, t;
    batch_times(run, 0, &x, &c);
    t = L + x;
    for (long k = 1; k < n; k++) { // batch k's copy beside the step of batch k - 1
        double before = c;
        batch_times(run, k, &x, &c);
        t += period(&run->cfg, L, H, x, before);
    }
    return t + c; // the last step's own compute
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void report_emulated_summarize(struct run_result *run)
{
    struct emu_summary *s = &run->sum.emu;
    memset(s, 0, sizeof *s);
    s->predicted_s = s->deviation = NAN;
    if (!run->emulated || run->n_epochs == 0)
        return;
    s->on = true;
    int n = run->n_epochs;
    double pred[n], total = 0, union_busy = 0, steps = (double)n * (double)run->n_batches;
    for (int k = 0; k < n; k++) {
        const struct epoch_stats *st = &run->epochs[k].st;
        total += run->epochs[k].seconds;
        s->h2d_busy_s += st->copy_s / n;
        s->compute_busy_s += st->engine_compute_s / n;
        s->p2p_s += st->p2p_s / n;
        s->exposed_copy_s += (st->copy_s - st->hidden_s) / n;
        s->load_s += st->load_s / n;
        s->host_step_s += st->host_s / steps;
        s->device_step_s += st->compute_s / steps;
        union_busy += st->compute_s + st->copy_s - st->hidden_s;
        pred[k] = emu_predict_epoch(run, st->load_s, st->host_s);
    }
    /* shares of the epoch: device idle (waiting on input), each engine busy */
    int devices = 0; // copy engines side by side: the distinct devices
    long seen[run->replicas > 0 ? run->replicas : 1];
    for (int i = 0; i < run->replicas; i++)
        device_of(&run->cfg, i, &devices, seen);
    s->busy_share[0] = fmax(0, 1 - union_busy / total);
    s->busy_share[1] = s->h2d_busy_s * n / (devices > 0 ? devices : 1) / total;
    s->busy_share[2] = run->sum.compute_share;
    s->bound = 0;
    for (int i = 1; i < 3; i++)
        if (s->busy_share[i] > s->busy_share[s->bound])
            s->bound = i;
    qsort(pred, (size_t)n, sizeof *pred, cmp_double);
    s->predicted_s = n % 2 ? pred[n / 2] : 0.5 * (pred[n / 2 - 1] + pred[n / 2]);
    s->deviation = run->sum.median_s / s->predicted_s - 1;
    s->flagged = fabs(s->deviation) > EMU_MODEL_TOLERANCE;
}

static const char *const bound_name[] = {"input-bound", "copy-bound", "compute-bound"};

const char *report_emulated_tag(const struct run_result *run)
{
    return run->emulated ? " [emulated]" : "";
}

static void text_settings(FILE *f, const struct run_result *run)
{
    const struct config_emulate *em = &run->cfg.emulate;
    fprintf(f, "# emulated device: copies %g GB/s pinned, %g GB/s pageable; step %g us + %g us "
               "per sample per replica; reduce %s",
            em->h2d_gbps, em->pageable_gbps, em->launch_us, em->compute_us,
            em->p2p_gbps > 0 ? "" : "not timed");
    if (em->p2p_gbps > 0)
        fprintf(f, "%g GB/s", em->p2p_gbps);
    fprintf(f, "%s%s\n", em->profile[0] ? "; profile " : "", em->profile);
}

void report_emulated_text(FILE *f, const struct run_result *run)
{
    const struct emu_summary *s = &run->sum.emu;
    if (!s->on)
        return;
    const char *lab = run->label[0] ? run->label : "";
    text_settings(f, run);
    fprintf(f, "# emulated engines%s%s, per epoch: copy %.3f ms busy (%.3f exposed), compute "
               "%.3f ms busy, reduce %.3f ms; AU %.0f%% [emulated]\n",
            lab[0] ? " " : "", lab, 1e3 * s->h2d_busy_s, 1e3 * s->exposed_copy_s,
            1e3 * s->compute_busy_s, 1e3 * s->p2p_s, 100 * run->sum.au);
    fprintf(f, "# emulated AU per epoch%s%s:", lab[0] ? " " : "", lab);
    for (int k = 0; k < run->n_epochs; k++)
        fprintf(f, " %.0f%%", 100 * run->epochs[k].st.compute_s / run->epochs[k].seconds);
    fprintf(f, " [emulated]\n");
    fprintf(f, "# emulated verdict%s%s: %s (device idle %.0f%%, copy engine %.0f%%, compute "
               "engine %.0f%% of the epoch)\n",
            lab[0] ? " " : "", lab, bound_name[s->bound], 100 * s->busy_share[0],
            100 * s->busy_share[1], 100 * s->busy_share[2]);
    fprintf(f, "# emulated model%s%s: %.3f ms per epoch predicted, %.3f ms measured (%+.1f%%)%s "
               "[emulated]\n",
            lab[0] ? " " : "", lab, 1e3 * s->predicted_s, 1e3 * run->sum.median_s,
            100 * s->deviation,
            s->flagged ? "; FLAG: more than 15% from the model" : "");
    if (s->device_step_s < EMU_RESOLUTION_S)
        fprintf(f, "# emulated note%s%s: a modelled step of %.1f us is below the emulation's "
                   "resolution (about %.0f us: a sleep's wake-up); the loop's own overheads "
                   "dominate the measured time\n",
                lab[0] ? " " : "", lab, 1e6 * s->device_step_s, 1e6 * EMU_RESOLUTION_S);
    if (s->host_step_s > s->device_step_s)
        fprintf(f, "# emulated note%s%s: the host's own step (%.1f us: the Linear on this CPU "
                   "and its issuing) is longer than the modelled device step (%.1f us); the "
                   "device times reported are the host's\n",
                lab[0] ? " " : "", lab, 1e6 * s->host_step_s, 1e6 * s->device_step_s);
}

void report_emulated_json(cJSON *sum, const struct run_result *run)
{
    const struct emu_summary *s = &run->sum.emu;
    if (!s->on)
        return;
    cJSON *o = cJSON_AddObjectToObject(sum, "emulated");
    cJSON_AddNumberToObject(o, "h2d_engine_busy_seconds", s->h2d_busy_s);
    cJSON_AddNumberToObject(o, "compute_engine_busy_seconds", s->compute_busy_s);
    cJSON_AddNumberToObject(o, "p2p_seconds", s->p2p_s);
    cJSON_AddNumberToObject(o, "exposed_copy_seconds", s->exposed_copy_s);
    cJSON_AddNumberToObject(o, "load_seconds", s->load_s);
    cJSON_AddNumberToObject(o, "host_step_seconds", s->host_step_s);
    cJSON_AddNumberToObject(o, "device_step_seconds", s->device_step_s);
    cJSON_AddNumberToObject(o, "idle_share", s->busy_share[0]);
    cJSON_AddNumberToObject(o, "h2d_busy_share", s->busy_share[1]);
    cJSON_AddNumberToObject(o, "compute_busy_share", s->busy_share[2]);
    cJSON_AddStringToObject(o, "verdict", bound_name[s->bound]);
    cJSON_AddItemToObject(o, "predicted_seconds", isfinite(s->predicted_s)
                                                      ? cJSON_CreateNumber(s->predicted_s)
                                                      : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "deviation", isfinite(s->deviation) ? cJSON_CreateNumber(s->deviation)
                                                                 : cJSON_CreateNull());
    cJSON_AddBoolToObject(o, "flagged", s->flagged);
    cJSON_AddBoolToObject(o, "host_bound", s->host_step_s > s->device_step_s);
}
