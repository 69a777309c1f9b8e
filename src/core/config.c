/* Config keys, declared once in `keys[]`, and the YAML reader built on
 * libyaml's event parser. The reader accepts exactly the shape dpbench uses
 * (a mapping of scalars and sections, sections of scalars or scalar lists, and
 * `sweep:` of key -> list) and refuses anything else at the first event that
 * does not fit, so deep nesting or alias bombs never get expanded. */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

enum key_type { KEY_INT, KEY_BOOL, KEY_FLOAT, KEY_STRING, KEY_ENUM, KEY_INT_LIST, KEY_FLOAT_LIST };

struct key {
    const char *path;
    enum key_type type;
    size_t offset;       // into struct config
    const char *def;     // default, as text; parsed by the same setter as input
    double min, max;     // inclusive range for numbers, list items and string lengths
    const char *choices; // "a|b|c" for KEY_ENUM; "*" stands for a plug-in table's names
    unsigned flags;      // KEY_DATA or 0
    const char *help;
};

/* the dataset depends on the key: points that differ in it cannot share one */
#define KEY_DATA 1u

#define OFF(field) offsetof(struct config, field)
#define MAX_SAFE_INT 9007199254740991.0 // 2^53 - 1

static const struct key keys[] = {
    {"name", KEY_STRING, OFF(name), "tutorial", 1, CONFIG_STR - 1, NULL, 0,
     "run name, used in result file names"},
    {"seed", KEY_INT, OFF(seed), "0", 0, MAX_SAFE_INT, NULL, KEY_DATA,
     "seeds the data, the teacher, the initial weights and the shuffles"},
    {"dataset.kind", KEY_ENUM, OFF(dataset.kind), "random", 0, 0, "*", KEY_DATA,
     "random: the tutorial's RandomDataset with teacher targets; else labelled files at dataset.path"},
    {"dataset.length", KEY_INT, OFF(dataset.length), "100", 1, 1e9, NULL, KEY_DATA,
     "samples in the dataset"},
    {"dataset.features", KEY_INT, OFF(dataset.features), "5", 1, CONFIG_MAX_FEATURES, NULL,
     KEY_DATA,
     "floats per sample (Linear in_features)"},
    {"dataset.noise", KEY_FLOAT, OFF(dataset.noise), "0.01", 0, 1e6, NULL, KEY_DATA,
     "standard deviation of the teacher's target noise"},
    {"dataset.sample_cost_us", KEY_FLOAT, OFF(dataset.sample_cost_us), "0", 0, 1e6, NULL, 0,
     "emulated per-sample decode/augment CPU work in the loader, microseconds"},
    {"dataset.path", KEY_STRING, OFF(dataset.path), "", 0, CONFIG_STR - 1, NULL, KEY_DATA,
     "idx: the *-images-idx3-ubyte[.gz] file; cifar10: its directory; folder: the root"},
    {"dataset.eval_path", KEY_STRING, OFF(dataset.eval_path), "", 0, CONFIG_STR - 1, NULL,
     KEY_DATA,
     "held-out split evaluated after the last epoch; \"\" = t10k (idx), test_batch.bin (cifar10), none (folder)"},
    {"dataset.drop_cache", KEY_BOOL, OFF(dataset.drop_cache), "false", 0, 0, NULL, 0,
     "evict the dataset's files from the page cache before each epoch (posix_fadvise)"},
    {"transform.resize", KEY_INT, OFF(transform.resize), "0", 0, 8192, NULL, KEY_DATA,
     "shorter side to N (bilinear), then centre crop N x N; 0 = off"},
    {"transform.crop", KEY_INT, OFF(transform.crop), "0", 0, 8192, NULL, KEY_DATA,
     "random N x N crop (after transform.pad zero padding); 0 = off"},
    {"transform.pad", KEY_INT, OFF(transform.pad), "0", 0, 1024, NULL, KEY_DATA,
     "zero padding on every side before the random crop"},
    {"transform.hflip", KEY_BOOL, OFF(transform.hflip), "false", 0, 0, NULL, KEY_DATA,
     "random horizontal flip, p = 0.5"},
    {"transform.mean", KEY_FLOAT_LIST, OFF(transform.mean), "[]", -1e6, 1e6, NULL, KEY_DATA,
     "per-channel mean subtracted after scaling to [0, 1] (one value, or one per channel)"},
    {"transform.std", KEY_FLOAT_LIST, OFF(transform.std), "[]", 1e-9, 1e6, NULL, KEY_DATA,
     "per-channel standard deviation divided by after the mean"},
    {"model.out_features", KEY_INT, OFF(model.out_features), "2", 1, 1 << 16, NULL, KEY_DATA,
     "Linear out_features (labelled data: set to the number of classes)"},
    {"model.loss", KEY_ENUM, OFF(model.loss), "auto", 0, 0, "auto|*", 0,
     "auto = mse for random data, cross_entropy for labelled data"},
    {"loader.batch_size", KEY_INT, OFF(loader.batch_size), "30", 1, 1 << 24, NULL, 0,
     "samples per batch"},
    {"loader.shuffle", KEY_BOOL, OFF(loader.shuffle), "true", 0, 0, NULL, 0,
     "new seeded permutation every epoch"},
    {"loader.drop_last", KEY_BOOL, OFF(loader.drop_last), "false", 0, 0, NULL, 0,
     "drop the last incomplete batch"},
    {"loader.num_workers", KEY_INT, OFF(loader.num_workers), "0", 0, 256, NULL, 0,
     "loader threads; 0 = the training thread loads each batch itself"},
    {"loader.prefetch_factor", KEY_INT, OFF(loader.prefetch_factor), "2", 1, 1024, NULL, 0,
     "batches in flight per worker (only with workers)"},
    {"loader.pin_memory", KEY_BOOL, OFF(loader.pin_memory), "false", 0, 0, NULL, 0,
     "page-locked batch buffers (cuda, emulated; no effect on cpu)"},
    {"loader.persistent_workers", KEY_BOOL, OFF(loader.persistent_workers), "false", 0, 0,
     NULL, 0, "keep workers across epochs instead of re-creating them"},
    {"loader.async_copy", KEY_BOOL, OFF(loader.async_copy), "false", 0, 0, NULL, 0,
     "copy batches to the device on a copy thread and stream (cuda, emulated)"},
    {"loader.copy_depth", KEY_INT, OFF(loader.copy_depth), "2", 1, 64, NULL, 0,
     "device buffers in the async-copy ring (cuda, emulated)"},
    {"train.epochs", KEY_INT, OFF(train.epochs), "1", 1, 1e7, NULL, 0,
     "measured epochs"},
    {"train.warmup_epochs", KEY_INT, OFF(train.warmup_epochs), "0", 0, 1e7, NULL, 0,
     "epochs run before the measured ones and left out of the results"},
    {"train.lr", KEY_FLOAT, OFF(train.lr), "0.01", 0, 1e6, NULL, 0, "SGD learning rate"},
    {"parallel.device", KEY_ENUM, OFF(parallel.device), "cpu", 0, 0, "*|auto", 0,
     "where replicas run; auto = cuda when a device is usable, else cpu; emulated = a GPU's "
     "timing (the emulate.* keys) with the math on this host"},
    {"parallel.mode", KEY_ENUM, OFF(parallel.mode), "dp", 0, 0, "dp|ddp", 0,
     "dp = nn.DataParallel in one process; ddp = DistributedDataParallel, one rank per "
     "process (mpirun -np N)"},
    {"parallel.comm", KEY_ENUM, OFF(parallel.comm), "auto", 0, 0, "auto|*", 0,
     "ddp's gradient allreduce: mpi (cpu), nccl (cuda); auto = nccl on cuda, mpi on cpu"},
    {"parallel.blas", KEY_ENUM, OFF(parallel.blas), "auto", 0, 0, "auto|openblas|libxsmm", 0,
     "cpu: the library of the step's products; auto = the faster measured (results can differ "
     "in the last bits between libraries)"},
    {"parallel.replicas", KEY_INT, OFF(parallel.replicas), "1", 1, 1024, NULL, 0,
     "DataParallel replicas (cuda: the first N devices)"},
    {"parallel.devices", KEY_INT_LIST, OFF(parallel.devices), "[]", 0, 1023, NULL, 0,
     "cuda or emulated device ids, one per replica; a repeated id shares that device"},
    {"emulate.h2d_gbps", KEY_FLOAT, OFF(emulate.h2d_gbps), "55", 0.001, 1e5, NULL, 0,
     "emulated: pinned host-to-device copy rate, GB/s; default: H100 pinned copies measure "
     "about 55 GB/s (published, docs/emulated.md)"},
    {"emulate.pageable_gbps", KEY_FLOAT, OFF(emulate.pageable_gbps), "21", 0.001, 1e5, NULL, 0,
     "emulated: pageable host-to-device copy rate, GB/s; default: 55 / 2.6, published "
     "bandwidthTest runs on A100 hosts show pinned 2.6x to 5x pageable"},
    {"emulate.launch_us", KEY_FLOAT, OFF(emulate.launch_us), "5", 0, 1e7, NULL, 0,
     "emulated: fixed device time per replica per step, us; default: a kernel launch costs "
     "about 2 to 5 us (published), the upper end"},
    {"emulate.compute_us", KEY_FLOAT, OFF(emulate.compute_us), "0", 0, 1e7, NULL, 0,
     "emulated: device time per sample per step, us: your model's step time / batch size, "
     "measured in your PyTorch loop (docs/emulated.md); 0 = launch time only"},
    {"emulate.p2p_gbps", KEY_FLOAT, OFF(emulate.p2p_gbps), "0", 0, 1e5, NULL, 0,
     "emulated: device-to-device rate of the gradient reduce, GB/s; 0 = not timed (H100 "
     "NVLink peer copies measure about 375 GB/s one way, published)"},
    {"emulate.profile", KEY_STRING, OFF(emulate.profile), "", 0, CONFIG_STR - 1, NULL, 0,
     "emulated: a profile JSON written by dpbench --h2d-bandwidth --out DIR on a GPU; keys "
     "set in the config override it"},
    {"report.trace", KEY_BOOL, OFF(report.trace), "false", 0, 0, NULL, 0,
     "print the tutorial's In Model / Outside lines for each batch of the first epoch"},
    {"report.format", KEY_ENUM, OFF(report.format), "text", 0, 0, "*", 0,
     "stdout format"},
    {"report.out", KEY_STRING, OFF(report.out), "", 0, CONFIG_STR - 1, NULL, 0,
     "directory for NAME-YYYYmmdd-HHMMSS.json/.csv result files; empty = none"},
    {"report.verbose", KEY_BOOL, OFF(report.verbose), "false", 0, 0, NULL, 0,
     "text: a sweep also prints each point's BLAS choice, verdict, floor and device details "
     "(--verbose)"},
    {"report.floor", KEY_BOOL, OFF(report.floor), "false", 0, 0, NULL, 0,
     "before training, measure this machine's floor for the run's shapes (gather + compute)"},
    {"tune.knobs", KEY_STRING, OFF(tune.knobs), "", 0, CONFIG_STR - 1, NULL, 0,
     "--tune: loader knobs it may change, comma-separated (num_workers, prefetch_factor, "
     "persistent_workers, pin_memory, async_copy, copy_depth); \"\" = all"},
    {"tune.max_workers", KEY_INT, OFF(tune.max_workers), "0", 0, 256, NULL, 0,
     "--tune: most loader workers it tries; 0 = twice the usable cores"},
    {"tune.target_au", KEY_FLOAT, OFF(tune.target_au), "0", 0, 1, NULL, 0,
     "--tune: 0 = the fastest epoch; else the cheapest settings whose AU (compute / epoch "
     "time) reaches it (fewest workers, then smallest prefetch)"},
    {"tune.budget_s", KEY_FLOAT, OFF(tune.budget_s), "600", 1, 1e6, NULL, 0,
     "--tune: seconds of trials the search may spend"},
    {"bench.threshold", KEY_FLOAT, OFF(bench.threshold), "0.03", 0, 0.5, NULL, 0,
     "noise threshold: B / A within 1 +- this is no measurable effect (same); faster or "
     "slower only when the ratio's whole 95% interval lies beyond it (--threshold)"},
    {"bench.precision", KEY_FLOAT, OFF(bench.precision), "0", 0, 1, NULL, 0,
     "add rounds until each point's 95% interval is within +- this share of its median; "
     "0 = off (--precision)"},
    {"bench.budget_s", KEY_FLOAT, OFF(bench.budget_s), "480", 0, 1e7, NULL, 0,
     "seconds the rounds may take before undecided verdicts are reported as such; 0 = no "
     "limit (--budget)"},
    {"bench.min_rounds", KEY_INT, OFF(bench.min_rounds), "9", 1, 10000, NULL, 0,
     "rounds before a sweep first looks at its verdicts (9: the fewest whose interval can "
     "decide at the looks' level, 0.05 over about 10 looks)"},
    {"bench.max_rounds", KEY_INT, OFF(bench.max_rounds), "100", 1, 10000, NULL, 0,
     "rounds at most (--repeat N runs exactly N)"},
};
#define N_KEYS (sizeof keys / sizeof keys[0])
_Static_assert(N_KEYS <= 64, "config.explicit_keys has one bit per key");

/* The enum keys whose values a plug-in table lists: "*" in their choices
 * stands for the table's names, in its order, so a plug-in is named in its
 * table only. The tables sit above the config; they are handed over at
 * start-up (config_register_names). */
enum { MAX_PLUGIN_KEYS = 8, MAX_RULES = 8 };
static struct {
    const char *path;
    config_names_fn name; // the table's i-th name, NULL past the last
} plugin_keys[MAX_PLUGIN_KEYS];
static int n_plugin_keys;
static config_rule_fn rules[MAX_RULES]; // config_validate's rules from above
static int n_rules;

void config_register_names(const char *path, config_names_fn names)
{
    for (int i = 0; i < n_plugin_keys; i++)
        if (strcmp(plugin_keys[i].path, path) == 0) {
            plugin_keys[i].name = names;
            return;
        }
    if (n_plugin_keys < MAX_PLUGIN_KEYS) {
        plugin_keys[n_plugin_keys].path = path;
        plugin_keys[n_plugin_keys++].name = names;
    }
}

void config_register_rule(config_rule_fn rule)
{
    for (int i = 0; i < n_rules; i++)
        if (rules[i] == rule)
            return;
    if (n_rules < MAX_RULES)
        rules[n_rules++] = rule;
}

/* k's allowed values as "a|b|c", with a plug-in table's names for "*". */
static const char *key_choices(const struct key *k, char *buf, size_t n)
{
    const char *(*name)(size_t) = NULL;
    for (int i = 0; i < n_plugin_keys; i++)
        if (strcmp(plugin_keys[i].path, k->path) == 0)
            name = plugin_keys[i].name;
    size_t used = 0;
    buf[0] = '\0';
    for (const char *p = k->choices; *p && used < n;) {
        size_t len = strcspn(p, "|");
        if (name && len == 1 && *p == '*')
            for (size_t i = 0; name(i) && used < n; i++)
                used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "|" : "", name(i));
        else
            used += (size_t)snprintf(buf + used, n - used, "%s%.*s", used ? "|" : "", (int)len, p);
        p += len + (p[len] == '|');
    }
    return buf;
}

static const char *const sections[] = {"dataset", "model", "loader", "train", "parallel",
                                       "report", "transform", "emulate", "tune", "bench"};
#define N_SECTIONS (sizeof sections / sizeof sections[0])


static const struct key *key_find(const char *path)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].path, path) == 0)
            return &keys[i];
    return NULL;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof cur);
    }
    return prev[lb];
}

/* The known key closest to `path`: by edit distance on the full path, or the
 * key whose last component matches (num_workers -> loader.num_workers). */
static const char *key_suggest(const char *path)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    const char *leaf = strrchr(path, '.');
    leaf = leaf ? leaf + 1 : path;
    for (size_t i = 0; i < N_KEYS + N_SECTIONS; i++) {
        const char *cand = i < N_KEYS ? keys[i].path : sections[i - N_KEYS];
        const char *kl = strrchr(cand, '.');
        kl = kl ? kl + 1 : cand;
        size_t d = edit_distance(path, cand);
        if (strcmp(leaf, kl) == 0)
            d = 0;
        if (d < best_d) {
            best_d = d;
            best = cand;
        }
    }
    size_t limit = strlen(path) / 3; // a third of the letters may be wrong
    return best_d <= (limit > 2 ? limit : 2) ? best : NULL;
}

/* The keys of section `name`, comma-separated, into buf. */
static void section_keys(const char *name, char *buf, size_t n)
{
    size_t used = 0, len = strlen(name);
    buf[0] = '\0';
    for (size_t i = 0; i < N_KEYS && used < n; i++)
        if (strncmp(keys[i].path, name, len) == 0 && keys[i].path[len] == '.')
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", keys[i].path);
}

static int unknown_key(const char *path, struct error *e)
{
    if (strcmp(path, "sweep") == 0)
        return error_set(e, "'sweep' is a section of value lists, not a key: sweep a key with "
                            "--sweep KEY=v1,v2,... or a 'sweep:' mapping in the config");
    const char *s = key_suggest(path);
    bool section = false;
    for (size_t i = 0; s && i < N_SECTIONS; i++)
        section |= strcmp(s, sections[i]) == 0;
    if (section) { // a value goes to one of its keys: name them
        char list[700];
        section_keys(s, list, sizeof list);
        if (strcmp(s, path) == 0)
            return error_set(e, "'%s' is a section, not a key: name one of its keys (%s)",
                             path, list);
        return error_set(e, "unknown key '%s' (did you mean %s? a section, with the keys %s)",
                         path, s, list);
    }
    if (s)
        return error_set(e, "unknown key '%s' (did you mean %s?)", path, s);
    return error_set(e, "unknown key '%s' (dpbench --help-config lists the keys)", path);
}

/* Quotes a value for an error message, shortened if long. */
static const char *shown(const char *v, char *buf, size_t n)
{
    size_t len = strlen(v);
    if (len > 40)
        snprintf(buf, n, "'%.40s...' (%zu bytes)", v, len);
    else
        snprintf(buf, n, "'%s'", v);
    return buf;
}

/* The one number grammar, for YAML scalars and --set alike: an integer is
 * decimal digits, a real is decimal digits with an optional point and
 * exponent (1, 1.5, .5, 5., 2e-3); a sign only where the key's range has
 * negative values; no spaces, no hex (0x10, 0x1p3), no inf or nan, no '_'.
 * strtoll and strtod accept more (leading spaces, hex, "inf"): they only
 * convert what this has accepted. The length of the sign and digits. */
static size_t number_span(const char *v, bool real, bool sign)
{
    size_t i = sign && (v[0] == '-' || v[0] == '+');
    size_t digits = strspn(v + i, "0123456789");
    i += digits;
    if (real && v[i] == '.') {
        size_t frac = strspn(v + i + 1, "0123456789");
        digits += frac;
        i += 1 + frac;
    }
    if (digits == 0)
        return 0;
    if (real && (v[i] == 'e' || v[i] == 'E')) {
        size_t j = i + 1 + (v[i + 1] == '-' || v[i + 1] == '+');
        size_t exp = strspn(v + j, "0123456789");
        if (exp == 0)
            return 0;
        i = j + exp;
    }
    return v[i] == '\0' ? i : 0;
}

/* 0, or an error naming what the grammar wants when v is not k's number: a
 * sign on a key without negative values is named as such. */
static int number_check(const struct key *k, const char *v, bool real, struct error *e)
{
    char b[96];
    bool sign = k->min < 0;
    if (number_span(v, real, sign))
        return 0;
    if (!sign && (v[0] == '-' || v[0] == '+') && number_span(v + 1, real, false))
        return error_set(e, "%s: expected %s in [%.*g, %.*g] written without a sign, found %s",
                         k->path, real ? "a number" : "an integer", real ? 6 : 17, k->min,
                         real ? 6 : 17, k->max, strlen(v) > 40 ? shown(v, b, sizeof b) : v);
    if (real)
        return error_set(e, "%s: expected a number (decimal digits, an optional point and "
                            "exponent: no spaces, hex, inf or nan), found %s",
                         k->path, shown(v, b, sizeof b));
    return error_set(e, "%s: expected an integer (decimal digits%s: no spaces, point, exponent "
                        "or hex), found %s",
                     k->path, sign ? ", an optional sign" : "", shown(v, b, sizeof b));
}

static int set_int(const struct key *k, long *dst, const char *v, struct error *e)
{
    char b[96];
    if (number_check(k, v, false, e))
        return -1;
    errno = 0;
    long long x = strtoll(v, NULL, 10);
    if (errno == ERANGE)
        return error_set(e, "%s: integer %s overflows", k->path, shown(v, b, sizeof b));
    if ((double)x < k->min || (double)x > k->max)
        return error_set(e, "%s: expected an integer in [%.0f, %.0f], found %lld", k->path,
                         k->min, k->max, x);
    *dst = (long)x;
    return 0;
}

static int set_float(const struct key *k, double *dst, const char *v, struct error *e)
{
    char b[96];
    if (number_check(k, v, true, e))
        return -1;
    errno = 0;
    double x = strtod(v, NULL);
    if (errno == ERANGE && fabs(x) <= DBL_MIN) // underflow, not overflow
        x = DBL_MIN / 2;
    else if (!isfinite(x) || errno == ERANGE)
        return error_set(e, "%s: expected a finite number, found %s", k->path,
                         shown(v, b, sizeof b));
    /* the step computes in float: a value below float's smallest normal
     * number would become 0 or lose its precision there */
    if (x != 0 && fabs(x) < FLT_MIN)
        return error_set(e, "%s: %s is too small: expected 0 or a magnitude of at least "
                            "%g (the smallest normal float)",
                         k->path, shown(v, b, sizeof b), (double)FLT_MIN);
    if (x < k->min || x > k->max)
        return error_set(e, "%s: expected a number in [%g, %g], found %g", k->path, k->min,
                         k->max, x);
    *dst = x;
    return 0;
}

/* Splits "[a, b]", "a,b" or "" into trimmed items; calls add for each. */
static int split_list(const struct key *k, const char *v, void *dst,
                      int (*add)(const struct key *k, void *dst, int i, const char *item,
                                 struct error *e),
                      int *count, struct error *e)
{
    char *tmp = strdup(v); // as long as it is: the items' count is add's to limit
    if (!tmp)
        return error_set(e, "%s: out of memory", k->path);
    char *s = tmp;
    size_t len = strlen(s);
    if (len && s[0] == '[' && s[len - 1] == ']') {
        s[len - 1] = '\0';
        s++;
    }
    int n = 0, rc = 0;
    for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok && !rc;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        for (char *t = tok + strlen(tok); t > tok && t[-1] == ' ';)
            *--t = '\0';
        rc = add(k, dst, n++, tok, e);
    }
    free(tmp);
    *count = n;
    return rc;
}

static int add_device(const struct key *k, void *dst, int i, const char *item, struct error *e)
{
    if (i == CONFIG_MAX_DEVICES)
        return error_set(e, "%s: at most %d ids", k->path, CONFIG_MAX_DEVICES);
    return set_int(k, (long *)dst + i, item, e);
}

static int add_float(const struct key *k, void *dst, int i, const char *item, struct error *e)
{
    if (i == CONFIG_MAX_CHANNELS)
        return error_set(e, "%s: at most %d values", k->path, CONFIG_MAX_CHANNELS);
    return set_float(k, &((struct float_list *)dst)->v[i], item, e);
}

/* Refuses what the YAML reader refuses in a string, for values that come from
 * the command line: invalid UTF-8 and control characters (they would break
 * the JSON, the CSV and the text headers). */
static int check_text(const struct key *k, const char *v, struct error *e)
{
    const unsigned char *s = (const unsigned char *)v;
    for (size_t i = 0; s[i];) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4 : 0;
        uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
        for (size_t j = 1; j < len; j++) {
            if ((s[i + j] & 0xc0) != 0x80) {
                len = 0;
                break;
            }
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
        if (len == 0 || cp < least[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return error_set(e, "%s: invalid UTF-8 at byte %zu", k->path, i + 1);
        if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
            return error_set(e, "%s: control character U+%04X at byte %zu", k->path, (unsigned)cp,
                             i + 1);
        i += len;
    }
    return 0;
}

static int set_bool(const struct key *k, bool *dst, const char *v, struct error *e)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    char b[96];
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *dst = true, 0;
        if (strcasecmp(v, no[i]) == 0)
            return *dst = false, 0;
    }
    return error_set(e, "%s: expected true or false, found %s", k->path, shown(v, b, sizeof b));
}

static int set_value(struct config *c, const struct key *k, const char *v, struct error *e)
{
    char b[96];
    void *dst = (char *)c + k->offset;
    if (check_text(k, v, e))
        return -1;
    c->explicit_keys |= 1ull << (k - keys);
    switch (k->type) {
    case KEY_INT:
        return set_int(k, dst, v, e);
    case KEY_BOOL:
        return set_bool(k, dst, v, e);
    case KEY_FLOAT:
        return set_float(k, dst, v, e);
    case KEY_STRING:
        if (strlen(v) < k->min || strlen(v) > k->max)
            return error_set(e, "%s: expected a string of %.0f to %.0f bytes, found %zu bytes",
                             k->path, k->min, k->max, strlen(v));
        snprintf(dst, CONFIG_STR, "%s", v);
        return 0;
    case KEY_ENUM: {
        size_t n = strlen(v);
        char choices[256];
        key_choices(k, choices, sizeof choices);
        for (const char *p = choices; *p;) {
            size_t len = strcspn(p, "|");
            if (len == n && strncmp(p, v, n) == 0) {
                snprintf(dst, CONFIG_STR, "%s", v);
                return 0;
            }
            p += len + (p[len] == '|');
        }
        return error_set(e, "%s: expected one of %s, found %s", k->path, choices,
                         shown(v, b, sizeof b));
    }
    case KEY_INT_LIST: { /* "[0, 1, 1]", "0,1,1" or "" */
        int n = 0;
        if (split_list(k, v, dst, add_device, &n, e))
            return -1;
        c->parallel.n_devices = n;
        return 0;
    }
    case KEY_FLOAT_LIST: {
        struct float_list list = {{0}, 0};
        if (split_list(k, v, &list, add_float, &list.n, e))
            return -1;
        *(struct float_list *)dst = list;
        return 0;
    }
    }
    return error_set(e, "%s: internal error: unknown key type", k->path);
}

bool config_is_explicit(const struct config *c, const char *path)
{
    const struct key *k = key_find(path);
    return k && (c->explicit_keys >> (k - keys) & 1);
}

int config_set(struct config *c, const char *path, const char *value, struct error *e)
{
    const struct key *k = key_find(path);
    if (!k)
        return unknown_key(path, e);
    return set_value(c, k, value, e);
}

void config_defaults(struct config *c)
{
    struct error e;
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < N_KEYS; i++)
        if (set_value(c, &keys[i], keys[i].def, &e)) // defaults are valid by construction
            abort();
    c->explicit_keys = 0; // none given by the user yet
}

int config_set_arg(struct config *c, const char *arg, struct error *e)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return error_set(e, "--set %s: expected path=value", arg);
    char path[CONFIG_STR];
    snprintf(path, sizeof path, "%.*s", (int)(eq - arg), arg);
    if (config_set(c, path, eq + 1, e)) {
        char echo[CONFIG_STR]; // the argument as typed, bytes that could break the line as '?'
        snprintf(echo, sizeof echo, "%s", arg);
        for (char *p = echo; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                *p = '?';
        return error_wrap(e, "--set %s", echo);
    }
    return 0;
}

static int sweep_add(struct config *c, const char *key, struct error *e)
{
    if (!key_find(key))
        return unknown_key(key, e);
    if (strcmp(key, "parallel.devices") == 0 || strcmp(key, "report.format") == 0 ||
        strcmp(key, "report.out") == 0 || strcmp(key, "name") == 0)
        return error_set(e, "sweep: key %s cannot be swept", key);
    for (int i = 0; i < c->n_sweep; i++)
        if (strcmp(c->sweep[i].key, key) == 0)
            return error_set(e, "sweep: key %s given twice", key);
    if (c->n_sweep == CONFIG_MAX_SWEEP_KEYS)
        return error_set(e, "sweep: at most %d keys", CONFIG_MAX_SWEEP_KEYS);
    struct config_sweep *s = &c->sweep[c->n_sweep++];
    memset(s, 0, sizeof *s);
    snprintf(s->key, sizeof s->key, "%s", key);
    return 0;
}

/* Appends one value to the last sweep key after checking it parses. */
static int sweep_value(struct config *c, const char *v, struct error *e)
{
    struct config_sweep *s = &c->sweep[c->n_sweep - 1];
    struct config scratch;
    config_defaults(&scratch);
    if (!v[0])
        return error_set(e, "sweep: %s: empty value", s->key);
    if (config_set(&scratch, s->key, v, e))
        return error_wrap(e, "sweep");
    /* duplicates compare as resolved values: 4 and 04, on and true */
    char want[CONFIG_STR * 4], have[CONFIG_STR * 4];
    config_get_text(&scratch, s->key, want, sizeof want);
    for (int i = 0; i < s->n_values; i++) {
        config_set(&scratch, s->key, s->values[i], e); // parsed once already
        config_get_text(&scratch, s->key, have, sizeof have);
        if (strcmp(want, have) == 0)
            return error_set(e, "sweep: %s: value '%s' given twice", s->key, v);
    }
    if (s->n_values == CONFIG_MAX_SWEEP_VALUES)
        return error_set(e, "sweep: %s: at most %d values", s->key, CONFIG_MAX_SWEEP_VALUES);
    if (!(s->values[s->n_values] = strdup(v)))
        return error_set(e, "out of memory");
    s->n_values++;
    return 0;
}

static void sweep_drop(struct config *c, const char *key)
{
    for (int i = 0; i < c->n_sweep; i++) {
        if (strcmp(c->sweep[i].key, key) != 0)
            continue;
        for (int j = 0; j < c->sweep[i].n_values; j++)
            free(c->sweep[i].values[j]);
        memmove(&c->sweep[i], &c->sweep[i + 1], (size_t)(c->n_sweep - i - 1) * sizeof c->sweep[0]);
        c->n_sweep--;
        return;
    }
}

void config_clear_sweep(struct config *c)
{
    while (c->n_sweep > 0)
        sweep_drop(c, c->sweep[0].key);
}

int config_sweep_arg(struct config *c, const char *arg, struct error *e)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return error_set(e, "--sweep %s: expected key=v1,v2,...", arg);
    char key[CONFIG_STR];
    snprintf(key, sizeof key, "%.*s", (int)(eq - arg), arg);
    for (int i = 0; i < c->n_sweep; i++)
        if (c->sweep[i].from_cli && strcmp(c->sweep[i].key, key) == 0)
            return error_set(e, "--sweep %s: the key is given twice on the command line (give "
                                "every value once: --sweep %s=v1,v2,...)", key, key);
    sweep_drop(c, key); // the command line replaces the file's list
    if (sweep_add(c, key, e))
        return error_wrap(e, "--sweep");
    c->sweep[c->n_sweep - 1].from_cli = true;
    char *vals = strdup(eq + 1); // as long as it is: sweep_value limits the count
    if (!vals)
        return error_set(e, "--sweep %s: out of memory", key);
    int rc = 0;
    for (char *tok = vals, *end; tok && !rc; tok = end) { // every value, empty ones too
        if ((end = strchr(tok, ',')))
            *end++ = '\0';
        if (sweep_value(c, tok, e))
            rc = error_wrap(e, "--sweep %s", key);
    }
    free(vals);
    return rc;
}

/* ---- YAML ---------------------------------------------------------------- */

struct reader {
    yaml_parser_t parser;
    yaml_event_t ev; // the current event
    bool have_ev;
    const char *file;
    struct config *c;
    bool seen[N_KEYS];
    bool seen_section[N_SECTIONS + 1]; // + sweep
    struct error *e;
};

static int at(struct reader *r, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int at(struct reader *r, yaml_mark_t m, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return error_set(r->e, "%s:%zu:%zu: %s", r->file, m.line + 1, m.column + 1, msg);
}

static const char *event_name(yaml_event_type_t t)
{
    switch (t) {
    case YAML_SCALAR_EVENT: return "a scalar";
    case YAML_SEQUENCE_START_EVENT: return "a list";
    case YAML_MAPPING_START_EVENT: return "a mapping";
    case YAML_ALIAS_EVENT: return "an alias";
    case YAML_MAPPING_END_EVENT: return "the end of a mapping";
    case YAML_SEQUENCE_END_EVENT: return "the end of a list";
    case YAML_DOCUMENT_START_EVENT: return "a new document";
    default: return "the end of the document";
    }
}

/* Advances to the next event; refuses aliases everywhere. */
static int next(struct reader *r)
{
    if (r->have_ev)
        yaml_event_delete(&r->ev);
    r->have_ev = false;
    if (!yaml_parser_parse(&r->parser, &r->ev)) {
        yaml_parser_t *p = &r->parser;
        yaml_mark_t m = p->problem_mark;
        if (p->context) // where the construct that is not closed began
            return at(r, m, "malformed YAML: %s (from line %zu, column %zu): %s", p->context,
                      p->context_mark.line + 1, p->context_mark.column + 1, p->problem);
        return at(r, m, "malformed YAML: %s", p->problem ? p->problem : "parse error");
    }
    r->have_ev = true;
    if (r->ev.type == YAML_ALIAS_EVENT)
        return at(r, r->ev.start_mark, "YAML aliases (*%s) are not supported in dpbench configs",
                  (const char *)r->ev.data.alias.anchor);
    /* a tag (!!binary, !!python/object:..., !custom) asks for a type or a
     * constructor dpbench does not have: refuse it rather than ignore it */
    const yaml_char_t *tag = r->ev.type == YAML_SCALAR_EVENT ? r->ev.data.scalar.tag
                           : r->ev.type == YAML_SEQUENCE_START_EVENT ? r->ev.data.sequence_start.tag
                           : r->ev.type == YAML_MAPPING_START_EVENT ? r->ev.data.mapping_start.tag
                           : NULL;
    static const char core[] = "tag:yaml.org,2002:"; // what libyaml makes of "!!"
    if (tag && strncmp((const char *)tag, core, sizeof core - 1) == 0)
        return at(r, r->ev.start_mark, "YAML tags (!!%s) are not supported in dpbench configs",
                  (const char *)tag + sizeof core - 1);
    if (tag)
        return at(r, r->ev.start_mark, "YAML tags (%s) are not supported in dpbench configs",
                  (const char *)tag);
    return 0;
}

static const char *scalar(const struct reader *r) { return (const char *)r->ev.data.scalar.value; }

/* Reads a scalar, or a list of scalars joined with commas, for `k`. */
static int read_value(struct reader *r, const struct key *k, const char *path)
{
    yaml_mark_t m = r->ev.start_mark;
    if (r->ev.type == YAML_SCALAR_EVENT) {
        if ((k->type == KEY_INT_LIST || k->type == KEY_FLOAT_LIST) && scalar(r)[0] == '\0')
            return set_value(r->c, k, "", r->e) ? at(r, m, "%s", r->e->msg) : 0;
        if (r->ev.data.scalar.length != strlen(scalar(r)))
            return at(r, m, "%s: NUL byte in value", path);
        if (set_value(r->c, k, scalar(r), r->e))
            return at(r, m, "%s", r->e->msg);
        return 0;
    }
    if (r->ev.type != YAML_SEQUENCE_START_EVENT ||
        (k->type != KEY_INT_LIST && k->type != KEY_FLOAT_LIST))
        return at(r, m, "%s: expected a scalar value, found %s", path, event_name(r->ev.type));
    /* the items joined as --set writes them, however many: set_value's
     * list says how many the key takes */
    char *joined = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&joined, &size);
    int rc = f ? 0 : at(r, m, "%s: out of memory", path);
    for (int n = 0; !rc; n++) {
        if ((rc = next(r)) || r->ev.type == YAML_SEQUENCE_END_EVENT)
            break;
        if (r->ev.type != YAML_SCALAR_EVENT)
            rc = at(r, r->ev.start_mark, "%s: expected a list of %s, found %s", path,
                    k->type == KEY_INT_LIST ? "integers" : "numbers", event_name(r->ev.type));
        else if (fprintf(f, "%s%s", n ? "," : "", scalar(r)) < 0)
            rc = at(r, m, "%s: out of memory", path);
    }
    if (f && fclose(f) != 0 && !rc)
        rc = at(r, m, "%s: out of memory", path);
    if (!rc && set_value(r->c, k, joined, r->e))
        rc = at(r, m, "%s", r->e->msg);
    free(joined);
    return rc;
}

/* A key scalar at the current event; refuses non-scalar keys. */
static int read_key(struct reader *r, const char *where, char *key, size_t n)
{
    if (r->ev.type != YAML_SCALAR_EVENT)
        return at(r, r->ev.start_mark, "%s: expected a key, found %s", where,
                  event_name(r->ev.type));
    if (strlen(scalar(r)) >= n)
        return at(r, r->ev.start_mark, "%s: key too long", where);
    snprintf(key, n, "%s", scalar(r));
    return 0;
}

static int read_sweep(struct reader *r)
{
    if (r->ev.type != YAML_MAPPING_START_EVENT)
        return at(r, r->ev.start_mark, "sweep: expected a mapping of key: [values], found %s",
                  event_name(r->ev.type));
    for (;;) {
        char key[CONFIG_STR];
        if (next(r))
            return -1;
        if (r->ev.type == YAML_MAPPING_END_EVENT)
            return 0;
        yaml_mark_t km = r->ev.start_mark;
        if (read_key(r, "sweep", key, sizeof key))
            return -1;
        if (sweep_add(r->c, key, r->e))
            return at(r, km, "%s", r->e->msg);
        if (next(r))
            return -1;
        if (r->ev.type == YAML_SCALAR_EVENT) {
            if (sweep_value(r->c, scalar(r), r->e))
                return at(r, r->ev.start_mark, "%s", r->e->msg);
            continue;
        }
        if (r->ev.type != YAML_SEQUENCE_START_EVENT)
            return at(r, r->ev.start_mark, "sweep: %s: expected a list of values, found %s", key,
                      event_name(r->ev.type));
        for (;;) {
            if (next(r))
                return -1;
            if (r->ev.type == YAML_SEQUENCE_END_EVENT)
                break;
            if (r->ev.type != YAML_SCALAR_EVENT)
                return at(r, r->ev.start_mark, "sweep: %s: expected a scalar value, found %s",
                          key, event_name(r->ev.type));
            if (sweep_value(r->c, scalar(r), r->e))
                return at(r, r->ev.start_mark, "%s", r->e->msg);
        }
        if (r->c->sweep[r->c->n_sweep - 1].n_values == 0)
            return at(r, km, "sweep: %s: expected at least one value", key);
    }
}

/* One `path: value` pair, the key event current; `prefix` is the section. */
static int read_pair(struct reader *r, const char *prefix)
{
    char key[CONFIG_STR], path[CONFIG_STR * 2];
    yaml_mark_t km = r->ev.start_mark;
    if (read_key(r, prefix[0] ? prefix : "config", key, sizeof key))
        return -1;
    snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", key);
    if (next(r))
        return -1;

    if (!prefix[0]) {
        for (size_t s = 0; s <= N_SECTIONS; s++) {
            const char *name = s < N_SECTIONS ? sections[s] : "sweep";
            if (strcmp(key, name) != 0)
                continue;
            if (r->seen_section[s])
                return at(r, km, "duplicate key '%s'", key);
            r->seen_section[s] = true;
            if (s == N_SECTIONS)
                return read_sweep(r);
            if (r->ev.type != YAML_MAPPING_START_EVENT)
                return at(r, r->ev.start_mark, "%s: expected a mapping of %s.* keys, found %s",
                          key, key, event_name(r->ev.type));
            for (;;) {
                if (next(r))
                    return -1;
                if (r->ev.type == YAML_MAPPING_END_EVENT)
                    return 0;
                if (read_pair(r, key))
                    return -1;
            }
        }
    }
    const struct key *k = key_find(path);
    if (!k) {
        unknown_key(path, r->e);
        return at(r, km, "%s", r->e->msg);
    }
    if (r->seen[k - keys])
        return at(r, km, "duplicate key '%s'", path);
    r->seen[k - keys] = true;
    return read_value(r, k, path);
}

/* The whole text through libyaml once, before any key is read: a syntax error
 * anywhere (an unclosed [ or {, a bad indent) is reported as itself, with its
 * line, rather than as what the half-read value looked like to the reader.
 * Nesting deeper than CONFIG_MAX_DEPTH is refused here, at its first level
 * too many: a config needs 3 (the document, sweep:, a key's list). */
static int syntax_check(const char *text, size_t len, const char *file, struct error *e)
{
    struct reader r = {.file = file, .e = e};
    if (!yaml_parser_initialize(&r.parser))
        return error_set(e, "%s: cannot initialise the YAML parser", file);
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)text, len);
    int rc, depth = 0;
    while ((rc = next(&r)) == 0 && r.ev.type != YAML_STREAM_END_EVENT) {
        yaml_event_type_t t = r.ev.type;
        depth += t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT;
        depth -= t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT;
        if (depth > CONFIG_MAX_DEPTH) {
            rc = at(&r, r.ev.start_mark, "YAML nested deeper than %d levels (the limit; a "
                                         "dpbench config needs 3)", CONFIG_MAX_DEPTH);
            break;
        }
    }
    if (r.have_ev)
        yaml_event_delete(&r.ev);
    yaml_parser_delete(&r.parser);
    return rc;
}

int config_parse(struct config *c, const char *text, size_t len, const char *file,
                 struct error *e)
{
    if (syntax_check(text, len, file, e))
        return -1;
    struct reader r = {.file = file, .c = c, .e = e};
    if (!yaml_parser_initialize(&r.parser))
        return error_set(e, "%s: cannot initialise the YAML parser", file);
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)text, len);
    int rc = -1;
    yaml_mark_t start = {0};
    if (next(&r) || next(&r)) // STREAM_START, then DOCUMENT_START or STREAM_END
        goto out;
    if (r.ev.type == YAML_STREAM_END_EVENT) {
        at(&r, start, "empty config: expected a mapping of keys (see dpbench --help-config)");
        goto out;
    }
    if (next(&r))
        goto out;
    if (r.ev.type == YAML_SCALAR_EVENT && r.ev.data.scalar.length == 0 &&
        r.ev.data.scalar.plain_implicit) {
        at(&r, r.ev.start_mark, "empty config: expected a mapping of keys");
        goto out;
    }
    if (r.ev.type != YAML_MAPPING_START_EVENT) {
        at(&r, r.ev.start_mark, "the document must be a mapping of keys, found %s",
           event_name(r.ev.type));
        goto out;
    }
    for (;;) {
        if (next(&r))
            goto out;
        if (r.ev.type == YAML_MAPPING_END_EVENT)
            break;
        if (read_pair(&r, ""))
            goto out;
    }
    if (next(&r) || next(&r)) // DOCUMENT_END, then STREAM_END
        goto out;
    if (r.ev.type != YAML_STREAM_END_EVENT) {
        at(&r, r.ev.start_mark, "expected one YAML document, found more");
        goto out;
    }
    snprintf(c->source, sizeof c->source, "%s", file);
    rc = 0;
out:
    if (r.have_ev)
        yaml_event_delete(&r.ev);
    yaml_parser_delete(&r.parser);
    return rc;
}

int config_load(struct config *c, const char *path, struct error *e)
{
    enum { MAX_BYTES = 1 << 20 };
    int fd = file_open_regular(path, "config", e); // a FIFO is refused, not waited on
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return error_set(e, "%s: cannot read config: %s", path, strerror(err));
    }
    if (st.st_size > MAX_BYTES) {
        close(fd);
        return error_set(e, "%s: config is %lld bytes, more than the %d accepted", path,
                         (long long)st.st_size, MAX_BYTES);
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return error_set(e, "%s: out of memory", path);
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n <= 0) {
            int err = n < 0 ? errno : EIO;
            free(buf);
            close(fd);
            return error_set(e, "%s: cannot read config: %s", path, strerror(err));
        }
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    int rc = config_parse(c, buf, got, path, e);
    free(buf);
    return rc;
}

/* parallel.devices against parallel.replicas (whether the backend has
 * device ids is the backends' rule: registered from above). */
static int validate_devices(const struct config *c, struct error *e)
{
    if (c->parallel.n_devices > 0 && c->parallel.replicas != 1 &&
        c->parallel.replicas != c->parallel.n_devices)
        return error_set(e, "parallel.replicas: %ld disagrees with parallel.devices (%d ids); "
                            "give one or the other",
                         c->parallel.replicas, c->parallel.n_devices);
    return 0;
}

/* The loader knobs that need workers. */
static int validate_workers(const struct config *c, struct error *e)
{
    /* PyTorch's DataLoader refuses both without workers (ValueError). A sweep
     * over num_workers that reaches 0 is the exception: at that point the knob
     * has no workers to act on, and the run says so in its notes (train.c). */
    bool workers_swept = false;
    for (int i = 0; i < c->n_sweep; i++)
        workers_swept |= strcmp(c->sweep[i].key, "loader.num_workers") == 0;
    if (workers_swept)
        ; // checked per point: each point's knobs are inert or used
    else if (c->loader.num_workers == 0 && c->loader.persistent_workers)
        return error_set(e, "loader.persistent_workers: needs loader.num_workers > 0 "
                            "(there are no workers to keep), as in PyTorch");
    else if (c->loader.num_workers == 0 && config_is_explicit(c, "loader.prefetch_factor"))
        return error_set(e, "loader.prefetch_factor: can only be given with "
                            "loader.num_workers > 0 (batches are prefetched by workers), as "
                            "in PyTorch");
    return 0;
}

static int validate_sizes(const struct config *c, struct error *e)
{
    /* BLAS (OpenBLAS, cuBLAS) takes int sizes: the parameter vector (one axpy
     * for the SGD step), a batch's outputs and a chunk's inputs must fit */
    long replicas = c->parallel.n_devices ? c->parallel.n_devices : c->parallel.replicas;
    double params = (double)c->model.out_features * (double)(c->dataset.features + 1);
    double outputs = (double)c->loader.batch_size * (double)c->model.out_features;
    double chunk = (double)((c->loader.batch_size + replicas - 1) / replicas) *
                   (double)c->dataset.features;
    if (params > INT_MAX || outputs > INT_MAX || chunk > INT_MAX)
        return error_set(e, "model: %ld x %ld -> %ld with batch %ld needs arrays of %.0f floats, "
                            "more than BLAS' int sizes allow (%d)",
                         c->dataset.length, c->dataset.features, c->model.out_features,
                         c->loader.batch_size, fmax(params, fmax(outputs, chunk)), INT_MAX);
    return 0;
}

/* ddp: one replica a rank. */
static int validate_ddp(const struct config *c, struct error *e)
{
    bool ddp = strcmp(c->parallel.mode, "ddp") == 0;
    if (ddp && c->parallel.replicas > 1)
        return error_set(e, "parallel.replicas: %ld with parallel.mode: ddp; ddp runs one replica "
                            "per rank: start %ld ranks with mpirun -np %ld instead",
                         c->parallel.replicas, c->parallel.replicas, c->parallel.replicas);
    return 0;
}

/* The dataset's sizes and transforms (what a dataset kind allows is the
 * kinds' rule: registered from above). */
static int validate_data(const struct config *c, struct error *e)
{
    if (c->loader.drop_last && c->loader.batch_size > c->dataset.length)
        return error_set(e, "loader.batch_size: %ld is larger than dataset.length %ld with "
                            "drop_last: true, so an epoch has no batch",
                         c->loader.batch_size, c->dataset.length);
    if (c->transform.pad && !c->transform.crop)
        return error_set(e, "transform.pad: %ld needs transform.crop (the random crop it pads for)",
                         c->transform.pad);
    if ((c->transform.mean.n == 0) != (c->transform.std.n == 0))
        return error_set(e, "transform.%s: give transform.mean and transform.std together",
                         c->transform.mean.n ? "std" : "mean");
    double floats = (double)c->dataset.length * (double)(c->dataset.features + c->model.out_features);
    if (floats > 1e12)
        return error_set(e, "dataset: %ld x %ld is too large to generate", c->dataset.length,
                         c->dataset.features);
    return 0;
}

/* The rules that tie keys together, in this order (those registered from
 * above, which say whether a key applies to the plug-in at all, then the
 * core's): the first broken one is the error. */
int config_validate(const struct config *c, struct error *e)
{
    for (int i = 0; i < n_rules; i++)
        if (rules[i](c, e))
            return -1;
    if (validate_devices(c, e) || validate_workers(c, e) || validate_sizes(c, e) ||
        validate_ddp(c, e) || validate_data(c, e))
        return -1;
    return 0;
}

int config_validate_sweep(const struct config *c, struct error *e)
{
    long points = 1;
    for (int i = 0; i < c->n_sweep; i++) { // at most 64 values a key: no overflow before the cap
        if (c->sweep[i].n_values == 0)
            return error_set(e, "sweep: %s: expected at least one value", c->sweep[i].key);
        if ((points *= c->sweep[i].n_values) > CONFIG_MAX_SWEEP_POINTS)
            return error_set(e, "sweep: more than %d points (the product of the swept keys' "
                                "value counts); split the sweep into several runs",
                             CONFIG_MAX_SWEEP_POINTS);
    }
    return 0;
}

/* Whether key k holds the same value in a and b. */
static bool key_equal(const struct key *k, const struct config *a, const struct config *b)
{
    const char *x = (const char *)a + k->offset, *y = (const char *)b + k->offset;
    switch (k->type) {
    case KEY_INT: return *(const long *)x == *(const long *)y;
    case KEY_BOOL: return *(const bool *)x == *(const bool *)y;
    case KEY_FLOAT: return *(const double *)x == *(const double *)y;
    case KEY_STRING:
    case KEY_ENUM: return strcmp(x, y) == 0;
    case KEY_FLOAT_LIST: return memcmp(x, y, sizeof(struct float_list)) == 0;
    case KEY_INT_LIST: break; // its count lives apart (parallel.devices): never data
    }
    return false;
}

bool config_same_data(const struct config *a, const struct config *b)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if ((keys[i].flags & KEY_DATA) && !key_equal(&keys[i], a, b))
            return false;
    return true;
}

int config_copy(struct config *dst, const struct config *src)
{
    *dst = *src;
    for (int i = 0; i < src->n_sweep; i++)
        for (int j = 0; j < src->sweep[i].n_values; j++)
            if (!(dst->sweep[i].values[j] = strdup(src->sweep[i].values[j]))) {
                dst->sweep[i].n_values = j;
                dst->n_sweep = i + 1;
                config_free(dst);
                return -1;
            }
    return 0;
}

void config_free(struct config *c)
{
    for (int i = 0; i < c->n_sweep; i++)
        for (int j = 0; j < c->sweep[i].n_values; j++)
            free(c->sweep[i].values[j]);
    c->n_sweep = 0;
}

static const char *type_name(const struct key *k)
{
    static const char *const names[] = {"int", "bool", "float", "string", "enum", "int list",
                                        "floats"};
    return names[k->type];
}

void config_print_help(void *stream)
{
    FILE *f = stream;
    fprintf(f, "# dpbench config keys (YAML sections, or --set path=value)\n");
    fprintf(f, "%-27s %-8s %-10s %-22s %s\n", "# key", "type", "default", "range", "help");
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct key *k = &keys[i];
        char range[64] = "";
        if (k->type == KEY_ENUM)
            key_choices(k, range, sizeof range);
        else if (k->type == KEY_INT || k->type == KEY_INT_LIST)
            snprintf(range, sizeof range, "[%.0f, %.0f]", k->min, k->max);
        else if (k->type == KEY_FLOAT || k->type == KEY_FLOAT_LIST)
            snprintf(range, sizeof range, "[%g, %g]", k->min, k->max);
        else if (k->type == KEY_STRING)
            snprintf(range, sizeof range, "<= %.0f bytes", k->max);
        fprintf(f, "%-27s %-8s %-10s %-22s %s\n", k->path, type_name(k),
                k->def[0] ? k->def : "\"\"", range, k->help);
    }
    fprintf(f, "%-27s %-8s %-10s %-22s %s\n", "sweep", "mapping", "{}", "key: [values]",
            "run the cartesian product of these keys' values (also --sweep key=v1,v2)");
}

const char *config_key_name(size_t i) { return i < N_KEYS ? keys[i].path : NULL; }

const char *config_key_type(size_t i, double *min, double *max)
{
    if (i >= N_KEYS)
        return NULL;
    *min = keys[i].min;
    *max = keys[i].max;
    return type_name(&keys[i]);
}

int config_key_choices(const char *path, char *buf, size_t n)
{
    const struct key *k = key_find(path);
    if (!k || k->type != KEY_ENUM)
        return -1;
    key_choices(k, buf, n);
    return 0;
}

int config_get_text(const struct config *c, const char *path, char *buf, size_t n)
{
    const struct key *k = key_find(path);
    if (!k)
        return -1;
    const void *src = (const char *)c + k->offset;
    switch (k->type) {
    case KEY_INT: snprintf(buf, n, "%ld", *(const long *)src); break;
    case KEY_BOOL: snprintf(buf, n, "%s", *(const bool *)src ? "true" : "false"); break;
    case KEY_FLOAT: snprintf(buf, n, "%g", *(const double *)src); break;
    case KEY_STRING:
    case KEY_ENUM: snprintf(buf, n, "%s", (const char *)src); break;
    case KEY_FLOAT_LIST: {
        const struct float_list *l = src;
        size_t used = 0;
        buf[0] = '\0';
        for (int i = 0; i < l->n && used < n; i++)
            used += (size_t)snprintf(buf + used, n - used, "%s%g", i ? "," : "", l->v[i]);
        break;
    }
    case KEY_INT_LIST: {
        size_t used = 0;
        buf[0] = '\0';
        for (int i = 0; i < c->parallel.n_devices && used < n; i++)
            used += (size_t)snprintf(buf + used, n - used, "%s%ld", i ? "," : "",
                                     c->parallel.devices[i]);
        break;
    }
    }
    return 0;
}

cJSON *config_to_json(const struct config *c)
{
    cJSON *root = cJSON_CreateObject();
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct key *k = &keys[i];
        const void *src = (const char *)c + k->offset;
        cJSON *parent = root;
        const char *dot = strchr(k->path, '.'), *leaf = k->path;
        if (dot) {
            char sec[32];
            snprintf(sec, sizeof sec, "%.*s", (int)(dot - k->path), k->path);
            parent = cJSON_GetObjectItemCaseSensitive(root, sec);
            if (!parent)
                parent = cJSON_AddObjectToObject(root, sec);
            leaf = dot + 1;
        }
        switch (k->type) {
        case KEY_INT: cJSON_AddNumberToObject(parent, leaf, (double)*(const long *)src); break;
        case KEY_BOOL: cJSON_AddBoolToObject(parent, leaf, *(const bool *)src); break;
        case KEY_FLOAT: cJSON_AddNumberToObject(parent, leaf, *(const double *)src); break;
        case KEY_STRING:
        case KEY_ENUM: cJSON_AddStringToObject(parent, leaf, (const char *)src); break;
        case KEY_FLOAT_LIST: {
            const struct float_list *l = src;
            cJSON *a = cJSON_AddArrayToObject(parent, leaf);
            for (int j = 0; j < l->n; j++)
                cJSON_AddItemToArray(a, cJSON_CreateNumber(l->v[j]));
            break;
        }
        case KEY_INT_LIST: {
            cJSON *a = cJSON_AddArrayToObject(parent, leaf);
            for (int j = 0; j < c->parallel.n_devices; j++)
                cJSON_AddItemToArray(a, cJSON_CreateNumber((double)c->parallel.devices[j]));
            break;
        }
        }
    }
    if (c->n_sweep) {
        cJSON *sw = cJSON_AddObjectToObject(root, "sweep");
        for (int i = 0; i < c->n_sweep; i++) {
            cJSON *a = cJSON_AddArrayToObject(sw, c->sweep[i].key);
            for (int j = 0; j < c->sweep[i].n_values; j++)
                cJSON_AddItemToArray(a, cJSON_CreateString(c->sweep[i].values[j]));
        }
    }
    return root;
}
