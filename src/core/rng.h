/* Seeded random numbers: splitmix64 to derive independent streams from
 * (seed, purpose, index), xoshiro256** for the stream itself. The same seed
 * gives the same numbers on every machine and for every thread count. */
#ifndef DPBENCH_RNG_H
#define DPBENCH_RNG_H

#include <stdint.h>

struct rng {
    uint64_t s[4];
};

/* A stream for (seed, stream, index): e.g. (seed, RNG_DATA, row_block). */
void rng_init(struct rng *r, uint64_t seed, uint64_t stream, uint64_t index);
uint64_t rng_next(struct rng *r);
double rng_uniform(struct rng *r);          // [0, 1)
double rng_normal(struct rng *r);           // standard normal
uint64_t rng_below(struct rng *r, uint64_t n); // uniform in [0, n)

enum rng_stream { RNG_DATA = 1, RNG_TEACHER, RNG_NOISE, RNG_INIT, RNG_SHUFFLE, RNG_AUGMENT,
                  RNG_GENERATE, RNG_ROUNDS };

#endif
