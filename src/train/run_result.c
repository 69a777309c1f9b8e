/* A run's results made of rounds (train.h): epochs appended, rounds marked,
 * and freed. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends more's measured epochs (and each rank's) to into's, numbered on. */
static int append_epochs(struct run_result *into, const struct run_result *more)
{
    int n = into->n_epochs, m = more->n_epochs;
    struct epoch_result *ep = realloc(into->epochs, (size_t)(n + m + 1) * sizeof *ep);
    if (!ep)
        return -1;
    into->epochs = ep;
    for (int r = 0; into->ranks && more->ranks && r < into->world_size; r++) {
        struct epoch_result *re = realloc(into->ranks[r].epochs, (size_t)(n + m + 1) * sizeof *re);
        if (!re)
            return -1;
        into->ranks[r].epochs = re;
        memcpy(re + n, more->ranks[r].epochs, (size_t)m * sizeof *re);
        for (int k = 0; k < m; k++)
            re[n + k].epoch = n + k + 1;
    }
    memcpy(ep + n, more->epochs, (size_t)m * sizeof *ep);
    for (int k = 0; k < m; k++)
        ep[n + k].epoch = n + k + 1;
    into->n_epochs = n + m;
    return 0;
}

double epochs_median(const struct epoch_result *ep, int n)
{
    double *t = malloc((size_t)(n ? n : 1) * sizeof *t), med;
    for (int k = 0; t && k < n; k++)
        t[k] = ep[k].seconds;
    med = t && n ? stats_median(t, (size_t)n) : NAN;
    free(t);
    return med;
}

int run_result_add_round(struct run_result *run, struct run_result *more, int r, int k,
                         const struct load *load, struct error *e)
{
    int from = run->n_epochs;
    bool first = run->n_rounds == 0 && run->n_epochs == 0;
    if (!first && append_epochs(run, more)) {
        run_result_free(more);
        return error_set(e, "out of memory");
    }
    if (first) { // the run itself: more moves in; the label and rounds stay
        struct run_result keep = *run;
        *run = *more;
        *more = (struct run_result){0};
        snprintf(run->label, sizeof run->label, "%s", keep.label);
        run->rounds = keep.rounds, run->n_rounds = keep.n_rounds;
        config_free(&keep.cfg);
    } else {
        run->interrupted |= more->interrupted;
        run->failed |= more->failed;
        run->together = more->together;
        if (more->stopped[0]) // (--tune's profile turns are in no round)
            snprintf(run->stopped, sizeof run->stopped, r < 0 ? "%.0d%s" : "round %d: %s", r + 1,
                     more->stopped);
    }
    run_result_free(more);
    return run_result_mark_round(run, from, r, k, load, e);
}

int run_result_mark_round(struct run_result *run, int from, int r, int k,
                          const struct load *load, struct error *e)
{
    load_merge(&run->load, load);
    if (r < 0)
        return 0;
    struct run_round *rounds = realloc(run->rounds, (size_t)(run->n_rounds + 1) * sizeof *rounds);
    if (!rounds)
        return error_set(e, "out of memory");
    run->rounds = rounds;
    int n = run->n_epochs - from;
    rounds[run->n_rounds++] = (struct run_round){
        .round = r, .position = k, .first_epoch = from, .n_epochs = n, .load = *load,
        .median_s = n ? epochs_median(run->epochs + from, n) : NAN};
    return 0;
}

void run_result_free(struct run_result *r)
{
    config_free(&r->cfg);
    free(r->splits);
    free(r->epochs);
    for (int i = 0; r->ranks && i < r->world_size; i++)
        free(r->ranks[i].epochs);
    free(r->ranks);
    free(r->w);
    free(r->b);
    free(r->rounds);
    memset(r, 0, sizeof *r);
}
