/* The BLAS thread choice and the floor (report.floor): which thread counts
 * are tried, that the choice is one of them, and how the floor's parts add
 * up with and without workers. Timings are only checked for being positive
 * and finite, never for their size. */
#include <unistd.h>

#include "testutil.h"

static void test_threads_tried(void **state)
{
    (void)state;
    struct blas_choice b;
    struct error e;
    int xsmm = hostmm_have_libxsmm(); // libxsmm comes last, on one thread
    assert_int_equal(blas_choose_threads(16, 3, 37, 1, 1, NULL, &b, &e), 0);
    /* so small a step is not worth libxsmm's start-up on its own (unless this
     * machine, or valgrind, makes it slow) */
    assert_int_equal(b.n_tried, 1 + (xsmm && b.seconds[0] >= BLAS_TUNE_XSMM_MIN_SECONDS));
    assert_int_equal(b.tried[0], 1);
    assert_int_equal(b.tried_lib[0], HOSTMM_OPENBLAS);
    assert_int_equal(b.threads, 1);
    assert_true(b.seconds[0] > 0 && isfinite(b.seconds[0]));

    for (int side = 1; side <= 2; side++) { // side by side: each candidate with 2 replicas
        /* 256 -> 64 on 300 rows: long enough for libxsmm to be tried */
        assert_int_equal(blas_choose_threads(256, 64, 300, 5, side, "auto", &b, &e), 0);
        assert_int_equal(b.side, side);
        int want[] = {1, 2, 4, 5, 1};
        enum hostmm_lib lib[] = {HOSTMM_OPENBLAS, HOSTMM_OPENBLAS, HOSTMM_OPENBLAS,
                                 HOSTMM_OPENBLAS, HOSTMM_LIBXSMM};
        assert_int_equal(b.n_tried, 4 + xsmm);
        int chosen = -1;
        for (int i = 0; i < b.n_tried; i++) {
            assert_int_equal(b.tried[i], want[i]);
            assert_int_equal(b.tried_lib[i], lib[i]);
            assert_true(b.seconds[i] > 0 && isfinite(b.seconds[i]));
            if (b.tried[i] == b.threads && b.tried_lib[i] == b.lib)
                chosen = i;
        }
        assert_true(chosen >= 0);
        /* no candidate beats the chosen one, except by at most 5% with more
         * threads; more threads win only when more than 5% faster */
        for (int i = 0; i < b.n_tried; i++)
            assert_true(b.seconds[i] >=
                        (b.tried[i] > b.tried[chosen] ? 0.95 : 1.0) * b.seconds[chosen]);
        if (b.threads > 1)
            assert_true(b.seconds[chosen] < 0.95 * b.seconds[0]);
    }
}

/* parallel.blas names one library: only its candidates are timed */
static void test_library_named(void **state)
{
    (void)state;
    struct blas_choice b;
    struct error e;
    assert_int_equal(blas_choose_threads(256, 64, 300, 2, 1, "openblas", &b, &e), 0);
    for (int i = 0; i < b.n_tried; i++)
        assert_int_equal(b.tried_lib[i], HOSTMM_OPENBLAS);
    assert_int_equal(b.lib, HOSTMM_OPENBLAS);
    int rc = blas_choose_threads(16, 3, 37, 2, 1, "libxsmm", &b, &e);
    if (hostmm_have_libxsmm()) { // even for a step too small to try it on its own
        assert_int_equal(rc, 0);
        assert_int_equal(b.n_tried, 1);
        assert_int_equal(b.lib, HOSTMM_LIBXSMM);
    } else {
        assert_int_equal(rc, -1);
        assert_non_null(strstr(e.msg, "parallel.blas"));
    }
}

/* Replicas never get more threads between them than the free cores. */
static void test_replicas_share_cores(void **state)
{
    (void)state;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    struct config c;
    struct run_result r;
    test_config(&c, "parallel.replicas=3", "loader.num_workers=1", NULL);
    test_run(&c, &r);
    long free_cores = cores - 1 > 1 ? cores - 1 : 1;
    assert_true(r.blas.threads >= 1);
    assert_true(r.blas.threads == 1 || 3 * r.blas.threads <= free_cores);
    for (int i = 0; i < r.blas.n_tried; i++)
        assert_true(r.blas.tried[i] == 1 || 3 * r.blas.tried[i] <= free_cores);
    assert_false(r.floor.measured); // report.floor is off by default
    run_result_free(&r);
}

static void test_floor_parts(void **state)
{
    (void)state;
    struct config c;
    struct run_result r;
    test_config(&c, "report.floor=true", "dataset.length=1000", "dataset.features=16",
                "model.out_features=3", "loader.batch_size=37", "parallel.replicas=2", NULL);
    test_run(&c, &r);
    const struct run_floor *f = &r.floor;
    assert_true(f->measured);
    assert_true(f->gather_s > 0 && f->compute_s > 0 && isnan(f->copy_s));
    assert_true(f->loading_s == f->gather_s);
    assert_true(fabs(f->seconds - (f->gather_s + f->compute_s)) <= 1e-12);
    assert_false(f->overlapped); // without workers one thread does both in turn
    run_result_free(&r);

    test_config(&c, "report.floor=true", "dataset.length=1000", "dataset.features=16",
                "model.out_features=3", "loader.batch_size=37", "loader.num_workers=2", NULL);
    test_run(&c, &r);
    f = &r.floor;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(fabs(f->loading_s - f->gather_s / (cores < 2 ? cores : 2)) <= 1e-12);
    assert_true(f->apart_s == fmax(f->loading_s, f->compute_s));
    /* with workers the floor is measured with both stages at once */
    assert_true(f->overlapped && f->seconds > 0 && isfinite(f->seconds));
    run_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_tried),
        cmocka_unit_test(test_library_named),
        cmocka_unit_test(test_replicas_share_cores),
        cmocka_unit_test(test_floor_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
