/* The training steps, each written once over a backend's device primitives
 * (struct device_ops in backend.h):
 *
 *   step_dp  — nn.DataParallel: scatter, replicate, parallel forward, gather,
 *              loss, backward, reduce-add, SGD on replica 0;
 *   step_ddp — DistributedDataParallel, one replica per process: forward,
 *              loss, backward, gradient scaled by 1/W and summed across the
 *              W ranks (one flat buffer, DDP's single bucket), SGD.
 *
 * struct step owns the model's buffers on the backend's devices and the
 * backend's context. The loss is a pluggable piece (loss.h). */
#ifndef DPBENCH_STEP_H
#define DPBENCH_STEP_H

#include "backend.h"
#include "loss.h"

/* Sums n floats of buf across the ranks, in place (an allreduce). The step
 * passes its gradient after the backend's queues finished it. */
struct step_comm {
    int world; // ranks
    int (*allreduce)(void *arg, float *buf, size_t n, struct error *e);
    void *arg;
};

struct step {
    const struct backend *be;
    const struct device_ops *o;
    void *ctx;                   // the backend's
    const struct loss_fn *loss;
    bool classify;               // count correct predictions (labelled data)
    int F, O, n;                 // features, out_features, replicas
    size_t P;                    // parameters: O * F weights then O biases
    long batch_max, chunk_max;
    float **w, **g;              // (n) w[i], g[i]: (P) replica i's parameters, gradients
    float **out, **dout;         // (n) (chunk_max, O) replica i's outputs, output gradient;
                                 // replica 0's are the first rows of gathered, dgathered
    float **g_at0;               // (n) replica i's gradient where replica 0 reads it:
                                 // g[i], or a staged copy on replica 0's device
    float *gathered, *dgathered; // (batch_max, O) on replica 0: outputs, d loss / d outputs
                                 // without the loss's factor (the backward applies it)
    double held_s;               // this step's seconds in its allreduce (ddp): no part of
                                 // the host's overhead (epoch_stats.host_s)
};

/* Starts backend be for setup s and allocates the model, replica 0's
 * parameters from s->w0, s->b0. */
int step_init(struct step *s, const struct backend *be, const struct backend_setup *setup,
              const struct loss_fn *loss, struct error *e);
int step_dp(struct step *s, const struct step_batch *b, float lr, struct epoch_stats *st,
            struct error *e);
/* comm NULL: a world of one. */
int step_ddp(struct step *s, const struct step_batch *b, float lr, const struct step_comm *comm,
             struct epoch_stats *st, struct error *e);
/* Replica 0's parameters: w (O, F), b (O); step_set_params sets them (the
 * next step broadcasts them to the other replicas). */
int step_params(struct step *s, float *w, float *b, struct error *e);
int step_set_params(struct step *s, const float *w, const float *b, struct error *e);
void step_free(struct step *s);

#endif
