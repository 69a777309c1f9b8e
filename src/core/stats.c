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

/* The median's 95% interval from order statistics: the number of samples
 * below the true median is Binomial(n, 1/2), so [x_(j), x_(n-1-j)] (0-based)
 * covers it with probability 1 - 2 P(X <= j); j is the largest that keeps
 * that at least 0.95. Distribution-free: no normality assumed. The binomial
 * tail is summed term by term (each term from the one before) up to
 * STATS_EXACT_MAX samples, one pass; beyond, its normal approximation
 * (continuity-corrected) gives j directly. */
#define STATS_EXACT_MAX 1000

/* The standard normal's upper quantile z with P(Z > z) = p (0 < p < 0.5):
 * Abramowitz and Stegun 26.2.23, within 4.5e-4 of the true value. */
static double normal_upper(double p)
{
    double t = sqrt(-2 * log(p));
    return t - (2.515517 + 0.802853 * t + 0.010328 * t * t) /
                   (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
}

/* The sign test's rank for a two-sided level alpha: the largest j (0-based)
 * with 2 P(X <= j) <= alpha for X ~ Binomial(n, 1/2); -1 when none. */
static long sign_rank(long n, double alpha)
{
    if (n > STATS_EXACT_MAX)
        return (long)floor(0.5 * ((double)n - normal_upper(alpha / 2) * sqrt((double)n)) - 0.5);
    double term = exp((double)n * log(0.5)), cdf = 0; // P(X = 0)
    long j = -1;
    for (long i = 0; i < n / 2; i++) {
        cdf += term;
        if (2 * cdf > alpha)
            break;
        j = i;
        term *= (double)(n - i) / (double)(i + 1); // P(X = i + 1)
    }
    return j;
}

static long median_rank(long n) { return sign_rank(n, 0.05); }

static void median_interval(const double *sorted, size_t n, struct stats *s)
{
    long j = median_rank((long)n);
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

void stats_prediction(const double *x, size_t n, double out[2])
{
    double l[n + 1], z = 1.959964;
    l[0] = 0; // for the compiler: with m == 0 nothing is read
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        l[m] = log(x[i]), m += x[i] > 0;
    struct stats st;
    stats_compute(l, m, &st);
    double v = (double)m - 1; // t's degrees of freedom
    double t = z + (z * z * z + z) / (4 * v) + (5 * pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
    for (int side = 0; side < 2; side++)
        out[side] = m < 3 ? NAN : exp(st.mean + (2 * side - 1) * t * st.stddev * sqrt(1 + 1.0 / (double)m));
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
    static const char *const names[] = {"same", "faster", "slower", "undecided"};
    return names[v];
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

/* The k-th smallest of x[0..n-1] (reordered in place), Hoare's selection:
 * O(n) on average, where a sort is O(n log n). */
static double select_kth(double *x, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = x[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (x[i] < pivot)
                i++;
            while (x[j] > pivot)
                j--;
            if (i <= j) {
                double t = x[i];
                x[i] = x[j];
                x[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return x[k];
    }
    return x[k];
}

double stats_median(double *x, size_t n)
{
    double hi = select_kth(x, n, n / 2);
    if (n % 2)
        return hi;
    double lo = x[0]; // the largest of the lower half, which selection left below n / 2
    for (size_t i = 1; i < n / 2; i++)
        lo = x[i] > lo ? x[i] : lo;
    return 0.5 * (lo + hi);
}

static double resample_median(struct rng *r, const double *x, size_t n, double *tmp)
{
    for (size_t i = 0; i < n; i++)
        tmp[i] = x[rng_below(r, n)];
    return stats_median(tmp, n);
}

/* Percentile bootstrap of median(b) / median(a), each sample resampled on its
 * own, from a fixed seed. The work is bounded: BOOTSTRAP_ROUNDS resamples up
 * to BOOTSTRAP_WORK drawn values in all, fewer (at least BOOTSTRAP_MIN) for
 * samples larger than that allows. */
#define BOOTSTRAP_WORK 40000000.0
#define BOOTSTRAP_MIN 200
static void ratio_interval(const double *a, size_t na, const double *b, size_t nb, double ci[2])
{
    int rounds = (int)fmin(BOOTSTRAP_ROUNDS, fmax(BOOTSTRAP_MIN, BOOTSTRAP_WORK / (double)(na + nb)));
    double *ratios = malloc((size_t)rounds * sizeof *ratios);
    double *tmp = malloc((na > nb ? na : nb) * sizeof *tmp);
    ci[0] = ci[1] = NAN;
    if (ratios && tmp) {
        struct rng r;
        rng_init(&r, BOOTSTRAP_SEED, 0, 0);
        for (int i = 0; i < rounds; i++) {
            double ma = resample_median(&r, a, na, tmp);
            ratios[i] = resample_median(&r, b, nb, tmp) / ma;
        }
        qsort(ratios, (size_t)rounds, sizeof *ratios, cmp_double);
        ci[0] = stats_quantile(ratios, (size_t)rounds, 0.025);
        ci[1] = stats_quantile(ratios, (size_t)rounds, 0.975);
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

/* ---- B against A over units (rounds or runs) ------------------------------- */

enum verdict stats_decide(const double ci95[2], double threshold)
{
    if (!(ci95[0] > 0) || !isfinite(ci95[1])) // NAN or no interval
        return VERDICT_UNDECIDED;
    if (ci95[1] < 1 - threshold)
        return VERDICT_FASTER;
    if (ci95[0] > 1 + threshold)
        return VERDICT_SLOWER;
    if (ci95[0] >= 1 - threshold && ci95[1] <= 1 + threshold)
        return VERDICT_SAME;
    return VERDICT_UNDECIDED;
}

/* The half-width (log scale) an interval around log ratio m may have to be
 * decided: to lie wholly beyond the threshold on m's side, or wholly inside
 * it; <= 0 when none can (m on the threshold). */
static double room(double m, double threshold)
{
    double lo = log1p(-threshold), hi = log1p(threshold);
    if (m < lo)
        return lo - m;
    if (m > hi)
        return m - hi;
    return fmin(m - lo, hi - m);
}

/* Units a decision needs at the spread seen: the least k (from `from`) whose
 * interval half-width, about 1.96 se1 / sqrt(k) for one unit's standard
 * error se1 of the centre, fits in the room m leaves; -1 when none would. */
static int units_needed(double se1, double m, double threshold, int from)
{
    double d = room(m, threshold);
    if (!(d > 0) || !isfinite(se1))
        return -1;
    double k = ceil(pow(1.959964 * se1 / d, 2));
    return k > 1e6 ? -1 : (int)fmax(k, (double)from);
}

static double *log_sorted(const double *x, size_t n, const double *over)
{
    double *l = malloc((n ? n : 1) * sizeof *l);
    for (size_t k = 0; l && k < n; k++)
        l[k] = log(x[k] / (over ? over[k] : 1.0));
    if (l)
        qsort(l, n, sizeof *l, cmp_double);
    return l;
}

/* A robust spread of sorted[0..n-1]: 1.4826 MAD, the standard deviation it
 * estimates for normal data. */
static double mad_sd(const double *sorted, size_t n, double median)
{
    double *dev = malloc((n ? n : 1) * sizeof *dev);
    if (!dev)
        return NAN;
    for (size_t i = 0; i < n; i++)
        dev[i] = fabs(sorted[i] - median);
    double mad = stats_median(dev, n);
    free(dev);
    return 1.4826 * mad;
}

static void ratio_init(struct ratio *r, size_t units, double threshold)
{
    *r = (struct ratio){.ratio = NAN, .ci95 = {NAN, NAN}, .units = (int)units,
                        .threshold = threshold, .verdict = VERDICT_UNDECIDED,
                        .units_needed = -1};
}

/* The signed-rank statistic's two-sided critical count at level alpha for n
 * units: the largest c with P(T < c) <= alpha / 2, T the sum of the ranks of
 * the positive differences under symmetry about 0 (exact counts of the 2^n
 * sign patterns up to 60 units, the normal approximation beyond); 0 when no
 * c reaches it. */
static long wilcoxon_critical(long n, double alpha)
{
    if (n > 60) {
        double mu = (double)n * (double)(n + 1) / 4;
        double sd = sqrt((double)n * (double)(n + 1) * (double)(2 * n + 1) / 24);
        double c = floor(mu - normal_upper(alpha / 2) * sd);
        return c > 0 ? (long)c : 0;
    }
    long max = n * (n + 1) / 2;
    double *f = calloc((size_t)max + 1, sizeof *f), total = 1;
    long c = 0;
    if (!f)
        return 0;
    f[0] = 1; // f[t]: sign patterns of the ranks so far whose positive ranks sum to t
    for (long k = 1; k <= n; k++, total *= 2)
        for (long t = max; t >= k; t--)
            f[t] += f[t - k];
    double cum = 0;
    for (long t = 0; t <= max; t++) {
        cum += f[t];
        if (cum / total > alpha / 2)
            break;
        c = t + 1; // P(T <= t) <= alpha / 2: T < t + 1 is the tail
    }
    free(f);
    return c;
}

/* Paired: the Hodges-Lehmann estimate of the units' log ratios (the median
 * of their Walsh averages) with the Wilcoxon signed-rank test's interval at
 * level alpha. A round's A and B run in a random order, so with no
 * difference a round's log ratio is as likely negative as positive: the
 * test is exact then, whatever the distribution's tails; and a burst that
 * hits one side of one round counts as one round's rank, not its size. */
void stats_paired(const double *a, const double *b, size_t n, double threshold, double alpha,
                  struct ratio *out)
{
    ratio_init(out, n, threshold);
    double *l = n ? log_sorted(b, n, a) : NULL;
    if (!l || !isfinite(l[0]) || !isfinite(l[n - 1])) {
        free(l);
        return;
    }
    size_t M = n * (n + 1) / 2, k = 0;
    double *w = malloc(M * sizeof *w), m = NAN;
    for (size_t i = 0; w && i < n; i++) // the Walsh averages: every pair's mean, each one's
        for (size_t j = i; j < n; j++)
            w[k++] = 0.5 * (l[i] + l[j]);
    if (w) {
        qsort(w, M, sizeof *w, cmp_double);
        m = stats_quantile(w, M, 0.5);
        out->ratio = exp(m);
        long c = wilcoxon_critical((long)n, alpha > 0 ? alpha : 0.05);
        if (c >= 1) {
            out->ci95[0] = exp(w[c - 1]);
            out->ci95[1] = exp(w[M - (size_t)c]);
            out->verdict = stats_decide(out->ci95, threshold);
        }
    }
    free(w);
    /* the Hodges-Lehmann estimate's standard error for one unit: about 1.02
     * sigma for normal data (its efficiency there is 0.955) */
    double se1 = n > 1 ? 1.023 * mad_sd(l, n, stats_quantile(l, n, 0.5)) : NAN;
    out->units_needed = out->verdict != VERDICT_UNDECIDED ? 0
                        : units_needed(se1, m, threshold, n < 6 ? 6 : (int)n + 1);
    free(l);
}

/* The two-sided 5% critical count of the Mann-Whitney U statistic for na and
 * nb: the largest c with P(U < c) <= 0.025 (exact, by counting the
 * arrangements, up to 40 a side; the normal approximation beyond); -1 when
 * no c reaches it (too few units). */
static long mw_critical(size_t na, size_t nb)
{
    if (na > 40 || nb > 40) {
        double mu = (double)na * (double)nb / 2;
        double sd = sqrt((double)na * (double)nb * (double)(na + nb + 1) / 12);
        return (long)floor(mu - 1.959964 * sd); // U < c, continuity as in the exact count
    }
    /* f[k][u]: arrangements of k a's among the first values with U = u,
     * built one value at a time (the classic recursion) */
    size_t umax = na * nb;
    double *f = calloc((na + 1) * (umax + 1), sizeof *f), *g = calloc((na + 1) * (umax + 1), sizeof *g);
    long c = -1;
    if (f && g) {
        f[0] = 1;
        for (size_t t = 1; t <= na + nb; t++) { // t values placed, k of them from a
            memset(g, 0, (na + 1) * (umax + 1) * sizeof *g);
            for (size_t k = 0; k <= na && k <= t; k++)
                for (size_t u = 0; u <= umax; u++) {
                    double v = f[k * (umax + 1) + u];
                    if (v == 0)
                        continue;
                    if (t - 1 - k < nb) // the t-th value from b: passes the k a's before it
                        g[k * (umax + 1) + u + k] += v;
                    if (k < na) // from a
                        g[(k + 1) * (umax + 1) + u] += v;
                }
            double *h = f;
            f = g;
            g = h;
        }
        double total = 0, cum = 0;
        for (size_t u = 0; u <= umax; u++)
            total += f[na * (umax + 1) + u];
        for (size_t u = 0; u <= umax; u++) {
            cum += f[na * (umax + 1) + u];
            if (cum / total > 0.025)
                break;
            c = (long)u + 1; // P(U <= u) <= 0.025: U < u + 1 is the tail
        }
    }
    free(f);
    free(g);
    return c;
}

/* How many of the differences b[k] - a[i] (a, b sorted) are at most t: with
 * a[i] rising, b[k] - a[i] falls, so the count of k only grows. */
static size_t diffs_at_most(const double *a, size_t na, const double *b, size_t nb, double t)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < na; i++) {
        while (k < nb && b[k] - a[i] <= t)
            k++;
        n += k;
    }
    return n;
}

/* The q-th smallest (1-based) of the na nb differences b[k] - a[i], by
 * bisection on its value, each step a count: memory na + nb, not na nb. It
 * ends with lo and hi adjacent doubles, fewer than q at most lo and at
 * least q at most hi: the value is hi. */
static double diff_rank(const double *a, size_t na, const double *b, size_t nb, size_t q)
{
    double lo = b[0] - a[na - 1], hi = b[nb - 1] - a[0];
    if (diffs_at_most(a, na, b, nb, lo) >= q)
        return lo;
    for (int step = 0; step < 2200; step++) { // 64 or so; about 1100 where the value is 0
        double mid = lo + (hi - lo) / 2;
        if (!(mid > lo && mid < hi))
            break;
        *(diffs_at_most(a, na, b, nb, mid) >= q ? &hi : &lo) = mid;
    }
    return hi;
}

/* Unpaired: the Hodges-Lehmann shift between the two sides' log medians
 * (the median of every difference b - a, as stats_quantile takes it) with
 * Moses' interval, the Mann-Whitney test's: the c-th smallest and largest
 * differences. */
void stats_unpaired(const double *a, size_t na, const double *b, size_t nb, double threshold,
                    struct ratio *out)
{
    ratio_init(out, na < nb ? na : nb, threshold);
    double *la = log_sorted(a, na, NULL), *lb = log_sorted(b, nb, NULL);
    if (la && lb && na && nb && isfinite(la[0]) && isfinite(lb[0]) &&
        isfinite(la[na - 1]) && isfinite(lb[nb - 1])) {
        size_t n = na * nb, i = (n - 1) / 2;
        double m = diff_rank(la, na, lb, nb, i + 1);
        if (n % 2 == 0) // between the two middle ones
            m += 0.5 * (diff_rank(la, na, lb, nb, i + 2) - m);
        out->ratio = exp(m);
        long c = mw_critical(na, nb);
        if (c >= 1) {
            out->ci95[0] = exp(diff_rank(la, na, lb, nb, (size_t)c));
            out->ci95[1] = exp(diff_rank(la, na, lb, nb, n - (size_t)c + 1));
            out->verdict = stats_decide(out->ci95, threshold);
        }
        double sa = mad_sd(la, na, stats_quantile(la, na, 0.5));
        double sb = mad_sd(lb, nb, stats_quantile(lb, nb, 0.5));
        double se1 = 1.2533 * sqrt(sa * sa + sb * sb); // one unit a side
        out->units_needed = out->verdict != VERDICT_UNDECIDED ? 0
                            : units_needed(se1, m, threshold, out->units < 4 ? 4 : out->units + 1);
    }
    free(la);
    free(lb);
}
