/* The step's products (hostmm.c): libxsmm's generated kernels and OpenBLAS
 * give the same forward output and gradients as a plain double-precision
 * loop, on the shapes the configs use and odd ones (a last batch of 1 row,
 * weights below and above the size where the transpose changes method). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testutil.h"

#include "hostmm.h"

static void check(enum hostmm_lib lib, int F, int O, long rows)
{
    struct hostmm k;
    struct error e;
    assert_int_equal(hostmm_init(&k, lib, F, O, rows, &e), 0);
    size_t P = (size_t)O * F + O;
    float *x = malloc(sizeof(float) * rows * F), *w = malloc(sizeof(float) * P),
          *out = malloc(sizeof(float) * rows * O), *g = malloc(sizeof(float) * P);
    assert_non_null(x);
    assert_non_null(w);
    assert_non_null(out);
    assert_non_null(g);
    for (long i = 0; i < rows * F; i++)
        x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (size_t i = 0; i < P; i++)
        w[i] = (float)((i * 104729) % 1000) * 1e-3f - 0.5f;
    /* Against double precision: a float32 sum of n products, in any order and
     * with or without FMA, is within gamma(n) = n u / (1 - n u) of the exact
     * sum times the sum of the terms' magnitudes (u = 2^-24; Higham,
     * Accuracy and Stability, 3.1); the double loop's own error is ~1e-16 of
     * that. n: F + 1 for the forward (the bias), rows + 1 for the backward
     * (alpha's product). A wrong or missing term is the size of a term, not
     * of a rounding: hundreds of times the bound on these shapes. */
    for (int rep = 0; rep < 2; rep++) { // the second call reuses the kernels made
        hostmm_forward(&k, x, rows, w, out);
        for (long r = 0; r < rows; r++)
            for (int o = 0; o < O; o++) {
                double s = w[(size_t)O * F + o], a = fabs(s);
                for (int f = 0; f < F; f++) {
                    s += (double)x[r * F + f] * w[(size_t)o * F + f];
                    a += fabs((double)x[r * F + f] * w[(size_t)o * F + f]);
                }
                if (!(fabs(s - out[r * O + o]) <= gamma_n(F + 1) * a))
                    fail_msg("%s %dx%d rows %ld: out[%ld][%d] %.9g, exact %.9g", hostmm_lib_name(k.lib),
                             F, O, rows, r, o, out[r * O + o], s);
            }
        float alpha = 0.25f;
        hostmm_backward(&k, x, out, rows, alpha, g);
        for (int o = 0; o < O; o++) {
            double gb = 0, ab = 0;
            for (long r = 0; r < rows; r++) {
                gb += alpha * (double)out[r * O + o];
                ab += fabs(alpha * (double)out[r * O + o]);
            }
            if (!(fabs(gb - g[(size_t)O * F + o]) <= gamma_n(rows + 1) * ab))
                fail_msg("%s %dx%d rows %ld: bias gradient %d %.9g, exact %.9g",
                         hostmm_lib_name(k.lib), F, O, rows, o, g[(size_t)O * F + o], gb);
            for (int f = 0; f < F; f++) {
                double s = 0, a = 0;
                for (long r = 0; r < rows; r++) {
                    s += alpha * (double)out[r * O + o] * x[r * F + f];
                    a += fabs(alpha * (double)out[r * O + o] * x[r * F + f]);
                }
                if (!(fabs(s - g[(size_t)o * F + f]) <= gamma_n(rows + 1) * a))
                    fail_msg("%s %dx%d rows %ld: gradient [%d][%d] %.9g, exact %.9g",
                             hostmm_lib_name(k.lib), F, O, rows, o, f, g[(size_t)o * F + f], s);
            }
        }
    }
    free(x);
    free(w);
    free(out);
    free(g);
    hostmm_free(&k);
}

static void test_products(void **state)
{
    (void)state;
    const int shapes[][3] = {{5, 2, 30}, {5, 2, 15}, {5, 2, 1}, {256, 16, 256}, {256, 16, 160},
                             {784, 10, 64}, {3, 7, 37}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        check(HOSTMM_OPENBLAS, shapes[i][0], shapes[i][1], shapes[i][2]);
        check(HOSTMM_LIBXSMM, shapes[i][0], shapes[i][1], shapes[i][2]);
    }
}

/* libxsmm asked for where it is not built in (or cannot run) falls back */
static void test_library_named(void **state)
{
    (void)state;
    struct hostmm k;
    struct error e;
    assert_int_equal(hostmm_init(&k, HOSTMM_LIBXSMM, 4, 2, 8, &e), 0);
    assert_int_equal(k.lib, hostmm_have_libxsmm() ? HOSTMM_LIBXSMM : HOSTMM_OPENBLAS);
    assert_string_equal(hostmm_lib_name(k.lib), k.lib == HOSTMM_LIBXSMM ? "libxsmm" : "OpenBLAS");
    hostmm_free(&k);
}

/* This process's threads (/proc/self/status), once no more are leaving: a
 * joined thread can still be counted for a moment (the kernel lets it go
 * after the join returns), so the count is read until it stops falling,
 * for up to a second. */
static int threads_now(void)
{
    int n = -1, last;
    for (int tries = 0; tries < 100; tries++) {
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        last = n;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "Threads: %d", &n) == 1)
                break;
        if (f)
            fclose(f);
        if (n == 1 || n == last)
            break;
        usleep(10000);
    }
    return n;
}

/* One OpenBLAS thread leaves none of its helper threads behind (they would
 * spin on the cores the next run's threads need), and two start them again
 * with the products still right. Where OpenBLAS makes no helpers (one core)
 * or cannot stop them (an OpenMP build) the count says so: skipped. */
extern int blas_thread_shutdown_(void) __attribute__((weak)); // as hostmm.c

static void test_one_thread_stops_openblas_threads(void **state)
{
    (void)state;
    if (!blas_thread_shutdown_)
        skip(); // not OpenBLAS's pthreads build: its threads are not ours to stop
    hostmm_blas_threads(2);
    check(HOSTMM_OPENBLAS, 512, 512, 512); // large enough to be split
    int with_two = threads_now();
    hostmm_blas_threads(1);
    int with_one = threads_now();
    if (with_two <= 1) {
        hostmm_blas_threads(1);
        skip(); // no helper thread to stop here
    }
    assert_int_equal(with_one, 1); // cmocka runs the tests on this one thread
    hostmm_blas_threads(2);
    check(HOSTMM_OPENBLAS, 512, 512, 512);
    hostmm_blas_threads(1);
    assert_int_equal(threads_now(), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_products),
        cmocka_unit_test(test_library_named),
        cmocka_unit_test(test_one_thread_stops_openblas_threads),
    };
    return cmocka_run_group_tests_name("hostmm", tests, NULL, NULL);
}
