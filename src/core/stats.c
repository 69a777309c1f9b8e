/* Statistics over timing samples and the faster / slower / same decision.
 * See stats.h for what each figure is; docs/statistics.md for why. */
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

/* A modified z-score 0.6745 |x - median| / MAD above this marks an outlier:
 * the threshold hyperfine uses, loose enough that only gross disturbances
 * (another process, a page-cache miss) count. */
#define OUTLIER_Z 14.0
#define BOOTSTRAP_ROUNDS 2000
#define BOOTSTRAP_SEED 0x5eed5eedULL

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double *sorted_copy(const double *x, size_t n)
{
    double *s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return NULL;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    return s;
}

double stats_quantile(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return NAN;
    double pos = p * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return sorted[n - 1];
    double f = pos - (double)i;
    return sorted[i] + f * (sorted[i + 1] - sorted[i]);
}

/* P(X <= k) for X ~ Binomial(n, 1/2), through log-gamma so n can be large. */
static double binom_half_cdf(long n, long k)
{
    double sum = 0, lhalf = (double)n * log(0.5);
    for (long i = 0; i <= k; i++)
        sum += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma((double)(n - i) + 1.0) + lhalf);
    return sum;
}

/* The median's 95% interval from order statistics: the number of samples
 * below the true median is Binomial(n, 1/2), so [x_(j), x_(n-1-j)] (0-based)
 * covers it with probability 1 - 2 P(X <= j); j is the largest that keeps
 * that at least 0.95. Distribution-free: no normality assumed. */
static void median_interval(const double *sorted, size_t n, struct stats *s)
{
    long j = -1;
    while (j + 1 < (long)n / 2 && 2 * binom_half_cdf((long)n, j + 1) <= 0.05)
        j++;
    s->ci_exact = j >= 0;
    if (j < 0)
        j = 0;
    s->ci95[0] = sorted[j];
    s->ci95[1] = sorted[n - 1 - (size_t)j];
}

static int count_outliers(const double *sorted, size_t n, double median)
{
    double *dev = malloc(n * sizeof *dev);
    if (!dev)
        return 0;
    for (size_t i = 0; i < n; i++)
        dev[i] = fabs(sorted[i] - median);
    qsort(dev, n, sizeof *dev, cmp_double);
    double mad = stats_quantile(dev, n, 0.5);
    int k = 0;
    for (size_t i = 0; mad > 0 && i < n; i++)
        k += 0.6745 * fabs(sorted[i] - median) / mad > OUTLIER_Z;
    free(dev);
    return k;
}

void stats_compute(const double *x, size_t n, struct stats *s)
{
    *s = (struct stats){.n = (long)n, .mean = NAN, .stddev = NAN, .median = NAN, .min = NAN,
                        .max = NAN, .p90 = NAN, .p99 = NAN, .ci95 = {NAN, NAN}, .cv = NAN};
    double *v = n ? sorted_copy(x, n) : NULL;
    if (!v)
        return;
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    s->mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        sq += (v[i] - s->mean) * (v[i] - s->mean);
    s->stddev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
    s->cv = s->mean > 0 ? s->stddev / s->mean : 0;
    s->min = v[0];
    s->max = v[n - 1];
    s->median = stats_quantile(v, n, 0.5);
    s->p90 = stats_quantile(v, n, 0.90);
    s->p99 = stats_quantile(v, n, 0.99);
    median_interval(v, n, s);
    s->outliers = count_outliers(v, n, s->median);
    free(v);
}

const char *stats_noise_warning(const struct stats *s, char *buf, size_t n)
{
    if (s->n < 2 || (s->cv <= STATS_NOISY_CV && s->outliers == 0))
        return NULL;
    if (s->outliers)
        snprintf(buf, n,
                 "%d of %ld epochs are statistical outliers (another process or the page "
                 "cache disturbed them); run on a quieter machine, or with more epochs or "
                 "--repeat N",
                 s->outliers, s->n);
    else
        snprintf(buf, n,
                 "epoch times vary by %.0f%% (coefficient of variation over %.0f%%); "
                 "the median is uncertain: use more epochs, --repeat N or a quieter machine",
                 100 * s->cv, 100 * STATS_NOISY_CV);
    return buf;
}

const char *verdict_name(enum verdict v)
{
    return v == VERDICT_FASTER ? "faster" : v == VERDICT_SLOWER ? "slower" : "same";
}

/* Two-sided p-value of the Mann-Whitney U test of a against b: ranks of the
 * pooled sample (ties get their average rank), U's normal approximation with
 * the tie-corrected variance and a continuity correction. */
static double mann_whitney_p(const double *a, size_t na, const double *b, size_t nb)
{
    size_t n = na + nb;
    struct item { double v; int from_a; } *p = malloc(n * sizeof *p);
    if (!p)
        return 1;
    for (size_t i = 0; i < na; i++)
        p[i] = (struct item){a[i], 1};
    for (size_t i = 0; i < nb; i++)
        p[na + i] = (struct item){b[i], 0};
    qsort(p, n, sizeof *p, cmp_double); // v is the first member
    double rank_a = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && p[j + 1].v == p[i].v)
            j++;
        double t = (double)(j - i + 1), rank = 0.5 * (double)(i + j) + 1;
        for (size_t k = i; k <= j; k++)
            rank_a += p[k].from_a ? rank : 0;
        ties += t * t * t - t;
        i = j + 1;
    }
    free(p);
    double u = rank_a - (double)na * ((double)na + 1) / 2, mu = (double)na * (double)nb / 2;
    double var = (double)na * (double)nb / 12 *
                 (((double)n + 1) - ties / ((double)n * ((double)n - 1)));
    if (var <= 0)
        return 1;
    double z = (fabs(u - mu) - 0.5) / sqrt(var);
    return z <= 0 ? 1 : erfc(z / sqrt(2));
}

static double resample_median(struct rng *r, const double *x, size_t n, double *tmp)
{
    for (size_t i = 0; i < n; i++)
        tmp[i] = x[rng_below(r, n)];
    qsort(tmp, n, sizeof *tmp, cmp_double);
    return stats_quantile(tmp, n, 0.5);
}

/* Percentile bootstrap of median(b) / median(a), each sample resampled on its
 * own, from a fixed seed. */
static void ratio_interval(const double *a, size_t na, const double *b, size_t nb, double ci[2])
{
    double *ratios = malloc(BOOTSTRAP_ROUNDS * sizeof *ratios);
    double *tmp = malloc((na > nb ? na : nb) * sizeof *tmp);
    ci[0] = ci[1] = NAN;
    if (ratios && tmp) {
        struct rng r;
        rng_init(&r, BOOTSTRAP_SEED, 0, 0);
        for (int i = 0; i < BOOTSTRAP_ROUNDS; i++) {
            double ma = resample_median(&r, a, na, tmp);
            ratios[i] = resample_median(&r, b, nb, tmp) / ma;
        }
        qsort(ratios, BOOTSTRAP_ROUNDS, sizeof *ratios, cmp_double);
        ci[0] = stats_quantile(ratios, BOOTSTRAP_ROUNDS, 0.025);
        ci[1] = stats_quantile(ratios, BOOTSTRAP_ROUNDS, 0.975);
    }
    free(ratios);
    free(tmp);
}

void stats_compare(const double *a, size_t na, const double *b, size_t nb,
                   struct comparison *c)
{
    struct stats sa, sb;
    stats_compute(a, na, &sa);
    stats_compute(b, nb, &sb);
    *c = (struct comparison){.ratio = sb.median / sa.median, .ci95 = {NAN, NAN}, .p_value = 1,
                             .verdict = VERDICT_SAME};
    if (na < 3 || nb < 3)
        return;
    ratio_interval(a, na, b, nb, c->ci95);
    c->p_value = mann_whitney_p(a, na, b, nb);
    if (c->p_value < 0.05 && c->ci95[1] < 1)
        c->verdict = VERDICT_FASTER;
    else if (c->p_value < 0.05 && c->ci95[0] > 1)
        c->verdict = VERDICT_SLOWER;
}
