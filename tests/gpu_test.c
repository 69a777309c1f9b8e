/* GPU tests: the cuda backend learns what the cpu backend learns from the same
 * seed (1 replica, virtual replicas, real devices when there are several),
 * with pinned or pageable memory and sync or async copies; splits are
 * identical; an epoch stopped early drains cleanly; the loss and accuracy
 * kernels agree with the host's; runs leave no buffer behind. On the host
 * emulation (make test-cuda-emulated) also the classes of misuse it counts:
 * waits for the device inside a step, spinning waits, events per batch.
 * `make test-gpu` (a stage of `make test`) runs it on a real GPU, and skips
 * cleanly on a machine without a usable CUDA device. */
#include "testutil.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "backend.h"
#include "cuda_backend.h"
#include "loader.h"
#include "step.h"

/* A small run: 16 batches of 64 rows, the last of 40 (uneven chunks). */
static const char *const small[] = {
    "seed=3", "dataset.length=1000", "dataset.features=32", "model.out_features=4",
    "loader.batch_size=64", "train.epochs=4", "train.warmup_epochs=0", "train.lr=0.05", NULL,
};

static int n_devices;

/* The host emulation's counters and knobs (tests/fakecuda.c) when
 * DPBENCH_CUDART names it; NULL on a real GPU, where the tests that need
 * them say so and pass. */
static struct {
    long (*stat)(const char *name);
    void (*reset)(void);
    void (*set)(const char *name, long v);
} fake;

static void fake_find(void)
{
    const char *lib = getenv("DPBENCH_CUDART");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (!h)
        return;
    *(void **)&fake.stat = dlsym(h, "fake_stat");
    *(void **)&fake.reset = dlsym(h, "fake_stat_reset");
    *(void **)&fake.set = dlsym(h, "fake_set");
    if (!fake.reset || !fake.set)
        fake.stat = NULL;
}

static bool need_fake(void)
{
    if (!fake.stat)
        printf("  (a real GPU: this check needs the emulation's counters; skipped)\n");
    return fake.stat != NULL;
}

/* Defaults, then `base`, then `extra` ("key=value", NULL-terminated). */
static void make_config(struct config *c, const char *const *base, const char *const *extra)
{
    struct error e;
    test_defaults(c);
    for (int k = 0; k < 2; k++)
        for (const char *const *kv = k ? extra : base; kv && *kv; kv++)
            if (config_set_arg(c, *kv, &e))
                fail_msg("%s", e.msg);
    if (config_validate(c, &e))
        fail_msg("%s", e.msg);
}

static void run(const struct config *c, const struct backend *be, struct run_result *r)
{
    struct dataset d;
    struct error e;
    if (dataset_init(&d, c, &e))
        fail_msg("%s", e.msg);
    int rc = train_run(c, &d, be, NULL, r, NULL, &e);
    dataset_free(&d);
    if (rc)
        fail_msg("%s: %s", be->name, e.msg);
}

/* The cuda run `extra` against the cpu run with `replicas` replicas. */
static void check_against_cpu(const char *const *extra, const char *replicas)
{
    const char *cpu_extra[] = {replicas, NULL};
    struct config cc, gc;
    struct run_result cpu, gpu;
    make_config(&cc, small, cpu_extra);
    make_config(&gc, small, extra);
    run(&cc, &backend_cpu, &cpu);
    run(&gc, &backend_cuda, &gpu);

    char what[512] = "";
    for (const char *const *kv = extra; *kv; kv++)
        snprintf(what + strlen(what), sizeof what - strlen(what), " %s", *kv);
    int F = (int)cc.dataset.features, O = (int)cc.model.out_features;
    assert_int_equal(gpu.replicas, cpu.replicas);
    assert_int_equal(gpu.n_batches, cpu.n_batches);
    if (memcmp(gpu.splits, cpu.splits, (size_t)(cpu.n_batches * cpu.replicas) * sizeof(long)))
        fail_msg("%s: splits differ from the cpu's", what);
    /* cuBLAS (or the emulation's loops) sums in another order than the
     * cpu's BLAS: testutil.h's order_bound, parameters and losses */
    check_same_training(&gpu, &cpu, what);
    double bytes = (double)cc.dataset.length * (F + O) * sizeof(float);
    for (int k = 0; k < gpu.n_epochs; k++) {
        const struct epoch_result *g = &gpu.epochs[k];
        assert_int_equal(g->st.samples, cc.dataset.length);
        assert_true(g->st.copy_bytes == bytes);
        assert_true(g->st.copy_s > 0 && g->st.compute_s > 0 && g->st.wait_s >= 0);
        assert_true(g->st.hidden_s >= 0 && g->st.hidden_s <= g->st.copy_s * (1 + 1e-6));
        assert_true(g->st.copy_s < g->seconds * gpu.replicas && g->st.compute_s < g->seconds);
        assert_true(g->st.host_s > 0 && g->st.host_s < g->seconds);
    }
    run_result_free(&cpu);
    run_result_free(&gpu);
}

/* Every combination of pinned/pageable and sync/async for one layout;
 * pinned runs also go through loader workers, so the copy thread takes
 * batches from them. */
static void check_layout(const char *devices, const char *replicas)
{
    static const char *const knobs[][4] = {
        {"loader.pin_memory=false", "loader.async_copy=false", "loader.num_workers=0", NULL},
        {"loader.pin_memory=false", "loader.async_copy=true", "loader.num_workers=0", NULL},
        {"loader.pin_memory=true", "loader.async_copy=false", "loader.num_workers=2", NULL},
        {"loader.pin_memory=true", "loader.async_copy=true", "loader.num_workers=2", NULL},
    };
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        const char *extra[] = {"parallel.device=cuda", devices, knobs[i][0], knobs[i][1],
                               knobs[i][2], NULL};
        check_against_cpu(extra, replicas);
    }
}

static void test_one_replica(void **state)
{
    (void)state;
    check_layout("parallel.devices=[0]", "parallel.replicas=1");
}

static void test_three_virtual_replicas(void **state)
{
    (void)state;
    check_layout("parallel.devices=[0,0,0]", "parallel.replicas=3");
}

static void test_eight_virtual_replicas(void **state)
{
    (void)state;
    check_layout("parallel.devices=[0,0,0,0,0,0,0,0]", "parallel.replicas=8");
}

static void test_deep_ring(void **state)
{
    (void)state;
    const char *extra[] = {"parallel.device=cuda", "parallel.devices=[0,0]",
                           "loader.async_copy=true", "loader.copy_depth=5",
                           "loader.num_workers=3", "loader.persistent_workers=true", NULL};
    check_against_cpu(extra, "parallel.replicas=2");
}

static void test_real_devices(void **state)
{
    (void)state;
    if (n_devices < 2) {
        printf("  (one device: peer broadcast/gather/reduce not exercised)\n");
        return;
    }
    check_layout("parallel.devices=[0,1]", "parallel.replicas=2");
    check_layout("parallel.devices=[1,0,1,0]", "parallel.replicas=4");
    char all[256] = "parallel.replicas=", n[16];
    snprintf(n, sizeof n, "%d", n_devices > 8 ? 8 : n_devices);
    strcat(all, n);
    const char *extra[] = {"parallel.device=cuda", all, "loader.async_copy=true",
                           "loader.pin_memory=true", NULL};
    check_against_cpu(extra, all);
}

static void test_bad_device_id(void **state)
{
    (void)state;
    char ids[64];
    snprintf(ids, sizeof ids, "parallel.devices=[0,%d]", n_devices);
    const char *extra[] = {"parallel.device=cuda", ids, NULL};
    struct config c;
    struct dataset d;
    struct run_result r;
    struct error e;
    make_config(&c, small, extra);
    assert_int_equal(dataset_init(&d, &c, &e), 0);
    assert_int_equal(train_run(&c, &d, &backend_cuda, NULL, &r, NULL, &e), -1);
    dataset_free(&d);
    if (!strstr(e.msg, "does not exist"))
        fail_msg("unexpected error: %s", e.msg);
}

/* How drive() runs the backend: the step's knobs, and which epochs stop
 * early (after `stop_after` batches, as on SIGINT; none when it is
 * negative; the last epoch runs whole). */
struct drive {
    bool async, pinned;
    int workers, replicas;      // replicas on device 0 (3 unless set)
    long epochs, stop_after;    // 4 unless set
    const struct loss_fn *loss; // loss_mse unless set
    bool classify;
    struct epoch_stats sum;     // out: every epoch's, added up
    float w[4 * 32 + 4];        // out: the final parameters (small's O x F then O)
};

/* Drives the backend like train.c. */
static void drive(struct drive *o)
{
    struct config c;
    struct dataset d;
    struct loader l;
    struct error e;
    make_config(&c, small, NULL);
    assert_int_equal(dataset_init(&d, &c, &e), 0);
    const struct backend *be = &backend_cuda;
    int F = d.features, O = d.out_features, depth = 2, n = o->replicas ? o->replicas : 3;
    long epochs = o->epochs ? o->epochs : 4;
    float *w0 = calloc((size_t)(O * F + O), sizeof(float));
    assert_non_null(w0);
    long ids[8] = {0};
    struct loader_options lo = {.batch_size = c.loader.batch_size, .shuffle = true,
                                .num_workers = o->workers, .prefetch_factor = 2,
                                .persistent_workers = true, .pin_memory = o->pinned,
                                .extra_buffers = o->async ? depth : 0, .seed = 1,
                                .mem = {be->host_alloc, be->host_free}};
    struct backend_setup s = {.features = F, .out_features = O,
                              .batch_size = c.loader.batch_size, .replicas = n,
                              .device_ids = ids, .pin_memory = o->pinned, .async_copy = o->async,
                              .copy_depth = depth, .w0 = w0, .b0 = w0 + O * F,
                              .classify = o->classify};
    struct step sp;
    if (step_init(&sp, be, &s, o->loss ? o->loss : &loss_mse, &e) || loader_init(&l, &d, &lo, &e))
        fail_msg("%s", e.msg);
    void *ctx = sp.ctx;
    memset(&o->sum, 0, sizeof o->sum);
    for (long ep = 0; ep < epochs; ep++) {
        struct epoch_stats st = {0};
        struct step_batch *b;
        long limit = ep == epochs - 1 || o->stop_after < 0 ? l.n_batches : o->stop_after, taken = 0;
        if (loader_epoch_begin(&l, ep, &e) || be->epoch_begin(ctx, &l, &e))
            fail_msg("%s", e.msg);
        while (taken < limit) {
            int got = be->next(ctx, &l, &b, &st, &e);
            if (got < 0)
                fail_msg("%s", e.msg);
            if (got == 0)
                break;
            assert_int_equal(b->index, taken);
            if (step_dp(&sp, b, 0.01f, &st, &e))
                fail_msg("%s", e.msg);
            be->release(ctx, &l, b);
            taken++;
        }
        if (be->epoch_end(ctx, &st, &e))
            fail_msg("%s", e.msg);
        loader_epoch_end(&l);
        assert_int_equal(taken, limit);
        if (ep == epochs - 1)
            assert_int_equal(st.samples, d.length);
        o->sum.samples += st.samples, o->sum.loss_sum += st.loss_sum;
        o->sum.correct += st.correct, o->sum.compute_s += st.compute_s;
        o->sum.host_s += st.host_s;
    }
    if (step_params(&sp, o->w, o->w + O * F, &e))
        fail_msg("%s", e.msg);
    step_free(&sp);
    loader_free(&l);
    dataset_free(&d);
    free(w0);
}

static void run_stopping(bool async, bool pinned, int workers, long stop_after)
{
    struct drive o = {.async = async, .pinned = pinned, .workers = workers,
                      .stop_after = stop_after};
    drive(&o);
}

static void test_early_stop(void **state)
{
    (void)state;
    for (long stop = 0; stop <= 3; stop += 3) {
        run_stopping(true, true, 2, stop);
        run_stopping(true, false, 0, stop);
        run_stopping(false, true, 0, stop);
    }
}

/* Labelled data and cross-entropy: the loss and the accuracy count are
 * kernels on device 0, so no step waits for its stream (the host path waits
 * twice a step); a loss without a kernel falls back to its host function and
 * learns the same. The two differ only in exp and log (the device's libm
 * against the host's, a few ulp of a double), so after float rounding d may
 * differ in its last bit: over 32 steps of lr 0.01 the parameters agree to
 * 1e-5 of their largest, and a prediction may flip once an epoch. */
static void test_loss_on_device(void **state)
{
    (void)state;
    struct drive dev = {.loss = &loss_cross_entropy, .classify = true, .replicas = 1,
                        .epochs = 2, .stop_after = -1};
    if (fake.stat)
        fake.reset();
    drive(&dev);
    long steps = 2 * 16, syncs = fake.stat ? fake.stat("stream_syncs") : 0;
    if (syncs >= steps / 2)
        fail_msg("%ld stream synchronisations in %ld steps: the loss waits for its stream", syncs,
                 steps);
    struct loss_fn no_kernel = loss_cross_entropy;
    no_kernel.device_kernel = NULL;
    struct drive host = dev;
    host.loss = &no_kernel;
    drive(&host);
    assert_true(dev.sum.correct > 0 && dev.sum.correct <= dev.sum.samples);
    if (labs(dev.sum.correct - host.sum.correct) > 2)
        fail_msg("correct predictions: %ld by the kernel, %ld on the host", dev.sum.correct,
                 host.sum.correct);
    double most = 0, diff = 0;
    for (size_t i = 0; i < sizeof dev.w / sizeof dev.w[0]; i++) {
        most = fmax(most, fabs(host.w[i]));
        diff = fmax(diff, fabs(dev.w[i] - host.w[i]));
    }
    if (diff > 1e-5 * most)
        fail_msg("parameters: the kernel's and the host's differ by %g (largest %g)", diff, most);
    assert_true(fabs(dev.sum.loss_sum - host.sum.loss_sum) <= 1e-5 * fabs(host.sum.loss_sum));
}

/* The host's overhead per step is its issuing only: with each emulated
 * compute op taking 2 ms, a labelled cross-entropy step keeps the device
 * busy over 10 ms while the host issues its dozen calls in well under one. */
static void test_host_overhead(void **state)
{
    (void)state;
    if (!need_fake())
        return;
    fake.set("kernel_us", 2000);
    struct drive o = {.loss = &loss_cross_entropy, .classify = true, .replicas = 1,
                      .epochs = 1, .stop_after = -1};
    drive(&o);
    fake.set("kernel_us", 0);
    if (!(o.sum.host_s < 0.1 * o.sum.compute_s))
        fail_msg("host overhead %.4f s against the device's %.4f s: the host waited for the "
                 "device inside its steps", o.sum.host_s, o.sum.compute_s);
}

/* Host threads sleep while they wait for the device when they must (the
 * policy below): with each emulated compute op taking 0.5 ms, the copy thread
 * (async, pinned) and the training thread (the run-ahead limit, the epoch's
 * end) wait often, and under DPBENCH_CUDA_SYNC=block no wait may spin. The
 * same run with spin must spin, or the count would prove nothing; auto does
 * what the policy says for this machine's cores and the run's 2 workers. */
static void test_waits_block(void **state)
{
    (void)state;
    if (!need_fake())
        return;
    fake.set("kernel_us", 500);
    const char *modes[] = {"spin", "block", "auto"};
    long spare = sysconf(_SC_NPROCESSORS_ONLN) - 2; // cores beside the 2 workers
    for (int m = 0; m < 3; m++) {
        setenv("DPBENCH_CUDA_SYNC", modes[m], 1);
        bool blocks = m == 1 || (m == 2 && spare < 2); // async: 2 waiting threads
        fake.reset();
        struct drive o = {.async = true, .pinned = true, .workers = 2, .epochs = 1,
                          .stop_after = -1};
        drive(&o);
        long spun = fake.stat("max_spin_us");
        if (blocks ? spun > 0 : spun == 0)
            fail_msg("DPBENCH_CUDA_SYNC=%s (%ld spare cores): the longest wait spun %ld us",
                     modes[m], spare, spun);
    }
    unsetenv("DPBENCH_CUDA_SYNC");
    fake.set("kernel_us", 0);
}

/* The waiting policy: sleep only when the waiting threads would take a core
 * the loader's workers need, unless DPBENCH_CUDA_SYNC forces it. */
static void test_sync_policy(void **state)
{
    (void)state;
    unsetenv("DPBENCH_CUDA_SYNC");
    assert_false(cuda_blocking(4, 2)); // cores to spare: spin
    assert_false(cuda_blocking(1, 1));
    assert_true(cuda_blocking(1, 2));  // the copy thread would take a worker's core
    assert_true(cuda_blocking(0, 1));  // the workers take every core
    assert_true(cuda_blocking(-3, 1));
    setenv("DPBENCH_CUDA_SYNC", "spin", 1);
    assert_false(cuda_blocking(0, 2));
    setenv("DPBENCH_CUDA_SYNC", "block", 1);
    assert_true(cuda_blocking(16, 1));
    unsetenv("DPBENCH_CUDA_SYNC");
}

/* The epoch's timeline reuses a ring of events: a run whose epochs have
 * four times the batches creates no more of them. */
static void test_event_ring(void **state)
{
    (void)state;
    if (!need_fake())
        return;
    long created[2];
    for (int i = 0; i < 2; i++) {
        const char *extra[] = {"parallel.device=cuda", "parallel.devices=[0,0]",
                               i ? "dataset.length=4000" : "dataset.length=1000", NULL};
        struct config c;
        struct run_result r;
        make_config(&c, small, extra);
        fake.reset();
        run(&c, &backend_cuda, &r);
        run_result_free(&r);
        created[i] = fake.stat("events_created");
    }
    if (created[1] != created[0])
        fail_msg("events created: %ld for 16 batches an epoch, %ld for 63", created[0], created[1]);
}

/* Every buffer the backend allocates (device memory, pinned host blocks) is
 * freed by its teardown: its own count is back to zero after runs of each
 * kind, early stops included. The emulation's free memory counts this
 * process's allocations only, so there it must come back to the byte too; a
 * real GPU's is device-wide (other processes, the driver's own pools), so
 * it is not read there. */
static void test_no_leak(void **state)
{
    (void)state;
    const char *const kinds[][4] = {
        {"parallel.devices=[0,0,0]", "loader.async_copy=true", "loader.pin_memory=true", NULL},
        {"parallel.devices=[0]", "loader.async_copy=false", "loader.pin_memory=false", NULL},
    };
    struct run_result r;
    struct config c;
    size_t before = 0, after = 0, total = 0;
    long live = cuda_buffers_live(); // 0 unless a failed test left its run behind
    if (fake.stat)
        assert_int_equal(cudaMemGetInfo(&before, &total), cudaSuccess);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const char *extra[] = {"parallel.device=cuda", kinds[k][0], kinds[k][1], kinds[k][2], NULL};
        make_config(&c, small, extra);
        run(&c, &backend_cuda, &r);
        run_result_free(&r);
        if (cuda_buffers_live() != live)
            fail_msg("%s: %ld buffers left after the run", kinds[k][0], cuda_buffers_live() - live);
    }
    run_stopping(true, true, 2, 2);
    if (cuda_buffers_live() != live)
        fail_msg("an early stop left %ld buffers", cuda_buffers_live() - live);
    if (fake.stat) {
        assert_int_equal(cudaMemGetInfo(&after, &total), cudaSuccess);
        if (after != before)
            fail_msg("device memory leaked: %zu bytes free before, %zu after", before, after);
    }
}

/* gpu_test --count: the devices CUDA can see (CUDA_VISIBLE_DEVICES and
 * MIG as the runtime applies them), 0 with why on stderr; for
 * scripts/gpu-bench.sh. */
static int count_devices(void)
{
    struct error e;
    int n = 0;
    if (backend_cuda.probe(&e))
        fprintf(stderr, "%s\n", e.msg);
    else if (cudaGetDeviceCount(&n) != cudaSuccess)
        n = 0;
    printf("%d\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    struct error e;
    if (argc > 1 && strcmp(argv[1], "--count") == 0)
        return count_devices();
    if (backend_cuda.probe(&e)) {
        const char *why = e.msg;
        if (strncmp(why, "no CUDA device: ", 16) == 0)
            why += 16;
        printf("skipped: no CUDA device (%s)\n", why);
        return 0;
    }
    if (cudaGetDeviceCount(&n_devices) != cudaSuccess)
        n_devices = 1;
    char desc[512];
    backend_cuda.describe(desc, sizeof desc);
    printf("# devices: %s\n", desc);
    fake_find();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_replica),
        cmocka_unit_test(test_three_virtual_replicas),
        cmocka_unit_test(test_eight_virtual_replicas),
        cmocka_unit_test(test_deep_ring),
        cmocka_unit_test(test_real_devices),
        cmocka_unit_test(test_bad_device_id),
        cmocka_unit_test(test_early_stop),
        cmocka_unit_test(test_loss_on_device),
        cmocka_unit_test(test_host_overhead),
        cmocka_unit_test(test_waits_block),
        cmocka_unit_test(test_sync_policy),
        cmocka_unit_test(test_event_ring),
        cmocka_unit_test(test_no_leak),
    };
    return cmocka_run_group_tests_name("gpu", tests, NULL, NULL);
}
