/* The machine's load over an interval, from /proc/stat (all CPUs' jiffies),
 * getrusage (this process's CPU time), /proc/loadavg and cpufreq's sysfs. */
#include "load.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util.h"

/* The aggregate "cpu" line: busy = user + nice + system + irq + softirq (guest
 * time is inside user), total adds idle, iowait and steal. */
static bool read_stat(unsigned long long *busy, unsigned long long *steal,
                      unsigned long long *total)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int got = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                         &v[3], &v[4], &v[5], &v[6], &v[7])
                : 0;
    if (f)
        fclose(f);
    if (got < 8)
        return false;
    *busy = v[0] + v[1] + v[2] + v[5] + v[6];
    *steal = v[7];
    *total = *busy + v[3] + v[4] + v[7];
    return true;
}

static double read_loadavg(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l = NAN;
    if (f && fscanf(f, "%lf", &l) != 1)
        l = NAN;
    if (f)
        fclose(f);
    return l;
}

static double own_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return NAN;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* The lowest and highest current clock over the online CPUs (MHz), NAN
 * where cpufreq is absent. */
static void read_clocks(double *lo, double *hi)
{
    *lo = *hi = NAN;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < n && i < 1024; i++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cpufreq/scaling_cur_freq", i);
        FILE *f = fopen(path, "r");
        double khz;
        if (!f)
            continue;
        if (fscanf(f, "%lf", &khz) == 1) {
            *lo = isnan(*lo) || khz / 1e3 < *lo ? khz / 1e3 : *lo;
            *hi = isnan(*hi) || khz / 1e3 > *hi ? khz / 1e3 : *hi;
        }
        fclose(f);
    }
}

static void read_governor(char *buf, size_t n)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "r");
    buf[0] = '\0';
    if (f && fgets(buf, (int)n, f))
        buf[strcspn(buf, "\n")] = '\0';
    if (f)
        fclose(f);
}

/* others_cpu and steal from the counts (all CPUs' time is the wall time
 * times the CPUs, counted by the kernel itself) */
static void load_shares(struct load *l)
{
    l->others_cpu = l->steal = NAN;
    if (!(l->cpu_s > 0))
        return;
    double others = (l->busy_s - l->own_s) / l->cpu_s;
    l->others_cpu = others < 0 ? 0 : others > 1 ? 1 : others; // jiffies are coarse
    l->steal = l->steal_s / l->cpu_s;
}

void load_begin(struct load_probe *p)
{
    *p = (struct load_probe){.t = now_seconds(), .own_s = own_seconds(),
                             .loadavg = read_loadavg()};
    p->ok = read_stat(&p->busy, &p->steal, &p->total);
    read_clocks(&p->mhz_min, &p->mhz_max);
}

void load_end(const struct load_probe *p, struct load *out)
{
    struct load_probe q;
    load_begin(&q);
    *out = (struct load){.seconds = q.t - p->t, .others_cpu = NAN, .steal = NAN,
                         .loadavg_start = p->loadavg, .loadavg_end = q.loadavg,
                         .mhz_min = fmin(p->mhz_min, q.mhz_min),
                         .mhz_max = fmax(p->mhz_max, q.mhz_max)};
    read_governor(out->governor, sizeof out->governor);
    long hz = sysconf(_SC_CLK_TCK);
    if (!p->ok || !q.ok || hz <= 0 || out->seconds <= 0)
        return;
    out->cpu_s = (double)(q.total - p->total) / (double)hz;
    out->busy_s = (double)(q.busy - p->busy) / (double)hz;
    out->steal_s = (double)(q.steal - p->steal) / (double)hz;
    out->own_s = q.own_s - p->own_s;
    load_shares(out);
}

void load_merge(struct load *into, const struct load *more)
{
    if (into->seconds <= 0) {
        *into = *more;
        return;
    }
    into->cpu_s += more->cpu_s;
    into->busy_s += more->busy_s;
    into->steal_s += more->steal_s;
    into->own_s += more->own_s;
    load_shares(into);
    into->loadavg_end = more->loadavg_end;
    into->mhz_min = fmin(into->mhz_min, more->mhz_min); // fmin/fmax skip a NAN
    into->mhz_max = fmax(into->mhz_max, more->mhz_max);
    if (!into->governor[0])
        snprintf(into->governor, sizeof into->governor, "%s", more->governor);
    into->seconds += more->seconds;
}

const char *load_warning(const struct load *l, char *buf, size_t n)
{
    if (l->others_cpu > LOAD_BUSY_SHARE)
        snprintf(buf, n, "other processes used %.0f%% of the CPUs while it ran (over %.0f%%): "
                 "its times are slower than on a quiet machine and may drift",
                 100 * l->others_cpu, 100 * LOAD_BUSY_SHARE);
    else if (l->governor[0] && strcmp(l->governor, "performance") != 0)
        snprintf(buf, n, "the CPU frequency governor is %s, not performance: the clock may "
                 "change under the run (%.0f-%.0f MHz seen)", l->governor, l->mhz_min,
                 l->mhz_max);
    else
        return NULL;
    return buf;
}
