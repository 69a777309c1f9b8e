/* nn.DataParallel on the CPU. Each replica has its own copy of Linear's
 * parameters and its own buffers; replicas 1..N-1 are threads that live for
 * the whole run, replica 0 runs on the training thread (it is the "output
 * device" that holds the master parameters). Math goes through CBLAS. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "chunk.h"

enum phase { PHASE_IDLE, PHASE_FORWARD, PHASE_BACKWARD, PHASE_EXIT };

struct replica {
    struct cpu_dp *dp;
    int id;
    float *w, *b;     // (O, F), (O) this replica's parameters
    float *gw, *gb;   // (O, F), (O) gradients from this replica's chunk
    float *out;       // (chunk_max, O) forward output
    float *dout;      // (chunk_max, O) this replica's slice of the output gradient
    const float *x;   // (rows, F) this replica's chunk, a view into the batch
    long rows;
    pthread_t thread;
};

struct cpu_dp {
    int F, O, n;           // features, out_features, replicas
    long batch_max;
    struct replica *reps;  // (n)
    float *gathered;       // (batch_max, O) outputs gathered on replica 0
    float *dgathered;      // (batch_max, O) d loss / d gathered
    float *ones;           // (batch_max) for bias gradients
    /* phase hand-off to the replica threads */
    pthread_mutex_t mu;
    pthread_cond_t cv_go, cv_done;
    enum phase phase;
    long generation;  // bumps once per phase
    int active;       // replicas taking part in this phase (chunks)
    int pending;      // threads still working on this phase
    int threads;      // replica threads started
};

static void *cpu_alloc(size_t bytes, bool pinned, struct error *e)
{
    (void)pinned; // page-locking means nothing without a device to DMA to
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0) {
        error_set(e, "out of memory (%zu bytes)", bytes);
        return NULL;
    }
    return p;
}

static void cpu_free_host(void *p, bool pinned)
{
    (void)pinned;
    free(p);
}

static void replica_forward(struct replica *r)
{
    struct cpu_dp *dp = r->dp;
    for (long i = 0; i < r->rows; i++)
        memcpy(r->out + i * dp->O, r->b, (size_t)dp->O * sizeof(float));
    /* out (rows, O) += x (rows, F) · wᵀ (F, O) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)r->rows, dp->O, dp->F, 1.0f, r->x,
                dp->F, r->w, dp->F, 1.0f, r->out, dp->O);
}

static void replica_backward(struct replica *r)
{
    struct cpu_dp *dp = r->dp;
    /* gw (O, F) = doutᵀ (O, rows) · x (rows, F);  gb (O) = doutᵀ · 1 */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, dp->O, dp->F, (int)r->rows, 1.0f,
                r->dout, dp->O, r->x, dp->F, 0.0f, r->gw, dp->F);
    cblas_sgemv(CblasRowMajor, CblasTrans, (int)r->rows, dp->O, 1.0f, r->dout, dp->O, dp->ones,
                1, 0.0f, r->gb, 1);
}

static void *replica_main(void *arg)
{
    struct replica *r = arg;
    struct cpu_dp *dp = r->dp;
    long seen = 0;
    pthread_mutex_lock(&dp->mu);
    for (;;) {
        while (dp->generation == seen)
            pthread_cond_wait(&dp->cv_go, &dp->mu);
        seen = dp->generation;
        enum phase ph = dp->phase;
        if (ph == PHASE_EXIT)
            break;
        if (r->id >= dp->active)
            continue; // no chunk for this replica in this batch
        pthread_mutex_unlock(&dp->mu);
        if (ph == PHASE_FORWARD)
            replica_forward(r);
        else
            replica_backward(r);
        pthread_mutex_lock(&dp->mu);
        if (--dp->pending == 0)
            pthread_cond_signal(&dp->cv_done);
    }
    pthread_mutex_unlock(&dp->mu);
    return NULL;
}

/* Runs one phase on replicas [0, active): threads 1.., replica 0 inline. */
static void run_phase(struct cpu_dp *dp, enum phase ph, int active)
{
    if (active > 1) {
        pthread_mutex_lock(&dp->mu);
        dp->phase = ph;
        dp->active = active;
        dp->pending = active - 1;
        dp->generation++;
        pthread_cond_broadcast(&dp->cv_go);
        pthread_mutex_unlock(&dp->mu);
    }
    if (ph == PHASE_FORWARD)
        replica_forward(&dp->reps[0]);
    else
        replica_backward(&dp->reps[0]);
    if (active > 1) {
        pthread_mutex_lock(&dp->mu);
        while (dp->pending > 0)
            pthread_cond_wait(&dp->cv_done, &dp->mu);
        pthread_mutex_unlock(&dp->mu);
    }
}

static void cpu_free(void *ctx)
{
    struct cpu_dp *dp = ctx;
    if (!dp)
        return;
    if (dp->threads) {
        pthread_mutex_lock(&dp->mu);
        dp->phase = PHASE_EXIT;
        dp->generation++;
        pthread_cond_broadcast(&dp->cv_go);
        pthread_mutex_unlock(&dp->mu);
        for (int i = 1; i <= dp->threads; i++)
            pthread_join(dp->reps[i].thread, NULL);
    }
    for (int i = 0; dp->reps && i < dp->n; i++) {
        struct replica *r = &dp->reps[i];
        free(r->w);
        free(r->gw);
        if (dp->n > 1) {
            free(r->out);
            free(r->dout);
        }
    }
    free(dp->reps);
    free(dp->gathered);
    free(dp->dgathered);
    free(dp->ones);
    pthread_mutex_destroy(&dp->mu);
    pthread_cond_destroy(&dp->cv_go);
    pthread_cond_destroy(&dp->cv_done);
    free(dp);
}

static int cpu_init(void **ctx, const struct backend_setup *s, struct error *e)
{
    struct cpu_dp *dp = calloc(1, sizeof *dp);
    if (!dp)
        return error_set(e, "cpu backend: out of memory");
    dp->F = s->features;
    dp->O = s->out_features;
    dp->n = s->replicas;
    dp->batch_max = s->batch_size;
    pthread_mutex_init(&dp->mu, NULL);
    pthread_cond_init(&dp->cv_go, NULL);
    pthread_cond_init(&dp->cv_done, NULL);

    /* Replicas run side by side, so each gets its share of the cores the
     * loader's workers leave free; more BLAS threads would only contend. */
    int blas_threads = s->compute_cores / dp->n;
    openblas_set_num_threads(blas_threads > 0 ? blas_threads : 1);

    size_t pw = (size_t)(dp->O * dp->F), chunk_max = (size_t)((dp->batch_max + dp->n - 1) / dp->n);
    size_t rows = (size_t)dp->batch_max, O = (size_t)dp->O;
    dp->reps = calloc((size_t)dp->n, sizeof *dp->reps);
    dp->gathered = malloc(rows * O * sizeof(float));
    dp->dgathered = malloc(rows * O * sizeof(float));
    dp->ones = malloc(rows * sizeof(float));
    if (!dp->reps || !dp->gathered || !dp->dgathered || !dp->ones)
        goto oom;
    for (size_t i = 0; i < rows; i++)
        dp->ones[i] = 1.0f;
    for (int i = 0; i < dp->n; i++) {
        struct replica *r = &dp->reps[i];
        r->dp = dp;
        r->id = i;
        r->w = malloc((pw + O) * sizeof(float)); // w then b
        r->gw = malloc((pw + O) * sizeof(float)); // gw then gb
        if (dp->n > 1) {
            r->out = malloc(chunk_max * O * sizeof(float));
            r->dout = malloc(chunk_max * O * sizeof(float));
        } else { // one replica: DataParallel calls the module directly, no gather
            r->out = dp->gathered;
            r->dout = dp->dgathered;
        }
        if (!r->w || !r->gw || !r->out || !r->dout)
            goto oom;
        r->b = r->w + pw;
        r->gb = r->gw + pw;
    }
    memcpy(dp->reps[0].w, s->w0, pw * sizeof(float));
    memcpy(dp->reps[0].b, s->b0, O * sizeof(float));
    for (int i = 1; i < dp->n; i++) {
        int rc = thread_start(&dp->reps[i].thread, replica_main, &dp->reps[i]);
        if (rc) {
            cpu_free(dp);
            return error_set(e, "cpu backend: cannot start replica thread %d: %s", i,
                             strerror(rc));
        }
        dp->threads = i;
    }
    *ctx = dp;
    return 0;
oom:
    cpu_free(dp);
    return error_set(e, "cpu backend: out of memory for %d replicas", s->replicas);
}

static int cpu_step(void *ctx, struct batch *bt, float lr, long *split, struct epoch_stats *st,
                    struct error *e)
{
    (void)e;
    struct cpu_dp *dp = ctx;
    double t0 = now_seconds();
    int F = dp->F, O = dp->O;
    size_t pw = (size_t)(O * F);
    struct replica *r0 = &dp->reps[0];

    /* scatter: torch.chunk along the batch; a chunk is a view of host rows */
    int active = chunk_split(bt->rows, dp->n, split);
    long offset = 0;
    for (int i = 0; i < active; i++) {
        dp->reps[i].x = bt->x + offset * F;
        dp->reps[i].rows = split[i];
        offset += split[i];
    }
    /* replicate: broadcast replica 0's parameters to the replicas in use */
    for (int i = 1; i < active; i++)
        memcpy(dp->reps[i].w, r0->w, (pw + (size_t)O) * sizeof(float));
    /* parallel forward */
    run_phase(dp, PHASE_FORWARD, active);
    /* gather the outputs, in replica order, on replica 0 */
    if (dp->n > 1)
        for (int i = 0, row = 0; i < active; row += (int)split[i], i++)
            memcpy(dp->gathered + (size_t)row * O, dp->reps[i].out,
                   (size_t)split[i] * O * sizeof(float));
    /* MSE over the whole batch, and its gradient, on replica 0 */
    size_t n_out = (size_t)bt->rows * O;
    double loss = 0;
    float scale = 2.0f / (float)n_out;
    for (size_t i = 0; i < n_out; i++) {
        float d = dp->gathered[i] - bt->y[i];
        loss += (double)d * d;
        dp->dgathered[i] = scale * d;
    }
    loss /= (double)n_out;
    /* scatter the output gradient back with the same sizes */
    if (dp->n > 1)
        for (int i = 0, row = 0; i < active; row += (int)split[i], i++)
            memcpy(dp->reps[i].dout, dp->dgathered + (size_t)row * O,
                   (size_t)split[i] * O * sizeof(float));
    /* parallel backward */
    run_phase(dp, PHASE_BACKWARD, active);
    /* reduce-add: the backward of broadcast sums the replicas' gradients */
    for (int i = 1; i < active; i++)
        cblas_saxpy((int)(pw + O), 1.0f, dp->reps[i].gw, 1, r0->gw, 1);
    /* SGD on replica 0 (w and b are contiguous, so are gw and gb) */
    cblas_saxpy((int)(pw + O), -lr, r0->gw, 1, r0->w, 1);

    st->loss_sum += loss * (double)bt->rows;
    st->samples += bt->rows;
    st->compute_s += now_seconds() - t0;
    return 0;
}

static int cpu_next(void *ctx, struct loader *l, struct batch **b, struct epoch_stats *st,
                    struct error *e)
{
    (void)ctx;
    double t0 = now_seconds();
    int rc = loader_next(l, b, e);
    st->wait_s += now_seconds() - t0;
    return rc;
}

static void cpu_release(void *ctx, struct loader *l, struct batch *b)
{
    (void)ctx;
    loader_release(l, b);
}

static int cpu_epoch_begin(void *ctx, struct loader *l, struct error *e)
{
    (void)ctx, (void)l, (void)e;
    return 0;
}

static int cpu_epoch_end(void *ctx, struct epoch_stats *st, struct error *e)
{
    (void)ctx, (void)st, (void)e;
    return 0;
}

static int cpu_params(void *ctx, float *w, float *b, struct error *e)
{
    (void)e;
    struct cpu_dp *dp = ctx;
    memcpy(w, dp->reps[0].w, (size_t)(dp->O * dp->F) * sizeof(float));
    memcpy(b, dp->reps[0].b, (size_t)dp->O * sizeof(float));
    return 0;
}

static int cpu_probe(struct error *e)
{
    (void)e;
    return 0;
}

static void cpu_describe(char *buf, size_t n) { snprintf(buf, n, "%s", ""); }

const struct backend backend_cpu = {
    .name = "cpu",
    .probe = cpu_probe,
    .describe = cpu_describe,
    .host_alloc = cpu_alloc,
    .host_free = cpu_free_host,
    .init = cpu_init,
    .epoch_begin = cpu_epoch_begin,
    .next = cpu_next,
    .step = cpu_step,
    .release = cpu_release,
    .epoch_end = cpu_epoch_end,
    .params = cpu_params,
    .free = cpu_free,
};
