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
    BAD(deep, "t.yaml:1:17: YAML nested deeper than 16 levels");
    memcpy(deep, "a: ", 3); /* a: [[[[... */
    BAD(deep, "t.yaml:1:", "nested deeper than 16 levels");
    free(deep);
    /* every way to nest, 5000 deep: refused at the 17th level, naming the
     * limit; 16 levels are read (and refused for their shape) */
    static const char *const open[] = {"[", "{a: ", "- ", "? ", "x:\n"};
    for (size_t i = 0; i < sizeof open / sizeof *open; i++)
        for (int levels = 16; levels <= 5000; levels += 5000 - 16) {
            size_t n = strlen(open[i]);
            size_t size = (i == 4 ? (size_t)levels + 16 : n) * (size_t)levels + 64;
            char *t = malloc(size), *p = t;
            for (int l = 0; l < levels; l++) {
                if (i == 4) // a block mapping: one more space of indent a level
                    p += sprintf(p, "%*sk%d:\n", l, "", l);
                else
                    p = (char *)memcpy(p, open[i], n) + n;
            }
            strcpy(p, i == 4 ? "" : "1\n");
            struct config c;
            struct error e = {{0}};
            int rc = parse(t, strlen(t), &c, &e);
            config_free(&c);
            assert_int_equal(rc, -1);
            if ((strstr(e.msg, "nested deeper than 16 levels") != NULL) != (levels > 16))
                fail_msg("%d levels of '%s': %s", levels, open[i], e.msg);
            free(t);
        }

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
    /* a "\0" escape in a quoted key, value, list item or sweep value (libyaml
     * gives its length; a C string would end there and drop the rest) */
    BAD("\"seed\\0junk\": 7\n", "t.yaml:1:1: config: a NUL byte", "after 'seed'");
    BAD("loader: {\"batch_size\\0x\": 7}\n", "t.yaml:1:10: loader: a NUL byte");
    BAD("sweep: {seed: [\"1\\0garbage\", \"2\"]}\n", "t.yaml:1:16: seed: a NUL byte");
    BAD("parallel: {devices: [\"0\\0junk\", 1]}\n", "parallel.devices: a NUL byte");
    BAD("parallel: {devices: \"\\0junk\"}\n", "NUL byte");
    BAD("name: \"a\\0b\"\n", "t.yaml:1:7: name: a NUL byte");
    BAD("name: \"a\\nb\\e[31m\\0c\"\n", "after 'a?b?[31m'"); /* control bytes shown as '?' */
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

/* value for key `path` through --set's route and through YAML's (a quoted
 * scalar keeps its spaces): accepted or not as `want`, an error naming the key */
static void number_case(const char *path, const char *value, bool want)
{
    struct config c;
    struct error e = {{0}};
    char yaml[256];
    const char *dot = strchr(path, '.');
    if (dot)
        snprintf(yaml, sizeof yaml, "%.*s:\n  %s: '%s'\n", (int)(dot - path), path, dot + 1,
                 value);
    else
        snprintf(yaml, sizeof yaml, "%s: '%s'\n", path, value);
    for (int route = 0; route < 2; route++) {
        config_defaults(&c);
        int rc = route == 0 ? config_set(&c, path, value, &e)
                            : config_parse(&c, yaml, strlen(yaml), "t.yaml", &e);
        config_free(&c);
        if (want && rc != 0)
            fail_msg("%s '%s' refused (%s): %s", path, value, route ? "YAML" : "--set", e.msg);
        if (!want && rc == 0)
            fail_msg("%s '%s' accepted (%s)", path, value, route ? "YAML" : "--set");
        if (!want && (!strstr(e.msg, path) ||
                      (!strstr(e.msg, "expected") && !strstr(e.msg, "control character"))))
            fail_msg("%s '%s': the message names neither key nor grammar: %s", path, value,
                     e.msg);
    }
}

/* One number grammar for every numeric key of the table, its list items
 * too: decimal digits (a real: with a point and exponent), a sign only where
 * the range is negative, no spaces, hex, inf or nan. */
static void test_number_grammar_every_key(void **state)
{
    (void)state;
    int numeric = 0;
    double min, max;
    const char *type;
    for (size_t i = 0; (type = config_key_type(i, &min, &max)); i++) {
        bool real = strcmp(type, "float") == 0 || strcmp(type, "floats") == 0;
        if (!real && strcmp(type, "int") != 0 && strcmp(type, "int list") != 0)
            continue;
        numeric++;
        const char *path = config_key_name(i);
        double in = min > 0 ? min : max >= 1 ? 1 : 0; // a value in range
        char v[64], b[96];
        snprintf(v, sizeof v, real ? "%.17g" : "%.0f", in);
        number_case(path, v, true);
        bool list = strchr(type, ' ') || strcmp(type, "floats") == 0;
        const char *bad[] = {"\t%s", "0x10", "0X1", "%s_0", "", " %s", "%s ", "%s\n", "1,0"};
        /* a list's items are trimmed of spaces and split at commas (YAML's
         * flow style; YAML folds a quoted newline into a space), and an
         * empty list is a list: its items are checked */
        for (size_t j = 0; j < sizeof bad / sizeof *bad - (list ? 5 : 0); j++) {
            snprintf(b, sizeof b, bad[j], v);
            number_case(path, b, false);
        }
        const char *bad_real[] = {"0x1p3", "inf", "nan", ".inf", ".nan", "INF", "1e", "1e+",
                                  ".", "e3", "1.2.3"};
        for (size_t j = 0; j < sizeof bad_real / sizeof *bad_real; j++)
            number_case(path, bad_real[j], false);
        if (real && max >= 1) { // the decimal forms of a real, of 1 where it is in range
            assert_true(min <= 1);
            for (const char *form = "1.0\0" "1.\0" ".1e1\0" "1e0\0" "1E-0\0" "10e-1\0"
                                    "0.1e+1\0" "1.00E0\0";
                 *form; form += strlen(form) + 1)
                number_case(path, form, true);
        } else if (real) { // ... else of 0.1 (bench.threshold: at most 0.5)
            assert_true(min <= 0.1 && max >= 0.1);
            for (const char *form = "0.1\0" ".1\0" "1e-1\0" "1E-1\0" "10e-2\0" "0.01e+1\0";
                 *form; form += strlen(form) + 1)
                number_case(path, form, true);
        } else {
            for (const char *form = "%s.0\0%se0\0%s.\0"; *form; form += strlen(form) + 1) {
                snprintf(b, sizeof b, form, v);
                number_case(path, b, false);
            }
            snprintf(b, sizeof b, "00%s", v); // leading zeros: decimal, never octal
            number_case(path, b, true);
        }
        snprintf(b, sizeof b, "+%s", v); // a sign only where negatives are in range
        number_case(path, b, min < 0);
        snprintf(b, sizeof b, "-%s", v);
        number_case(path, b, min < 0 && -in >= min);
        if (min >= 0) {
            struct config c;
            struct error e;
            config_defaults(&c);
            assert_int_equal(config_set(&c, path, b, &e), -1);
            if (!strstr(e.msg, "without a sign"))
                fail_msg("%s '%s': %s", path, b, e.msg);
        }
    }
    assert_true(numeric >= 20); // the table's ints, floats and lists were all seen
}

/* A plain YAML null (~, null, Null, NULL) reads as the empty value: out: ~
 * sets no folder (never one named "~"); a quoted "~" is the text itself. */
static void test_yaml_null_is_empty(void **state)
{
    (void)state;
    struct config c;
    struct error e;
    const char *nulls[] = {"report:\n  out: ~\n", "report:\n  out: null\n", "report:\n  out: NULL\n"};
    for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++) {
        assert_int_equal(parse(nulls[i], strlen(nulls[i]), &c, &e), 0);
        assert_string_equal(c.report.out, "");
        config_free(&c);
    }
    const char *quoted = "report:\n  out: \"~\"\n";
    assert_int_equal(parse(quoted, strlen(quoted), &c, &e), 0);
    assert_string_equal(c.report.out, "~");
    config_free(&c);
    const char *number = "train:\n  epochs: ~\n";
    assert_int_equal(parse(number, strlen(number), &c, &e), -1);
    config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_the_tutorial), cmocka_unit_test(test_yaml_null_is_empty),
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
        cmocka_unit_test(test_number_grammar_every_key),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
