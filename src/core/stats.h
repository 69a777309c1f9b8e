/* Statistics over a sample of timings (epoch times of one point), as the
 * benchmark tools users trust report them: mean ± standard deviation, median,
 * min, max, p90, p99 (hyperfine, torch.utils.benchmark), a 95% confidence
 * interval of the median from order statistics, outliers by hyperfine's rule,
 * and a decision whether sample B is faster than, slower than or the same as
 * sample A (Mann-Whitney U with a bootstrap interval of the ratio of medians).
 * Pure functions of their inputs: the bootstrap draws from a fixed seed, so
 * the same samples always give the same answer. */
#ifndef DPBENCH_STATS_H
#define DPBENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>

struct stats {
    long n;             // samples
    double mean, stddev; // sample standard deviation (n - 1); 0 when n < 2
    double median, min, max;
    double p90, p99;    // linear interpolation between order statistics
    double ci95[2];     // [low, high] 95% interval of the median (order statistics)
    bool ci_exact;      // false when n < 6: no pair of order statistics covers 95%,
                        // ci95 is then [min, max] (covering 1 - 2^(1-n))
    int outliers;       // samples whose modified z-score exceeds 14 (hyperfine's rule)
    double cv;          // stddev / mean: the spread relative to the mean
};

/* Fills s from x[0..n-1] (any order; x is not changed). n == 0 gives NaNs. */
void stats_compute(const double *x, size_t n, struct stats *s);

/* The 95% prediction interval of one more of x's positive values, on the log
 * scale (never negative): exp(mean +- t(0.975, m - 1) sd sqrt(1 + 1/m)) over
 * their m logs, t by its Cornish-Fisher expansion. NAN with m < 3. */
void stats_prediction(const double *x, size_t n, double out[2]);

/* p-th quantile (0 <= p <= 1) of sorted[0..n-1], linear interpolation. */
double stats_quantile(const double *sorted, size_t n, double p);

/* The spread (cv) above which a median is not worth comparing without more
 * runs. */
#define STATS_NOISY_CV 0.10

/* Why a sample is too noisy to trust, or NULL: a coefficient of variation over
 * STATS_NOISY_CV or outliers. The text says what to do. */
const char *stats_noise_warning(const struct stats *s, char *buf, size_t n);

/* B against A. With a noise threshold t (stats_decide): faster / slower when
 * the ratio's whole interval lies beyond 1 -+ t, same (no measurable effect)
 * when it lies wholly inside [1 - t, 1 + t], undecided otherwise. */
enum verdict { VERDICT_SAME, VERDICT_FASTER, VERDICT_SLOWER, VERDICT_UNDECIDED };
const char *verdict_name(enum verdict v); // "same", "faster", "slower", "undecided"

struct comparison {
    double ratio;       // median(B) / median(A): below 1 means B takes less time
    double ci95[2];     // 95% bootstrap percentile interval of that ratio
    double p_value;     // two-sided Mann-Whitney U, normal approximation with
                        // tie correction
    enum verdict verdict; // B against A: faster / slower only when p < 0.05 AND
                          // the ratio's interval excludes 1; else same
};

/* The noise threshold's default: a ratio within 1 -+ 3% is no measurable
 * effect (criterion.rs uses 1%, BenchmarkTools.jl's judge 5%). */
#define STATS_THRESHOLD 0.03

/* B against A over units: rounds, where A and B ran side by side in each
 * (paired), or whole runs (unpaired). One number per side and unit: its
 * median epoch. */
struct ratio {
    double ratio;         // B / A: exp of the mean log ratio (below 1: B takes less time)
    double ci95[2];       // its 95% interval, on the log scale (never negative); NAN with
                          // too few units (6 rounds paired at 95%, 4 runs a side unpaired)
    int units;            // rounds (paired), or the smaller side's runs (unpaired)
    double threshold;     // the noise threshold the verdict used (0.03 = 3%)
    enum verdict verdict; // stats_decide(ci95, threshold); undecided with fewer than 2 units
    int units_needed;     // units that would decide it at the spread seen (0: decided;
                          // -1: none would, the ratio sits on the threshold)
};
/* a[k], b[k]: unit k's medians of A and B (n units, same round each): the
 * Hodges-Lehmann estimate of the log ratios, with the Wilcoxon signed-rank
 * interval at level alpha
 * (0.05: 95%; smaller at each of several looks at growing rounds, whose
 * levels add up to 0.05: rounds.h). */
void stats_paired(const double *a, const double *b, size_t n, double threshold, double alpha,
                  struct ratio *out);
/* a[0..na-1], b[0..nb-1]: the medians of A's and B's units: the
 * Hodges-Lehmann shift of the logs, with Moses' (Mann-Whitney's) interval. */
void stats_unpaired(const double *a, size_t na, const double *b, size_t nb, double threshold,
                    struct ratio *out);
/* The verdict of an interval of B / A against the threshold. */
enum verdict stats_decide(const double ci95[2], double threshold);
/* The median of x[0..n-1], reordering x: O(n) (a selection, not a sort). */
double stats_median(double *x, size_t n);

/* Compares timings b against a (each at least 1 sample; with fewer than 3 in
 * either the verdict is always "same": no test can decide). */
void stats_compare(const double *a, size_t na, const double *b, size_t nb,
                   struct comparison *c);

#endif
