/* The machine's state while something is measured: how much of the CPUs
 * other processes used, how much the hypervisor took (steal), the load
 * average, and the CPU clock where the kernel exposes it. A result records it
 * per point and round, so a reader (and `dpbench compare`) can tell a slow
 * run from a busy machine. */
#ifndef DPBENCH_LOAD_H
#define DPBENCH_LOAD_H

#include <stdbool.h>
#include <stddef.h>

/* What one interval looked like. Shares are of all online CPUs' time. */
struct load {
    double seconds;         // wall time of the interval
    double others_cpu;      // (busy jiffies - this process's) / (wall x online CPUs), 0..1;
                            // NAN when /proc/stat cannot be read or no jiffy passed (an
                            // interval under the kernel's 1/CLK_TCK resolution)
    double steal;           // steal jiffies / all jiffies, 0..1 (a VM's hypervisor)
    double cpu_s, busy_s, steal_s, own_s; // the counts behind them, CPU seconds: all CPUs'
                                          // time, busy, stolen, this process's (merging
                                          // short intervals sums these)
    double loadavg_start, loadavg_end; // 1-minute load average at either end
    char governor[32];      // cpu0's cpufreq governor, "" where there is none (many VMs)
    double mhz_min, mhz_max; // the lowest and highest clock of any CPU seen at either end,
                             // NAN without cpufreq
};

/* A probe's reading at the start of an interval. */
struct load_probe {
    double t;                        // monotonic seconds
    unsigned long long busy, steal, total; // jiffies over all CPUs
    double own_s;                    // this process's user + system seconds
    double loadavg;
    double mhz_min, mhz_max;
    bool ok;                         // /proc/stat was read
};

void load_begin(struct load_probe *p);
/* The interval since p, into out. */
void load_end(const struct load_probe *p, struct load *out);
/* into grows by more, weighted by their seconds (into may be all zero). */
void load_merge(struct load *into, const struct load *more);

/* Other processes' share above which a timing is suspect: a quarter of the
 * machine's CPUs. */
#define LOAD_BUSY_SHARE 0.25
/* Two intervals' others_cpu apart by more than this ran under clearly
 * different load. */
#define LOAD_DIFFERENT 0.20

/* Why a measurement may be disturbed (others busy, a governor that scales
 * the clock), or NULL. */
const char *load_warning(const struct load *l, char *buf, size_t n);

#endif
