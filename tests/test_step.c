/* The steps of step.c on the cpu backend, driven directly: a DDP world of
 * one is DataParallel with one replica bit for bit; W ranks (threads here,
 * with an allreduce over shared memory) each on every W-th row of a batch
 * learn what one replica learns on the whole batch; a hand-off that spins
 * (2 replicas on 2 free cores) and one that blocks agree. */
#include "testutil.h"

#include <pthread.h>

#include "chunk.h"
#include "step.h"

enum { F = 7, O = 3, N = 240, B = 24, EPOCHS = 5 };

struct data {
    float x[N * F], y[N * O];
    float w0[O * F + O];
};

static void data_make(struct data *d)
{
    unsigned s = 12345;
    for (int i = 0; i < N * F; i++)
        d->x[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / (1 << 24) - 0.5f;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < O; j++)
            d->y[i * O + j] = d->x[i * F + j] * 0.7f - d->x[i * F + j + 1] + 0.1f * (float)j;
    train_init_params(1, F, O, d->w0, d->w0 + O * F);
}

static void setup_for(struct backend_setup *s, const struct data *d, int replicas, long batch,
                      int cores)
{
    *s = (struct backend_setup){.features = F, .out_features = O, .batch_size = batch,
                                .replicas = replicas, .compute_cores = cores,
                                .w0 = d->w0, .b0 = d->w0 + O * F,
                                .blas_lib = test_blas_lib()};
}

/* A batch of `rows` rows starting at row `first`, every `stride`-th row,
 * scattered over `replicas` by torch.chunk (rows copied into xs, ys). */
static void batch_make(const struct data *d, long first, long stride, long rows, int replicas,
                       float *xs, float *ys, long *split, float **x, struct step_batch *b)
{
    for (long i = 0; i < rows; i++) {
        memcpy(xs + i * F, d->x + (first + i * stride) * F, F * sizeof(float));
        memcpy(ys + i * O, d->y + (first + i * stride) * O, O * sizeof(float));
    }
    int active = chunk_split(rows, replicas, split);
    for (int i = 0, row = 0; i < active; row += (int)split[i], i++)
        x[i] = xs + (size_t)row * F;
    *b = (struct step_batch){.rows = rows, .active = active, .split = split, .x = x, .y = ys};
}

/* DataParallel over `replicas` on batches of B rows; parameters into w. */
static void run_dp(const struct data *d, int replicas, int cores, float *w)
{
    struct backend_setup s;
    struct step st;
    struct error e;
    struct epoch_stats es = {0};
    float xs[B * F], ys[B * O], *x[16];
    long split[16];
    setup_for(&s, d, replicas, B, cores);
    if (step_init(&st, &backend_cpu, &s, &loss_mse, &e))
        fail_msg("%s", e.msg);
    for (int ep = 0; ep < EPOCHS; ep++)
        for (long k = 0; k < N / B; k++) {
            struct step_batch b;
            batch_make(d, k * B, 1, B, replicas, xs, ys, split, x, &b);
            b.index = k;
            if (step_dp(&st, &b, 0.05f, &es, &e))
                fail_msg("%s", e.msg);
        }
    assert_int_equal(es.samples, (long)EPOCHS * N);
    assert_true(es.loss_sum > 0);
    if (step_params(&st, w, w + O * F, &e))
        fail_msg("%s", e.msg);
    step_free(&st);
}

/* ---- W ranks as threads, their allreduce over shared memory ---------------- */

enum { W = 3 };

struct world {
    pthread_barrier_t bar;
    float *buf[W];
    size_t n;
};

struct rank {
    struct world *wd;
    const struct data *d;
    int r;
    float w[O * F + O];
    int rc;
};

static int shm_allreduce(void *arg, float *buf, size_t n, struct error *e)
{
    (void)e;
    struct rank *rk = arg;
    struct world *wd = rk->wd;
    wd->buf[rk->r] = buf;
    pthread_barrier_wait(&wd->bar);
    float sum[O * F + O];
    for (size_t i = 0; i < n; i++) { // every rank sums in rank order: identical results
        sum[i] = 0;
        for (int r = 0; r < W; r++)
            sum[i] += wd->buf[r][i];
    }
    pthread_barrier_wait(&wd->bar);
    memcpy(buf, sum, n * sizeof(float));
    return 0;
}

/* Rank r trains on rows r, r+W, ... of each global batch of B rows. */
static void *rank_main(void *arg)
{
    struct rank *rk = arg;
    struct backend_setup s;
    struct step st;
    struct error e;
    struct epoch_stats es = {0};
    const long local = B / W;
    float xs[B * F], ys[B * O], *x[1];
    long split[1];
    struct step_comm comm = {.world = W, .allreduce = shm_allreduce, .arg = rk};
    setup_for(&s, rk->d, 1, local, 1);
    rk->rc = -1;
    if (step_init(&st, &backend_cpu, &s, &loss_mse, &e))
        return NULL;
    for (int ep = 0; ep < EPOCHS; ep++)
        for (long k = 0; k < N / B; k++) {
            struct step_batch b;
            batch_make(rk->d, k * B + rk->r, W, local, 1, xs, ys, split, x, &b);
            b.index = k;
            if (step_ddp(&st, &b, 0.05f, &comm, &es, &e))
                goto out;
        }
    rk->rc = step_params(&st, rk->w, rk->w + O * F, &e);
out:
    step_free(&st);
    return NULL;
}

static void test_ddp_ranks_match_one_replica(void **state)
{
    (void)state;
    static struct data d;
    data_make(&d);
    float one[O * F + O];
    run_dp(&d, 1, 1, one);
    struct world wd = {.n = O * F + O};
    struct rank rk[W];
    pthread_t t[W];
    pthread_barrier_init(&wd.bar, NULL, W);
    for (int r = 0; r < W; r++) {
        rk[r] = (struct rank){.wd = &wd, .d = &d, .r = r};
        assert_int_equal(pthread_create(&t[r], NULL, rank_main, &rk[r]), 0);
    }
    for (int r = 0; r < W; r++)
        pthread_join(t[r], NULL);
    pthread_barrier_destroy(&wd.bar);
    for (int r = 0; r < W; r++) {
        assert_int_equal(rk[r].rc, 0);
        assert_memory_equal(rk[r].w, rk[0].w, sizeof rk[0].w); // ranks never drift apart
    }
    /* summed per rank, then across ranks: the batch's B products in another
     * order, EPOCHS * N / B steps (testutil.h's order_bound) */
    double diff = param_dist(rk[0].w, rk[0].w + O * F, one, one + O * F, O * F, O);
    test_print_dist("ddp ranks", diff, order_bound(EPOCHS * N / B, B, F));
    if (!(diff <= order_bound(EPOCHS * N / B, B, F)))
        fail_msg("%d ranks x batch %d differ from 1 replica x batch %d by %g", W, B / W, B, diff);
}

static void test_ddp_world_of_one_is_dp(void **state)
{
    (void)state;
    static struct data d;
    data_make(&d);
    float dp[O * F + O], ddp[O * F + O];
    run_dp(&d, 1, 1, dp);
    struct backend_setup s;
    struct step st;
    struct error e;
    struct epoch_stats es = {0};
    float xs[B * F], ys[B * O], *x[1];
    long split[1];
    setup_for(&s, &d, 1, B, 1);
    if (step_init(&st, &backend_cpu, &s, &loss_mse, &e))
        fail_msg("%s", e.msg);
    for (int ep = 0; ep < EPOCHS; ep++)
        for (long k = 0; k < N / B; k++) {
            struct step_batch b;
            batch_make(&d, k * B, 1, B, 1, xs, ys, split, x, &b);
            b.index = k;
            if (step_ddp(&st, &b, 0.05f, NULL, &es, &e))
                fail_msg("%s", e.msg);
        }
    if (step_params(&st, ddp, ddp + O * F, &e))
        fail_msg("%s", e.msg);
    step_free(&st);
    assert_memory_equal(ddp, dp, sizeof dp);
}

/* Spinning and blocking hand-offs, and several replica counts, agree with
 * one replica. */
static void test_handoffs_agree(void **state)
{
    (void)state;
    static struct data d;
    data_make(&d);
    float one[O * F + O], many[O * F + O];
    run_dp(&d, 1, 1, one);
    const int replicas[] = {2, 2, 3, 5}, cores[] = {2, 1, 4, 1}; // 2 on 2 cores spins
    for (int i = 0; i < 4; i++) {
        run_dp(&d, replicas[i], cores[i], many);
        double diff = param_dist(many, many + O * F, one, one + O * F, O * F, O);
        test_print_dist("handoff", diff, order_bound(EPOCHS * N / B, B, F));
        if (!(diff <= order_bound(EPOCHS * N / B, B, F))) // testutil.h
            fail_msg("%d replicas on %d cores differ from 1 replica by %g", replicas[i],
                     cores[i], diff);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ddp_world_of_one_is_dp),
        cmocka_unit_test(test_ddp_ranks_match_one_replica),
        cmocka_unit_test(test_handoffs_agree),
    };
    return cmocka_run_group_tests_name("step", tests, NULL, NULL);
}
