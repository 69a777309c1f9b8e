/* Shared helpers for the cmocka tests: a config in one call, and a CPU run. */
#ifndef DPBENCH_TESTUTIL_H
#define DPBENCH_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "config.h"
#include "hostmm.h"
#include "dataset.h"
#include "train.h"

/* The plug-in tables handed to the config, as main does before anything
 * else (each test binary includes this header once). */
__attribute__((constructor)) static void test_register(void) { app_register(); }

/* config_defaults with the step's library fixed: DPBENCH_TEST_BLAS
 * (openblas or libxsmm; `make test-kernels` runs the tests under each), else
 * openblas. Never `auto`: which library it times fastest changes from run to
 * run, and a test's result must not. */
static inline void test_defaults(struct config *c)
{
    struct error e;
    const char *lib = getenv("DPBENCH_TEST_BLAS");
    char kv[64];
    snprintf(kv, sizeof kv, "parallel.blas=%s", lib && *lib ? lib : "openblas");
    config_defaults(c);
    if (config_set_arg(c, kv, &e))
        fail_msg("DPBENCH_TEST_BLAS: %s", e.msg);
}

/* The same choice for tests that set up a backend without a config. */
static inline enum hostmm_lib test_blas_lib(void)
{
    const char *lib = getenv("DPBENCH_TEST_BLAS");
    return lib && strcmp(lib, "libxsmm") == 0 ? HOSTMM_LIBXSMM : HOSTMM_OPENBLAS;
}

/* Defaults plus "key=value" overrides; NULL-terminated. */
static inline void test_config(struct config *c, ...)
{
    struct error e;
    va_list ap;
    test_defaults(c);
    va_start(ap, c);
    for (const char *kv; (kv = va_arg(ap, const char *));) {
        if (config_set_arg(c, kv, &e))
            fail_msg("%s", e.msg);
    }
    va_end(ap);
    if (config_validate(c, &e))
        fail_msg("%s", e.msg);
}

/* Trains c on the cpu backend; fails the test on error. */
static inline void test_run(const struct config *c, struct run_result *r)
{
    struct dataset d;
    struct error e;
    if (dataset_init(&d, c, &e))
        fail_msg("%s", e.msg);
    if (train_run(c, &d, &backend_cpu, NULL, r, NULL, &e))
        fail_msg("%s", e.msg);
    dataset_free(&d);
}

/* ||a - b||_2 / ||b||_2 over the parameters, weights (nw) then biases (nb):
 * the distance between two trainings relative to the size of what they
 * learned. In a norm, not element by element: a weight near zero that moves
 * by its last bits is a large relative difference of that element and no
 * difference of the model. A NaN on either side gives INFINITY, so that a
 * diverged run cannot pass. */
static inline double param_dist(const float *wa, const float *ba, const float *wb,
                                const float *bb, int nw, int nb)
{
    double d2 = 0, n2 = 0;
    for (int i = 0; i < nw + nb; i++) {
        double a = i < nw ? wa[i] : ba[i - nw], b = i < nw ? wb[i] : bb[i - nw];
        d2 += (a - b) * (a - b);
        n2 += b * b;
    }
    double r = sqrt(d2 / n2);
    return isnan(r) ? INFINITY : r;
}

/* The worst-case relative error of a float32 sum of n terms (u = 2^-24),
 * in any order: gamma(n) times the sum of the terms' magnitudes. */
static inline double gamma_n(long n)
{
    return (double)n * 0x1p-24 / (1 - (double)n * 0x1p-24);
}

/* The param_dist two trainings may show when they do the same arithmetic in
 * a different order: N replicas or one, N ranks or one process, another
 * OpenBLAS kernel set or libxsmm (OPENBLAS_CORETYPE, LIBXSMM_TARGET), other
 * compiler flags (FMA contraction, sanitizers), the emulated GPU's loops.
 * Float32 error (REFERENCE.md section 8, u = 2^-24):
 *   - one SGD step computes sums over the batch (the gradient: `batch` terms)
 *     of products of dot products (the forward: features + 1 terms), then
 *     rounds each parameter once. Reordered, a sum of n terms moves by about
 *     sqrt(n) u relative to its terms (its worst case, n u, is 28x larger for
 *     784 features: no real bug could be told from it); with a learning rate
 *     small enough that the loss falls, a step's update is no larger than
 *     the parameters, so one step moves param_dist by about
 *     u sqrt(batch + features + 2);
 *   - the roundings of different steps are independent and add as a random
 *     walk, sqrt(steps); SGD on these convex losses at such a rate does not
 *     amplify an earlier difference (it shrinks it, which is why the measured
 *     distances sit 100-1000x below this);
 *   - margin 10: a sum of many independent roundings does not reach 10 times
 *     its typical size.
 * A real bug moves a step's update by about 1/batch of itself (one sample of
 * a batch dropped, duplicated, or its output compared with another's
 * target), far above this: each equivalence test was checked against those
 * three mutations (the commit that introduced this says by how much). */
static inline double order_bound(long steps, long batch, long features)
{
    return 10 * 0x1p-24 * sqrt((double)steps) * sqrt((double)(batch + features + 2));
}

/* DPBENCH_TEST_PRINT_DIST=1: each equivalence's distance and bound on
 * stderr, to see the margins on a machine (and a mutation's size). */
static inline void test_print_dist(const char *what, double dist, double bound)
{
    if (getenv("DPBENCH_TEST_PRINT_DIST"))
        fprintf(stderr, "# %s: distance %.3g, bound %.3g (%.2g of it)\n", what, dist, bound,
                dist / bound);
}

/* `many` learned what `one` (the reference: 1 replica, the cpu) learned up to
 * the order of its float32 sums: order_bound over every step both ran. Each
 * epoch's loss (a mean over the same samples of a smooth function of the
 * outputs: measured 10-1000x below the parameters' distance) is held to the
 * same bound. `what` names the run in the message. */
static inline void check_same_training(const struct run_result *many,
                                       const struct run_result *one, const char *what)
{
    const struct config *c = &one->cfg;
    int nw = (int)(c->dataset.features * c->model.out_features), nb = (int)c->model.out_features;
    long steps = (c->train.warmup_epochs + c->train.epochs) * one->n_batches;
    double bound = order_bound(steps, c->loader.batch_size, c->dataset.features);
    double d = param_dist(many->w, many->b, one->w, one->b, nw, nb);
    test_print_dist(what, d, bound);
    if (!(d <= bound))
        fail_msg("%s: parameters %.3g from the reference's (relative L2), bound %.3g", what, d, bound);
    assert_int_equal(many->n_epochs, one->n_epochs);
    for (int k = 0; k < one->n_epochs; k++) {
        double l = fabs(many->epochs[k].loss - one->epochs[k].loss) / one->epochs[k].loss;
        if (!(l <= bound))
            fail_msg("%s: epoch %d loss %.9g, reference %.9g", what, k + 1,
                     many->epochs[k].loss, one->epochs[k].loss);
        /* a sample whose two largest outputs are within rounding of each
         * other may flip its class: one sample per epoch */
        double acc_a = many->epochs[k].accuracy, acc_b = one->epochs[k].accuracy;
        if (!(isnan(acc_a) && isnan(acc_b)) &&
            !(fabs(acc_a - acc_b) * (double)one->epochs[k].st.samples <= 1.0 + 1e-9))
            fail_msg("%s: epoch %d accuracy %g, reference %g", what, k + 1, acc_a, acc_b);
    }
}

/* A test that DPBENCH_TEST_SKIP names (space-separated test names) is
 * reported skipped instead of run. Only for tests that hold a time, which an
 * emulated CPU cannot keep: `make test-arm64` skips them by name, and
 * docs/testing.md lists each with its reason. */
static inline void test_skipped_by_name(void **state)
{
    (void)state;
    skip();
}

static inline int test_run_group(const char *group, const struct CMUnitTest *tests, size_t n,
                                 CMFixtureFunction setup, CMFixtureFunction teardown)
{
    const char *list = getenv("DPBENCH_TEST_SKIP");
    struct CMUnitTest *run = malloc(n * sizeof *run);
    if (!run)
        return 1;
    for (size_t i = 0; i < n; i++) {
        run[i] = tests[i];
        size_t len = strlen(tests[i].name);
        for (const char *p = list; p && (p = strstr(p, tests[i].name)); p += len)
            if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0')) {
                run[i].test_func = test_skipped_by_name;
                run[i].setup_func = run[i].teardown_func = NULL;
                break;
            }
    }
    int rc = _cmocka_run_group_tests(group, run, n, setup, teardown);
    free(run);
    return rc;
}
/* cmocka_run_group_tests_name with DPBENCH_TEST_SKIP honoured */
#define test_run_tests(group, tests, setup, teardown) \
    test_run_group(group, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)

#endif
