/* xoshiro256** seeded through splitmix64; Box-Muller for normals. */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void rng_init(struct rng *r, uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t x = seed;
    x = splitmix64(&x) ^ (stream * 0xd1b54a32d192ed03ULL);
    x = splitmix64(&x) ^ (index * 0x8cb92ba72f3d8dd7ULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double rng_uniform(struct rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

double rng_normal(struct rng *r)
{
    /* Box-Muller; 1 - u keeps the log argument in (0, 1]. */
    double u = 1.0 - rng_uniform(r), v = rng_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
    /* Rejection sampling: no modulo bias. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = rng_next(r);
    while (x >= limit);
    return x % n;
}
