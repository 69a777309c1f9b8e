/* The verdicts' error rates, measured: the round scheduler (rounds.c), the
 * sweep's stopping rule and verdicts (verdicts.c, stats_paired) and compare's
 * decision (compare.c, stats_unpaired) run on simulated epoch times, at the
 * defaults (from 9 rounds, looked at about every 1.3 times as many, up to
 * 100 or what a 480-second budget allows, the looks' levels adding up to
 * 0.05, a 3% noise threshold).
 *
 * The simulated machine is a busy 2-core one: two busy loops that come and
 * go (each on for 2 to 10 s, then off for 2 to 10 s, as scripts/bench-verdicts.sh
 * makes them) slow every epoch by up to half when both run; bursts (one every
 * 30 s on average, 0.5 to 3 s long) slow it by 1.2 to 2x; a slow drift of +-5%
 * over two minutes; and 2% noise per epoch. What one point's epochs share is
 * the machine's state: drift on the scale of a point's run, the case that
 * fools a test that takes epochs as independent. Three workloads: 10 ms epochs
 * 10 a round (the tutorial), 100 ms 20 a round (sync-vs-async), 1 s 2 a round
 * (the emulated JPEG pipeline, whose rounds last as long as the load's own
 * changes).
 *
 * Asserted per workload over 1000 seeded pairs each: A against itself is
 * called faster or slower at most 6.5% of the time (sweeps, and compare of
 * two runs' rounds), and B 15% slower or faster than A is found, in the
 * right direction, at least 90% of the time. Every number comes from a fixed
 * seed: the same on every run and machine. */
#include "testutil.h"

#include <cjson/cJSON.h>

#include "compare.h"
#include "report.h"
#include "rng.h"
#include "rounds.h"
#include "sim_machine.h"

enum { PAIRS = 1000, MAX_ROUNDS = 100, MAX_EPOCHS = 32 };

struct workload {
    double epoch_s; // a quiet machine's epoch of A
    int epochs;     // measured a round (after one warmup epoch)
    double setup_s; // a round's start: threads, loader
};
static const struct workload workloads[] = {{0.01, 10, 0.02}, {0.1, 20, 0.05}, {1.0, 2, 0.1}};

/* One point's round: setup, warmup, its epochs; their median. */
static double point_round(struct sim_machine *m, const struct workload *w, double ratio)
{
    double x[MAX_EPOCHS];
    machine_run(m, w->setup_s, 0);
    machine_run(m, ratio * w->epoch_s, 0.02);
    for (int i = 0; i < w->epochs; i++)
        x[i] = machine_run(m, ratio * w->epoch_s, 0.02);
    return stats_median(x, (size_t)w->epochs);
}

/* ---- a sweep of two points --------------------------------------------- */

struct sweep_sim {
    struct sim_machine m;
    const struct workload *w;
    double ratio;                     // B's time / A's
    struct results res;
    struct run_result runs[2];
    struct run_round rounds[2][MAX_ROUNDS];
};

static int sweep_measure(void *ctx, int p, int r, int k, struct error *e)
{
    (void)e;
    struct sweep_sim *s = ctx;
    struct run_result *run = &s->runs[p];
    run->rounds[run->n_rounds++] = (struct run_round){
        .round = r, .position = k,
        .median_s = point_round(&s->m, s->w, p ? s->ratio : 1.0)};
    return 0;
}

static bool sweep_done(void *ctx, int rounds, double alpha)
{
    (void)rounds;
    ((struct sweep_sim *)ctx)->res.alpha = alpha;
    return report_decided(&((struct sweep_sim *)ctx)->res);
}

static double sweep_clock(void *ctx) { return ((struct sweep_sim *)ctx)->m.t; }

static struct sweep_sim s;
static struct epoch_result one_epoch[2]; // compare reads a point's epochs too

/* A sweep over loader.num_workers (0, 1) whose second point takes `ratio`
 * times the first's time, measured as dpbench measures one: its verdict. */
static enum verdict sweep_pair(const struct workload *w, double ratio, uint64_t seed)
{
    struct error e;
    memset(&s, 0, sizeof s);
    machine_init(&s.m, seed);
    s.w = w;
    s.ratio = ratio;
    config_defaults(&s.res.cfg);
    assert_int_equal(config_sweep_arg(&s.res.cfg, "loader.num_workers=0,1", &e), 0);
    s.res.runs = s.runs;
    s.res.n_runs = 2;
    for (int p = 0; p < 2; p++) {
        s.runs[p].cfg = s.res.cfg;
        s.runs[p].cfg.n_sweep = 1;
        s.runs[p].cfg.loader.num_workers = p;
        s.runs[p].rounds = s.rounds[p];
        s.runs[p].epochs = &one_epoch[p];
        s.runs[p].n_epochs = 1;
        one_epoch[p] = (struct epoch_result){.epoch = 1, .seconds = w->epoch_s};
    }
    const struct config *c = &s.res.cfg;
    struct rounds_plan plan = {.points = 2, .min_rounds = (int)c->bench.min_rounds,
                               .max_rounds = (int)c->bench.max_rounds,
                               .budget_s = c->bench.budget_s, .seed = seed,
                               .clock = sweep_clock};
    struct rounds_log log;
    assert_int_equal(rounds_run(&plan, sweep_measure, sweep_done, &s, &log, &e), 0);
    s.res.alpha = log.alpha; // as the sweep sets it (measure.c)
    s.res.looks = log.looks;
    rounds_log_free(&log);
    struct ratio q;
    report_pair(&s.res, 0, 1, &q);
    return q.verdict;
}

static enum verdict sweep_verdict(const struct workload *w, double ratio, uint64_t seed)
{
    enum verdict v = sweep_pair(w, ratio, seed);
    config_free(&s.res.cfg);
    return v;
}

/* compare -c carries its run's own warnings, once (the run holds both sides). */
static void test_interleaved_compare_warnings(void **state)
{
    (void)state;
    struct compare_result r;
    struct error e;
    sweep_pair(&workloads[0], 1, 1);
    char *json = report_json(&s.res);
    cJSON *doc = json ? cJSON_Parse(json) : NULL;
    free(json);
    config_free(&s.res.cfg);
    assert_non_null(doc);
    cJSON *w = cJSON_GetObjectItem(doc, "warnings");
    assert_non_null(w);
    cJSON_AddItemToArray(w, cJSON_CreateString("a warning of the run"));
    assert_int_equal(compare_interleaved(&r, doc, "A", "B", STATS_THRESHOLD, &e), 0);
    int seen = 0;
    for (int i = 0; i < r.n_notes; i++)
        seen += strcmp(r.notes[i], "the run warns: a warning of the run") == 0;
    compare_free(&r);
    assert_int_equal(seen, 1);
}

/* compare -c A.yaml -c B.yaml: the same rounds, the run's JSON read back as
 * A and B, as dpbench compare does. */
static enum verdict interleaved_verdict(const struct workload *w, double ratio, uint64_t seed)
{
    struct compare_result r;
    struct error e;
    sweep_pair(w, ratio, seed);
    char *json = report_json(&s.res);
    cJSON *doc = json ? cJSON_Parse(json) : NULL;
    free(json);
    assert_non_null(doc);
    config_free(&s.res.cfg);
    assert_int_equal(compare_interleaved(&r, doc, "A", "B", STATS_THRESHOLD, &e), 0);
    assert_int_equal(r.n_pairs, 1);
    enum verdict v = r.pairs[0].q.verdict;
    compare_free(&r);
    return v;
}

/* ---- compare: two separate runs ------------------------------------------ */

static bool compare_short; // the last pair's runs measured for less than COMPARE_MIN_SPAN_S

/* A result document of a sweep of three points run in `rounds` interleaved
 * rounds, as dpbench writes it (schema 2): the first point takes `ratio`
 * times the workload's time, the others 0.7 and 1.4 times; each round's
 * median and the seconds it measured, one epoch (compare needs them) and the
 * load others put on the machine while the first point ran. */
static cJSON *run_doc(struct sim_machine *m, const struct workload *w, double ratio, int rounds,
                      uint64_t seed)
{
    const double cost[3] = {ratio, 0.7, 1.4};
    struct config c;
    config_defaults(&c);
    cJSON *doc = cJSON_CreateObject(), *runs = cJSON_AddArrayToObject(doc, "runs"), *run[3];
    cJSON_AddNumberToObject(doc, "schema_version", 2);
    double busy = 0, time = 0, first = 0;
    for (int p = 0; p < 3; p++) {
        run[p] = cJSON_CreateObject();
        c.loader.num_workers = p; // three points of one workload, other settings
        cJSON_AddItemToObject(run[p], "config", config_to_json(&c));
        cJSON_AddStringToObject(run[p], "backend", "cpu");
        cJSON_AddArrayToObject(run[p], "rounds");
        cJSON_AddItemToArray(runs, run[p]);
    }
    for (int k = 0; k < rounds; k++) {
        int order[3];
        rounds_order(seed, 3, k, order);
        for (int j = 0; j < 3; j++) {
            int p = order[j];
            double t0 = m->t, l0 = m->load_s, med = point_round(m, w, cost[p]);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "round", k);
            cJSON_AddNumberToObject(o, "median_ms", 1e3 * med);
            cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "load"), "seconds", m->t - t0);
            cJSON_AddItemToArray(cJSON_GetObjectItem(run[p], "rounds"), o);
            busy += p == 0 ? m->load_s - l0 : 0;
            time += p == 0 ? m->t - t0 : 0;
            first = p == 0 && k == 0 ? med : first;
        }
    }
    cJSON *ep = cJSON_CreateObject();
    cJSON_AddNumberToObject(ep, "seconds", first);
    for (int p = 0; p < 3; p++)
        cJSON_AddItemToArray(cJSON_AddArrayToObject(run[p], "epochs"), cJSON_Duplicate(ep, 1));
    cJSON_Delete(ep);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(run[0], "load"), "others_cpu", // a share,
                            fmin(1, busy / time)); // as load.c clamps it (float rounding)
    config_free(&c);
    return doc;
}

/* Two runs of the sweep, 8 rounds each (as --repeat 8 gives), the second 0 to
 * 60 s after the first, its first point `ratio` times the first run's:
 * compare's verdict on that point. */
static enum verdict compare_pair(const struct workload *w, double ratio, uint64_t seed)
{
    struct sim_machine m;
    struct compare_result r;
    struct error e;
    machine_init(&m, seed);
    cJSON *a = run_doc(&m, w, 1.0, 8, seed);
    m.t += 60 * rng_uniform(&m.g);
    cJSON *b = run_doc(&m, w, ratio, 8, seed + 1);
    assert_int_equal(compare_docs(&r, a, b, "A", "B", STATS_THRESHOLD, &e), 0);
    assert_int_equal(r.n_pairs, 3);
    assert_int_equal(r.pairs[0].unit, COMPARE_RUNS);
    enum verdict v = r.pairs[0].q.verdict;
    compare_short = fmin(r.a.span_s, r.b.span_s) < COMPARE_MIN_SPAN_S;
    compare_free(&r);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return v;
}

/* ---- the rates ---------------------------------------------------------- */

/* Over PAIRS seeds: the share called different when A = B, and the share
 * found in the right direction when B is 15% slower (half the seeds) or 15%
 * faster (the other half). */
static void rates(enum verdict (*pair)(const struct workload *, double, uint64_t),
                  const struct workload *w, uint64_t salt, double *wrong, double *found)
{
    int called = 0, right = 0;
    for (int i = 0; i < PAIRS; i++) {
        enum verdict v = pair(w, 1.0, salt + (uint64_t)i);
        called += v == VERDICT_FASTER || v == VERDICT_SLOWER;
        bool slower = i % 2 == 0;
        v = pair(w, slower ? 1.15 : 1 / 1.15, salt + PAIRS + (uint64_t)i);
        right += v == (slower ? VERDICT_SLOWER : VERDICT_FASTER);
    }
    *wrong = (double)called / PAIRS;
    *found = (double)right / PAIRS;
}

static void check_rates(const char *what, enum verdict (*pair)(const struct workload *, double,
                                                                uint64_t), uint64_t salt)
{
    for (size_t k = 0; k < sizeof workloads / sizeof workloads[0]; k++) {
        double wrong, found;
        rates(pair, &workloads[k], salt + 100000 * k, &wrong, &found);
        printf("# %s, %g s epochs x %d a round: A/A called different %.1f%%, 15%% found %.1f%%\n",
               what, workloads[k].epoch_s, workloads[k].epochs, 100 * wrong, 100 * found);
        if (wrong > 0.065 || found < 0.90)
            fail_msg("%s, %g s epochs: A/A called different %.1f%% (at most 6.5%%), 15%% found "
                     "%.1f%% (at least 90%%)", what, workloads[k].epoch_s, 100 * wrong,
                     100 * found);
    }
}

static void test_sweep_rates(void **state)
{
    (void)state;
    check_rates("sweep", sweep_verdict, 1);
}

static void test_interleaved_compare_rates(void **state)
{
    (void)state;
    check_rates("compare -c (interleaved)", interleaved_verdict, 3000000);
}

/* One run a side, 10 epochs each, 0 to 60 s apart: compare's within-run
 * verdict (the epochs as samples, "within run noise; not interleaved"). */
static enum verdict epochs_pair(const struct workload *w, double ratio, uint64_t seed)
{
    struct sim_machine m;
    struct compare_result r;
    struct error e;
    cJSON *doc[2];
    machine_init(&m, seed);
    for (int side = 0; side < 2; side++) {
        struct config c;
        config_defaults(&c);
        doc[side] = cJSON_CreateObject();
        cJSON_AddNumberToObject(doc[side], "schema_version", 1);
        cJSON *run = cJSON_CreateObject(), *eps = cJSON_AddArrayToObject(run, "epochs");
        cJSON_AddItemToObject(run, "config", config_to_json(&c));
        machine_run(&m, w->setup_s + w->epoch_s, 0);
        for (int k = 0; k < 10; k++) {
            cJSON *ep = cJSON_CreateObject();
            cJSON_AddNumberToObject(ep, "seconds",
                                    machine_run(&m, (side ? ratio : 1) * w->epoch_s, 0.02));
            cJSON_AddItemToArray(eps, ep);
        }
        cJSON_AddItemToArray(cJSON_AddArrayToObject(doc[side], "runs"), run);
        config_free(&c);
        m.t += 60 * rng_uniform(&m.g);
    }
    assert_int_equal(compare_docs(&r, doc[0], doc[1], "A", "B", STATS_THRESHOLD, &e), 0);
    enum verdict v = r.pairs[0].q.verdict;
    compare_free(&r);
    cJSON_Delete(doc[0]);
    cJSON_Delete(doc[1]);
    return v;
}

/* Two separate runs cannot tell the machine's drift between them from a
 * difference as well as rounds run side by side: A against itself must
 * still be called different at most 6.5% of the time; how much is found at
 * 15% is measured and printed (docs/statistics.md has it), not promised. */
static void test_separate_runs_compare(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof workloads / sizeof workloads[0]; k++) {
        double wrong, found;
        compare_short = false;
        rates(compare_pair, &workloads[k], 7000000 + 100000 * k, &wrong, &found);
        printf("# compare of two runs' rounds, %g s epochs x %d a round: A/A called different "
               "%.1f%%, 15%% found %.1f%%%s\n", workloads[k].epoch_s, workloads[k].epochs,
               100 * wrong, 100 * found,
               compare_short ? " (runs shorter than the drift: held back)" : "");
        if (wrong > 0.065)
            fail_msg("compare of two runs, %g s epochs: A/A called different %.1f%% (at most "
                     "6.5%%)", workloads[k].epoch_s, 100 * wrong);
        rates(epochs_pair, &workloads[k], 9000000 + 100000 * k, &wrong, &found);
        printf("# compare of one run each (its epochs, said 'within run noise'), %g s epochs: "
               "A/A called different %.1f%%, 15%% found %.1f%%\n", workloads[k].epoch_s,
               100 * wrong, 100 * found);
    }
}

/* ---- the budget: a first round that also starts every point ------------- */

struct paced { double t, first_s, round_s; int points, looks; };

static int paced_measure(void *ctx, int p, int r, int k, struct error *e)
{
    (void)p, (void)k, (void)e;
    struct paced *x = ctx;
    x->t += (r == 0 ? x->first_s : x->round_s) / x->points;
    return 0;
}

static bool paced_done(void *ctx, int rounds, double alpha)
{
    (void)rounds, (void)alpha;
    ((struct paced *)ctx)->looks++;
    return false; // never decided: the rounds run until the budget or the cap
}

static double paced_clock(void *ctx) { return ((struct paced *)ctx)->t; }

/* --tune's race: a 5 s budget, a first round of 2 s (each candidate's warm-up
 * and threads) and rounds of 0.1 s after it. The budget allows the cap (16),
 * with the looks at 9 and 12 on the way; at the first round's pace it was
 * 9 rounds, ended as "time budget" with 2.2 s left and no look. Rounds of
 * 0.5 s after it: 6 more fit (5.0 s), and the budget ends them at 7. Rounds
 * of 6 s in 10 s, looked at from the first: one, never a second that would
 * pass the budget, and no look. */
static void test_rounds_budget_pace(void **state)
{
    (void)state;
    struct error e;
    const struct { double first_s, round_s, budget_s; int min, rounds, end, looks; } c[] = {
        {2, 0.1, 5, 9, 16, ROUNDS_CAP, 2}, {2, 0.5, 5, 9, 7, ROUNDS_BUDGET, 0},
        {6, 6, 10, 1, 1, ROUNDS_BUDGET, 0}, {6, 6, 10, 2, 1, ROUNDS_BUDGET, 0}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        struct paced x = {.first_s = c[i].first_s, .round_s = c[i].round_s, .points = 3};
        struct rounds_plan plan = {.points = 3, .min_rounds = c[i].min, .max_rounds = 16,
                                   .budget_s = c[i].budget_s, .clock = paced_clock};
        struct rounds_log log;
        assert_int_equal(rounds_run(&plan, paced_measure, paced_done, &x, &log, &e), 0);
        assert_int_equal(log.rounds, c[i].rounds);
        assert_int_equal(log.end, c[i].end);
        assert_int_equal(x.looks, c[i].looks);
        assert_true(log.alpha > 0 && log.spent <= 0.05 + 1e-12);
        rounds_log_free(&log);
    }
}

/* A large cap (bench.max_rounds 10000): the first look, at 9 rounds, may
 * spend next to nothing. erfc underflowed to 0 there, and 0 reads as no
 * plan (one test at 5%), so the early looks each ran at 5%. */
struct looked { struct paced p; double alpha; }; // paced first: paced_measure's ctx

static bool first_look(void *ctx, int rounds, double alpha)
{
    (void)rounds;
    ((struct looked *)ctx)->alpha = alpha;
    return true;
}

static void test_rounds_large_cap(void **state)
{
    (void)state;
    struct error e;
    struct looked x = {.p = {.first_s = 1e-3, .round_s = 1e-3, .points = 2}, .alpha = -1};
    struct rounds_plan plan = {.points = 2, .min_rounds = 9, .max_rounds = 10000};
    struct rounds_log log;
    assert_int_equal(rounds_run(&plan, paced_measure, first_look, &x, &log, &e), 0);
    assert_int_equal(log.rounds, 9);
    double alpha = x.alpha;
    assert_true(alpha > 0 && alpha < 1e-300);
    rounds_log_free(&log);
    double a[9], b[9]; // A against itself at that level: no interval yet, undecided
    for (int i = 0; i < 9; i++)
        a[i] = 1 + 0.001 * i, b[i] = a[i] * (1 + 0.0001 * (i % 3 - 1));
    struct ratio q;
    stats_paired(a, b, 9, 0.03, alpha, &q);
    assert_int_equal(q.verdict, VERDICT_UNDECIDED);
    stats_paired(a, b, 9, 0.03, 0.05, &q);
    assert_int_equal(q.verdict, VERDICT_SAME); // at 5% it was decided
}

/* The orders: each round a permutation; over each block (n rounds for n
 * points, 2n for odd n) every point once in each position as often, and
 * right after every other point as often (a position or carryover effect
 * cancels after each block); and no fixed order (blocks differ). With a
 * Latin square alone, 3 points ran A right after C in 2 of a block's 3
 * rounds: an A/A pair with a carryover effect missed 1 in 11% of runs. */
static void test_rounds_order_balanced(void **state)
{
    (void)state;
    for (unsigned long seed = 0; seed < 50; seed++)
        for (int n = 1; n <= 7; n++) {
            int len = n % 2 ? 2 * n : n, blocks = 3;
            for (int b = 0; b < blocks; b++) {
                int at[7][7] = {{0}}, after[7][7] = {{0}}, order[7];
                for (int r = b * len; r < (b + 1) * len; r++) {
                    int used[7] = {0};
                    rounds_order(seed, n, r, order);
                    for (int k = 0; k < n; k++) {
                        assert_true(order[k] >= 0 && order[k] < n && !used[order[k]]++);
                        at[order[k]][k]++;
                        after[order[k]][k ? order[k - 1] : order[k]] += k > 0;
                    }
                }
                for (int p = 0; p < n; p++)
                    for (int q = 0; q < n; q++) {
                        assert_int_equal(at[p][q], len / n);
                        assert_int_equal(after[p][q], p == q ? 0 : len / n);
                    }
            }
        }
    int a[3], b[3], differ = 0; // blocks differ: 3 points (blocks of 6), blocks 0..9 of seed 0
    for (int r = 6; r < 60; r += 6) {
        rounds_order(0, 3, r, a), rounds_order(0, 3, r - 6, b);
        differ += memcmp(a, b, sizeof a) != 0;
    }
    assert_true(differ > 0);
}

/* A carryover effect under the orders: three points, A against itself and
 * a third that slows whichever point runs right after it by 5% (its heat,
 * the caches it leaves), 2% noise, 60 rounds: A/A's paired interval misses 1
 * in at most 6.5% of runs, with each run's own seed and with one seed for
 * all (the default seed 0: whatever its orders do, every run shares it).
 * Latin squares alone (A right after the third in 2 of a block's 3 rounds)
 * missed 11% and, with one seed, 65%; independent shuffles 5% and 0.6%. */
static void test_rounds_order_carryover(void **state)
{
    (void)state;
    struct rng noise;
    rng_init(&noise, 12345, RNG_ROUNDS, 99);
    for (int fixed = 0; fixed < 2; fixed++) {
        int miss = 0, runs = 500;
        for (int i = 0; i < runs; i++) {
            double a[60], b[60];
            for (int r = 0, prev = -1, order[3]; r < 60; r++) {
                rounds_order(fixed ? 0 : (unsigned long)i, 3, r, order);
                for (int k = 0; k < 3; k++, prev = order[k - 1]) {
                    double t = exp(0.02 * rng_normal(&noise) + (prev == 2 ? 0.05 : 0));
                    if (order[k] == 0)
                        a[r] = t;
                    else if (order[k] == 1)
                        b[r] = t;
                }
            }
            struct ratio q;
            stats_paired(a, b, 60, 0.03, 0.05, &q);
            miss += q.ci95[0] > 1 || q.ci95[1] < 1;
        }
        print_message("# carryover, %s: A/A interval missed 1 in %.1f%% of runs\n",
                      fixed ? "one seed" : "a seed a run", 100.0 * miss / runs);
        assert_true(miss <= 0.065 * runs);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounds_budget_pace),
        cmocka_unit_test(test_rounds_large_cap),
        cmocka_unit_test(test_rounds_order_balanced),
        cmocka_unit_test(test_rounds_order_carryover),
        cmocka_unit_test(test_sweep_rates),
        cmocka_unit_test(test_interleaved_compare_rates),
        cmocka_unit_test(test_interleaved_compare_warnings),
        cmocka_unit_test(test_separate_runs_compare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
