/* The DataLoader. Worker w fills batches w, w + W, w + 2W, ... of the epoch;
 * batch k may start only once the consumer has taken batch k - W*P (PyTorch
 * primes W*P requests and sends one more per batch returned), and the
 * consumer takes batch k from slot k % (W*P) only, so delivery is in order
 * whatever the workers' speed. */
#include "loader.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataset.h"
#include "rlimits.h"
#include "rng.h"

struct loader_worker {
    struct loader *l;
    int id;
    pthread_t thread;
};

int loader_pool_size(const struct loader_options *o)
{
    int window = o->num_workers * o->prefetch_factor;
    return window + 1 + o->extra_buffers;
}

long loader_samples(long length, int world, bool drop_last)
{
    if (world <= 1)
        return length;
    if (drop_last && length % world)
        return (length - 1) / world; // torch: ceil((length - world) / world)
    return (length + world - 1) / world;
}

int loader_init(struct loader *l, const struct dataset *d, const struct loader_options *o,
                struct error *e)
{
    memset(l, 0, sizeof *l);
    l->data = d;
    l->opt = *o;
    l->n_samples = loader_samples(d->length, o->world, o->drop_last);
    l->n_batches = o->drop_last ? l->n_samples / o->batch_size
                                : (l->n_samples + o->batch_size - 1) / o->batch_size;
    l->window = o->num_workers * o->prefetch_factor;
    l->n_buffers = loader_pool_size(o);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv_work, NULL);
    pthread_cond_init(&l->cv_ready, NULL);

    l->perm = malloc((size_t)d->length * sizeof(long));
    l->order = o->world > 1 ? malloc((size_t)(l->n_samples ? l->n_samples : 1) * sizeof(long))
                            : l->perm;
    l->pool = calloc((size_t)l->n_buffers, sizeof *l->pool);
    l->ready = calloc((size_t)(l->window ? l->window : 1), sizeof *l->ready);
    l->workers = calloc((size_t)(o->num_workers ? o->num_workers : 1), sizeof *l->workers);
    if (!l->perm || !l->order || !l->pool || !l->ready || !l->workers) {
        loader_free(l);
        return error_set(e, "loader: out of memory");
    }
    size_t rows = (size_t)o->batch_size;
    size_t floats = rows * (size_t)(d->features + d->out_features);
    for (int i = 0; i < l->n_buffers; i++) {
        struct batch *b = &l->pool[i];
        b->mem = o->mem.alloc(floats * sizeof(float), o->pin_memory, e);
        b->ids = malloc(rows * sizeof(long));
        if (!b->mem || !b->ids) {
            if (b->mem)
                error_set(e, "loader: out of memory");
            loader_free(l);
            return error_wrap(e, "loader: batch buffer %d of %d (%zu bytes)", i + 1,
                              l->n_buffers, floats * sizeof(float));
        }
        b->x = b->mem;
        b->y = b->x + rows * (size_t)d->features;
        b->next_free = l->free_list;
        l->free_list = b;
    }
    return 0;
}

/* Whether the batch in flight is dropped: a second signal, or for a single
 * process the first (the epoch it belongs to is partial, never reported; a
 * rank of several goes on to the step's allreduce, which carries the stop). */
static bool dropped(const struct loader *l)
{
    return abort_requested() || (l->opt.world <= 1 && stop_requested());
}

/* Gathers batch k's samples into b; runs the transform. 1 when the epoch's
 * outstanding work was cancelled (early stop, or a second signal) between two
 * samples: slow samples must not hold a stop up for a whole batch. */
static int fill_batch(struct loader *l, struct batch *b, long k, struct error *e);

/* fill_batch, its wall time added to the epoch's fill_ns (the pipeline
 * model's load time per batch: report_emulated.c). */
static int fill(struct loader *l, struct batch *b, long k, struct error *e)
{
    double t0 = now_seconds();
    int rc = fill_batch(l, b, k, e);
    __atomic_fetch_add(&l->fill_ns, (long)(1e9 * (now_seconds() - t0)), __ATOMIC_RELAXED);
    return rc;
}

static int fill_batch(struct loader *l, struct batch *b, long k, struct error *e)
{
    const struct dataset *d = l->data;
    long start = k * l->opt.batch_size;
    long rows = l->n_samples - start < l->opt.batch_size ? l->n_samples - start
                                                         : l->opt.batch_size;
    b->index = k;
    b->rows = rows;
    b->y = b->x + rows * d->features; // packed: (rows, F) then (rows, O)
    for (long i = 0; i < rows; i++) {
        if (__atomic_load_n(&l->cancel, __ATOMIC_RELAXED) || dropped(l))
            return 1;
        long id = l->order[start + i];
        b->ids[i] = id;
        if (i + 4 < rows)
            dataset_prefetch(d, l->order[start + i + 4]);
        long bytes = 0;
        if (dataset_get(d, id, l->epoch, b->x + i * d->features, b->y + i * d->out_features,
                        &bytes, e))
            return -1;
        if (bytes)
            __atomic_fetch_add(&l->read_bytes, bytes, __ATOMIC_RELAXED);
    }
    if (l->opt.transform)
        return l->opt.transform(b, l->opt.transform_arg, e);
    return 0;
}

static struct batch *pop_free(struct loader *l)
{
    struct batch *b = l->free_list;
    if (b)
        l->free_list = b->next_free;
    return b;
}

static void *worker_main(void *arg)
{
    struct loader_worker *w = arg;
    struct loader *l = w->l;
    int n_workers = l->opt.num_workers;
    long done_gen = 0;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->stop && l->generation == done_gen)
            pthread_cond_wait(&l->cv_work, &l->mu);
        if (l->stop)
            break;
        long gen = l->generation;
        for (long k = w->id; k < l->n_batches; k += n_workers) {
            while (l->running && !(k < l->taken + l->window && l->free_list))
                pthread_cond_wait(&l->cv_work, &l->mu);
            if (!l->running)
                break;
            struct batch *b = pop_free(l);
            pthread_mutex_unlock(&l->mu);
            struct error err;
            int rc = fill(l, b, k, &err);
            pthread_mutex_lock(&l->mu);
            if (rc == 1) { // cancelled: nobody will take this batch
                b->next_free = l->free_list;
                l->free_list = b;
                break;
            }
            if (rc) {
                b->next_free = l->free_list;
                l->free_list = b;
                if (!l->failed || k < l->fail_index) { // report the first batch that failed
                    l->failed = true;
                    l->fail_index = k;
                    l->err = err;
                    error_wrap(&l->err, "loader worker %d, batch %ld", w->id, k);
                }
                pthread_cond_broadcast(&l->cv_ready);
                break;
            }
            l->ready[k % l->window] = b;
            pthread_cond_broadcast(&l->cv_ready);
        }
        done_gen = gen;
        l->active--;
        pthread_cond_broadcast(&l->cv_ready);
        if (!l->opt.persistent_workers)
            break;
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static void join_workers(struct loader *l)
{
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->cv_work);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < l->opt.num_workers; i++)
        pthread_join(l->workers[i].thread, NULL);
    l->threads_live = false;
    l->stop = false;
}

bool loader_order(long *order, long length, bool shuffle, unsigned long seed, long epoch,
                  bool stoppable)
{
    enum { CHECK_EVERY = 1 << 20 }; // a shuffle of 1e9 samples takes seconds
    for (long i = 0; i < length; i++)
        order[i] = i;
    if (!shuffle)
        return true;
    struct rng r; // Fisher-Yates from a stream of its own per epoch
    rng_init(&r, seed, RNG_SHUFFLE, (uint64_t)epoch);
    for (long i = length - 1; i > 0; i--) {
        if (stoppable && i % CHECK_EVERY == 0 && stop_requested())
            return false;
        long j = (long)rng_below(&r, (uint64_t)i + 1);
        long t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return true;
}

int loader_epoch_begin(struct loader *l, long epoch, struct error *e)
{
    l->epoch = epoch;
    /* one of several ranks shuffles to the end: the others would wait for it
     * in the step's allreduce, which carries the stop to every rank */
    if (!loader_order(l->perm, l->data->length, l->opt.shuffle, l->opt.seed, epoch,
                      l->opt.world <= 1))
        return error_set(e, "loader: interrupted while shuffling");
    /* DistributedSampler: positions rank, rank + world, ... of the permutation
     * padded (repeated from its start) to n_samples * world */
    for (long i = 0; l->order != l->perm && i < l->n_samples; i++)
        l->order[i] = l->perm[(l->opt.rank + i * l->opt.world) % l->data->length];
    pthread_mutex_lock(&l->mu);
    l->taken = 0;
    l->failed = false;
    l->read_bytes = 0;
    __atomic_store_n(&l->fill_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->cancel, 0, __ATOMIC_RELAXED);
    for (int i = 0; i < l->window; i++)
        l->ready[i] = NULL;
    if (l->opt.num_workers == 0) {
        pthread_mutex_unlock(&l->mu);
        return 0;
    }
    l->running = true;
    l->active = l->opt.num_workers;
    l->generation++;
    pthread_cond_broadcast(&l->cv_work);
    pthread_mutex_unlock(&l->mu);
    if (l->threads_live)
        return 0;
    for (int i = 0; i < l->opt.num_workers; i++) {
        l->workers[i] = (struct loader_worker){.l = l, .id = i};
        int rc = thread_start(&l->workers[i].thread, worker_main, &l->workers[i]);
        if (rc) {
            pthread_mutex_lock(&l->mu);
            l->running = false;
            l->active -= l->opt.num_workers - i;
            l->stop = true;
            pthread_cond_broadcast(&l->cv_work);
            pthread_mutex_unlock(&l->mu);
            for (int j = 0; j < i; j++)
                pthread_join(l->workers[j].thread, NULL);
            l->stop = false;
            l->active = 0; // a worker that saw stop first left without counting itself out
            return rlimits_thread_error(e, rc, "loader.num_workers",
                                       "loader: cannot start worker %d of %d", i,
                                       l->opt.num_workers);
        }
    }
    l->threads_live = true;
    return 0;
}

int loader_next(struct loader *l, struct batch **out, struct error *e)
{
    if (l->taken == l->n_batches)
        return 0;
    if (l->opt.num_workers == 0) {
        struct batch *b = pop_free(l);
        if (!b)
            return error_set(e, "loader: internal error: no free batch buffer");
        int rc = fill(l, b, l->taken, e);
        if (rc) {
            loader_release(l, b);
            if (rc == 1)
                return error_set(e, "loader: batch %ld cancelled: interrupted", l->taken);
            return error_wrap(e, "loader, batch %ld", l->taken);
        }
        l->taken++;
        *out = b;
        return 1;
    }
    pthread_mutex_lock(&l->mu);
    struct batch **slot = &l->ready[l->taken % l->window];
    /* batches before a failed one are still delivered, as PyTorch does; a
     * second signal cannot wake a condition variable, so the wait polls it */
    while (!*slot && !(l->failed && l->fail_index == l->taken)) {
        if (dropped(l)) {
            pthread_mutex_unlock(&l->mu);
            return error_set(e, "loader: batch %ld cancelled: interrupted", l->taken);
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000 * 1000;
        if (until.tv_nsec >= 1000 * 1000 * 1000) {
            until.tv_sec++;
            until.tv_nsec -= 1000 * 1000 * 1000;
        }
        pthread_cond_timedwait(&l->cv_ready, &l->mu, &until);
    }
    if (!*slot) {
        *e = l->err;
        pthread_mutex_unlock(&l->mu);
        return -1;
    }
    *out = *slot;
    *slot = NULL;
    l->taken++;
    pthread_cond_broadcast(&l->cv_work);
    pthread_mutex_unlock(&l->mu);
    return 1;
}

void loader_release(struct loader *l, struct batch *b)
{
    pthread_mutex_lock(&l->mu);
    b->next_free = l->free_list;
    l->free_list = b;
    pthread_cond_broadcast(&l->cv_work);
    pthread_mutex_unlock(&l->mu);
}

void loader_epoch_end(struct loader *l)
{
    if (l->opt.num_workers == 0)
        return;
    pthread_mutex_lock(&l->mu);
    l->running = false; // cancels what is still outstanding (early stop)
    __atomic_store_n(&l->cancel, 1, __ATOMIC_RELAXED); // ... even a batch half filled
    pthread_cond_broadcast(&l->cv_work);
    while (l->active > 0)
        pthread_cond_wait(&l->cv_ready, &l->mu);
    for (int i = 0; i < l->window; i++) { // batches filled but never taken
        if (l->ready[i]) {
            l->ready[i]->next_free = l->free_list;
            l->free_list = l->ready[i];
            l->ready[i] = NULL;
        }
    }
    pthread_mutex_unlock(&l->mu);
    if (!l->opt.persistent_workers && l->threads_live)
        join_workers(l);
}

void loader_free(struct loader *l)
{
    if (l->threads_live)
        join_workers(l);
    if (l->pool)
        for (int i = 0; i < l->n_buffers; i++) {
            if (l->pool[i].mem)
                l->opt.mem.free(l->pool[i].mem, l->opt.pin_memory);
            free(l->pool[i].ids);
        }
    free(l->pool);
    if (l->order != l->perm)
        free(l->order);
    free(l->perm);
    free(l->ready);
    free(l->workers);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv_work);
    pthread_cond_destroy(&l->cv_ready);
    memset(l, 0, sizeof *l);
}
