/* Statistics over timing samples (src/stats.c): figures against values worked
 * out by hand, the median interval's coverage and the compare test's error
 * rates on simulated samples. Every random sample comes from a fixed seed, so
 * each test gives the same numbers on every run and machine. */
#include "testutil.h"

#include "rng.h"
#include "stats.h"

static void test_known_sample(void **state)
{
    (void)state;
    double x[10] = {7, 3, 10, 1, 5, 9, 2, 8, 4, 6}; // 1..10 shuffled
    struct stats s;
    stats_compute(x, 10, &s);
    assert_int_equal(s.n, 10);
    assert_float_equal(s.mean, 5.5, 1e-12);
    assert_float_equal(s.stddev, sqrt(82.5 / 9), 1e-12); // sum of squares 82.5, n - 1
    assert_float_equal(s.median, 5.5, 1e-12);
    assert_float_equal(s.min, 1, 0);
    assert_float_equal(s.max, 10, 0);
    assert_float_equal(s.p90, 9.1, 1e-12); // position 0.9 * 9 = 8.1 between 9 and 10
    assert_float_equal(s.p99, 9.91, 1e-12);
    /* Binomial(10, 1/2): 2 P(X <= 1) = 22/1024 <= 0.05 < 2 P(X <= 2) = 112/1024,
     * so the interval is the 2nd and 9th order statistics */
    assert_true(s.ci_exact);
    assert_float_equal(s.ci95[0], 2, 0);
    assert_float_equal(s.ci95[1], 9, 0);
    assert_int_equal(s.outliers, 0);
    assert_float_equal(s.cv, s.stddev / 5.5, 1e-12);
    double one = 4;
    stats_compute(&one, 1, &s);
    assert_float_equal(s.median, 4, 0);
    assert_float_equal(s.stddev, 0, 0);
    assert_false(s.ci_exact);
    assert_float_equal(s.ci95[0], 4, 0);
    stats_compute(NULL, 0, &s);
    assert_true(isnan(s.median));
}

static void test_small_samples_interval(void **state)
{
    (void)state;
    double x[6] = {6, 5, 4, 3, 2, 1};
    struct stats s;
    /* n = 5: even [min, max] covers only 1 - 2/32 = 93.75% */
    stats_compute(x, 5, &s);
    assert_false(s.ci_exact);
    assert_float_equal(s.ci95[0], 2, 0);
    assert_float_equal(s.ci95[1], 6, 0);
    /* n = 6: [min, max] covers 1 - 2/64 = 96.9% */
    stats_compute(x, 6, &s);
    assert_true(s.ci_exact);
    assert_float_equal(s.ci95[0], 1, 0);
    assert_float_equal(s.ci95[1], 6, 0);
}

static void normal_sample(struct rng *r, double *x, int n, double mean, double sd)
{
    for (int i = 0; i < n; i++)
        x[i] = mean + sd * rng_normal(r);
}

static void test_median_interval_coverage(void **state)
{
    (void)state;
    /* n = 15: the interval is [x_(3), x_(11)] (0-based), coverage
     * 1 - 2 P(X <= 3) = 96.5%. Over 4000 seeded trials the observed rate has a
     * standard error of 0.3%, so [94%, 98.5%] is about 5 of them either side. */
    struct rng r;
    rng_init(&r, 7, 0, 0);
    int hit = 0, trials = 4000;
    for (int t = 0; t < trials; t++) {
        double x[15];
        normal_sample(&r, x, 15, 0, 1);
        struct stats s;
        stats_compute(x, 15, &s);
        hit += s.ci95[0] <= 0 && 0 <= s.ci95[1];
    }
    double rate = (double)hit / trials;
    if (rate < 0.94 || rate > 0.985)
        fail_msg("median interval covered the true median in %.3f of trials, want ~0.965", rate);
}

static void test_outliers_and_warning(void **state)
{
    (void)state;
    struct rng r;
    rng_init(&r, 11, 0, 0);
    double x[21];
    normal_sample(&r, x, 20, 10, 0.05);
    char buf[256];
    struct stats s;
    stats_compute(x, 20, &s);
    assert_int_equal(s.outliers, 0);
    assert_null(stats_noise_warning(&s, buf, sizeof buf));
    x[20] = 30; // one epoch disturbed: 400 MADs away
    stats_compute(x, 21, &s);
    assert_int_equal(s.outliers, 1);
    assert_non_null(stats_noise_warning(&s, buf, sizeof buf));
    assert_non_null(strstr(buf, "--repeat"));
    /* spread without outliers: a coefficient of variation of ~30% */
    normal_sample(&r, x, 20, 10, 3);
    stats_compute(x, 20, &s);
    assert_true(s.cv > 0.10);
    assert_non_null(stats_noise_warning(&s, buf, sizeof buf));
}

static void test_compare_verdicts(void **state)
{
    (void)state;
    struct rng r;
    rng_init(&r, 3, 0, 0);
    double a[20], b[20];
    struct comparison c;
    normal_sample(&r, a, 20, 10, 0.3);
    normal_sample(&r, b, 20, 8, 0.3);
    stats_compare(a, 20, b, 20, &c);
    assert_int_equal(c.verdict, VERDICT_FASTER);
    assert_true(c.ci95[0] < c.ratio && c.ratio < c.ci95[1]);
    assert_true(c.ci95[0] < 0.8 + 0.05 && c.ci95[1] > 0.8 - 0.05);
    stats_compare(b, 20, a, 20, &c);
    assert_int_equal(c.verdict, VERDICT_SLOWER);
    assert_string_equal(verdict_name(c.verdict), "slower");
    stats_compare(a, 20, a, 20, &c); // the same sample: ratio 1, p 1
    assert_int_equal(c.verdict, VERDICT_SAME);
    assert_float_equal(c.ratio, 1, 0);
    stats_compare(a, 2, b, 20, &c); // too few to test
    assert_int_equal(c.verdict, VERDICT_SAME);
}

static void test_compare_error_rates(void **state)
{
    (void)state;
    /* 1000 seeded pairs from one distribution (n = 10 each): a verdict other
     * than "same" is a false positive; the test's level is 5% and the interval
     * condition only removes some, so 8% bounds it with 3 standard errors to
     * spare. Pairs 5% apart with a 1% spread must be told apart nearly always. */
    struct rng r;
    rng_init(&r, 5, 0, 0);
    int wrong = 0, missed = 0;
    for (int t = 0; t < 1000; t++) {
        double a[10], b[10];
        struct comparison c;
        normal_sample(&r, a, 10, 10, 0.5);
        normal_sample(&r, b, 10, 10, 0.5);
        stats_compare(a, 10, b, 10, &c);
        wrong += c.verdict != VERDICT_SAME;
        normal_sample(&r, b, 10, 10.5, 0.1);
        normal_sample(&r, a, 10, 10, 0.1);
        stats_compare(a, 10, b, 10, &c);
        missed += c.verdict != VERDICT_SLOWER;
    }
    if (wrong > 80)
        fail_msg("%d of 1000 pairs from one distribution were called different", wrong);
    if (missed > 10)
        fail_msg("%d of 1000 pairs 5%% apart were not called slower", missed);
}

/* The median's interval in one pass: the exact binomial rank up to 1000
 * samples, then the normal approximation, which agrees with the exact rank
 * at the switch (so the interval does not jump there), and the selection
 * median equals the sorted one on samples with and without ties. */
static void test_median_interval_scales(void **state)
{
    (void)state;
    enum { N = 1001 };
    double *x = malloc(3000 * sizeof *x), y[N];
    for (int i = 0; i < 3000; i++)
        x[i] = i;
    struct stats a, b;
    stats_compute(x, 1000, &a); // exact: j = 468 (R: qbinom(0.025, 1000, 0.5) - 1)
    assert_float_equal(a.ci95[0], 468, 0);
    assert_float_equal(a.ci95[1], 531, 0);
    stats_compute(x, N, &b); // the approximation from here
    assert_true(fabs(b.ci95[0] - 469) <= 1 && fabs(b.ci95[1] - 531) <= 1);
    struct rng r;
    rng_init(&r, 7, 0, 0);
    for (int t = 0; t < 200; t++) {
        int n = 1 + (int)rng_below(&r, 60);
        for (int i = 0; i < n; i++)
            y[i] = (double)rng_below(&r, t % 2 ? 5 : 1000); // odd t: many ties
        struct stats s;
        stats_compute(y, (size_t)n, &s);
        assert_float_equal(stats_median(y, (size_t)n), s.median, 0);
    }
    free(x);
}

static int cmp_doubles(const void *x, const void *y)
{
    double u = *(const double *)x, v = *(const double *)y;
    return (u > v) - (u < v);
}

/* Paired rounds: the Hodges-Lehmann estimate of the log ratios with the
 * Wilcoxon signed-rank interval; the verdict against the noise threshold in
 * four words. Ten rounds: the table's two-sided 5% critical value is T <= 8
 * (by enumeration of the 1024 sign patterns), so the interval is the 9th
 * smallest and largest of the 55 Walsh averages. */
static void test_paired_verdicts(void **state)
{
    (void)state;
    double a[8] = {10, 10, 10, 10, 10, 10, 10, 10}, b[8];
    struct ratio q;
    for (int i = 0; i < 8; i++)
        b[i] = 10 * (1.20 + 0.01 * (i % 3)); // 20-22% slower every round
    stats_paired(a, b, 8, 0.03, 0.05, &q);
    assert_int_equal(q.verdict, VERDICT_SLOWER);
    assert_true(q.ratio > 1.19 && q.ratio < 1.23 && q.ci95[0] > 1.03);
    assert_int_equal(q.units_needed, 0);
    for (int i = 0; i < 8; i++)
        b[i] = 10 * (1 + 0.002 * (i % 5 - 2)); // within 0.4%: no measurable effect
    stats_paired(a, b, 8, 0.03, 0.05, &q);
    assert_int_equal(q.verdict, VERDICT_SAME);
    for (int i = 0; i < 8; i++)
        b[i] = 10 * (i % 2 ? 1.06 : 0.97); // between: the interval spans the threshold
    stats_paired(a, b, 8, 0.03, 0.05, &q);
    assert_int_equal(q.verdict, VERDICT_UNDECIDED);
    assert_true(q.units_needed != 0);
    double c[10], d[10], w[55];
    for (int i = 0; i < 10; i++)
        c[i] = 1, d[i] = exp(0.01 * (i + 1)); // log ratios 0.01 .. 0.10
    stats_paired(c, d, 10, 0.03, 0.05, &q);
    for (int i = 0, k = 0; i < 10; i++)
        for (int j = i; j < 10; j++)
            w[k++] = 0.005 * (i + j + 2);
    qsort(w, 55, sizeof w[0], cmp_doubles);
    assert_float_equal(log(q.ci95[0]), w[8], 1e-12);
    assert_float_equal(log(q.ci95[1]), w[46], 1e-12);
    assert_float_equal(log(q.ratio), 0.055, 1e-12);
    stats_paired(a, b, 5, 0.03, 0.05, &q); // five rounds: no interval reaches 95%
    assert_int_equal(q.verdict, VERDICT_UNDECIDED);
    assert_true(isnan(q.ci95[0]) && q.units_needed >= 6);
    for (int i = 0; i < 8; i++)
        b[i] = 10 * 0.5;
    stats_paired(a, b, 6, 0.03, 0.05, &q); // six rounds: the extreme Walsh averages
    assert_int_equal(q.verdict, VERDICT_FASTER);
    assert_float_equal(q.ratio, 0.5, 1e-12);
    assert_string_equal(verdict_name(VERDICT_UNDECIDED), "undecided");
}

/* Unpaired runs: the Hodges-Lehmann shift with Moses' interval, whose ranks
 * come from the exact Mann-Whitney distribution: 5 and 5 runs give the
 * table's two-sided 5% critical value U <= 2, so the interval is the 3rd
 * smallest and largest of the 25 differences. */
static void test_unpaired_interval(void **state)
{
    (void)state;
    double a[5] = {1, 2, 3, 4, 5}, b[5] = {11, 12, 13, 14, 15};
    struct ratio q;
    for (int i = 0; i < 5; i++)
        a[i] = exp(a[i] / 100), b[i] = exp(b[i] / 100); // log differences 6..14 hundredths
    stats_unpaired(a, 5, b, 5, 0.03, &q);
    /* sorted differences 6,7,7,8,8,8,9,9,9,9,10,...: the 3rd is 7, the 23rd 13 */
    assert_float_equal(log(q.ci95[0]), 0.07, 1e-12);
    assert_float_equal(log(q.ci95[1]), 0.13, 1e-12);
    assert_float_equal(log(q.ratio), 0.10, 1e-12);
    assert_int_equal(q.verdict, VERDICT_SLOWER);
    stats_unpaired(a, 3, b, 3, 0.03, &q); // 3 and 3: P(U = 0) = 0.05 > 0.025
    assert_int_equal(q.verdict, VERDICT_UNDECIDED);
    assert_true(isnan(q.ci95[0]));
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The shift and interval are order statistics of the na nb log
 * differences, found without an array of them: equal to sorting them all
 * (the same doubles) for sides of 1 to 60 with ties and a spread from 1e-9
 * to 1e3; and 20000 rounds a side, a legal bench.max_rounds on both, is
 * decided without 3.2 GB of differences. */
static void test_unpaired_ranks(void **state)
{
    (void)state;
    unsigned long r = 7;
    for (int t = 0; t < 300; t++) {
        size_t na = 1 + (r = r * 6364136223846793005UL + 1) % 60, nb = 1 + (r >> 20) % 60;
        double a[60], b[60], la[60], lb[60], d[3600];
        double scale = pow(10, (double)((r >> 40) % 13) - 9);
        for (size_t i = 0; i < 60; i++) { // steps of 8 values: ties
            r = r * 6364136223846793005UL + 1;
            a[i] = 1 + scale * (double)((r >> 33) % 8), b[i] = 1 + scale * (double)((r >> 45) % 8);
        }
        for (size_t i = 0; i < na; i++)
            la[i] = log(a[i]);
        for (size_t k = 0; k < nb; k++)
            lb[k] = log(b[k]);
        qsort(la, na, sizeof *la, by_value);
        qsort(lb, nb, sizeof *lb, by_value);
        for (size_t i = 0; i < na; i++)
            for (size_t k = 0; k < nb; k++)
                d[i * nb + k] = lb[k] - la[i];
        qsort(d, na * nb, sizeof *d, by_value);
        struct ratio q;
        stats_unpaired(a, na, b, nb, 0.03, &q);
        assert_true(q.ratio == exp(stats_quantile(d, na * nb, 0.5)));
        if (!isnan(q.ci95[0])) { // the c-th smallest and largest for some c
            size_t c = 1;
            while (c <= na * nb && (exp(d[c - 1]) != q.ci95[0] || exp(d[na * nb - c]) != q.ci95[1]))
                c++;
            assert_true(c <= na * nb);
        }
    }
    enum { N = 20000 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    for (int i = 0; i < N; i++)
        a[i] = 1 + 0.01 * (i % 97), b[i] = 1.5 * a[i];
    struct ratio q;
    stats_unpaired(a, N, b, N, 0.03, &q);
    assert_float_equal(q.ratio, 1.5, 1e-9);
    assert_int_equal(q.verdict, VERDICT_SLOWER);
    free(a);
    free(b);
}

/* The prediction interval of one more value, on the log scale: ten values
 * whose logs have mean 0 and sample sd 1 give exp(+-t(0.975, 9) sqrt(1.1)),
 * t = 2.2622 (the expansion's 2.2584 is within 0.2%); non-positive values
 * are skipped; fewer than three leave NAN; a constant sample, no spread. */
static void test_prediction(void **state)
{
    (void)state;
    double x[11], out[2], sd = 0;
    for (int i = 0; i < 10; i++)
        x[i] = i - 4.5, sd += x[i] * x[i];
    for (int i = 0; i < 10; i++)
        x[i] = exp(x[i] / sqrt(sd / 9));
    x[10] = 0;
    stats_prediction(x, 11, out);
    double half = 2.2622 * sqrt(1.1);
    assert_true(fabs(log(out[1]) / half - 1) < 0.005 && fabs(log(out[0]) / -half - 1) < 0.005);
    stats_prediction(x, 2, out);
    assert_true(isnan(out[0]) && isnan(out[1]));
    double same[5] = {0.02, 0.02, 0.02, 0.02, 0.02};
    stats_prediction(same, 5, out);
    assert_true(fabs(out[0] - 0.02) < 1e-12 && fabs(out[1] - 0.02) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_sample),
        cmocka_unit_test(test_small_samples_interval),
        cmocka_unit_test(test_median_interval_coverage),
        cmocka_unit_test(test_outliers_and_warning),
        cmocka_unit_test(test_compare_verdicts),
        cmocka_unit_test(test_compare_error_rates),
        cmocka_unit_test(test_median_interval_scales),
        cmocka_unit_test(test_paired_verdicts),
        cmocka_unit_test(test_unpaired_interval),
        cmocka_unit_test(test_unpaired_ranks),
        cmocka_unit_test(test_prediction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
