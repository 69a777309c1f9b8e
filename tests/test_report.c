/* What a run says about itself: the verdict names a bound only when one
 * stage dominates, and a run whose loss stops being finite stops there and
 * keeps the epochs before it. */
#include "testutil.h"

#include "report.h"

/* A one-epoch run whose epoch splits into the given shares. */
static void verdict_of(double wait, double copy, double compute, char *buf, size_t n)
{
    struct run_result run = {0};
    struct epoch_result ep = {.epoch = 1, .seconds = 1.0,
                              .st = {.wait_s = wait, .copy_s = copy, .compute_s = compute,
                                     .samples = 10}};
    run.epochs = &ep;
    run.n_epochs = 1;
    run.n_batches = 1;
    run.replicas = 1;
    config_defaults(&run.cfg);
    struct results r = {.runs = &run, .n_runs = 1};
    report_summarize(&r);
    report_verdict(&run, buf, n);
}

static void expect_verdict(double wait, double copy, double compute, const char *want)
{
    char v[256];
    verdict_of(wait, copy, compute, v, sizeof v);
    if (strncmp(v, want, strlen(want)) != 0)
        fail_msg("shares %.2f/%.2f/%.2f: verdict '%s', want '%s...'", wait, copy, compute, v,
                 want);
}

static void test_verdict_needs_a_dominant_stage(void **state)
{
    (void)state;
    /* the adversarial case: compute largest, but not by much */
    expect_verdict(0.42, 0, 0.46, "balanced: no stage dominates (waiting for data 42%, "
                                  "exposed copies 0%, DataParallel steps 46%, other 12%");
    /* the loop's own time outside the stages competes too */
    expect_verdict(0.15, 0, 0.39, "balanced");
    expect_verdict(0.35, 0.30, 0.35, "balanced");
    /* >= 60% of the epoch */
    expect_verdict(0.30, 0, 0.60, "compute-bound");
    expect_verdict(0.70, 0, 0.20, "input-bound");
    expect_verdict(0.10, 0.65, 0.20, "copy-bound");
    /* below 60% but >= 1.5x the next stage */
    expect_verdict(0.20, 0.25, 0.50, "compute-bound");
    expect_verdict(0.46, 0.10, 0.30, "input-bound");
    expect_verdict(0.44, 0.10, 0.30, "balanced");
}

static void test_nonfinite_loss_stops_the_run(void **state)
{
    (void)state;
    /* lr 1e6 diverges on the tutorial: finite losses in epoch 1, nan in 2 */
    struct config c;
    test_config(&c, "train.lr=1000000", "train.epochs=6", NULL);
    struct run_result r;
    struct dataset d;
    struct error e;
    assert_int_equal(dataset_init(&d, &c, &e), 0);
    assert_int_equal(train_run(&c, &d, &backend_cpu, &r, NULL, &e), -1);
    dataset_free(&d);
    assert_true(r.failed);
    assert_string_equal(e.msg, r.stopped);
    assert_non_null(strstr(r.stopped, "the loss became nan at batch"));
    assert_non_null(strstr(r.stopped, "of epoch 2 (train.lr 1e+06 diverged)"));
    assert_int_equal(r.n_epochs, 1);
    assert_true(isfinite(r.epochs[0].loss));
    run_result_free(&r);

    /* a run that converges says nothing */
    test_config(&c, "train.epochs=3", NULL);
    test_run(&c, &r);
    assert_string_equal(r.stopped, "");
    assert_int_equal(r.n_epochs, 3);
    run_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_needs_a_dominant_stage),
        cmocka_unit_test(test_nonfinite_loss_stops_the_run),
    };
    return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
