/* A simulated busy 2-core machine for the calibration tests (test_verdicts.c,
 * test_tune.c): two busy loops that come and go (each on for 2 to 10 s, then
 * off for 2 to 10 s, as scripts/bench-verdicts.sh makes them) slow every
 * epoch by up to half when both run; bursts (one every 30 s on average, 0.5
 * to 3 s long) slow it by 1.2 to 2x; a slow drift of +-5% over two minutes.
 * What one point's epochs share is the machine's state: drift on the scale
 * of a point's run, the case that fools a test that takes epochs as
 * independent. Time is simulated: every number follows from the seed. */
#ifndef DPBENCH_SIM_MACHINE_H
#define DPBENCH_SIM_MACHINE_H

#include <math.h>
#include <stdbool.h>

#include "rng.h"

struct sim_machine {
    struct rng g;
    double t;                       // seconds
    double loop_until[2];           // when each busy loop next changes
    bool loop_on[2];
    double burst_until, burst_f, next_burst;
    double phase;                   // of the slow drift
    double load_s;                  // time-integral of the loops' share of the CPUs
    bool quiet;                     // nothing else runs: no loops, bursts or drift
};

static void machine_init(struct sim_machine *m, uint64_t seed)
{
    *m = (struct sim_machine){0};
    rng_init(&m->g, seed, 1001, 0);
    m->t = 1000 * rng_uniform(&m->g);
    m->loop_until[0] = m->t + 10 * rng_uniform(&m->g);
    m->loop_until[1] = m->t + 10 * rng_uniform(&m->g);
    m->next_burst = m->t + 30 * rng_uniform(&m->g);
    m->phase = 2 * M_PI * rng_uniform(&m->g);
}

/* How much slower the machine runs now than when quiet. */
static double machine_factor(struct sim_machine *m)
{
    if (m->quiet)
        return 1;
    for (int i = 0; i < 2; i++)
        while (m->t >= m->loop_until[i]) {
            m->loop_on[i] = !m->loop_on[i];
            m->loop_until[i] += 2 + 8 * rng_uniform(&m->g);
        }
    while (m->t >= m->next_burst) {
        m->burst_until = m->next_burst + 0.5 + 2.5 * rng_uniform(&m->g);
        m->burst_f = 1.2 + 0.8 * rng_uniform(&m->g);
        m->next_burst += -30 * log(1 - rng_uniform(&m->g));
    }
    double on = (m->loop_on[0] + m->loop_on[1]) / 2.0;
    double f = 1 + 0.5 * on * on; // one loop has a core of its own; two share ours
    if (m->t < m->burst_until)
        f *= m->burst_f;
    return f * (1 + 0.05 * sin(2 * M_PI * m->t / 120 + m->phase));
}

/* Time passing: seconds of work at the machine's present speed. */
static double machine_run(struct sim_machine *m, double work_s, double noise)
{
    double f = machine_factor(m), d = work_s * f * exp(noise * rng_normal(&m->g));
    m->load_s += d * (m->loop_on[0] + m->loop_on[1]) / 2.0;
    m->t += d;
    return d;
}

#endif
