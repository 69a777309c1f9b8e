#include "ddp.h"

#include "backend.h"
#include "dataset_kind.h"
#include "loader.h"
#include "signals.h"
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "key=value\n" for every key of the table, then the sweep. */
static char *config_text(const struct config *cfg, size_t *len)
{
    size_t cap = 1 << 14, used = 0;
    char *s = malloc(cap), val[CONFIG_STR * 4];
    if (!s)
        return NULL;
    for (size_t i = 0;; i++) {
        const char *key = config_key_name(i);
        if (!key)
            break;
        if (config_get_text(cfg, key, val, sizeof val))
            continue;
        if (used + strlen(key) + strlen(val) + 3 > cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                return NULL;
            }
            s = t;
        }
        used += (size_t)sprintf(s + used, "%s=%s\n", key, val);
    }
    for (int i = 0; i < cfg->n_sweep; i++) {
        size_t need = strlen(cfg->sweep[i].key) + 16;
        for (int j = 0; j < cfg->sweep[i].n_values; j++)
            need += strlen(cfg->sweep[i].values[j]) + 1;
        if (used + need > cap) {
            char *t = realloc(s, cap = used + need + cap);
            if (!t) {
                free(s);
                return NULL;
            }
            s = t;
        }
        used += (size_t)sprintf(s + used, "sweep.%s=", cfg->sweep[i].key);
        for (int j = 0; j < cfg->sweep[i].n_values; j++)
            used += (size_t)sprintf(s + used, "%s%s", j ? "," : "", cfg->sweep[i].values[j]);
        s[used++] = '\n';
        s[used] = '\0';
    }
    *len = used;
    return s;
}

/* The first line where a and b differ: writes "key: rank 0 has X, this rank Y". */
static bool first_difference(const char *a, const char *b, char *out, size_t n)
{
    while (*a || *b) {
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
        if (la != lb || memcmp(a, b, la) != 0) {
            const char *eq = memchr(la ? a : b, '=', la ? la : lb);
            const char *line = la ? a : b;
            int klen = eq ? (int)(eq - line) : (int)(la ? la : lb);
            const char *va = la && memchr(a, '=', la) ? (const char *)memchr(a, '=', la) + 1 : a;
            const char *vb = lb && memchr(b, '=', lb) ? (const char *)memchr(b, '=', lb) + 1 : b;
            snprintf(out, n, "%.*s (rank 0: '%.*s', here: '%.*s')", klen, line,
                     (int)(a + la - va), va, (int)(b + lb - vb), vb);
            return true;
        }
        a += la + (ea ? 1 : 0);
        b += lb + (eb ? 1 : 0);
    }
    return false;
}

enum { MSG = 512 };

/* A failure here (out of memory, a collective) leaves the ranks out of step:
 * the caller ends the job (comm_abort), as for any rank's failure. */
int ddp_check_config(struct comm *c, const struct config *cfg, struct error *e)
{
    if (c->world == 1)
        return 0;
    size_t len = 0;
    char *mine = config_text(cfg, &len), *theirs = NULL, *all = NULL;
    long n0 = (long)len;
    char msg[MSG] = "", diff[MSG - 64];
    int rc = -1;
    if (!mine) {
        error_set(e, "out of memory");
        goto out;
    }
    if (comm_bcast(c, &n0, sizeof n0, e))
        goto out;
    theirs = malloc((size_t)n0 + 1);
    all = c->rank == 0 ? calloc((size_t)c->world, MSG) : NULL;
    if (!theirs || (c->rank == 0 && !all)) {
        error_set(e, "out of memory");
        goto out;
    }
    if (c->rank == 0)
        memcpy(theirs, mine, len);
    if (comm_bcast(c, theirs, (size_t)n0, e))
        goto out;
    theirs[n0] = '\0';
    if (first_difference(theirs, mine, diff, sizeof diff))
        snprintf(msg, sizeof msg, "rank %d (%s): its config differs from rank 0's at %s",
                 c->rank, c->host, diff);
    /* rank 0 picks the lowest rank's message and tells every rank */
    if (comm_gather(c, msg, MSG, all, e))
        goto out;
    for (int r = 0; c->rank == 0 && r < c->world && !msg[0]; r++)
        snprintf(msg, sizeof msg, "%s", all + (size_t)r * MSG);
    if (comm_bcast(c, msg, MSG, e))
        goto out;
    rc = msg[0] ? error_set(e, "%s; every rank must run the same config", msg) : 0;
out:
    free(mine);
    free(theirs);
    free(all);
    return rc;
}

int ddp_check_launch(const struct config *cfg, struct error *e)
{
    int rank, world = comm_launched_world(&rank);
    if (world == 1)
        return 0;
    const char *dp = strcmp(cfg->parallel.mode, "dp") == 0 ? "" : NULL;
    for (int i = 0; !dp && i < cfg->n_sweep; i++)
        for (int j = 0; !dp && strcmp(cfg->sweep[i].key, "parallel.mode") == 0 &&
                        j < cfg->sweep[i].n_values; j++)
            if (strcmp(cfg->sweep[i].values[j], "dp") == 0)
                dp = " (a sweep point)";
    if (!dp)
        return 0;
    return error_set(e, "rank %d of %d: parallel.mode: dp%s runs in one process, but mpirun "
                        "started this one as a rank of %d (OMPI_COMM_WORLD_SIZE): set "
                        "parallel.mode: ddp on every rank, or run dp without mpirun",
                     rank, world, dp, world);
}

int ddp_check_share(const struct config *cfg, int world, struct error *e)
{
    long n = cfg->dataset.length, share = loader_samples(n, world, cfg->loader.drop_last);
    if (world > n)
        return error_set(e, "parallel.mode ddp: %d ranks for dataset.length %ld; every rank "
                            "needs at least one sample", world, n);
    if (cfg->loader.drop_last && share < cfg->loader.batch_size)
        return error_set(e, "loader.batch_size: %ld is larger than each rank's %ld samples "
                            "(dataset.length %ld over %d ranks, drop_last: true), so an epoch "
                            "has no batch", cfg->loader.batch_size, share, n, world);
    return 0;
}

int ddp_open(struct comm *c, struct config *cfg, const struct backend *be, struct error *e)
{
    const char *engine = cfg->parallel.comm;
    if (strcmp(engine, "auto") == 0)
        engine = comm_auto(be->device_memory);
    if (comm_engine_device_memory(engine) && !be->device_memory)
        return error_set(e, "parallel.comm: %s needs the cuda backend (parallel.device is %s)",
                         engine, be->name);
    const char *before = signals_phase("opening the communicator (waiting for every rank)");
    int rc = comm_open(c, engine, e);
    signals_phase(before);
    if (rc)
        return -1;
    if (!dataset_kind_of(cfg)->labelled && c->world > cfg->dataset.length) // a file's: when read
        rc = error_set(e, "parallel.mode ddp: %d ranks for dataset.length %ld; every rank needs "
                          "at least one sample",
                       c->world, cfg->dataset.length);
    else
        rc = ddp_check_config(c, cfg, e);
    if (rc) {
        /* rank 0 says it, once, and before MPI_Finalize: the other ranks wait
         * there for it, so its line is out before any rank exits (non-zero)
         * and mpirun ends the job, which may kill rank 0 mid-exit */
        if (c->rank == 0) {
            fprintf(stderr, "dpbench: %s\n", e->msg);
            fflush(stderr);
        }
        e->msg[0] = '\0';
        comm_close(c);
        return -1;
    }
    if (c->rank > 0) {
        if (!freopen("/dev/null", "w", stdout))
            return error_set(e, "rank %d: cannot silence stdout", c->rank);
        cfg->report.out[0] = '\0';
    }
    return 0;
}

/* One rank's record in the gather: host, measured epochs, first-epoch rows. */
struct record {
    char host[64];
    int n_epochs;
};

void ddp_alone(const struct comm *c, struct run_result *run)
{
    size_t used = strlen(run->notes);
    snprintf(run->notes + used, sizeof run->notes - used,
             "%sddp job of %d ranks stopped while another rank did not respond: rank %d's "
             "figures alone (its shard of each epoch)", used ? "; " : "", c->world, c->rank);
    run->world_size = 1;
}

/* Rank 0: every rank's record (W of rec bytes in all) merged into run: the
 * job's samples, loss and accuracy per epoch on rank 0's clock, each rank's
 * epochs in ranks and its rows per batch in splits (nb x W). */
static int merge_ranks(struct run_result *run, int W, const char *all, size_t rec, long *splits,
                       struct rank_result *ranks, struct error *e)
{
    int n = run->n_epochs, rc = 0;
    long nb = run->n_batches;
    for (int k = 0; k < n; k++) { // the job's samples, loss and accuracy, rank 0's clock
        run->epochs[k].st.samples = 0;
        run->epochs[k].st.loss_sum = 0;
        run->epochs[k].st.correct = 0;
    }
    for (int q = 0; q < W && !rc; q++) {
        const char *p = all + (size_t)q * rec;
        const struct record *rq = (const struct record *)p;
        const struct epoch_result *ep = (const void *)(p + sizeof *rq);
        const long *sp = (const void *)(p + sizeof *rq + (size_t)n * sizeof *ep);
        if (rq->n_epochs != n) {
            rc = error_set(e, "rank %d measured %d epochs, rank 0 %d", q, rq->n_epochs, n);
            break;
        }
        ranks[q].rank = q;
        snprintf(ranks[q].host, sizeof ranks[q].host, "%s", rq->host);
        if (!(ranks[q].epochs = malloc((size_t)(n ? n : 1) * sizeof *ep))) {
            rc = error_set(e, "out of memory");
            break;
        }
        memcpy(ranks[q].epochs, ep, (size_t)n * sizeof *ep);
        for (long k = 0; k < nb; k++)
            splits[k * W + q] = sp[k];
        for (int k = 0; k < n; k++) {
            run->epochs[k].st.samples += ep[k].st.samples;
            run->epochs[k].st.loss_sum += ep[k].st.loss_sum;
            run->epochs[k].st.correct += ep[k].st.correct;
        }
    }
    for (int k = 0; k < n && !rc; k++) {
        struct epoch_result *er = &run->epochs[k];
        er->samples_per_s = (double)er->st.samples / er->seconds;
        er->loss = er->st.samples ? er->st.loss_sum / (double)er->st.samples : NAN;
        if (!isnan(er->accuracy)) // labelled data
            er->accuracy = (double)er->st.correct / (double)er->st.samples;
    }
    return rc;
}

int ddp_gather(struct comm *c, struct run_result *run, struct error *e)
{
    int W = c->world, n = run->n_epochs;
    long nb = run->n_batches;
    size_t rec = sizeof(struct record) + (size_t)n * sizeof(struct epoch_result) +
                 (size_t)nb * sizeof(long);
    char *mine = calloc(1, rec), *all = c->rank == 0 ? calloc((size_t)W, rec) : NULL;
    long *splits = c->rank == 0 ? calloc((size_t)(nb * W), sizeof(long)) : NULL;
    struct rank_result *ranks = c->rank == 0 ? calloc((size_t)W, sizeof *ranks) : NULL;
    int rc = -1;
    if (!mine || (c->rank == 0 && (!all || !splits || !ranks))) {
        error_set(e, "out of memory gathering %d ranks' figures", W);
        goto out;
    }
    struct record *r = (struct record *)mine;
    snprintf(r->host, sizeof r->host, "%s", c->host);
    r->n_epochs = n;
    memcpy(mine + sizeof *r, run->epochs, (size_t)n * sizeof(struct epoch_result));
    memcpy(mine + sizeof *r + (size_t)n * sizeof(struct epoch_result), run->splits,
           (size_t)nb * sizeof(long));
    if (comm_gather(c, mine, rec, all, e))
        goto out;
    rc = 0;
    if (c->rank > 0)
        goto out;
    rc = merge_ranks(run, W, all, rec, splits, ranks, e);
    if (!rc) {
        free(run->splits);
        run->splits = splits;
        splits = NULL;
        run->ranks = ranks;
        ranks = NULL;
    }
out:
    if (ranks)
        for (int q = 0; q < W; q++)
            free(ranks[q].epochs);
    free(ranks);
    free(splits);
    free(mine);
    free(all);
    return rc;
}

void ddp_trace(FILE *f, const struct run_result *run, int F, int O)
{
    int W = run->world_size;
    for (long k = 0; k < run->n_batches; k++)
        for (int r = 0; r < W; r++) {
            long rows = run->splits[k * W + r];
            fprintf(f, "[rank %d]\tIn Model: input size [%ld, %d] output size [%ld, %d]\n", r,
                    rows, F, rows, O);
            fprintf(f, "[rank %d] Outside: input size [%ld, %d] output_size [%ld, %d]\n", r, rows,
                    F, rows, O);
        }
}
