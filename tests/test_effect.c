/* Which loader knobs act (effect.c): the one place the sweep's "same work as
 * point K" and the notes decide it. A backend says whether pin_memory and
 * async_copy act through its device_copies field, never through its name:
 * a device backend that copies (the cuda one, an emulated one) keeps them. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "testutil.h"

#include "effect.h"

/* Whether configs a and b (each "key=value" text, ";"-separated) are the
 * same work on backend be. */
static bool same_work(const char *a, const char *b, const struct backend *be)
{
    struct config ca, cb;
    char sa[256], sb[256];
    snprintf(sa, sizeof sa, "%s", a);
    snprintf(sb, sizeof sb, "%s", b);
    config_defaults(&ca);
    config_defaults(&cb);
    struct error e;
    for (char *t = strtok(sa, ";"); t; t = strtok(NULL, ";"))
        if (config_set_arg(&ca, t, &e))
            fail_msg("%s", e.msg);
    for (char *t = strtok(sb, ";"); t; t = strtok(NULL, ";"))
        if (config_set_arg(&cb, t, &e))
            fail_msg("%s", e.msg);
    cJSON *ja = effect_config(&ca, be), *jb = effect_config(&cb, be);
    bool same = cJSON_Compare(ja, jb, 1);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    config_free(&ca);
    config_free(&cb);
    return same;
}

static void test_knobs_without_effect(void **state)
{
    (void)state;
    const struct backend *cpu = &backend_cpu;
    /* no workers: prefetch_factor and persistent_workers act not */
    assert_true(same_work("loader.num_workers=0;loader.prefetch_factor=2",
                          "loader.num_workers=0;loader.prefetch_factor=4", cpu));
    assert_true(same_work("loader.num_workers=0", "loader.num_workers=0;"
                          "loader.persistent_workers=true", cpu));
    /* with workers they do */
    assert_false(same_work("loader.num_workers=1;loader.prefetch_factor=2",
                           "loader.num_workers=1;loader.prefetch_factor=4", cpu));
    assert_false(same_work("loader.num_workers=1",
                           "loader.num_workers=1;loader.persistent_workers=true", cpu));
    /* on the cpu the copy knobs act not ... */
    assert_true(same_work("loader.pin_memory=false", "loader.pin_memory=true", cpu));
    assert_true(same_work("loader.async_copy=false", "loader.async_copy=true;loader.copy_depth=4",
                          cpu));
    /* ... on a backend that copies to a device of its own they do, whatever its name */
    struct backend copying = backend_cpu;
    copying.device_copies = true;
    assert_false(same_work("loader.pin_memory=false", "loader.pin_memory=true", &copying));
    assert_false(same_work("loader.async_copy=false", "loader.async_copy=true", &copying));
    /* what is computed always counts */
    assert_false(same_work("loader.batch_size=30", "loader.batch_size=20", cpu));
    assert_false(same_work("parallel.replicas=1", "parallel.replicas=2", cpu));
}

static void test_notes(void **state)
{
    (void)state;
    struct config c;
    char buf[256];
    test_config(&c, "loader.pin_memory=true", NULL);
    effect_notes(&c, &backend_cpu, buf, sizeof buf);
    assert_string_equal(buf, "pin_memory and async_copy have no effect on the cpu backend");
    struct backend copying = backend_cpu;
    copying.device_copies = true;
    effect_notes(&c, &copying, buf, sizeof buf);
    assert_string_equal(buf, "");
    config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_knobs_without_effect),
        cmocka_unit_test(test_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
