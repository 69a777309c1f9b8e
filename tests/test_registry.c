/* The plug-in tables (loss.c, backends.c, comm.c, dataset_kinds.c) are the only lists of
 * their plug-ins: every value a config key accepts resolves in its table, the
 * table's entries agree with the structs they point to, and --help-config's
 * allowed values are the table's names. A name added to a key's choices but
 * not to its table (or the reverse) fails here. */
#include "testutil.h"

#include "backend.h"
#include "comm.h"
#include "estimate.h"
#include "dataset_kind.h"
#include "loss.h"

/* Calls fn on each of path's allowed values other than "auto". */
static void each_choice(const char *path, void (*fn)(const char *name))
{
    char buf[256];
    assert_int_equal(config_key_choices(path, buf, sizeof buf), 0);
    int n = 0;
    for (char *save = NULL, *v = strtok_r(buf, "|", &save); v; v = strtok_r(NULL, "|", &save))
        if (strcmp(v, "auto") != 0) {
            fn(v);
            n++;
        }
    assert_true(n > 0);
}

static void loss_resolves(const char *name)
{
    const struct loss_fn *l = loss_find(name);
    if (!l)
        fail_msg("model.loss accepts %s, which loss_find cannot resolve", name);
    assert_string_equal(l->name, name);
    assert_non_null(l->host);
    assert_non_null(l->grad_scale);
    assert_non_null(l->sample_sum);
    struct config c;
    config_defaults(&c);
    struct error e;
    char kv[64];
    snprintf(kv, sizeof kv, "model.loss=%s", name);
    assert_int_equal(config_set_arg(&c, kv, &e), 0);
    config_free(&c);
}

static void test_losses(void **state)
{
    (void)state;
    each_choice("model.loss", loss_resolves);
    size_t n = 0;
    while (loss_name(n))
        assert_non_null(loss_find(loss_name(n++)));
    assert_true(n >= 2);
    /* auto: mse for the random dataset's targets, cross-entropy for labels */
    assert_ptr_equal(loss_auto(false), &loss_mse);
    assert_ptr_equal(loss_auto(true), &loss_cross_entropy);
    assert_null(loss_find("auto"));
}

/* a backend name is in the table; where built, its struct carries the name */
static void backend_known(const char *name)
{
    size_t i = 0;
    while (backend_name(i) && strcmp(backend_name(i), name) != 0)
        i++;
    if (!backend_name(i))
        fail_msg("parallel.device accepts %s, which backends.c's table lacks", name);
    assert_ptr_equal(backend_find(name), backend_at(i));
    if (backend_at(i))
        assert_string_equal(backend_at(i)->name, name);
}

static void test_backends(void **state)
{
    (void)state;
    each_choice("parallel.device", backend_known);
    assert_ptr_equal(backend_find("cpu"), &backend_cpu);
    assert_false(backend_cpu.device_memory);
    /* --version lists the backends built in, in table order; cuda where
     * the toolkit was found */
    char want[256] = "";
    for (size_t i = 0; backend_name(i); i++)
        if (backend_at(i))
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", want[0] ? " " : "",
                     backend_name(i));
    assert_string_equal(backend_list(), want);
#ifdef DPBENCH_HAVE_CUDA
    assert_ptr_equal(backend_find("cuda"), &backend_cuda);
#else
    assert_null(backend_find("cuda"));
#endif
    assert_true(backend_emulated.device_copies && !backend_emulated.device_memory);
    assert_null(backend_find("auto"));
}

/* What other code knows of a backend comes from its struct, not its name:
 * parallel.devices' ids are accepted where its replicas run on devices, the
 * memory estimate counts its replicas' buffers on the host unless they live
 * in device memory, and its threads as BLAS callers where it computes on the
 * host. */
static void test_backend_fields(void **state)
{
    (void)state;
    struct config c;
    struct estimate host, est;
    struct error e;
    config_defaults(&c);
    assert_int_equal(estimate_host(&c, &host), 0); // the cpu's
    assert_true(host.host_threads);
    for (size_t i = 0; backend_name(i); i++) {
        const struct backend *be = backend_at(i);
        if (!be)
            continue;
        snprintf(c.parallel.device, sizeof c.parallel.device, "%s", be->name);
        c.parallel.n_devices = 1;
        if (be->has_devices)
            assert_int_equal(config_validate(&c, &e), 0);
        else
            assert_int_equal(config_validate(&c, &e), -1);
        c.parallel.n_devices = 0;
        assert_int_equal(estimate_host(&c, &est), 0);
        assert_int_equal(est.host_threads, be->host_math);
        if (be->device_memory)
            assert_true(est.model < host.model);
        else
            assert_int_equal(est.model, host.model);
    }
    /* auto: a backend of the table, with a reason when it fell back */
    char why[256];
    const struct backend *a = backend_auto(why, sizeof why);
    assert_non_null(a);
    assert_ptr_equal(backend_find(a->name), a);
    config_free(&c);
}

static void engine_known(const char *name)
{
    size_t i = 0;
    while (comm_engine_name(i) && strcmp(comm_engine_name(i), name) != 0)
        i++;
    if (!comm_engine_name(i))
        fail_msg("parallel.comm accepts %s, which comm.c's table lacks", name);
    const struct comm_engine *eng = comm_engine_at(i);
    if (eng) {
        assert_string_equal(eng->name, name);
        assert_int_equal(eng->device_memory, comm_engine_device_memory(name));
    }
}

static void test_comm_engines(void **state)
{
    (void)state;
    each_choice("parallel.comm", engine_known);
    /* auto: mpi for host memory, nccl for device memory */
    assert_string_equal(comm_auto(false), "mpi");
    assert_string_equal(comm_auto(true), "nccl");
    char want[64] = "";
#ifdef DPBENCH_HAVE_MPI
    strcat(want, "mpi");
#endif
#ifdef DPBENCH_HAVE_NCCL
    strcat(want, " nccl");
#endif
    assert_string_equal(comm_engines(), want);
}

/* a dataset.kind value is in the table, and its struct can build or load it */
static void kind_resolves(const char *name)
{
    const struct dataset_kind *k = dataset_kind_find(name);
    if (!k)
        fail_msg("dataset.kind accepts %s, which dataset_kinds.c's table lacks", name);
    assert_string_equal(k->name, name);
    if (k->labelled)
        assert_true(k->load && k->label_where && !k->build);
    else
        assert_true(k->build && !k->load);
    struct config c;
    config_defaults(&c);
    struct error e;
    char kv[64];
    snprintf(kv, sizeof kv, "dataset.kind=%s", name);
    assert_int_equal(config_set_arg(&c, kv, &e), 0);
    assert_ptr_equal(dataset_kind_of(&c), k);
    config_free(&c);
}

/* The name lists' joiner: words in order, cut at a whole word when full. */
static void test_words_append(void **state)
{
    (void)state;
    char b[12];
    size_t u = 0;
    u = words_append(b, sizeof b, u, "cpu");
    u = words_append(b, sizeof b, u, "cuda");
    assert_string_equal(b, "cpu cuda");
    assert_int_equal(u, 8);
    u = words_append(b, sizeof b, u, "emulated"); // 17 characters: does not fit
    assert_string_equal(b, "cpu cuda");
    assert_int_equal(u, sizeof b);
    assert_int_equal(words_append(b, sizeof b, u, "x"), sizeof b); // full stays full
    assert_string_equal(b, "cpu cuda");
}

static void test_dataset_kinds(void **state)
{
    (void)state;
    each_choice("dataset.kind", kind_resolves);
    size_t n = 0;
    while (dataset_kind_name(n))
        assert_non_null(dataset_kind_find(dataset_kind_name(n++)));
    assert_true(n >= 4);
    assert_ptr_equal(dataset_kind_find("random"), &dataset_kind_random);
    assert_false(dataset_kind_random.labelled);
    assert_null(dataset_kind_find("auto"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_losses),
        cmocka_unit_test(test_backends),
        cmocka_unit_test(test_backend_fields),
        cmocka_unit_test(test_comm_engines),
        cmocka_unit_test(test_dataset_kinds),
        cmocka_unit_test(test_words_append),
    };
    return cmocka_run_group_tests_name("registry", tests, NULL, NULL);
}
