/* Losses of the training step. A loss is one `struct loss_fn` in loss.c's
 * table: its name, its host implementation (which the cpu backend runs), the
 * name of its device kernel (which the cuda backend runs; without one it
 * falls back to the host function on copies), the factor its gradient
 * carries, and how its raw sum becomes a sum of per-sample losses. The table
 * is the only list of losses: model.loss's allowed values, --help-config and
 * every lookup read it.
 *
 * Adding a loss: its functions and its struct in loss.c, one line in the
 * table (see docs/architecture.md); its kernel, if it has one, in
 * src/backends/cuda_kernels.cu (and its host twin in tests/fakedriver.c). */
#ifndef DPBENCH_LOSS_H
#define DPBENCH_LOSS_H

#include <stdbool.h>
#include <stddef.h>

struct loss_fn {
    const char *name;  // model.loss's value
    bool labels;       // needs class labels (one-hot target rows): labelled data only
    /* For a batch's outputs `out` (rows, O) and targets `y` (rows, O): writes
     * d (rows, O) such that d loss / d out = grad_scale(rows, O) * d, and
     * returns the loss's raw sum (what sample_sum turns into per-sample terms). */
    double (*host)(const float *out, const float *y, long rows, int O, float *d);
    float (*grad_scale)(long rows, int O);
    /* The kernel that computes d and the raw sum on a device, by name in
     * src/backends/cuda_kernels.cu (same arguments for every loss), or NULL. */
    const char *device_kernel;
    /* Sum over the batch's samples of each sample's loss, from the raw sum:
     * the batch's mean loss times its rows. */
    double (*sample_sum)(double raw, int O);
};

/* Mean squared error over every output element (PyTorch's MSELoss):
 * raw = sum of (out - y)^2, d = out - y, gradient factor 2 / (rows * O). */
extern const struct loss_fn loss_mse;

/* Cross-entropy over one-hot (or probability) target rows, PyTorch's
 * CrossEntropyLoss: per row log-softmax then NLL, mean over the rows:
 * raw = sum over rows of -sum_j y_j log softmax(out)_j, d = softmax(out) - y,
 * gradient factor 1 / rows. */
extern const struct loss_fn loss_cross_entropy;

/* The loss of that name; NULL if the table has none. */
const struct loss_fn *loss_find(const char *name);
/* The name of the table's i-th loss, NULL past the last: model.loss's values. */
const char *loss_name(size_t i);
/* model.loss auto: the table's first loss for labelled data (`labelled`) or
 * for the random dataset's real-valued targets. */
const struct loss_fn *loss_auto(bool labelled);

/* Rows whose largest output is at the class of y's largest entry (the first
 * on ties): the correct predictions of a classifier. */
long loss_correct(const float *out, const float *y, long rows, int O);

#endif
