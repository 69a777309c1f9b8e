/* The --tune search (src/tune/) on simulated pipelines: one fixture, a
 * pipeline whose true stage costs per batch the test states, timed on
 * tests/sim_machine.h's machine (quiet, or busy with loops that come and
 * go), with what the model does not know added where a test needs it (a
 * setting's extra cost). The search only sees the epochs it measured, as on
 * the real path. Every number follows from a seed; no test reads a clock.
 *
 * The calibration at the end runs the whole search 1000 times per workload
 * on the busy machine: a pipeline where every setting runs as the config as
 * given (A/A) gets a change recommended at most 2% of the time, one where
 * the settings with workers run 15% faster gets one at least 90% of the
 * time with 10 ms and 100 ms epochs (45% with 1 s epochs), and no
 * recommended setting is ever truly slower than the config as given. */
#include "testutil.h"

#include "report.h"
#include "sim_machine.h"
#include "tune.h"

/* A simulated pipeline: its true costs per batch (the model's terms), and
 * what the model does not know. */
struct sim {
    struct pipeline_costs truth;
    long batches;
    double (*extra)(const struct pipeline_knobs *k, const struct sim *x); // true time factor
    double noise, setup_s;  // lognormal sigma of an epoch; a run's start
    int slow_every, epochs; // every slow_every-th epoch twice as slow (a burst); epochs so far
    const char *backend;
    struct sim_machine m;
    int calls, stop_at;     // trial calls so far; a stop at this one (0: none)
    int fail, failed;       // a first call fails: 1 trial 0's, 2 the last raced one's; its trial
    const struct results *res; // the search's
    double cold;            // a run's first epoch without workers, unwarmed: this much slower
    long slow_workers;      // with extra = count_slower: this worker count runs
    double slow;            // ... this much slower than the model prices it
    double batch_bytes;     // a batch of the loader's pool: the trials open hold
    double held, most_held; // ... these many bytes of them, at most this many at once
};

static double pool_bytes(const struct sim *x, const struct pipeline_knobs *k)
{
    return x->batch_bytes * (double)pipeline_pool(k);
}

static double truth_epoch(const struct sim *x, const struct pipeline_knobs *k)
{
    double t = pipeline_epoch(&x->truth, k, x->batches);
    return x->extra ? t * x->extra(k, x) : t;
}

/* tune_trial_fn on the simulated machine: each epoch's time and its stages
 * (load, step, copy), scaled by what the machine did to that epoch. */
static int sim_trial(void *ctx, struct run_result *run, int round, int position, int warmup,
                     int epochs, struct error *e)
{
    struct sim *x = ctx;
    struct pipeline_knobs k = pipeline_knobs_of(&run->cfg);
    if (epochs == 0) { // the search's end of the run
        x->held -= run->n_epochs ? pool_bytes(x, &k) : 0;
        return 0;
    }
    if (x->stop_at && ++x->calls >= x->stop_at)
        return 1;
    if (!run->n_epochs && (x->fail == 1 ? run == x->res->runs : x->fail == 2 && round >= 0 &&
                                               run == &x->res->runs[x->res->n_runs - 1])) {
        run->failed = true;
        snprintf(run->stopped, sizeof run->stopped, "a simulated fault");
        x->failed = (int)(run - x->res->runs);
        return error_set(e, "a simulated fault");
    }
    const struct pipeline_costs *c = &x->truth;
    double T = truth_epoch(x, &k), n = (double)x->batches, t[epochs];
    bool device = c->compute > 0, fresh = run->n_epochs == 0; // else it goes on, warm
    x->held += fresh ? pool_bytes(x, &k) : 0;
    x->most_held = fmax(x->most_held, x->held);
    machine_run(&x->m, (fresh ? x->setup_s : 0) + warmup * T, 0);
    run->epochs = realloc(run->epochs, (size_t)(run->n_epochs + epochs) * sizeof *run->epochs);
    for (int i = 0; i < epochs; i++) {
        double burst = x->slow_every && ++x->epochs % x->slow_every == 0 ? 2 : 1;
        burst *= i == 0 && fresh && !warmup && !k.num_workers && x->cold ? x->cold : 1;
        double d = t[i] = machine_run(&x->m, T * burst, x->noise), f = d / T;
        double step = n * (device ? c->compute : c->host) * f;
        run->epochs[run->n_epochs++] = (struct epoch_result){
            .epoch = run->n_epochs + 1, .seconds = d,
            .st = {.load_s = n * c->load * f, .compute_s = step, .wait_s = fmax(0, d - step),
                   .host_s = device ? n * c->host * f : 0,
                   .copy_s = device ? n * c->copy[k.pin_memory] * f : 0}};
    }
    run->n_batches = x->batches;
    run->backend = x->backend;
    if (round >= 0) {
        run->rounds = realloc(run->rounds, (size_t)(run->n_rounds + 1) * sizeof *run->rounds);
        run->rounds[run->n_rounds++] = (struct run_round){
            .round = round, .position = position, .first_epoch = run->n_epochs - epochs,
            .n_epochs = epochs, .median_s = stats_median(t, (size_t)epochs)};
    }
    return 0;
}

static const struct backend gpu_like = {.name = "gpu-like", .device_copies = true};

static double sim_clock(void *ctx) { return ((struct sim *)ctx)->m.t; }

/* The one fixture: a config, the options, the simulated pipeline, the result. */
static struct {
    struct config cfg;
    struct tune_options o;
    struct sim x;
    struct results res;
} fx;

/* A cpu pipeline: L load, H step per batch, on `cores` cores; the search as
 * tune_options_init sets it from the config. */
static void setup(const struct backend *be, double L, double H, double cores, uint64_t seed,
                  bool quiet)
{
    results_free(&fx.res);
    config_free(&fx.cfg);
    memset(&fx, 0, sizeof fx);
    config_defaults(&fx.cfg);
    fx.cfg.train.epochs = 5;
    fx.x = (struct sim){.truth = {.load = L, .host = H, .cores = cores}, .batches = 20,
                        .noise = 0.02, .setup_s = 0.01, .backend = be->name, .res = &fx.res};
    machine_init(&fx.x.m, seed);
    fx.x.m.quiet = quiet;
    tune_options_init(&fx.o, &fx.cfg, be, cores);
    fx.o.clock = sim_clock; // the budget on the simulated machine's time
}

static void run(void)
{
    struct error e;
    fx.res.cfg = fx.cfg; // shallow: freed with fx.cfg
    if (tune_search(&fx.o, sim_trial, &fx.x, &fx.res, &e))
        fail_msg("%s", e.msg);
    report_summarize(&fx.res);
    fx.res.cfg = (struct config){0};
}

static const struct tune_result *T(void) { return fx.res.tune; }

static struct pipeline_knobs knobs(int trial)
{
    return pipeline_knobs_of(&fx.res.runs[trial].cfg);
}

/* The truly fastest setting in reach, by brute force over the model. */
static double true_best(void)
{
    double best = INFINITY;
    for (int j = 0; j < T()->n_space; j++)
        best = fmin(best, truth_epoch(&fx.x, &T()->space[j].k));
    return best;
}

/* Loading dominates on 4 cores: the model, fitted on the profile, puts the
 * best at 4 workers or more; the race confirms the gain; the choice is the
 * true best within 5%, with a few trials out of the space's settings. */
static void test_input_bound(void **state)
{
    (void)state;
    setup(&backend_cpu, 10e-3, 1e-3, 4, 1, true);
    run();
    assert_int_equal(T()->outcome, TUNE_CHANGE);
    assert_true(knobs(T()->best).num_workers >= 4);
    struct pipeline_knobs b = knobs(T()->best);
    double truth = truth_epoch(&fx.x, &b);
    assert_true(truth < 1.05 * true_best());
    assert_true(T()->gain.ratio < 0.35); // 11 ms a batch against (10 + 1) / 4
    assert_true(T()->gain.ci95[1] < 0.97);
    assert_true(fx.res.n_runs <= 5 && T()->n_space == 1 + 8 * 5 * 2);
    /* the model is the truth here: its predictions carry only the profile's
     * noise (2% an epoch, two epochs a run: within 5%) */
    for (int i = 0; i < fx.res.n_runs; i++) {
        struct pipeline_knobs k = knobs(i);
        assert_true(fabs(T()->trials[i].predicted_s / truth_epoch(&fx.x, &k) - 1) < 0.05);
    }
    assert_true(T()->rerun_s[0] > 0 && T()->rerun_s[0] <= truth && truth <= T()->rerun_s[1]);
}

/* Workers cost the training thread a hand-off per batch, and every thread
 * beyond the cores costs more: the profile's runs with K - 1 and K workers
 * recover both, and every trial's prediction (0, 1, 2 and 3 workers on 2
 * cores) is the truth within the profile's noise. */
static void test_handoff_and_contention(void **state)
{
    (void)state;
    setup(&backend_cpu, 2e-3, 1e-3, 2, 5, true);
    fx.x.truth.handoff = 0.5e-3, fx.x.truth.contend = 1e-3;
    run();
    assert_true(fabs(T()->costs.handoff / 0.5e-3 - 1) < 0.2);
    assert_true(fabs(T()->costs.contend / 1e-3 - 1) < 0.2);
    assert_int_equal(T()->assumed, 0); // each fitted, no copies on the cpu
    for (int i = 0; i < fx.res.n_runs; i++) {
        struct pipeline_knobs k = knobs(i);
        assert_true(fabs(T()->trials[i].predicted_s / truth_epoch(&fx.x, &k) - 1) < 0.05);
    }
}

/* One batch an epoch: the epoch has no period for a hand-off or contention
 * to enter, so neither is fitted (the whole epoch was, before): both taken as
 * 0 and said so. */
static void test_one_batch_fits_nothing(void **state)
{
    (void)state;
    setup(&backend_cpu, 2e-3, 1e-3, 2, 5, true);
    fx.x.truth.handoff = 0.5e-3, fx.x.truth.contend = 1e-3, fx.x.batches = 1;
    run();
    assert_true(T()->costs.handoff == 0 && T()->costs.contend == 0 && T()->costs.loop == 0);
    assert_int_equal(T()->assumed & 7u, 7u);
}

/* Workers that cost the training thread a little (8% a batch, beyond what
 * the model knows) where the step bounds the epoch, on 16 cores: the fitted
 * hand-off stays a share of the training thread's time, so fewer workers
 * are not predicted slower than they are. Fitted at the workers' end alone
 * it had to outgrow the step: an H100's gpu.yaml (4 workers, 28 ms epochs)
 * was predicted at 61 ms. */
static double workers_cost_8pc(const struct pipeline_knobs *k, const struct sim *x)
{
    (void)x;
    return k->num_workers ? 1.08 : 1;
}

/* gpu.yaml on the H100 (16 cores; 4 persistent workers, pinned batches,
 * async copies) with a run's stage costs per batch: load, step on the host
 * and on the device, copies from pageable and pinned memory. */
static void setup_gpu_yaml(const double costs[5], long batches, uint64_t seed, long max_workers)
{
    setup(&gpu_like, costs[0], costs[1], 16, seed, true);
    fx.x.truth.compute = costs[2], fx.x.truth.copy[0] = costs[3], fx.x.truth.copy[1] = costs[4];
    fx.x.batches = batches;
    fx.cfg.loader.num_workers = 4, fx.cfg.loader.persistent_workers = true;
    fx.cfg.loader.pin_memory = fx.cfg.loader.async_copy = true;
    fx.o.max_workers = max_workers;
}

static void test_handoff_where_the_step_bounds(void **state)
{
    (void)state;
    setup_gpu_yaml((double[]){0.046e-3, 0.052e-3, 0.053e-3, 0.044e-3, 0.022e-3}, 390, 10, 8);
    fx.x.extra = workers_cost_8pc;
    run();
    for (int i = 0; i < fx.res.n_runs; i++) {
        struct pipeline_knobs k = knobs(i);
        assert_true(fabs(T()->trials[i].predicted_s / truth_epoch(&fx.x, &k) - 1) < 0.1);
    }
}

/* The H100's gpu.yaml with tune.max_workers 4: the profile's run without
 * workers (async, pageable) is bound by the copy thread, 11% slower than
 * its measured stages say. That shortfall is not the training thread's own
 * time: fitted there, it bounded every setting with workers (the config as
 * given predicted at 36.4 ms against 32.0 measured). */
static double pageable_copy_slower(const struct pipeline_knobs *k, const struct sim *x)
{
    (void)x;
    return k->num_workers == 0 && !k->pin_memory ? 1.11 : 1;
}

static void test_loop_where_the_copy_bounds(void **state)
{
    (void)state;
    setup_gpu_yaml((double[]){0.0434e-3, 0.0686e-3, 0.0683e-3, 0.0396e-3, 0.0205e-3}, 391, 11, 4);
    fx.x.extra = pageable_copy_slower;
    run();
    assert_true(T()->costs.loop == 0);
    struct pipeline_knobs given = knobs(0);
    assert_true(fabs(T()->trials[0].predicted_s / truth_epoch(&fx.x, &given) - 1) < 0.05);
}

/* gpu-sync-vs-async on an H200 (16 cores; the config as given: 8 workers,
 * pageable, sync copies; tune.max_workers 4) with its profile's stage costs:
 * beside 8 workers a pageable copy takes twice what the run without workers
 * measured. The hand-off, fitted on that run, takes the shortfall and the
 * model predicts every setting with workers twice as slow as it is, also the
 * profile's 4-worker run, measured at half its prediction. Ranked by its
 * measurement, that run is raced and a setting as fast as it is recommended
 * (ranked by the prediction alone: 3 workers, 1.25x the best's time). */
static double pageable_copy_beside_workers(const struct pipeline_knobs *k, const struct sim *x)
{
    (void)x;
    return k->num_workers > 4 && !k->pin_memory ? 2.5 : 1;
}

static void test_a_measured_setting_outranks_its_prediction(void **state)
{
    (void)state;
    setup_gpu_yaml((double[]){2.017e-3, 0.083e-3, 0.153e-3, 1.211e-3, 0.321e-3}, 64, 15, 4);
    fx.cfg.loader.num_workers = 8, fx.cfg.loader.pin_memory = fx.cfg.loader.async_copy = false;
    fx.x.extra = pageable_copy_beside_workers;
    run();
    assert_int_equal(T()->outcome, TUNE_CHANGE);
    struct pipeline_knobs b = knobs(T()->best);
    print_message("# measured over predicted: the choice (%ld workers) at %.3fx the true best\n", b.num_workers,
                  truth_epoch(&fx.x, &b) / true_best());
    assert_true(truth_epoch(&fx.x, &b) < 1.05 * true_best());
}

/* The machine slows down steadily (each second 40% more), as a laptop
 * warming up: the profile's runs take turns, so the drift reaches them
 * alike and the model keeps their true ratios to the config as given's
 * within 15% (over seeds 1-25: 0.88-0.98). Run one after another, the
 * config as given first, the runs with workers were measured 16-44% slower
 * than they are. (A setting beyond them, 3 workers on 2 cores, is
 * extrapolated from a drifting fit: 0.76 with this seed.) */
static double drift_from;
static double slowing_down(const struct pipeline_knobs *k, const struct sim *x)
{
    (void)k;
    return 1 + 0.4 * (x->m.t - drift_from);
}

static void test_profile_under_drift(void **state)
{
    (void)state;
    setup(&backend_cpu, 2e-3, 1e-3, 2, 13, true);
    fx.x.truth.handoff = 0.5e-3, fx.x.truth.contend = 1e-3;
    fx.x.extra = slowing_down, drift_from = fx.x.m.t;
    run();
    struct pipeline_knobs given = knobs(0);
    double truth0 = pipeline_epoch(&fx.x.truth, &given, fx.x.batches);
    for (int i = 1; i <= 2; i++) { // the profile's: K - 1 and K workers
        struct pipeline_knobs k = knobs(i);
        assert_int_equal(k.num_workers, i);
        double truth = pipeline_epoch(&fx.x.truth, &k, fx.x.batches) / truth0;
        double predicted = T()->trials[i].predicted_s / T()->trials[0].predicted_s;
        print_message("# drift: trial %d predicted/true ratio to the given %.3f\n", i, predicted / truth);
        assert_true(fabs(predicted / truth - 1) < 0.15);
    }
}

/* large.yaml on the 2-core VM with every fourth epoch twice as slow (the
 * machine's bursts, stages and all): the stage costs are each stage's median
 * over the epochs, so the config as given is predicted at its median epoch.
 * From the stages' means (1.25 times the median) it was predicted 21% slow. */
static void test_slow_epochs_in_the_profile(void **state)
{
    (void)state;
    setup(&backend_cpu, 0.059e-3, 0.086e-3, 2, 14, true);
    fx.x.batches = 391, fx.x.slow_every = 4;
    run();
    struct pipeline_knobs given = knobs(0);
    double err = T()->trials[0].predicted_s / truth_epoch(&fx.x, &given) - 1;
    print_message("# slow epochs: the config as given predicted %+.3f off its true epoch\n", err);
    assert_true(fabs(err) < 0.05);
}

/* fashion-mnist on the 2-core VM: the step bounds the 1-worker profile run,
 * which ran a little under the model, so the hand-off fits at 0 and the
 * model prices prefetch 1 as prefetch 2; truly it serialises the worker
 * and the step (twice the epoch). In the tie the candidate keeps the
 * config as given's prefetch (2) and the change is found. */
static double prefetch_1_serial(const struct pipeline_knobs *k, const struct sim *x)
{
    (void)x;
    return k->num_workers && k->prefetch_factor == 1 ? 2 : 1;
}

static void test_tie_keeps_the_given_prefetch(void **state)
{
    (void)state;
    setup(&backend_cpu, 0.07e-3, 0.08e-3, 2, 12, true);
    fx.x.batches = 100, fx.x.extra = prefetch_1_serial;
    run();
    assert_true(T()->costs.handoff < 1e-6);
    assert_int_equal(T()->outcome, TUNE_CHANGE);
    assert_int_equal(knobs(T()->best).prefetch_factor, 2);
    for (int i = 0; i < fx.res.n_runs; i++)
        assert_true(T()->trials[i].rounds == 0 || knobs(i).num_workers == 0 ||
                    knobs(i).prefetch_factor > 1);
}

/* Copies dominate on a device: pinned memory with async copies. */
static void test_copy_bound(void **state)
{
    (void)state;
    setup(&gpu_like, 0.5e-3, 0.1e-3, 2, 2, true);
    fx.x.truth.compute = 2e-3;
    fx.x.truth.copy[0] = 6e-3, fx.x.truth.copy[1] = 2e-3;
    run();
    assert_int_equal(T()->outcome, TUNE_CHANGE);
    struct pipeline_knobs b = knobs(T()->best);
    assert_true(b.pin_memory && b.async_copy);
    assert_true(truth_epoch(&fx.x, &b) < 1.05 * true_best());
}

/* On the cpu pin_memory, async_copy and copy_depth do nothing: no setting
 * in reach differs in them, and prefetch and persistence only with workers. */
static void test_knobs_without_effect(void **state)
{
    (void)state;
    setup(&backend_cpu, 1e-3, 1e-3, 2, 3, true);
    run();
    for (int j = 0; j < T()->n_space; j++) {
        const struct pipeline_knobs *k = &T()->space[j].k;
        assert_false(k->pin_memory || k->async_copy);
        assert_int_equal(k->copy_depth, fx.cfg.loader.copy_depth);
        if (k->num_workers == 0)
            assert_true(k->prefetch_factor == 2 && !k->persistent_workers);
    }
}

/* The step dominates: no setting is faster; the config as given is kept,
 * and the statement says why. */
static void test_compute_bound(void **state)
{
    (void)state;
    setup(&backend_cpu, 0.01e-3, 10e-3, 2, 4, true); // workers save 0.1% of an epoch
    run();
    assert_int_equal(T()->outcome, TUNE_KEEP_FASTEST);
    assert_int_equal(T()->best, 0);
    assert_non_null(strstr(T()->statement, "nothing measured faster"));
}

/* A target AU: the cheapest setting whose AU reaches it, its cheaper
 * neighbour measured below it. Load 3 ms, step 1 ms, 4 cores: 3 workers
 * keep the step busy (AU ~0.9+), 2 reach 1 / 1.5. */
static void test_target_au(void **state)
{
    (void)state;
    setup(&backend_cpu, 3e-3, 1e-3, 4, 5, true);
    fx.o.target_au = 0.8;
    run();
    assert_int_equal(T()->outcome, TUNE_TARGET);
    struct pipeline_knobs b = knobs(T()->best);
    assert_int_equal(b.num_workers, 3);
    assert_true(fx.res.runs[T()->best].sum.au >= 0.8);
    bool below = false; // a cheaper setting raced, below the target
    for (int i = 0; i < fx.res.n_runs; i++)
        below |= knobs(i).num_workers == 2 && fx.res.runs[i].sum.au < 0.8;
    assert_true(below);
    /* a target every setting reaches, however small: the AU (here ~3e-4) is
     * compared as measured (rounded down to 3 decimals, it never reached it) */
    setup(&backend_cpu, 3e-3, 1e-6, 4, 5, true);
    fx.o.target_au = 1e-7;
    run();
    assert_int_equal(T()->outcome, TUNE_TARGET);
    assert_non_null(strstr(T()->trials[T()->best].decision, "reaches 1e-07"));
    assert_int_equal(T()->best, 0); // the config as given, the cheapest: it says so
    assert_non_null(strstr(T()->statement, "the cheapest setting raced whose measured AU"));
    /* a target reached by a race too short for an interval (the budget ended
     * it after a round): the recommendation says so, never "[nan, nan]" */
    setup(&backend_cpu, 3e-3, 1e-3, 4, 5, true);
    fx.o.target_au = 0.8;
    run();
    assert_int_equal(T()->outcome, TUNE_TARGET);
    fx.res.tune->gain.ci95[0] = fx.res.tune->gain.ci95[1] = NAN, fx.res.tune->gain.units = 1;
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    report_tune_choice(f, &fx.res, "# ", "#   ");
    fclose(f);
    assert_null(strstr(text, "nan"));
    assert_non_null(strstr(text, "(too few rounds for an interval)"));
    assert_non_null(strstr(text, "paired over 1 round\n"));
    free(text);
}

/* Nothing to race, and the statement says why: the model predicts no other
 * setting faster (one batch an epoch: every setting loads it, then steps),
 * or the knobs leave none (prefetch only, without workers, acts on none). */
static void test_nothing_to_race(void **state)
{
    (void)state;
    setup(&backend_cpu, 5e-3, 1e-3, 4, 10, true);
    fx.x.batches = 1;
    run();
    assert_int_equal(T()->outcome, TUNE_KEEP_FASTEST);
    assert_int_equal(T()->best, 0);
    assert_true(T()->n_space > 1);
    assert_non_null(strstr(T()->statement, "the model predicts none of the other"));
    setup(&backend_cpu, 5e-3, 1e-3, 4, 10, true);
    fx.o.knobs = 1u << TUNE_PREFETCH;
    run();
    assert_int_equal(T()->n_space, 1);
    assert_non_null(strstr(T()->statement, "tune.knobs and tune.max_workers leave no setting"));
    assert_int_equal(T()->assumed, 1u << TUNE_COST_HANDOFF | 1u << TUNE_COST_CONTEND); // no workers
}

/* Workers that start in every epoch cost time the model does not price
 * (large.yaml: 1 worker 13.6% slower than a persistent one on the quiet
 * VM); predicted alike, the persistent setting is raced and chosen. */
static double restart_cost_10pc(const struct pipeline_knobs *k, const struct sim *x)
{
    (void)x;
    return k->num_workers > 0 && !k->persistent_workers ? 1.10 : 1;
}

static void test_persistent_in_a_tie(void **state)
{
    (void)state;
    setup(&backend_cpu, 3e-3, 1e-3, 4, 12, true);
    fx.x.extra = restart_cost_10pc;
    run();
    assert_int_equal(T()->outcome, TUNE_CHANGE);
    assert_true(knobs(T()->best).persistent_workers);
}

/* One worker count slower than the model prices it (what it cannot know). */
static double count_slower(const struct pipeline_knobs *k, const struct sim *x)
{
    return k->num_workers == x->slow_workers ? x->slow : 1;
}

/* A worker count the model cannot price (4 workers 8% slower than it says,
 * on 8 cores, where the profile runs 0, 7 and 8): the best estimated, 4
 * workers (the step bounds it, as from 4 on), 3 (loading bounds it, 2%
 * slower) and 5 are within the noise threshold, and the best gains on the
 * config as given: 3 and 5 are raced too, and the choice is within 5% of
 * the true best. Raced alone, 4 workers were chosen, 1.08x the true best. */
static void test_near_tie_raced(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        setup(&backend_cpu, 3.06e-3, 1e-3, 8, seed, true);
        fx.x.extra = count_slower, fx.x.slow_workers = 4, fx.x.slow = 1.08;
        run();
        assert_int_equal(T()->outcome, TUNE_CHANGE);
        assert_int_equal(T()->space[0].k.num_workers, 4);
        struct pipeline_knobs b = knobs(T()->best);
        assert_int_not_equal(b.num_workers, 4);
        assert_true(truth_epoch(&fx.x, &b) < 1.05 * true_best());
    }
}

/* The config as given (no workers) runs 10% slower than the model prices
 * it: on a device that bounds the step, the training thread's own time is
 * not fitted. Its prediction put it 4% under every setting with workers,
 * which the profile measured 5-8% faster than it: nothing was raced. Ranked
 * by its measured median, it hides them no longer: workers are raced and
 * chosen, on 10 of 10 seeds. */
static void test_given_slower_than_predicted(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        setup(&gpu_like, 1e-3, 0.5e-3, 4, seed, true);
        fx.x.truth.compute = 5e-3, fx.x.truth.copy[0] = fx.x.truth.copy[1] = 0.5e-3;
        fx.o.knobs = 1u << TUNE_WORKERS;
        fx.x.extra = count_slower, fx.x.slow_workers = 0, fx.x.slow = 1.10;
        run();
        const struct run_result *given = &fx.res.runs[0];
        assert_true(T()->trials[0].predicted_s < 0.95 * epochs_median(given->epochs, given->n_epochs));
        assert_int_equal(T()->outcome, TUNE_CHANGE);
        assert_true(knobs(T()->best).num_workers > 0);
    }
}

/* Async copies at depths 2, 4 and 8 run alike (the copy and the step overlap
 * from depth 2 on): whichever the race's noise puts first, the recommendation
 * is the cheapest of those measured the same, depth 2; where depth 2 runs 6%
 * slower than the others, beyond the noise threshold, it is not. */
static double depth_2_slower(const struct pipeline_knobs *k, const struct sim *x)
{
    (void)x;
    return k->async_copy && k->copy_depth == 2 ? 1.06 : 1;
}

/* Pinned memory alone runs as async copies alone do (its epoch scaled to
 * theirs), and both together, which the model puts first, 10% slower than
 * them: the tie order, total, takes the one without async copies. */
static double pinned_async_slower(const struct pipeline_knobs *k, const struct sim *x)
{
    struct pipeline_knobs async = *k;
    async.pin_memory = false, async.async_copy = true;
    if (k->pin_memory != k->async_copy) // one of the two alone: the async one's epoch
        return pipeline_epoch(&x->truth, &async, x->batches) /
               pipeline_epoch(&x->truth, k, x->batches);
    return k->pin_memory ? 1.20 : 1;
}

static void test_cheapest_of_equals(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        setup(&gpu_like, 0.1e-3, 0.1e-3, 2, seed, true);
        fx.x.truth.compute = 2e-3, fx.x.truth.copy[0] = 2e-3, fx.x.truth.copy[1] = 0.1e-3;
        fx.x.extra = pinned_async_slower;
        fx.o.knobs = 1u << TUNE_PIN | 1u << TUNE_ASYNC;
        run();
        assert_int_equal(T()->outcome, TUNE_CHANGE);
        assert_true(knobs(T()->best).pin_memory && !knobs(T()->best).async_copy);
    }
    for (uint64_t seed = 1; seed <= 20; seed++) {
        setup(&gpu_like, 0.2e-3, 0.1e-3, 2, seed, true);
        fx.x.truth.compute = 2e-3, fx.x.truth.copy[0] = fx.x.truth.copy[1] = 2e-3;
        fx.x.extra = seed > 10 ? depth_2_slower : NULL;
        fx.cfg.loader.copy_depth = 1;
        fx.o.knobs = 1u << TUNE_ASYNC | 1u << TUNE_DEPTH;
        run();
        assert_int_equal(T()->outcome, TUNE_CHANGE);
        assert_true(knobs(T()->best).async_copy);
        assert_true((knobs(T()->best).copy_depth == 2) == (seed <= 10));
        // no run had workers or pinned memory, and the device bounds the one without
        // workers, so that the training thread's own time cannot be fitted either
        assert_int_equal(T()->assumed, 1u << TUNE_COST_LOOP | 1u << TUNE_COST_HANDOFF |
                                           1u << TUNE_COST_CONTEND | 1u << TUNE_COST_PINNED);
    }
}

/* A target no setting reaches: the statement names the highest AU measured
 * and what bounds it. */
static void test_no_target(void **state)
{
    (void)state;
    setup(&backend_cpu, 3e-3, 1e-3, 2, 6, true);
    fx.o.target_au = 0.95;
    fx.o.max_workers = 1;
    run();
    assert_int_equal(T()->outcome, TUNE_NO_TARGET);
    assert_int_equal(T()->best, -1);
    assert_non_null(strstr(T()->statement, "no setting tried reaches AU 0.95"));
    assert_non_null(strstr(T()->statement, "input-bound"));
}

/* Epochs under a millisecond: nothing is raced. */
static void test_too_short(void **state)
{
    (void)state;
    setup(&backend_cpu, 10e-6, 10e-6, 2, 7, true);
    run();
    assert_int_equal(T()->outcome, TUNE_TOO_SHORT);
    assert_int_equal(fx.res.n_runs, 1);
    assert_int_equal(T()->best, -1);
}

/* A budget the profile spends: the profile ends with the run under way, and
 * the config as given is kept, saying why. */
static void test_budget(void **state)
{
    (void)state;
    setup(&backend_cpu, 10e-3, 1e-3, 4, 8, true);
    fx.o.budget_s = 0.5; // the profile: 0.22 s epochs without workers, 3 runs
    run();
    assert_int_equal(T()->outcome, TUNE_KEEP_BUDGET);
    assert_int_equal(T()->best, 0);
    assert_non_null(strstr(T()->statement, "tune.budget_s (0.5 s) ran out in the profile"));
    assert_in_range(fx.res.n_runs, 1, 2); // the profile was cut short: not all 3 ran
    // past the budget by at most the profile run under way: one 0.22 s epoch, its start-up
    assert_true(T()->seconds < fx.o.budget_s + 0.3);
    /* for a target AU, the config as given kept unraced is recommended only where
     * its measured AU reaches it (here 1 / 11 of the epoch: not 0.8) */
    setup(&backend_cpu, 10e-3, 1e-3, 4, 8, true);
    fx.o.budget_s = 0.5, fx.o.target_au = 0.8;
    run();
    assert_int_equal(T()->outcome, TUNE_NO_TARGET);
    assert_int_equal(T()->best, -1);
    assert_non_null(strstr(T()->statement, "ran out in the profile: nothing raced; the config "
                                           "as given's measured AU, 0.09"));
    setup(&backend_cpu, 10e-3, 1e-3, 4, 8, true);
    fx.o.budget_s = 0.5, fx.o.target_au = 0.05; // reached: kept
    run();
    assert_int_equal(T()->outcome, TUNE_KEEP_BUDGET);
    assert_int_equal(T()->best, 0);
    /* a race starts no round that the budget left cannot hold (a new trial's
     * warm-up epochs counted): whatever the budget, the search passes it by at
     * most the profile's epoch under way, or its first call's warm-up */
    int short_race = 0;
    for (int warm = 0; warm <= 3; warm += 3) // a new trial's warm-up epochs counted too
        for (double b = 0.5; b < 6; b += 0.1) {
            setup(&backend_cpu, 10e-3, 1e-3, 4, 8, true);
            fx.cfg.train.warmup_epochs = warm;
            fx.o.budget_s = b;
            run();
            bool in_profile = strstr(T()->statement, "ran out in the profile") != NULL;
            assert_true(T()->seconds < b + 0.3 + (in_profile ? warm * 0.23 : 0)); // its first call
            short_race += strstr(T()->statement, "under a race round's") != NULL;
        }
    assert_true(short_race > 1);
}

/* Memory for the loader's batches in the profile and the race: room for the
 * config as given's (no workers: 1 batch) and 10 more, the K - 1 = 3 workers'
 * 7, not the 9 of K beside them; then the best, at 4 workers or more, raced
 * alone. The trials open at once never pass it (without the limit: 17). */
static void test_memory(void **state)
{
    (void)state;
    setup(&backend_cpu, 10e-3, 1e-3, 4, 1, true);
    fx.x.batch_bytes = fx.o.est.batch = 100;
    fx.o.est.loader = 100, fx.o.est.dataset = 1000;
    fx.o.max_bytes = 1000 + 100 + 1000;
    run();
    assert_true(fx.o.est.dataset + fx.x.most_held <= fx.o.max_bytes);
    assert_true(fx.x.most_held >= 800); // what fits runs: the given and 3 workers at once
    assert_int_equal(fx.res.n_runs, 3); // no profile run with 4 workers, one candidate
    assert_int_equal(T()->outcome, TUNE_CHANGE);
    assert_true(knobs(T()->best).num_workers >= 4 && T()->trials[T()->best].rounds > 0);
    /* where batches are copied, the profile's last run has the other
     * pin_memory: the last kept, the copy from pinned memory measured */
    setup(&gpu_like, 10e-3, 1e-3, 4, 1, true);
    fx.x.truth.compute = 1e-3, fx.x.truth.copy[0] = 2e-3, fx.x.truth.copy[1] = 1e-3;
    fx.x.batch_bytes = fx.o.est.batch = 100;
    fx.o.est.loader = 100, fx.o.est.dataset = 1000;
    fx.o.max_bytes = 1000 + 100 + 1000;
    run();
    assert_true(knobs(1).num_workers == 3 && knobs(1).pin_memory);
    assert_false(T()->assumed & 1u << TUNE_COST_PINNED);
    /* room for the config as given alone: nothing raced, and the statement
     * names the memory, not the model (which predicts workers faster) */
    setup(&backend_cpu, 10e-3, 1e-3, 4, 1, true);
    fx.x.batch_bytes = fx.o.est.batch = 100;
    fx.o.est.loader = 100, fx.o.est.dataset = 1000;
    fx.o.max_bytes = 1000 + 100 + 50;
    run();
    assert_int_equal(fx.res.n_runs, 1);
    assert_int_equal(T()->outcome, TUNE_KEEP_FASTEST);
    assert_non_null(strstr(T()->statement, "leaves no room for another setting"));
    /* room for some: whatever is not raced, it is not for the memory */
    setup(&backend_cpu, 8e-3, 4e-3, 4, 1, true);
    fx.x.batch_bytes = fx.o.est.batch = 100;
    fx.o.est.loader = 100, fx.o.est.dataset = 1000;
    fx.o.max_bytes = 1300;
    run();
    assert_null(strstr(T()->statement, "leaves no room"));
}

/* A stop in the race: what was measured stays, no run without an epoch, no
 * recommendation, and the statement says so. */
static void test_stopped(void **state)
{
    (void)state;
    setup(&backend_cpu, 10e-3, 1e-3, 4, 9, true);
    fx.x.stop_at = 11; // the profile 8 (1 + 3 rounds of 2, 3 and 2), then 2 of the race
                       // (one at least a candidate's, whatever the round's order)
    run();
    assert_int_equal(T()->outcome, TUNE_STOPPED);
    assert_int_equal(T()->best, -1);
    assert_non_null(strstr(T()->statement, "interrupted during the race"));
    for (int i = 0; i < fx.res.n_runs; i++)
        assert_true(fx.res.runs[i].n_epochs > 0);
    assert_int_equal(T()->n_trials, fx.res.n_runs);
    int raced = 0; // a trial that ran race rounds quotes them, as the table does
    for (int i = 1; i < T()->n_trials; i++)
        if (T()->trials[i].rounds > 0 && ++raced)
            assert_non_null(strstr(T()->trials[i].decision, "the config as given's time"));
    assert_true(raced > 0);
}

/* A trial that fails in its first call keeps its row, which says why; the
 * error names it by its number in the result, as the table does (the trials
 * that never ran go, so its number can change), whether it fails in the
 * profile (trial 0) or is raced and has not run yet. */
static void test_failed_first_call(void **state)
{
    (void)state;
    bool moved = false;
    for (int seed = 1; seed <= 12; seed++) {
        for (int fail = 1; fail <= 2; fail++) {
            setup(&backend_cpu, 10e-3, 1e-3, 4, (uint64_t)seed, true);
            fx.x.fail = fail, fx.x.failed = -1;
            fx.cfg.seed = (unsigned long)seed; // the rounds' order
            struct error e;
            fx.res.cfg = fx.cfg;
            int rc = tune_search(&fx.o, sim_trial, &fx.x, &fx.res, &e);
            report_summarize(&fx.res);
            fx.res.cfg = (struct config){0};
            if (fail == 2 && fx.x.failed < 0) { // every candidate was a profile run
                assert_int_equal(rc, 0);
                continue;
            }
            assert_int_equal(rc, -1);
            int n = -1;
            for (int i = 0; i < fx.res.n_runs; i++)
                n = fx.res.runs[i].failed ? i : n;
            assert_true(n >= 0 && fx.res.runs[n].n_epochs == 0);
            char want[64];
            snprintf(want, sizeof want, "--tune trial %d (", n);
            assert_true(strncmp(e.msg, want, strlen(want)) == 0);
            assert_string_equal(T()->trials[n].decision, "failed: a simulated fault");
            assert_int_equal(T()->outcome, TUNE_STOPPED);
            for (int i = 0; i < fx.res.n_runs; i++) // no other 0-epoch row
                assert_true(i == n || fx.res.runs[i].n_epochs > 0);
            moved |= n != fx.x.failed;
        }
    }
    assert_true(moved); // on some seed a candidate before it had not run: its number changed
}

static void test_parse_knobs(void **state)
{
    (void)state;
    struct error e;
    unsigned mask;
    assert_int_equal(tune_parse_knobs("", &mask, &e), 0);
    assert_int_equal(mask, TUNE_ALL_KNOBS);
    assert_int_equal(tune_parse_knobs("num_workers, pin_memory", &mask, &e), 0);
    assert_int_equal(mask, 1u << TUNE_WORKERS | 1u << TUNE_PIN);
    const char *bad[] = {"workers", "num_workers,,", "num_workers,", ",num_workers",
                         "num_workers pin_memory", " "}; // comma-separated; only "" is all
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(tune_parse_knobs(bad[i], &mask, &e), -1);
        assert_non_null(strstr(e.msg, "known: num_workers"));
    }
    assert_int_equal(tune_parse_knobs("pin_memory, num_workers,pin_memory", &mask, &e), -1);
    assert_string_equal(e.msg, "tune.knobs: 'pin_memory' is named twice");
}

/* ---- calibration on the busy machine ------------------------------------- */

static double flat(const struct pipeline_knobs *k, const struct sim *x)
{
    struct pipeline_knobs given = pipeline_knobs_of(&fx.cfg);
    return pipeline_epoch(&x->truth, &given, x->batches) / pipeline_epoch(&x->truth, k, x->batches);
}

static double faster_with_workers(const struct pipeline_knobs *k, const struct sim *x)
{
    return flat(k, x) * (k->num_workers ? 0.85 : 1);
}

/* Epochs that vary by 30% (lognormal sigma) where every setting runs alike:
 * no verdict the race's cap could decide at that spread holds it open, so
 * it ends at a look before the cap, says so (rounds.end "undecidable"), and
 * keeps the config as given. Run to the cap it took 16 rounds. */
static void test_undecidable_race_ends_early(void **state)
{
    (void)state;
    int early = 0;
    for (uint64_t seed = 20; seed < 30; seed++) {
        setup(&backend_cpu, 2e-3, 1e-3, 2, seed, true);
        fx.x.noise = 0.3, fx.x.extra = flat;
        run();
        assert_int_not_equal(T()->outcome, TUNE_CHANGE);
        assert_int_equal(T()->best, 0);
        if (fx.res.rounds < 16) {
            early++;
            assert_string_equal(fx.res.rounds_end, "undecidable");
        }
    }
    assert_true(early >= 8);
}

/* One search per seed on the busy machine, the truth `extra`: the share
 * that recommended a change, and whether any recommended a truly slower
 * setting. Workloads: 10 ms, 100 ms, 1 s epochs (load and step halves). */
static void rates(double (*extra)(const struct pipeline_knobs *, const struct sim *),
                  double epoch_s, uint64_t salt, double *changed, bool *slower)
{
    int n = 0;
    *slower = false;
    for (int i = 0; i < 1000; i++) {
        double b = epoch_s / 20;
        setup(&backend_cpu, b / 2, b / 2, 2, salt + (uint64_t)i, false);
        fx.x.extra = extra;
        run();
        if (T()->outcome != TUNE_CHANGE)
            continue;
        struct pipeline_knobs given = pipeline_knobs_of(&fx.cfg), k = knobs(T()->best);
        n++;
        *slower |= truth_epoch(&fx.x, &k) > truth_epoch(&fx.x, &given);
    }
    *changed = n / 1000.0;
}

/* Every setting runs alike, but a run's first epoch without workers runs
 * 8% slower unless warmed up (first-epoch.txt measured up to 7.5%), and a
 * round measures one 30 ms epoch: the config as given (no workers) is not
 * measured cold against candidates, so no change is recommended. Without a
 * warm-up in each round (the rule before, on this config) it fails. */
static void test_cold_first_epoch(void **state)
{
    (void)state;
    for (uint64_t seed = 40; seed < 50; seed++) {
        setup(&backend_cpu, 0.75e-3, 0.75e-3, 2, seed, true);
        fx.x.extra = flat, fx.x.cold = 1.08;
        run();
        assert_int_not_equal(T()->outcome, TUNE_CHANGE);
    }
}

static void test_calibration(void **state)
{
    (void)state;
    /* 1 s epochs: a round of four points, each warmed up an epoch, outlasts
     * the loops' changes, and the race finds 51% (measured with these seeds;
     * 67% before every run warmed up, which test_cold_first_epoch needs) */
    const double epochs[] = {0.01, 0.1, 1.0}, found[] = {0.90, 0.90, 0.45};
    for (int w = 0; w < 3; w++) {
        double aa, ab;
        bool slower_aa, slower_ab;
        rates(flat, epochs[w], 100000 * (uint64_t)w, &aa, &slower_aa);
        rates(faster_with_workers, epochs[w], 100000 * (uint64_t)w + 50000, &ab, &slower_ab);
        printf("# tune, %g s epochs on the busy machine: A/A change recommended %.1f%%, "
               "15%% faster found %.1f%%\n", epochs[w], 100 * aa, 100 * ab);
        if (aa > 0.02 || ab < found[w] || slower_aa || slower_ab)
            fail_msg("%g s epochs: A/A %.1f%% (at most 2%%), 15%% found %.1f%% (at least "
                     "%.0f%%), a slower setting recommended: %d", epochs[w], 100 * aa, 100 * ab,
                     100 * found[w], slower_aa || slower_ab);
    }
}

static int teardown(void **state)
{
    (void)state;
    results_free(&fx.res);
    config_free(&fx.cfg);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_input_bound),  cmocka_unit_test(test_handoff_and_contention),
        cmocka_unit_test(test_handoff_where_the_step_bounds), cmocka_unit_test(test_one_batch_fits_nothing),
        cmocka_unit_test(test_loop_where_the_copy_bounds),
    cmocka_unit_test(test_a_measured_setting_outranks_its_prediction),
        cmocka_unit_test(test_profile_under_drift), cmocka_unit_test(test_slow_epochs_in_the_profile),
        cmocka_unit_test(test_tie_keeps_the_given_prefetch), cmocka_unit_test(test_copy_bound),
        cmocka_unit_test(test_knobs_without_effect), cmocka_unit_test(test_compute_bound),
        cmocka_unit_test(test_undecidable_race_ends_early),
        cmocka_unit_test(test_target_au),    cmocka_unit_test(test_no_target),
        cmocka_unit_test(test_too_short),    cmocka_unit_test(test_budget),
        cmocka_unit_test(test_nothing_to_race), cmocka_unit_test(test_persistent_in_a_tie),
        cmocka_unit_test(test_near_tie_raced), cmocka_unit_test(test_given_slower_than_predicted),
        cmocka_unit_test(test_cheapest_of_equals),
        cmocka_unit_test(test_stopped),      cmocka_unit_test(test_parse_knobs),
        cmocka_unit_test(test_failed_first_call),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_cold_first_epoch), cmocka_unit_test(test_calibration),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
