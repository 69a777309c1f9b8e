/* What a run says about itself: the verdict names a bound only when one
 * stage dominates, and a run whose loss stops being finite stops there and
 * keeps the epochs before it. */
#include "testutil.h"

#include "report.h"
#include "report_columns.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

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
    report_verdict(&r, 0, buf, n);
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

/* Two runs of a sweep over loader.num_workers (0, then 2), input-bound, six
 * rounds each: the second takes `ratio` times the first's time per round. */
static void sweep_of_two(struct results *r, struct run_result *runs, struct epoch_result *eps,
                         struct run_round *rounds, double ratio)
{
    struct error e;
    memset(runs, 0, 2 * sizeof *runs);
    *r = (struct results){.runs = runs, .n_runs = 2};
    config_defaults(&r->cfg);
    assert_int_equal(config_sweep_arg(&r->cfg, "loader.num_workers=0,2", &e), 0);
    for (int i = 0; i < 2; i++) {
        struct run_result *run = &runs[i];
        run->cfg = r->cfg;
        run->cfg.n_sweep = 1;
        run->cfg.loader.num_workers = 2 * i;
        snprintf(run->label, sizeof run->label, "loader.num_workers=%d", 2 * i);
        run->backend = "cpu";
        run->replicas = 1;
        run->n_batches = 1;
        run->epochs = eps + 6 * i;
        run->n_epochs = 6;
        run->rounds = rounds + 6 * i;
        run->n_rounds = 6;
        for (int k = 0; k < 6; k++) {
            double t = (i ? ratio : 1.0) * (1 + 0.001 * k);
            eps[6 * i + k] = (struct epoch_result){.epoch = k + 1, .seconds = t,
                                                   .st = {.wait_s = 0.8 * t, .compute_s = 0.1 * t,
                                                          .samples = 10}};
            rounds[6 * i + k] = (struct run_round){.round = k, .first_epoch = k, .n_epochs = 1,
                                                   .median_s = t};
        }
    }
    report_summarize(r);
}

/* The bottleneck's remedy is advised only as far as the sweep measured it:
 * never when the sweep measured it slower, and a single run is told to
 * measure it. */
static void test_advice_follows_the_measurement(void **state)
{
    (void)state;
    struct results r;
    struct run_result runs[2];
    struct epoch_result eps[12];
    struct run_round rounds[12];
    char v[512];
    sweep_of_two(&r, runs, eps, rounds, 28.0); // 2 workers measured 28x slower
    report_verdict(&r, 0, v, sizeof v);
    assert_non_null(strstr(v, "input-bound"));
    assert_non_null(strstr(v, "loader workers measured no faster here (loader.num_workers=2: "
                              "28.00x the time, slower)"));
    assert_null(strstr(v, "would help"));
    config_free(&r.cfg); // the sweep's values
    sweep_of_two(&r, runs, eps, rounds, 0.5); // and twice as fast
    report_verdict(&r, 0, v, sizeof v);
    assert_non_null(strstr(v, "loader workers measured faster here"));
    config_free(&r.cfg);
    r.n_runs = 1; // one run: nothing measured to go by
    r.cfg.n_sweep = 0;
    report_summarize(&r);
    report_verdict(&r, 0, v, sizeof v);
    assert_non_null(strstr(v, "may help: measure it (--sweep loader.num_workers=...)"));
}

/* The conclusion's fastest point is chosen by the paired per-round ratio
 * the verdicts use: here the second point's rounds' median (0.95) is below
 * the first's (1), but round by round it takes 1.07x the first's time (its
 * slow rounds are slower), so the first is the fastest, and the knob's
 * effect from it reads above 1. */
static void test_fastest_by_paired_rounds(void **state)
{
    (void)state;
    struct results r;
    struct run_result runs[2];
    struct epoch_result eps[12];
    struct run_round rounds[14];
    sweep_of_two(&r, runs, eps, rounds, 1.0);
    const double a[7] = {1, 1, 1, 1, 5, 5, 5}, b[7] = {0.95, 0.95, 0.95, 0.95, 6, 6, 6};
    for (int i = 0; i < 2; i++) {
        runs[i].rounds = rounds + 7 * i;
        runs[i].n_rounds = 7;
        for (int k = 0; k < 7; k++)
            rounds[7 * i + k] = (struct run_round){.round = k, .first_epoch = k < 6 ? k : 5,
                                                   .n_epochs = 1, .median_s = i ? b[k] : a[k]};
    }
    assert_true(report_round_median(&runs[1]) < report_round_median(&runs[0]));
    report_summarize(&r);
    assert_int_equal(r.conclusion.fastest, 0);
    assert_int_equal(r.conclusion.n_knobs, 1);
    assert_true(r.conclusion.knobs[0].vs.ratio > 1);
    config_free(&r.cfg);
}

/* On a device, waiting is the device's idle time: the verdict's shares and
 * the AU (compute / epoch) come from one accounting and add up. */
static void test_device_accounting(void **state)
{
    (void)state;
    struct run_result run = {0};
    struct epoch_result ep = {.epoch = 1, .seconds = 1.0,
                              .st = {.wait_s = 0.89, .copy_s = 0.05, .compute_s = 0.70,
                                     .samples = 10}};
    run.epochs = &ep;
    run.n_epochs = 1;
    run.n_batches = 1;
    run.replicas = 1;
    run.backend = "emulated"; // its copies and steps are the device's
    config_defaults(&run.cfg);
    struct results r = {.runs = &run, .n_runs = 1};
    char v[512];
    report_summarize(&r);
    report_verdict(&r, 0, v, sizeof v);
    assert_true(fabs(run.sum.au - 0.70) < 1e-12);
    /* the host waited 89% of the epoch; the device idled 25% of it */
    assert_non_null(strstr(v, "compute-bound: DataParallel steps took 70%"));
    ep.st.compute_s = 0.2; // a device idle 75%: input-bound, said as the device's wait
    report_summarize(&r);
    report_verdict(&r, 0, v, sizeof v);
    assert_non_null(strstr(v, "input-bound: the device waited 75% of the epoch"));
}

static void test_nonfinite_loss_stops_the_run(void **state)
{
    (void)state;
    /* lr 1e6 diverges on the tutorial: finite losses in epoch 1; in 2 a batch's
     * loss beyond float's range, infinite as PyTorch's float32 loss is */
    struct config c;
    test_config(&c, "train.lr=1000000", "train.epochs=6", NULL);
    struct run_result r;
    struct dataset d;
    struct error e;
    assert_int_equal(dataset_init(&d, &c, &e), 0);
    assert_int_equal(train_run(&c, &d, &backend_cpu, NULL, &r, NULL, &e), -1);
    dataset_free(&d);
    assert_true(r.failed);
    assert_string_equal(e.msg, r.stopped);
    assert_non_null(strstr(r.stopped, "the loss became infinite at batch"));
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


/* A run of the given epoch times (ms), summarized. */
static void run_of(const double *ms, int n, struct run_result *run, struct epoch_result *eps)
{
    *run = (struct run_result){.epochs = eps, .n_epochs = n, .n_batches = 1, .replicas = 1};
    for (int k = 0; k < n; k++)
        eps[k] = (struct epoch_result){.epoch = k + 1, .seconds = ms[k] / 1e3,
                                       .st = {.compute_s = ms[k] / 2e3, .samples = 10}};
    config_defaults(&run->cfg);
}

/* Text and JSON of r, rendered into memory. */
static void render(const struct results *r, char *text, size_t n, char **json)
{
    FILE *f = fmemopen(text, n, "w");
    assert_non_null(f);
    report_text(f, r);
    fclose(f);
    *json = report_json(r);
    assert_non_null(*json);
}

/* Every point carries stats.epoch_ms with exactly the interface's keys; a
 * spread over 10% (or an outlier) gives a "# warning:" line and a
 * "warnings" entry, a steady run neither. */
static void test_stats_and_noise_warning(void **state)
{
    (void)state;
    double steady[8] = {10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 10.0, 10.1};
    double noisy[8] = {10.0, 14.0, 7.0, 12.5, 8.0, 15.0, 9.0, 11.0}; // cv about 26%
    struct epoch_result e1[8], e2[8];
    struct run_result runs[2];
    run_of(steady, 8, &runs[0], e1);
    run_of(noisy, 8, &runs[1], e2);
    snprintf(runs[1].label, sizeof runs[1].label, "loader.num_workers=1");
    struct results r = {.runs = runs, .n_runs = 1};
    config_defaults(&r.cfg);
    report_summarize(&r);
    static char text[65536];
    char *json;
    render(&r, text, sizeof text, &json);
    assert_null(strstr(text, "# warning:"));
    assert_non_null(strstr(text, "# median epoch 10.0000 ms ± "));
    cJSON *doc = cJSON_Parse(json);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "warnings")), 0);
    cJSON *st = cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "runs"), 0), "stats"), "epoch_ms");
    const char *want[] = {"mean", "stddev", "median", "min", "max", "p90", "p99", "ci95"};
    assert_int_equal(cJSON_GetArraySize(st), 8);
    for (int i = 0; i < 8; i++)
        assert_non_null(cJSON_GetObjectItem(st, want[i]));
    assert_float_equal(cJSON_GetObjectItem(st, "median")->valuedouble, 10.0, 1e-9);
    assert_float_equal(cJSON_GetObjectItem(st, "min")->valuedouble, 9.8, 1e-9);
    /* n = 8: the order statistics x(1), x(8) (1-based) cover 99.2% */
    assert_float_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(st, "ci95"), 0)->valuedouble, 9.8,
                       1e-9);
    cJSON_Delete(doc);
    free(json);

    r.n_runs = 2;
    report_summarize(&r);
    render(&r, text, sizeof text, &json);
    assert_non_null(strstr(text, "# warning: loader.num_workers=1: epoch times vary by 26%"));
    assert_non_null(strstr(json, "\"loader.num_workers=1: epoch times vary by 26%"));
    free(json);
    config_free(&r.cfg);
}

/* The column tables are the one field list of their renderers: every column
 * is in some renderer with what that renderer needs, no key is taken twice,
 * a text header and its unit fit the width. */
static void check_columns(const struct report_column *t, int n)
{
    assert_true(n > 0);
    for (int j = 0; j < n; j++) {
        const struct report_column *c = &t[j];
        assert_true(c->text_fmt || c->csv_key || c->json_key);
        assert_true(c->value || c->json_string);
        assert_true(!c->csv_key || c->csv_fmt);
        if (c->text_fmt) {
            assert_non_null(c->text_header);
            assert_non_null(c->text_unit);
            assert_true((int)strlen(c->text_header) <= c->text_width + 1); // "±": 2 bytes
            assert_true((int)strlen(c->text_unit) <= c->text_width);
        }
        for (int i = 0; i < j; i++) {
            const struct report_column *o = &t[i];
            assert_false(c->csv_key && o->csv_key && strcmp(c->csv_key, o->csv_key) == 0);
            assert_false(c->json_key && o->json_key && strcmp(c->json_key, o->json_key) == 0);
        }
    }
}

static void test_epoch_columns_table(void **state)
{
    (void)state;
    check_columns(epoch_columns, n_epoch_columns);
    check_columns(point_columns, n_point_columns);
}

/* The renderers walk the table: each CSV row has the header's fields, and
 * each text row of the epoch table is as wide as its header (labelled data
 * adds columns to both). */
static void test_epoch_rows_match_headers(void **state)
{
    (void)state;
    double ms[2] = {10.0, 12.0};
    struct epoch_result eps[2];
    struct run_result run;
    run_of(ms, 2, &run, eps);
    struct results r = {.runs = &run, .n_runs = 1};
    config_defaults(&r.cfg);
    for (int lab = 0; lab < 2; lab++) {
        if (lab)
            snprintf(run.cfg.dataset.kind, sizeof run.cfg.dataset.kind, "idx");
        report_summarize(&r);
        static char text[65536];
        FILE *f = fmemopen(text, sizeof text, "w");
        report_csv(f, &r);
        fclose(f);
        int fields[3] = {0}, line = 0;
        for (const char *p = text; *p && line < 3; p++)
            if (*p == ',')
                fields[line]++;
            else if (*p == '\n')
                line++;
        assert_int_equal(line, 3);
        assert_int_equal(fields[1], fields[0]);
        assert_int_equal(fields[2], fields[0]);
        f = fmemopen(text, sizeof text, "w");
        report_text(f, &r);
        fclose(f);
        const char *head = strstr(text, " epoch ");
        assert_non_null(head);
        size_t w = strcspn(head, "\n");
        for (int k = 0; k < 3; k++) { // the units line, then the two epochs
            head += strcspn(head, "\n") + 1;
            assert_int_equal(strcspn(head, "\n"), w);
        }
        assert_true(lab ? strstr(text, "accuracy") != NULL : strstr(text, "accuracy") == NULL);
    }
    config_free(&run.cfg);
    config_free(&r.cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_needs_a_dominant_stage),
        cmocka_unit_test(test_advice_follows_the_measurement),
        cmocka_unit_test(test_fastest_by_paired_rounds),
        cmocka_unit_test(test_device_accounting),
        cmocka_unit_test(test_nonfinite_loss_stops_the_run),
        cmocka_unit_test(test_stats_and_noise_warning),
        cmocka_unit_test(test_epoch_columns_table),
        cmocka_unit_test(test_epoch_rows_match_headers),
    };
    return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
