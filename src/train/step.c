/* The DataParallel and DDP steps, once, over struct device_ops. A reader
 * finds each mode's algorithm in one function below; the backends supply
 * matrix products, copies and queue ordering, never the sequence. */
#include "step.h"

#include <stdlib.h>
#include <string.h>

/* ---- defaults of the optional hooks: host memory, work done at once ------ */

static float *mem_alloc(struct step *s, int r, size_t n, struct error *e)
{
    if (s->o->alloc)
        return s->o->alloc(s->ctx, r, n, e);
    float *p = NULL;
    if (posix_memalign((void **)&p, 64, (n ? n : 1) * sizeof(float)) != 0) {
        error_set(e, "out of memory (%zu floats)", n);
        return NULL;
    }
    return p;
}

static void mem_release(struct step *s, int r, float *p)
{
    if (!p)
        return;
    if (s->o->release)
        s->o->release(s->ctx, r, p);
    else
        free(p);
}

static bool shares(struct step *s, int a, int b)
{
    return !s->o->shares_memory || s->o->shares_memory(s->ctx, a, b);
}

/* The loss of batch b on replica 0: d into dgathered; its value into st now
 * (host default) or by the backend's epoch_end (its own hook). */
static int loss_run(struct step *s, const struct step_batch *b, struct epoch_stats *st,
                    struct error *e)
{
    if (s->o->loss)
        return s->o->loss(s->ctx, s->loss, b->index, s->gathered, b->y, b->rows, s->dgathered, e);
    st->loss_sum += s->loss->sample_sum(s->loss->host(s->gathered, b->y, b->rows, s->O,
                                                      s->dgathered), s->O);
    if (s->classify)
        st->correct += loss_correct(s->gathered, b->y, b->rows, s->O);
    return 0;
}

/* The clock starts after the backend's begin, which may wait for the
 * device (the run-ahead limit): waiting is not issuing. */
static int step_begin(struct step *s, const struct step_batch *b, double *t0, struct error *e)
{
    int rc = s->o->begin ? s->o->begin(s->ctx, b, e) : 0;
    *t0 = now_seconds();
    s->held_s = 0;
    return rc;
}

/* Without `end` the step's host time is its compute time; with it the
 * backend times the device, and the host's time is its overhead (less the
 * allreduce's wait for the other ranks). */
static int step_end(struct step *s, const struct step_batch *b, double t0,
                    struct epoch_stats *st, struct error *e)
{
    st->samples += b->rows;
    if (!s->o->end) {
        st->compute_s += now_seconds() - t0;
        return 0;
    }
    int rc = s->o->end(s->ctx, b, st, e);
    st->host_s += now_seconds() - t0 - s->held_s;
    return rc;
}

/* ---- the steps ------------------------------------------------------------ */

/* DataParallel steps 2-4: replicate replica 0's parameters to the replicas
 * in use, the parallel forward, and the outputs gathered in replica order on
 * replica 0 (replica 0 writes its own in place). A replica that can read
 * replica 0's memory reads the parameters in place (and writes its outputs,
 * reads its output gradient, where replica 0 keeps them): nothing writes
 * there until the step's end. */
static int dp_forward(struct step *s, const struct step_batch *b, struct error *e)
{
    const struct device_ops *o = s->o;
    void *c = s->ctx;
    int n = b->active, O = s->O;
    const long *split = b->split;
    if (o->fork(c, n, e))
        return -1;
    for (int i = 1; i < n; i++)
        if (!shares(s, i, 0) && o->copy(c, i, s->w[i], i, s->w[0], 0, s->P, e))
            return error_wrap(e, "replicate to replica %d", i);
    for (int i = 0, row = 0; i < n; row += (int)split[i], i++) {
        bool direct = i == 0 || shares(s, i, 0);
        float *out = direct ? s->gathered + (size_t)row * O : s->out[i];
        if (o->forward(c, i, b->x[i], split[i], direct ? s->w[0] : s->w[i], out, e))
            return error_wrap(e, "replica %d forward", i);
        if (!direct && o->copy(c, i, s->gathered + (size_t)row * O, 0, s->out[i], i,
                               (size_t)split[i] * O, e))
            return error_wrap(e, "gather from replica %d", i);
    }
    return o->join(c, n, e);
}

/* DataParallel step 6: the output gradient scattered back with the same
 * sizes; each replica's parameter gradient lands where replica 0 can read it. */
static int dp_backward(struct step *s, const struct step_batch *b, float alpha, struct error *e)
{
    const struct device_ops *o = s->o;
    void *c = s->ctx;
    int n = b->active, O = s->O;
    const long *split = b->split;
    if (o->fork(c, n, e))
        return -1;
    for (int i = 0, row = 0; i < n; row += (int)split[i], i++) {
        bool direct = i == 0 || shares(s, i, 0);
        float *dout = direct ? s->dgathered + (size_t)row * O : s->dout[i];
        if (!direct && o->copy(c, i, s->dout[i], i, s->dgathered + (size_t)row * O, 0,
                               (size_t)split[i] * O, e))
            return error_wrap(e, "scatter the output gradient to replica %d", i);
        if (o->backward(c, i, b->x[i], dout, split[i], alpha, s->g[i], e))
            return error_wrap(e, "replica %d backward", i);
        if (s->g_at0[i] != s->g[i] && o->copy(c, i, s->g_at0[i], 0, s->g[i], i, s->P, e))
            return error_wrap(e, "replica %d gradient to replica 0", i);
    }
    return o->join(c, n, e);
}

int step_dp(struct step *s, const struct step_batch *b, float lr, struct epoch_stats *st,
            struct error *e)
{
    double t0;
    if (step_begin(s, b, &t0, e))
        return -1;
    /* 1. scatter: torch.chunk's split, done as the batch was delivered: chunk i
     *    is already in replica i's memory (b->x[i]) */
    /* 2. replicate, 3. parallel forward, 4. gather */
    if (dp_forward(s, b, e))
        return -1;
    /* 5. loss over the whole batch on replica 0 */
    float alpha = s->loss->grad_scale(b->rows, s->O);
    if (loss_run(s, b, st, e))
        return error_wrap(e, "loss");
    /* 6. backward */
    if (dp_backward(s, b, alpha, e))
        return -1;
    /* 7. reduce-add: the backward of broadcast sums the replicas' gradients */
    for (int i = 1; i < b->active; i++)
        if (s->o->axpy(s->ctx, 0, s->P, 1.0f, s->g_at0[i], s->g[0], e))
            return error_wrap(e, "reduce-add");
    /* 8. SGD on replica 0 (weights and biases are one vector, so are their gradients) */
    if (s->o->axpy(s->ctx, 0, s->P, -lr, s->g[0], s->w[0], e))
        return error_wrap(e, "SGD");
    return step_end(s, b, t0, st, e);
}

int step_ddp(struct step *s, const struct step_batch *b, float lr, const struct step_comm *comm,
             struct epoch_stats *st, struct error *e)
{
    const struct device_ops *o = s->o;
    void *c = s->ctx;
    int world = comm ? comm->world : 1;
    double t0;
    if (step_begin(s, b, &t0, e))
        return -1;
    /* forward and loss on this rank's local batch (one replica per rank) */
    if (o->forward(c, 0, b->x[0], b->rows, s->w[0], s->gathered, e))
        return error_wrap(e, "forward");
    float alpha = s->loss->grad_scale(b->rows, s->O);
    if (loss_run(s, b, st, e))
        return error_wrap(e, "loss");
    if (o->backward(c, 0, b->x[0], s->dgathered, b->rows, alpha, s->g[0], e))
        return error_wrap(e, "backward");
    /* average the gradient: each rank scales by 1/W, the allreduce sums */
    if (world > 1) {
        if (o->scal(c, 0, s->P, 1.0f / (float)world, s->g[0], e))
            return error_wrap(e, "gradient scale");
        double h0 = now_seconds();
        int rc = comm->allreduce(comm->arg, s->g[0], s->P, e);
        s->held_s += now_seconds() - h0;
        if (rc)
            return error_wrap(e, "gradient allreduce");
    }
    /* SGD, the same on every rank */
    if (o->axpy(c, 0, s->P, -lr, s->g[0], s->w[0], e))
        return error_wrap(e, "SGD");
    return step_end(s, b, t0, st, e);
}

/* ---- the model's buffers -------------------------------------------------- */

int step_init(struct step *s, const struct backend *be, const struct backend_setup *setup,
              const struct loss_fn *loss, struct error *e)
{
    memset(s, 0, sizeof *s);
    s->be = be;
    s->o = be->ops;
    s->loss = loss;
    s->classify = setup->classify;
    s->F = setup->features;
    s->O = setup->out_features;
    s->n = setup->replicas;
    s->P = (size_t)s->O * (size_t)s->F + (size_t)s->O;
    s->batch_max = setup->batch_size;
    s->chunk_max = (s->batch_max + s->n - 1) / s->n;
    if (be->init(&s->ctx, setup, e))
        return -1;
    size_t n = (size_t)s->n, C = (size_t)s->chunk_max, O = (size_t)s->O;
    s->w = calloc(n, sizeof *s->w);
    s->g = calloc(n, sizeof *s->g);
    s->out = calloc(n, sizeof *s->out);
    s->dout = calloc(n, sizeof *s->dout);
    s->g_at0 = calloc(n, sizeof *s->g_at0);
    if (!s->w || !s->g || !s->out || !s->dout || !s->g_at0) {
        step_free(s);
        return error_set(e, "out of memory");
    }
    if (!(s->gathered = mem_alloc(s, 0, (size_t)s->batch_max * O, e)) ||
        !(s->dgathered = mem_alloc(s, 0, (size_t)s->batch_max * O, e)))
        goto fail;
    for (int i = 0; i < s->n; i++) {
        if (!(s->w[i] = mem_alloc(s, i, s->P, e)) || !(s->g[i] = mem_alloc(s, i, s->P, e)))
            goto fail;
        /* Replica 0's chunk is the batch's first rows: it writes its outputs
         * where the gather puts them and reads its slice of the output
         * gradient where it is (with one replica DataParallel calls the
         * module directly, which is the same). */
        if (i == 0) {
            s->out[0] = s->gathered;
            s->dout[0] = s->dgathered;
        } else if (!(s->out[i] = mem_alloc(s, i, C * O, e)) ||
                   !(s->dout[i] = mem_alloc(s, i, C * O, e))) {
            goto fail;
        }
        s->g_at0[i] = s->g[i];
        if (i > 0 && !shares(s, 0, i) && !(s->g_at0[i] = mem_alloc(s, 0, s->P, e)))
            goto fail;
    }
    if (step_set_params(s, setup->w0, setup->b0, e) == 0) // the master parameters: replica 0's
        return 0;
fail:
    step_free(s);
    return error_wrap(e, "%s backend, model buffers", be->name);
}

int step_params(struct step *s, float *w, float *b, struct error *e)
{
    size_t OF = (size_t)s->O * (size_t)s->F;
    if (s->o->download)
        return s->o->download(s->ctx, 0, w, s->w[0], OF, e) ||
                       s->o->download(s->ctx, 0, b, s->w[0] + OF, (size_t)s->O, e)
                   ? -1
                   : 0;
    memcpy(w, s->w[0], OF * sizeof(float));
    memcpy(b, s->w[0] + OF, (size_t)s->O * sizeof(float));
    return 0;
}

int step_set_params(struct step *s, const float *w, const float *b, struct error *e)
{
    size_t OF = (size_t)s->O * (size_t)s->F;
    if (s->o->upload)
        return s->o->upload(s->ctx, 0, s->w[0], w, OF, e) ||
                       s->o->upload(s->ctx, 0, s->w[0] + OF, b, (size_t)s->O, e)
                   ? -1
                   : 0;
    memcpy(s->w[0], w, OF * sizeof(float));
    memcpy(s->w[0] + OF, b, (size_t)s->O * sizeof(float));
    return 0;
}

void step_free(struct step *s)
{
    if (!s->be)
        return;
    if (s->ctx && s->o->sync)
        s->o->sync(s->ctx);
    for (int i = 0; s->w && s->g && s->out && s->dout && s->g_at0 && i < s->n; i++) {
        mem_release(s, i, s->w[i]);
        mem_release(s, i, s->g[i]);
        if (i > 0) {
            mem_release(s, i, s->out[i]);
            mem_release(s, i, s->dout[i]);
            if (s->g_at0[i] != s->g[i])
                mem_release(s, 0, s->g_at0[i]);
        }
    }
    mem_release(s, 0, s->gathered);
    mem_release(s, 0, s->dgathered);
    free(s->w);
    free(s->g);
    free(s->out);
    free(s->dout);
    free(s->g_at0);
    if (s->ctx)
        s->be->free(s->ctx);
    memset(s, 0, sizeof *s);
}
