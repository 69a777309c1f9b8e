/* The DataLoader: every sample exactly once per epoch, in-order delivery,
 * the same bytes whatever the worker count, and worker errors that reach the
 * consumer. PyTorch's semantics (docs/reference.md §3): at most num_workers x
 * prefetch_factor batches in flight, handed out round-robin, delivered in
 * order; a new seeded permutation per epoch with shuffle. */
#include "testutil.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

static void *host_alloc(size_t bytes, bool pinned, struct error *e)
{
    (void)pinned;
    void *p = malloc(bytes);
    if (!p)
        error_set(e, "out of memory");
    return p;
}

static void host_free(void *p, bool pinned)
{
    (void)pinned;
    free(p);
}

static struct loader_options options(long batch, int workers, int prefetch, bool persistent)
{
    return (struct loader_options){.batch_size = batch, .shuffle = true,
                                   .num_workers = workers, .prefetch_factor = prefetch,
                                   .persistent_workers = persistent, .seed = 7,
                                   .mem = {host_alloc, host_free}};
}

static void make_data(struct dataset *d, long length, long features)
{
    struct config c;
    struct error e;
    char len[32], feat[32];
    snprintf(len, sizeof len, "dataset.length=%ld", length);
    snprintf(feat, sizeof feat, "dataset.features=%ld", features);
    test_config(&c, len, feat, "seed=7", NULL);
    if (dataset_init(d, &c, &e))
        fail_msg("%s", e.msg);
}

/* Runs `epochs` epochs and checks each one: batches in order, sizes right,
 * every sample exactly once, rows match the dataset, and batch k holds
 * positions k*B.. of loader_order's order for the epoch (the order
 * `dpbench --export` writes). */
static void check_epochs(const struct dataset *d, struct loader_options o, int epochs)
{
    struct loader l;
    struct error e;
    if (loader_init(&l, d, &o, &e))
        fail_msg("%s", e.msg);
    char *seen = calloc((size_t)d->length, 1);
    long *order = malloc((size_t)d->length * sizeof *order);
    for (int ep = 0; ep < epochs; ep++) {
        memset(seen, 0, (size_t)d->length);
        loader_order(order, d->length, o.shuffle, o.seed, ep, true);
        assert_int_equal(loader_epoch_begin(&l, ep, &e), 0);
        struct batch *b;
        long k = 0, total = 0;
        int rc;
        while ((rc = loader_next(&l, &b, &e)) == 1) {
            assert_int_equal(b->index, k); /* delivered in order */
            long want = d->length - k * o.batch_size < o.batch_size ? d->length - k * o.batch_size
                                                                    : o.batch_size;
            assert_int_equal(b->rows, want);
            for (long i = 0; i < b->rows; i++) {
                long id = b->ids[i];
                assert_true(id >= 0 && id < d->length);
                assert_int_equal(id, order[k * o.batch_size + i]);
                if (seen[id])
                    fail_msg("workers %d prefetch %d: sample %ld twice in epoch %d",
                             o.num_workers, o.prefetch_factor, id, ep);
                seen[id] = 1;
                assert_memory_equal(b->x + i * d->features, d->x + id * d->features,
                                    (size_t)d->features * sizeof(float));
                assert_memory_equal(b->y + i * d->out_features, d->y + id * d->out_features,
                                    (size_t)d->out_features * sizeof(float));
            }
            total += b->rows;
            k++;
            loader_release(&l, b);
        }
        assert_int_equal(rc, 0);
        loader_epoch_end(&l);
        assert_int_equal(k, l.n_batches);
        assert_int_equal(total, d->length);
    }
    free(seen);
    free(order);
    loader_free(&l);
}

static void test_every_sample_once(void **state)
{
    (void)state;
    struct dataset d;
    make_data(&d, 1000, 3);
    const int workers[] = {0, 1, 2, 3, 4, 8};
    const int prefetch[] = {1, 2, 5};
    for (size_t w = 0; w < sizeof workers / sizeof *workers; w++)
        for (size_t p = 0; p < sizeof prefetch / sizeof *prefetch; p++)
            for (int persistent = 0; persistent < 2; persistent++) {
                check_epochs(&d, options(64, workers[w], prefetch[p], persistent), 3);
                check_epochs(&d, options(1, workers[w], prefetch[p], persistent), 1);
                check_epochs(&d, options(999, workers[w], prefetch[p], persistent), 2);
                check_epochs(&d, options(5000, workers[w], prefetch[p], persistent), 1);
            }
    dataset_free(&d);
}

static void test_drop_last(void **state)
{
    (void)state;
    struct dataset d;
    make_data(&d, 100, 5);
    struct loader_options o = options(30, 2, 2, false);
    o.drop_last = true;
    struct loader l;
    struct error e;
    assert_int_equal(loader_init(&l, &d, &o, &e), 0);
    assert_int_equal(l.n_batches, 3); /* 30, 30, 30; the 10 are dropped */
    assert_int_equal(loader_epoch_begin(&l, 0, &e), 0);
    struct batch *b;
    int n = 0;
    while (loader_next(&l, &b, &e) == 1) {
        assert_int_equal(b->rows, 30);
        loader_release(&l, b);
        n++;
    }
    assert_int_equal(n, 3);
    loader_epoch_end(&l);
    loader_free(&l);
    dataset_free(&d);
}

/* Collects an epoch's batches (ids, x) into one array. */
static void epoch_bytes(const struct dataset *d, struct loader_options o, long epoch, float *x,
                        long *ids)
{
    struct loader l;
    struct error e;
    assert_int_equal(loader_init(&l, d, &o, &e), 0);
    for (long ep = 0; ep <= epoch; ep++) {
        assert_int_equal(loader_epoch_begin(&l, ep, &e), 0);
        struct batch *b;
        long row = 0;
        while (loader_next(&l, &b, &e) == 1) {
            if (ep == epoch) {
                memcpy(x + row * d->features, b->x, (size_t)(b->rows * d->features) * sizeof(float));
                memcpy(ids + row, b->ids, (size_t)b->rows * sizeof(long));
            }
            row += b->rows;
            loader_release(&l, b);
        }
        loader_epoch_end(&l);
    }
    loader_free(&l);
}

static void test_bit_identical_across_workers(void **state)
{
    (void)state;
    struct dataset d;
    make_data(&d, 777, 4);
    size_t nx = (size_t)(d.length * d.features);
    float *x0 = malloc(nx * sizeof(float)), *x4 = malloc(nx * sizeof(float));
    long *i0 = malloc((size_t)d.length * sizeof(long)), *i4 = malloc((size_t)d.length * sizeof(long));
    for (long ep = 0; ep < 3; ep++) {
        epoch_bytes(&d, options(32, 0, 2, false), ep, x0, i0);
        epoch_bytes(&d, options(32, 4, 3, true), ep, x4, i4);
        assert_memory_equal(i0, i4, (size_t)d.length * sizeof(long));
        assert_memory_equal(x0, x4, nx * sizeof(float));
    }
    /* and a new permutation each epoch */
    long *i1 = malloc((size_t)d.length * sizeof(long));
    epoch_bytes(&d, options(32, 0, 2, false), 1, x4, i1);
    epoch_bytes(&d, options(32, 0, 2, false), 0, x0, i0);
    assert_memory_not_equal(i0, i1, (size_t)d.length * sizeof(long));
    free(x0), free(x4), free(i0), free(i4), free(i1);
    dataset_free(&d);
}

static void test_same_seed_same_data(void **state)
{
    (void)state;
    struct dataset a, b;
    make_data(&a, 3000, 7);
    make_data(&b, 3000, 7);
    assert_memory_equal(a.x, b.x, (size_t)(a.length * a.features) * sizeof(float));
    assert_memory_equal(a.y, b.y, (size_t)(a.length * a.out_features) * sizeof(float));
    dataset_free(&a);
    dataset_free(&b);
}

/* The dataset is built block by block on any number of threads; the bytes
 * must not depend on how many. 5000 x 64 -> 32 is five blocks and big enough
 * to be built in parallel. */
static void test_data_independent_of_build_threads(void **state)
{
    (void)state;
    struct config c;
    struct dataset one, many;
    struct error e;
    test_config(&c, "dataset.length=5000", "dataset.features=64", "model.out_features=32",
                "seed=11", NULL);
    if (dataset_build(&one, &c, 1, &e) || dataset_build(&many, &c, 3, &e))
        fail_msg("%s", e.msg);
    assert_memory_equal(one.x, many.x, (size_t)(one.length * one.features) * sizeof(float));
    assert_memory_equal(one.y, many.y, (size_t)(one.length * one.out_features) * sizeof(float));
    dataset_free(&one);
    dataset_free(&many);
}

static int fail_on_batch_3(struct batch *b, void *arg, struct error *e)
{
    (void)arg;
    if (b->index == 3)
        return error_set(e, "transform failed on purpose");
    return 0;
}

static void test_worker_error_reaches_consumer(void **state)
{
    (void)state;
    struct dataset d;
    make_data(&d, 200, 2);
    const int workers[] = {0, 1, 3};
    for (size_t w = 0; w < 3; w++)
        for (int persistent = 0; persistent < 2; persistent++) {
            struct loader_options o = options(10, workers[w], 2, persistent);
            o.transform = fail_on_batch_3;
            struct loader l;
            struct error e = {{0}};
            assert_int_equal(loader_init(&l, &d, &o, &e), 0);
            for (int ep = 0; ep < 2; ep++) { /* the loader stays usable after a failure */
                assert_int_equal(loader_epoch_begin(&l, ep, &e), 0);
                struct batch *b;
                int rc, got = 0;
                while ((rc = loader_next(&l, &b, &e)) == 1) {
                    got++;
                    loader_release(&l, b);
                }
                assert_int_equal(rc, -1);
                assert_int_equal(got, 3); /* batches 0..2 arrived, in order */
                assert_non_null(strstr(e.msg, "transform failed on purpose"));
                assert_non_null(strstr(e.msg, "batch 3"));
                loader_epoch_end(&l);
            }
            loader_free(&l);
        }
    dataset_free(&d);
}

static void test_early_stop(void **state)
{
    (void)state;
    /* The consumer leaves mid-epoch (a signal): workers must wind down. */
    struct dataset d;
    make_data(&d, 5000, 8);
    for (int persistent = 0; persistent < 2; persistent++) {
        struct loader_options o = options(16, 4, 4, persistent);
        struct loader l;
        struct error e;
        assert_int_equal(loader_init(&l, &d, &o, &e), 0);
        for (int ep = 0; ep < 3; ep++) {
            assert_int_equal(loader_epoch_begin(&l, ep, &e), 0);
            struct batch *b;
            for (int i = 0; i < 5; i++) {
                assert_int_equal(loader_next(&l, &b, &e), 1);
                assert_int_equal(b->index, i);
                loader_release(&l, b);
            }
            loader_epoch_end(&l);
        }
        check_epochs(&d, o, 1); /* and a fresh one still delivers everything */
        loader_free(&l);
    }
    dataset_free(&d);
}

static void test_sample_cost_with_workers(void **state)
{
    (void)state;
    /* dataset.sample_cost_us on several workers at once: the emulated cost
     * runs side by side (race-free under TSan) and changes no byte. */
    struct dataset d;
    make_data(&d, 300, 4);
    dataset_set_sample_cost(&d, 10);
    assert_true(d.cost_iters > 0);
    check_epochs(&d, options(7, 2, 2, false), 2);
    check_epochs(&d, options(7, 3, 1, true), 2);
    dataset_free(&d);
}

static void test_second_signal_cancels_in_flight(void **state)
{
    (void)state;
    /* Batches of 50 samples at 0.1 s each (5 s a batch): after a second stop
     * request the consumer's wait and the workers' fills end between samples. */
    struct dataset d;
    make_data(&d, 200, 4);
    dataset_set_sample_cost(&d, 100000);
    for (int workers = 0; workers <= 2; workers += 2) {
        struct loader_options o = options(50, workers, 2, false);
        struct loader l;
        struct error e;
        assert_int_equal(loader_init(&l, &d, &o, &e), 0);
        assert_int_equal(loader_epoch_begin(&l, 0, &e), 0);
        stop_request(SIGINT);
        stop_request(SIGINT);
        assert_true(abort_requested());
        double t0 = now_seconds();
        struct batch *b;
        assert_int_equal(loader_next(&l, &b, &e), -1);
        assert_non_null(strstr(e.msg, "interrupted"));
        loader_epoch_end(&l);
        loader_free(&l);
        double took = now_seconds() - t0;
        if (took > 2.5)
            fail_msg("workers %d: the cancelled batch took %.1f s to end", workers, took);
        train_stop = 0;
        train_abort = 0;
    }
    dataset_free(&d);
}

/* DistributedSampler (torch.utils.data.distributed): the single-process
 * permutation, padded by repeating its start to a multiple of the world (cut
 * with drop_last), rank r reading positions r, r + W, ...; all ranks read
 * the same number of samples, and together every sample at least once. */
static long *epoch_ids(const struct dataset *d, struct loader_options o, long epoch, long *n)
{
    struct loader l;
    struct error e;
    if (loader_init(&l, d, &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(loader_epoch_begin(&l, epoch, &e), 0);
    long *ids = malloc((size_t)(l.n_samples + 1) * sizeof(long)), got = 0;
    struct batch *b;
    while (loader_next(&l, &b, &e) == 1) {
        memcpy(ids + got, b->ids, (size_t)b->rows * sizeof(long));
        got += b->rows;
        loader_release(&l, b);
    }
    loader_epoch_end(&l);
    loader_free(&l);
    *n = got;
    return ids;
}

static void test_distributed_sampler(void **state)
{
    (void)state;
    struct dataset d;
    make_data(&d, 23, 3);
    for (int drop = 0; drop <= 1; drop++)
        for (int world = 1; world <= 5; world++) {
            struct loader_options o = options(4, world % 2, 2, false);
            o.drop_last = drop;
            o.batch_size = 1; // every sample of the rank, whatever drop_last does to batches
            long n_all;
            long *all = epoch_ids(&d, o, 3, &n_all); // one process: the permutation
            assert_int_equal(n_all, 23);
            long per = drop ? 23 / world : (23 + world - 1) / world;
            assert_int_equal(loader_samples(23, world, drop), per);
            for (int r = 0; r < world; r++) {
                o.rank = r;
                o.world = world;
                long n;
                long *ids = epoch_ids(&d, o, 3, &n);
                assert_int_equal(n, per);
                for (long i = 0; i < n; i++)
                    assert_int_equal(ids[i], all[(r + i * world) % 23]);
                free(ids);
            }
            free(all);
        }
    /* per-rank batches: 23 samples over 2 ranks = 12 each -> 5, 5, 2 */
    struct loader_options o = options(5, 0, 2, false);
    o.world = 2;
    o.rank = 1;
    struct loader l;
    struct error e;
    assert_int_equal(loader_init(&l, &d, &o, &e), 0);
    assert_int_equal(l.n_batches, 3);
    loader_free(&l);
    dataset_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_sample_once),
        cmocka_unit_test(test_drop_last),
        cmocka_unit_test(test_bit_identical_across_workers),
        cmocka_unit_test(test_same_seed_same_data),
        cmocka_unit_test(test_data_independent_of_build_threads),
        cmocka_unit_test(test_worker_error_reaches_consumer),
        cmocka_unit_test(test_early_stop),
        cmocka_unit_test(test_sample_cost_with_workers),
        cmocka_unit_test(test_second_signal_cancels_in_flight),
        cmocka_unit_test(test_distributed_sampler),
    };
    return cmocka_run_group_tests_name("loader", tests, NULL, NULL);
}
