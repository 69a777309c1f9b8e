#include "loss.h"

#include <math.h>
#include <string.h>

static double mse_host(const float *out, const float *y, long rows, int O, float *d)
{
    size_t n = (size_t)rows * (size_t)O;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        d[i] = out[i] - y[i];
        sum += (double)d[i] * d[i];
    }
    return sum;
}

static float mse_grad_scale(long rows, int O) { return 2.0f / (float)((double)rows * O); }

/* mean over rows * O elements, times rows */
static double mse_sample_sum(double raw, int O) { return raw / O; }

const struct loss_fn loss_mse = {
    .name = "mse",
    .host = mse_host,
    .grad_scale = mse_grad_scale,
    .sample_sum = mse_sample_sum,
};

static int argmax(const float *v, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (v[j] > v[best])
            best = j;
    return best;
}

/* Per row, with m the largest output: log p_j = out_j - m - log sum exp(out - m),
 * which stays finite for any logits. */
static double ce_host(const float *out, const float *y, long rows, int O, float *d)
{
    double sum = 0;
    for (long i = 0; i < rows; i++) {
        const float *o = out + i * O, *t = y + i * O;
        float *di = d + i * O;
        float m = o[argmax(o, O)];
        double z = 0;
        for (int j = 0; j < O; j++)
            z += exp((double)(o[j] - m));
        double log_z = log(z);
        for (int j = 0; j < O; j++) {
            double log_p = (double)(o[j] - m) - log_z;
            if (t[j] != 0.0f)
                sum -= (double)t[j] * log_p;
            di[j] = (float)(exp(log_p) - (double)t[j]);
        }
    }
    return sum;
}

static float ce_grad_scale(long rows, int O)
{
    (void)O;
    return 1.0f / (float)rows;
}

/* the raw sum is already a sum of per-sample losses */
static double ce_sample_sum(double raw, int O)
{
    (void)O;
    return raw;
}

const struct loss_fn loss_cross_entropy = {
    .name = "cross_entropy",
    .host = ce_host,
    .grad_scale = ce_grad_scale,
    .sample_sum = ce_sample_sum,
};

long loss_correct(const float *out, const float *y, long rows, int O)
{
    long n = 0;
    for (long i = 0; i < rows; i++)
        n += argmax(out + i * O, O) == argmax(y + i * O, O);
    return n;
}

const struct loss_fn *loss_find(const char *name)
{
    static const struct loss_fn *const all[] = {&loss_mse, &loss_cross_entropy};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}
