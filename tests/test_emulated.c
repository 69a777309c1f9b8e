/* The emulated device (parallel.device: emulated): it learns exactly what
 * the cpu learns (its math is the cpu backend's), and its timing follows
 * CUDA's rules and the copy ring's queueing. Timing checks compare runs side
 * by side, as orderings and ratios with wide margins, and the measurement
 * against the pipeline model (docs/emulated.md): they hold on a loaded
 * 2-core machine. Every modelled time is several milliseconds, far above a
 * sleep's wake-up cost, and each run's figure is its fastest of 3 epochs:
 * load on the machine only ever adds time (a late wake-up, a taken core). */
#include "testutil.h"

#include "report.h"
#include "report_emulated.h"

/* 10 batches of 256 x 1024 floats (about 1 MB each): copies 8.4 ms pinned at
 * 0.125 GB/s, 42 ms pageable at 0.025 GB/s; a step 10.2 ms (5 us + 256 x
 * 40 us). Times of this size stay far above a wake-up's delay even on a
 * 2-core machine running several times more threads than cores. */
#define BASE "parallel.device=emulated", "dataset.length=2560", "dataset.features=1024", \
             "loader.batch_size=256", "train.epochs=3", "parallel.blas=openblas",       \
             "emulate.h2d_gbps=0.125", "emulate.pageable_gbps=0.025",                  \
             "emulate.compute_us=40"

static void run_on(const struct config *c, const struct backend *be, struct run_result *r)
{
    struct dataset d;
    struct error e;
    if (dataset_init(&d, c, &e))
        fail_msg("%s", e.msg);
    if (train_run(c, &d, be, NULL, r, NULL, &e))
        fail_msg("%s: %s", be->name, e.msg);
    dataset_free(&d);
}

/* The fastest epoch of an emulated run (its summary filled), and the
 * model's prediction for that epoch. */
static double timed(struct run_result *r, const struct config *c, double *predicted)
{
    struct results res = {0};
    run_on(c, &backend_emulated, r);
    res.runs = r;
    res.n_runs = 1;
    report_summarize(&res);
    int best = 0;
    for (int k = 1; k < r->n_epochs; k++)
        if (r->epochs[k].seconds < r->epochs[best].seconds)
            best = k;
    const struct epoch_stats *st = &r->epochs[best].st;
    *predicted = emu_predict_epoch(r, st->load_s, st->host_s);
    return r->epochs[best].seconds;
}

/* ---- the math --------------------------------------------------------------- */

static void check_equal(const char *replicas, const char *pin, const char *async)
{
    struct config cc, ec;
    struct run_result cpu, emu;
    test_config(&cc, "train.epochs=3", "dataset.length=1000", "dataset.features=16",
                "model.out_features=3", "loader.batch_size=37", "parallel.blas=openblas",
                replicas, NULL);
    test_config(&ec, "train.epochs=3", "dataset.length=1000", "dataset.features=16",
                "model.out_features=3", "loader.batch_size=37", "parallel.blas=openblas",
                replicas, "parallel.device=emulated", pin, async, "loader.num_workers=2",
                NULL);
    run_on(&cc, &backend_cpu, &cpu);
    run_on(&ec, &backend_emulated, &emu);
    /* the same primitives in the same order on the same data: bit for bit */
    assert_int_equal(emu.n_epochs, cpu.n_epochs);
    assert_memory_equal(emu.w, cpu.w, 3 * 16 * sizeof(float));
    assert_memory_equal(emu.b, cpu.b, 3 * sizeof(float));
    for (int k = 0; k < cpu.n_epochs; k++)
        if (emu.epochs[k].loss != cpu.epochs[k].loss)
            fail_msg("%s %s %s: epoch %d loss %.9g, cpu %.9g", replicas, pin, async, k + 1,
                     emu.epochs[k].loss, cpu.epochs[k].loss);
    assert_true(emu.emulated && !cpu.emulated);
    run_result_free(&cpu);
    run_result_free(&emu);
}

static void test_same_parameters_as_cpu(void **state)
{
    (void)state;
    check_equal("parallel.replicas=1", "loader.pin_memory=false", "loader.async_copy=false");
    check_equal("parallel.replicas=1", "loader.pin_memory=true", "loader.async_copy=true");
    check_equal("parallel.replicas=3", "loader.pin_memory=false", "loader.async_copy=true");
    check_equal("parallel.replicas=3", "loader.pin_memory=true", "loader.async_copy=false");
}

/* The model counts every batch's step once: a compute-bound epoch whose last
 * batch is short (100 rows in 30/30/30/10) is never predicted shorter than
 * the compute engine's own busy time (the emulation's nominal sum of its
 * steps, no timing). It once paired batch k's copy with batch k's step and
 * added the last step again: 30+30+10+10 rows, 20% short. */
static void test_model_counts_every_step(void **state)
{
    (void)state;
    const char *sync[] = {"loader.async_copy=false", "loader.async_copy=true"};
    for (int a = 0; a < 2; a++) {
        struct config c;
        struct run_result r;
        test_config(&c, "parallel.device=emulated", "emulate.compute_us=405", "train.epochs=2",
                    sync[a], NULL);
        run_on(&c, &backend_emulated, &r);
        for (int k = 0; k < r.n_epochs; k++) {
            const struct epoch_stats *st = &r.epochs[k].st;
            double p = emu_predict_epoch(&r, st->load_s, st->host_s);
            if (!(p >= st->engine_compute_s))
                fail_msg("%s, epoch %d: %.3f ms predicted, under the %.3f ms of steps", sync[a],
                         k + 1, 1e3 * p, 1e3 * st->engine_compute_s);
        }
        run_result_free(&r);
    }
}

/* ---- CUDA's rules, side by side ------------------------------------------- */

/* Fastest epoch of BASE plus `a`, `b`, `c`; the measurement within a wide
 * band of the model's prediction for that epoch (load on this machine only
 * adds time: wake-ups come late). */
static double epoch_of(const char *a, const char *b, const char *c, struct run_result *r)
{
    struct config cf;
    double predicted;
    test_config(&cf, BASE, a, b, c, NULL);
    double t = timed(r, &cf, &predicted);
    assert_true(r->sum.emu.on);
    if (!(predicted > 0) || t < 0.7 * predicted || t > 3 * predicted)
        fail_msg("%s %s %s: %.1f ms measured, the model says %.1f ms", a, b, c, 1e3 * t,
                 1e3 * predicted);
    return t;
}

/* pageable copies hold the training thread for 42 ms a batch, pinned 8.4:
 * the model gives 52 vs 18.6 ms a batch (2.8x) */
static void test_pinned_beats_pageable(void **state)
{
    (void)state;
    struct run_result pg, pn;
    double t_pg = epoch_of("loader.pin_memory=false", "loader.async_copy=false",
                           "loader.copy_depth=2", &pg);
    double t_pn = epoch_of("loader.pin_memory=true", "loader.async_copy=false",
                           "loader.copy_depth=2", &pn);
    if (!(t_pg > 1.8 * t_pn))
        fail_msg("pageable %.1f ms, pinned %.1f ms: expected about 2.8x", 1e3 * t_pg, 1e3 * t_pn);
    assert_true(pg.sum.emu.bound == 1); // copy-bound
    run_result_free(&pg);
    run_result_free(&pn);
}

/* async_copy overlaps the copy engine with the compute engine only from
 * pinned memory: pageable copies hold the copy thread, whose period is then
 * the staged copy (42 ms) instead of the step (10.2 ms) */
static void test_async_needs_pinned(void **state)
{
    (void)state;
    struct run_result pg, pn;
    double t_pg = epoch_of("loader.pin_memory=false", "loader.async_copy=true",
                           "loader.copy_depth=3", &pg);
    double t_pn = epoch_of("loader.pin_memory=true", "loader.async_copy=true",
                           "loader.copy_depth=3", &pn);
    if (!(t_pg > 2.5 * t_pn))
        fail_msg("async pageable %.1f ms, async pinned %.1f ms: expected about 4x", 1e3 * t_pg,
                 1e3 * t_pn);
    /* pinned and async: most of the copy time hidden behind compute */
    assert_true(pn.epochs[0].st.hidden_s > 0.5 * pn.epochs[0].st.copy_s);
    run_result_free(&pg);
    run_result_free(&pn);
}

/* one slot: the copy of batch k waits for step k - 1, so copy and compute
 * take turns (18.6 ms a batch); three slots overlap them (10.2 ms) */
static void test_copy_depth(void **state)
{
    (void)state;
    struct run_result d1, d3;
    double t1 = epoch_of("loader.pin_memory=true", "loader.async_copy=true",
                         "loader.copy_depth=1", &d1);
    double t3 = epoch_of("loader.pin_memory=true", "loader.async_copy=true",
                         "loader.copy_depth=3", &d3);
    if (!(t1 > 1.3 * t3))
        fail_msg("copy_depth 1: %.1f ms, 3: %.1f ms: expected about 1.75x", 1e3 * t1, 1e3 * t3);
    assert_true(d1.epochs[0].st.hidden_s < 0.2 * d1.epochs[0].st.copy_s);
    run_result_free(&d1);
    run_result_free(&d3);
}

/* the verdict from the engines' busy time: slow copies (42 ms against a
 * 10 ms step), a slow step (41 ms against 8 ms copies), slow samples (the
 * loader's own per-sample cost, 160 us x 256 = 41 ms a batch) */
static void test_bounds(void **state)
{
    (void)state;
    struct run_result copy, compute, input;
    epoch_of("loader.pin_memory=true", "loader.async_copy=true", "emulate.h2d_gbps=0.025",
             &copy);
    epoch_of("loader.pin_memory=true", "loader.async_copy=true", "emulate.compute_us=160",
             &compute);
    epoch_of("loader.pin_memory=true", "loader.async_copy=true", "dataset.sample_cost_us=160",
             &input);
    assert_int_equal(copy.sum.emu.bound, 1);
    assert_int_equal(compute.sum.emu.bound, 2);
    assert_int_equal(input.sum.emu.bound, 0);
    assert_true(compute.sum.au > 0.6 && input.sum.au < 0.5 && copy.sum.au < 0.5);
    run_result_free(&copy);
    run_result_free(&compute);
    run_result_free(&input);
}

/* DataParallel: two devices copy and compute their halves side by side (one
 * host link each); two replicas on one device share its engines */
static void test_replicas_own_devices(void **state)
{
    (void)state;
    struct run_result one, two, shared;
    double t1 = epoch_of("loader.pin_memory=true", "parallel.replicas=1",
                         "emulate.h2d_gbps=0.025", &one);
    double t2 = epoch_of("loader.pin_memory=true", "parallel.replicas=2",
                         "emulate.h2d_gbps=0.025", &two);
    double ts = epoch_of("loader.pin_memory=true", "parallel.devices=[0,0]",
                         "emulate.h2d_gbps=0.025", &shared);
    if (!(t2 < 0.75 * t1 && ts > 0.85 * t1))
        fail_msg("1 device %.1f ms, 2 devices %.1f ms, 2 replicas on 1 device %.1f ms",
                 1e3 * t1, 1e3 * t2, 1e3 * ts);
    run_result_free(&one);
    run_result_free(&two);
    run_result_free(&shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_parameters_as_cpu),
        cmocka_unit_test(test_model_counts_every_step),
        cmocka_unit_test(test_pinned_beats_pageable),
        cmocka_unit_test(test_async_needs_pinned),
        cmocka_unit_test(test_copy_depth),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_replicas_own_devices),
    };
    return test_run_tests("emulated", tests, NULL, NULL);
}
