/* Config parsing: defaults, overrides, sweeps, and one check per class of bad
 * input: each must fail with a message naming where and what. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Parses text; returns the rc and leaves the message in e. */
static int parse(const char *text, size_t len, struct config *c, struct error *e)
{
    config_defaults(c);
    int rc = config_parse(c, text, len, "t.yaml", e);
    if (rc == 0)
        rc = config_validate(c, e);
    return rc;
}

/* Bad input must fail and the message must contain every given fragment. */
static void expect_error(const char *text, size_t len, ...)
{
    struct config c;
    struct error e = {{0}};
    if (parse(text, len, &c, &e) == 0)
        fail_msg("accepted: %.80s", text);
    va_list ap;
    va_start(ap, len);
    for (const char *frag; (frag = va_arg(ap, const char *));)
        if (!strstr(e.msg, frag))
            fail_msg("message '%s' lacks '%s' (input: %.60s)", e.msg, frag, text);
    va_end(ap);
    config_free(&c);
}
#define BAD(text, ...) expect_error(text, strlen(text), __VA_ARGS__, NULL)

static void test_defaults_are_the_tutorial(void **state)
{
    (void)state;
    struct config c;
    config_defaults(&c);
    assert_int_equal(c.dataset.length, 100);
    assert_int_equal(c.dataset.features, 5);
    assert_int_equal(c.model.out_features, 2);
    assert_int_equal(c.loader.batch_size, 30);
    assert_true(c.loader.shuffle);
    assert_false(c.loader.drop_last);
    assert_int_equal(c.loader.num_workers, 0);
    assert_int_equal(c.loader.prefetch_factor, 2);
    assert_int_equal(c.parallel.replicas, 1);
    assert_string_equal(c.parallel.device, "cpu");
    assert_string_equal(c.report.format, "text");
    assert_true(fabs(c.train.lr - 0.01) < 1e-12);
}

static void test_full_file(void **state)
{
    (void)state;
    const char *y = "name: t\nseed: 42\n"
                    "dataset: {kind: random, length: 1000, features: 8, noise: 0.5}\n"
                    "model:\n  out_features: 3\n"
                    "loader:\n  batch_size: 64\n  shuffle: false\n  num_workers: 2\n"
                    "  persistent_workers: yes\n"
                    "parallel:\n  device: auto\n  devices: [0, 0, 1]\n"
                    "report: {trace: true, format: json}\n"
                    "sweep:\n  loader.num_workers: [0, 2]\n  loader.pin_memory: [false, true]\n";
    struct config c;
    struct error e;
    if (parse(y, strlen(y), &c, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(c.seed, 42);
    assert_int_equal(c.dataset.length, 1000);
    assert_int_equal(c.model.out_features, 3);
    assert_false(c.loader.shuffle);
    assert_true(c.loader.persistent_workers);
    assert_int_equal(c.parallel.n_devices, 3);
    assert_int_equal(c.parallel.devices[2], 1);
    assert_string_equal(c.report.format, "json");
    assert_int_equal(c.n_sweep, 2);
    assert_string_equal(c.sweep[1].key, "loader.pin_memory");
    assert_int_equal(c.sweep[1].n_values, 2);
    config_free(&c);
}

static void test_set_and_sweep_args(void **state)
{
    (void)state;
    struct config c;
    struct error e;
    config_defaults(&c);
    assert_int_equal(config_set_arg(&c, "loader.num_workers=4", &e), 0);
    assert_int_equal(c.loader.num_workers, 4);
    assert_int_equal(config_set_arg(&c, "parallel.devices=[1,1]", &e), 0);
    assert_int_equal(c.parallel.n_devices, 2);
    assert_int_equal(config_sweep_arg(&c, "loader.batch_size=10,20,30", &e), 0);
    assert_int_equal(c.sweep[0].n_values, 3);
    /* a second --sweep of a key is refused; a list from the file is replaced */
    assert_int_equal(config_sweep_arg(&c, "loader.batch_size=7", &e), -1);
    assert_non_null(strstr(e.msg, "--sweep loader.batch_size: the key is given twice"));
    c.sweep[0].from_cli = false; /* as config_parse leaves it */
    assert_int_equal(config_sweep_arg(&c, "loader.batch_size=7", &e), 0);
    assert_int_equal(c.n_sweep, 1);
    assert_int_equal(c.sweep[0].n_values, 1);

    assert_int_equal(config_set_arg(&c, "loader.num_wrkers=4", &e), -1);
    assert_non_null(strstr(e.msg, "did you mean loader.num_workers?"));
    assert_int_equal(config_set_arg(&c, "num_workers=4", &e), -1);
    assert_non_null(strstr(e.msg, "did you mean loader.num_workers?"));
    assert_int_equal(config_set_arg(&c, "loader.batch_size=abc", &e), -1);
    assert_non_null(strstr(e.msg, "--set loader.batch_size=abc"));
    assert_non_null(strstr(e.msg, "expected an integer"));
    assert_int_equal(config_set_arg(&c, "noequals", &e), -1);
    assert_non_null(strstr(e.msg, "expected path=value"));
    assert_int_equal(config_sweep_arg(&c, "loader.num_workers=1,x", &e), -1);
    assert_non_null(strstr(e.msg, "found 'x'"));
    config_free(&c);
}

static void test_malformed_yaml(void **state)
{
    (void)state;
    BAD("loader: {batch_size: 3\n", "t.yaml:", "malformed YAML");
    BAD("loader:\n  batch_size: 3\n bad: 1\n", "t.yaml:3:", "malformed YAML");
    BAD("a: 'unterminated\n", "malformed YAML");
    BAD("loader:\n\tbatch_size: 3\n", "t.yaml:2:", "malformed YAML"); /* tabs */
}

static void test_not_a_mapping(void **state)
{
    (void)state;
    BAD("- 1\n- 2\n", "t.yaml:1:1", "must be a mapping", "a list");
    BAD("just text\n", "must be a mapping", "a scalar");
    BAD("loader: 5\n", "t.yaml:1:9", "loader: expected a mapping");
    BAD("name: t\n---\nname: u\n", "one YAML document");
}

static void test_empty(void **state)
{
    (void)state;
    BAD("", "empty config");
    BAD("# only a comment\n", "empty config");
    BAD("---\n", "empty config");
}

static void test_unknown_and_duplicate_keys(void **state)
{
    (void)state;
    BAD("loader:\n  num_wrkers: 2\n", "t.yaml:2:3", "unknown key 'loader.num_wrkers'",
        "did you mean loader.num_workers?");
    BAD("lodaer:\n  num_workers: 2\n", "unknown key 'lodaer'", "did you mean loader?");
    BAD("zz: 1\n", "unknown key 'zz'", "--help-config");
    BAD("epochs: 3\n", "did you mean train.epochs?");
    BAD("loader:\n  batch_size: 2\n  batch_size: 3\n", "t.yaml:3:3",
        "duplicate key 'loader.batch_size'");
    BAD("loader: {}\nloader: {}\n", "t.yaml:2:1", "duplicate key 'loader'");
    BAD("sweep:\n  nope.key: [1]\n", "unknown key 'nope.key'");
}

static void test_wrong_types(void **state)
{
    (void)state;
    BAD("loader:\n  batch_size: thirty\n", "t.yaml:2:15", "loader.batch_size",
        "expected an integer", "found 'thirty'");
    BAD("loader:\n  shuffle: maybe\n", "loader.shuffle", "expected true or false");
    BAD("train:\n  lr: fast\n", "train.lr", "expected a number");
    BAD("parallel:\n  device: tpu\n", "parallel.device", "expected one of cpu|cuda|emulated|auto",
        "found 'tpu'");
    BAD("loader:\n  batch_size: [1, 2]\n", "loader.batch_size", "expected a scalar value",
        "a list");
    BAD("parallel:\n  devices: [0, x]\n", "parallel.devices", "found 'x'");
    BAD("parallel:\n  devices: [[0]]\n", "parallel.devices", "expected a list of integers");
    BAD("loader:\n  batch_size: 3.5\n", "expected an integer");
    BAD("{[1]: 2}\n", "expected a key");
}

static void test_out_of_range(void **state)
{
    (void)state;
    BAD("loader:\n  batch_size: 0\n", "loader.batch_size", "[1, ", "found 0");
    BAD("loader:\n  num_workers: -1\n", "loader.num_workers", "found -1");
    BAD("loader:\n  num_workers: 2\n  prefetch_factor: 0\n", "loader.prefetch_factor",
        "found 0");
    BAD("parallel:\n  replicas: 0\n", "parallel.replicas", "found 0");
    BAD("parallel:\n  replicas: 100000\n", "parallel.replicas", "found 100000");
    BAD("train:\n  lr: .nan\n", "train.lr", "expected a number");
    BAD("train:\n  lr: .inf\n", "train.lr");
    BAD("train:\n  lr: 1e400\n", "train.lr", "finite");
    BAD("train:\n  lr: -0.1\n", "train.lr", "found -0.1");
    BAD("dataset:\n  length: 10\nloader:\n  batch_size: 11\n  drop_last: true\n",
        "no batch");
    BAD("parallel:\n  device: cpu\n  devices: [0, 1]\n", "parallel.devices", "cuda");
    BAD("parallel:\n  device: cuda\n  replicas: 3\n  devices: [0, 1]\n", "disagrees");
}

static void test_overflow(void **state)
{
    (void)state;
    BAD("seed: 99999999999999999999999\n", "seed", "overflows");
    BAD("dataset:\n  length: 9223372036854775808\n", "dataset.length", "overflows");
    BAD("seed: 9007199254740992\n", "seed", "[0, 9007199254740991]");
}

static void test_aliases_refused(void **state)
{
    (void)state;
    BAD("loader:\n  batch_size: &n 3\n  num_workers: *n\n", "t.yaml:3:16", "aliases");
    /* the classic billion-laughs shape never gets expanded */
    BAD("sweep:\n  loader.batch_size: &a [1, 2]\n  loader.num_workers: [*a, *a]\n", "aliases");
    BAD("sweep:\n  loader.batch_size: &a [1, 2]\n  loader.num_workers: *a\n", "t.yaml:3:23",
        "aliases");
    BAD("<<: *base\n", "aliases");
}

static void test_deep_nesting_and_long_strings(void **state)
{
    (void)state;
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 8);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    BAD(deep, "must be a mapping");
    memcpy(deep, "a: ", 3); /* a: [[[[... */
    BAD(deep, "t.yaml:1:");
    free(deep);

    size_t n = 100000;
    char *longs = malloc(n + 16);
    memcpy(longs, "name: ", 6);
    memset(longs + 6, 'x', n);
    longs[6 + n] = '\0';
    BAD(longs, "name", "expected a string of 1 to 255 bytes", "found 100000 bytes");
    memcpy(longs, "loader: {batch_size: ", 21);
    longs[6 + n] = '\0'; /* unclosed: the syntax error, not the value, is reported */
    BAD(longs, "t.yaml:2:1: malformed YAML: while parsing a flow mapping (from line 1, column 9)");
    longs[6 + n] = '}';
    longs[7 + n] = '\0';
    BAD(longs, "loader.batch_size", "bytes)");
    free(longs);
}

static void test_nul_and_invalid_utf8(void **state)
{
    (void)state;
    const char nul[] = "name: a\0b\n";
    expect_error(nul, sizeof nul - 1, "t.yaml:1:", NULL);
    BAD("name: \xff\xfe\n", "t.yaml:", "malformed YAML");
    BAD("name: caf\xc3\n", "malformed YAML");
}

static void test_files(void **state)
{
    (void)state;
    struct config c;
    struct error e;
    config_defaults(&c);
    assert_int_equal(config_load(&c, "/nonexistent/x.yaml", &e), -1);
    assert_non_null(strstr(e.msg, "/nonexistent/x.yaml: cannot open config"));
    assert_int_equal(config_load(&c, "/tmp", &e), -1);
    assert_non_null(strstr(e.msg, "not a regular file"));
    char path[] = "/tmp/dpbench-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "loader:\n  batch_size: 0\n", 24), 24);
    close(fd);
    assert_int_equal(config_load(&c, path, &e), -1);
    char want[64];
    snprintf(want, sizeof want, "%s:2:15: loader.batch_size", path);
    if (!strstr(e.msg, want))
        fail_msg("'%s' lacks '%s'", e.msg, want);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_the_tutorial),
        cmocka_unit_test(test_full_file),
        cmocka_unit_test(test_set_and_sweep_args),
        cmocka_unit_test(test_malformed_yaml),
        cmocka_unit_test(test_not_a_mapping),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_unknown_and_duplicate_keys),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_aliases_refused),
        cmocka_unit_test(test_deep_nesting_and_long_strings),
        cmocka_unit_test(test_nul_and_invalid_utf8),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
