/* Training: the loss converges on the teacher's data, and DataParallel over N
 * replicas learns the same parameters as one replica: the replicas' gradients
 * are summed, so with a mean loss the update is the same up to float
 * rounding (docs/reference.md §2). */
#include "testutil.h"

static void test_converges(void **state)
{
    (void)state;
    struct config c;
    struct run_result r;
    test_config(&c, "train.epochs=200", "train.lr=0.05", "dataset.noise=0.001", NULL);
    test_run(&c, &r);
    assert_int_equal(r.n_epochs, 200);
    double first = r.epochs[0].loss, last = r.epochs[r.n_epochs - 1].loss;
    if (!(last * 100 < first))
        fail_msg("loss fell from %g to %g, less than 100x", first, last);
    /* and the learned weights approach the teacher's */
    struct dataset d;
    struct error e;
    assert_int_equal(dataset_init(&d, &c, &e), 0);
    /* a statistical bound, not rounding: 100 samples of noise 0.001 leave the
     * least-squares weights ~1e-4 from the teacher's; 200 epochs at lr 0.05
     * get within 1e-3 of them. 0.05: a wrong gradient sign or scale fails */
    double err = param_dist(r.w, NULL, d.w_teacher, NULL, d.features * d.out_features, 0);
    if (!(err <= 0.05))
        fail_msg("weights differ from the teacher's by %g relative", err);
    dataset_free(&d);
    run_result_free(&r);
}

static void test_replicas_match_one(void **state)
{
    (void)state;
    const char *replicas[] = {"parallel.replicas=2", "parallel.replicas=3",
                              "parallel.replicas=8", "parallel.replicas=13"};
    struct config c1;
    struct run_result one;
    test_config(&c1, "train.epochs=20", "dataset.length=1000", "dataset.features=16",
                "model.out_features=3", "loader.batch_size=37", "train.lr=0.02", "dataset.noise=1", NULL);
    test_run(&c1, &one);
    for (size_t i = 0; i < sizeof replicas / sizeof *replicas; i++) {
        struct config cn;
        struct run_result many;
        test_config(&cn, "train.epochs=20", "dataset.length=1000", "dataset.features=16",
                    "model.out_features=3", "loader.batch_size=37", "train.lr=0.02", "dataset.noise=1",
                    replicas[i], "loader.num_workers=2", NULL);
        test_run(&cn, &many);
        check_same_training(&many, &one, replicas[i]);
        run_result_free(&many);
    }
    run_result_free(&one);
}

static void test_splits_recorded(void **state)
{
    (void)state;
    struct config c;
    struct run_result r;
    test_config(&c, "parallel.replicas=8", NULL);
    test_run(&c, &r);
    assert_int_equal(r.n_batches, 4);
    const long want[4][8] = {{4, 4, 4, 4, 4, 4, 4, 2}, {4, 4, 4, 4, 4, 4, 4, 2},
                             {4, 4, 4, 4, 4, 4, 4, 2}, {2, 2, 2, 2, 2, 0, 0, 0}};
    assert_memory_equal(r.splits, want, sizeof want);
    run_result_free(&r);
}

static void test_workers_do_not_change_results(void **state)
{
    (void)state;
    struct config a, b;
    struct run_result ra, rb;
    /* one library: auto may time another one faster in the other run, and
     * libraries round differently */
    test_config(&a, "train.epochs=5", "dataset.length=500", "parallel.blas=openblas", NULL);
    test_config(&b, "train.epochs=5", "dataset.length=500", "parallel.blas=openblas",
                "loader.num_workers=4",
                "loader.prefetch_factor=3", "loader.persistent_workers=true", NULL);
    test_run(&a, &ra);
    test_run(&b, &rb);
    assert_memory_equal(ra.w, rb.w, 10 * sizeof(float)); /* bit-identical */
    assert_memory_equal(ra.b, rb.b, 2 * sizeof(float));
    run_result_free(&ra);
    run_result_free(&rb);
}

static void test_warmup_excluded(void **state)
{
    (void)state;
    struct config c;
    struct run_result r;
    test_config(&c, "train.epochs=3", "train.warmup_epochs=2", NULL);
    test_run(&c, &r);
    assert_int_equal(r.n_epochs, 3);
    assert_int_equal(r.epochs[0].epoch, 1);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(r.epochs[k].st.samples, 100);
        assert_true(r.epochs[k].seconds > 0);
        assert_true(r.epochs[k].st.compute_s <= r.epochs[k].seconds);
    }
    run_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_converges),
        cmocka_unit_test(test_replicas_match_one),
        cmocka_unit_test(test_splits_recorded),
        cmocka_unit_test(test_workers_do_not_change_results),
        cmocka_unit_test(test_warmup_excluded),
    };
    return cmocka_run_group_tests_name("train", tests, NULL, NULL);
}
