/* dataset.kind random: the tutorial's RandomDataset with teacher targets,
 * x ~ N(0, 1) of shape (length, features) and y = x·W*ᵀ + b* + noise, all
 * drawn from the seed in fixed blocks of rows, so the bytes do not depend on
 * how many threads generate or read them. */
#include "dataset_kind.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dataset.h"
#include "rng.h"

enum { ROW_BLOCK = 1024 }; // rows per independent RNG stream

/* Rows of block `block`: x from the block's own stream, y from the teacher
 * plus the block's noise stream. Blocks are independent. A stop request ends
 * it early (the dataset is then discarded). */
static void make_block(struct dataset *d, unsigned long seed, long block)
{
    long n = d->length, f = d->features, o = d->out_features;
    struct rng rx, rn;
    rng_init(&rx, (uint64_t)seed, RNG_DATA, (uint64_t)block);
    rng_init(&rn, (uint64_t)seed, RNG_NOISE, (uint64_t)block);
    long end = (block + 1) * ROW_BLOCK < n ? (block + 1) * ROW_BLOCK : n;
    for (long i = block * ROW_BLOCK; i < end && !stop_requested(); i++) {
        float *x = d->x + i * f;
        for (long k = 0; k < f; k++)
            x[k] = (float)rng_normal(&rx);
        for (long j = 0; j < o; j++) {
            double acc = d->b_teacher[j];
            for (long k = 0; k < f; k++)
                acc += (double)d->w_teacher[j * f + k] * x[k];
            d->y[i * o + j] = (float)(acc + d->noise * rng_normal(&rn));
        }
    }
}

struct builder {
    struct dataset *d;
    unsigned long seed;
    long blocks;
    long next; // the next block to build, taken atomically
};

static void *builder_main(void *arg)
{
    struct builder *b = arg;
    for (long k; !stop_requested() &&
                 (k = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED)) < b->blocks;)
        make_block(b->d, b->seed, k);
    return NULL;
}

static int random_build(struct dataset *d, const struct config *c, int threads, struct error *e)
{
    d->length = c->dataset.length;
    d->features = (int)c->dataset.features;
    d->out_features = (int)c->model.out_features;
    d->noise = c->dataset.noise;
    long n = d->length, f = d->features, o = d->out_features;
    d->x = huge_alloc((size_t)n * (size_t)f * sizeof(float)); // overflow: checked by the config
    d->y = huge_alloc((size_t)n * (size_t)o * sizeof(float));
    d->w_teacher = malloc((size_t)(o * f) * sizeof(float));
    d->b_teacher = malloc((size_t)o * sizeof(float));
    if (!d->x || !d->y || !d->w_teacher || !d->b_teacher) // dataset_bytes(n, f, o)
        return error_set(e, "dataset: cannot allocate %.1f MiB for %ld x %ld samples",
                         (double)((size_t)n * (size_t)(f + o) * sizeof(float)) / (1 << 20), n, f);
    struct rng r;
    rng_init(&r, (uint64_t)c->seed, RNG_TEACHER, 0);
    for (long i = 0; i < o * f && !stop_requested(); i++) // unit-variance outputs for unit-variance inputs
        d->w_teacher[i] = (float)(rng_normal(&r) / sqrt((double)f));
    for (long j = 0; j < o; j++)
        d->b_teacher[j] = (float)rng_normal(&r);

    /* the blocks on `threads` threads (this one included); small datasets
     * are not worth a thread */
    struct builder b = {.d = d, .seed = (unsigned long)c->seed,
                        .blocks = (n + ROW_BLOCK - 1) / ROW_BLOCK};
    if ((double)n * (double)(f + 1) * (double)o < 1e7)
        threads = 1;
    if (threads > b.blocks)
        threads = (int)b.blocks;
    pthread_t *t = threads > 1 ? calloc((size_t)threads - 1, sizeof *t) : NULL;
    int started = 0;
    while (t && started < threads - 1 && thread_start(&t[started], builder_main, &b) == 0)
        started++; // a thread that cannot start leaves its share to the others
    builder_main(&b);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    if (stop_requested())
        return error_set(e, "dataset: generation interrupted");
    return 0;
}

const struct dataset_kind dataset_kind_random = {
    .name = "random",
    .build = random_build,
};
