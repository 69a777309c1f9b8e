/* Shared helpers for the cmocka tests: a config in one call, and a CPU run. */
#ifndef DPBENCH_TESTUTIL_H
#define DPBENCH_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "config.h"
#include "dataset.h"
#include "train.h"

/* Defaults plus "key=value" overrides; NULL-terminated. */
static inline void test_config(struct config *c, ...)
{
    struct error e;
    va_list ap;
    config_defaults(c);
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
    if (train_run(c, &d, &backend_cpu, r, NULL, &e))
        fail_msg("%s", e.msg);
    dataset_free(&d);
}

/* max |a - b| / max(|b|, 1e-3) over n values; a NaN on either side counts
 * as infinitely different, so that a diverged run cannot pass */
static inline double max_rel_diff(const float *a, const float *b, int n)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / fmax(fabs((double)b[i]), 1e-3);
        if (isnan(d))
            return INFINITY;
        if (d > worst)
            worst = d;
    }
    return worst;
}

#endif
