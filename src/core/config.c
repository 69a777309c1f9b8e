/* Config keys, declared once in `config_keys[]` (fio's options table: path,
 * type, offset, default, range, choices, help); the lookups, --help-config,
 * the text and JSON of a config and the comparisons walk it. The setters are
 * in config_set.c, the YAML reader in config_yaml.c, the rules that tie keys
 * together in config_rules.c. */
#include "config_keys.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFF(field) offsetof(struct config, field)
#define MAX_SAFE_INT 9007199254740991.0 // 2^53 - 1

const struct key config_keys[] = {
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
    {"dataset.make", KEY_STRING, OFF(dataset.make), "", 0, CONFIG_STR - 1, NULL, 0,
     "when dataset.path is missing: make it first, e.g. \"folder --size 224x224 --per-class 100\" "
     "(dpbench --make-dataset's KIND and options)"},
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
    {"parallel.blas_threads", KEY_INT, OFF(parallel.blas_threads), "0", 0, 1024, NULL, 0,
     "cpu: OpenBLAS threads for the step's products (at most the threads OpenBLAS started); "
     "0 = the fastest measured; with parallel.blas libxsmm, 1. --tune's YAML sets it"},
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
const size_t config_n_keys = sizeof config_keys / sizeof config_keys[0];
_Static_assert(sizeof config_keys / sizeof config_keys[0] <= CONFIG_MAX_KEYS,
               "config.explicit_keys has one bit per key");

/* The enum keys whose values a plug-in table lists: "*" in their choices
 * stands for the table's names, in its order, so a plug-in is named in its
 * table only. The tables sit above the config; they are handed over at
 * start-up (config_register_names). */
enum { MAX_PLUGIN_KEYS = 8 };
static struct {
    const char *path;
    config_names_fn name; // the table's i-th name, NULL past the last
} plugin_keys[MAX_PLUGIN_KEYS];
static int n_plugin_keys;

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


/* k's allowed values as "a|b|c", with a plug-in table's names for "*". */
const char *key_choices(const struct key *k, char *buf, size_t n)
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

const char *const config_sections[] = {"dataset", "model", "loader", "train", "parallel",
                                       "report", "transform", "emulate", "tune", "bench"};
const size_t config_n_sections = sizeof config_sections / sizeof config_sections[0];
_Static_assert(sizeof config_sections / sizeof config_sections[0] <= CONFIG_MAX_SECTIONS,
               "the YAML reader's table of sections seen");


const struct key *key_find(const char *path)
{
    for (size_t i = 0; i < config_n_keys; i++)
        if (strcmp(config_keys[i].path, path) == 0)
            return &config_keys[i];
    return NULL;
}

/* The known key closest to `path` (a section, sweep), into buf: by edit
 * distance on the full path, or the keys whose last component matches
 * (num_workers -> loader.num_workers; budget_s -> tune.budget_s or
 * bench.budget_s). NULL: none near. */
static const char *key_suggest(const char *path, char *buf, size_t n)
{
    size_t best_d = SIZE_MAX, used = 0;
    const char *leaf = strrchr(path, '.');
    leaf = leaf ? leaf + 1 : path;
    buf[0] = '\0';
    for (size_t i = 0; i <= config_n_keys + config_n_sections; i++) {
        const char *cand = i < config_n_keys ? config_keys[i].path
                           : i < config_n_keys + config_n_sections ? config_sections[i - config_n_keys]
                           : "sweep";
        const char *kl = strrchr(cand, '.');
        kl = kl ? kl + 1 : cand;
        size_t d = strcmp(leaf, kl) == 0 ? 0 : text_distance(path, cand);
        if (d == 0 && best_d == 0 && used < n) // another key of that name
            used += (size_t)snprintf(buf + used, n - used, " or %s", cand);
        else if (d < best_d)
            best_d = d, used = (size_t)snprintf(buf, n, "%s", cand);
    }
    size_t limit = strlen(path) / 3; // a third of the letters may be wrong
    return best_d <= (limit > 2 ? limit : 2) ? buf : NULL;
}

/* The keys of section `name`, comma-separated, into buf. */
static void section_keys(const char *name, char *buf, size_t n)
{
    size_t used = 0, len = strlen(name);
    buf[0] = '\0';
    for (size_t i = 0; i < config_n_keys && used < n; i++)
        if (strncmp(config_keys[i].path, name, len) == 0 && config_keys[i].path[len] == '.')
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", config_keys[i].path);
}

int unknown_key(const char *path, struct error *e)
{
    if (strcmp(path, "sweep") == 0)
        return error_set(e, "'sweep' is a section of value lists, not a key: sweep a key with "
                            "--sweep KEY=v1,v2,... or a 'sweep:' mapping in the config");
    char near[160];
    const char *s = key_suggest(path, near, sizeof near);
    bool section = false;
    for (size_t i = 0; s && i < config_n_sections; i++)
        section |= strcmp(s, config_sections[i]) == 0;
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
    for (size_t i = 0; i < config_n_keys; i++)
        if ((config_keys[i].flags & KEY_DATA) && !key_equal(&config_keys[i], a, b))
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
    for (size_t i = 0; i < config_n_keys; i++) {
        const struct key *k = &config_keys[i];
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

const char *config_key_name(size_t i) { return i < config_n_keys ? config_keys[i].path : NULL; }

const char *config_key_type(size_t i, double *min, double *max)
{
    if (i >= config_n_keys)
        return NULL;
    *min = config_keys[i].min;
    *max = config_keys[i].max;
    return type_name(&config_keys[i]);
}

int config_key_choices(const char *path, char *buf, size_t n)
{
    const struct key *k = key_find(path);
    if (!k || k->type != KEY_ENUM)
        return -1;
    key_choices(k, buf, n);
    return 0;
}

/* v in the fewest significant digits (6 at least) that read back as v: two
 * values that differ never print alike (a sweep's labels, its duplicate check) */
static int float_text(char *buf, size_t n, double v)
{
    int used = 0;
    for (int d = 6; d <= 17; d++)
        if ((used = snprintf(buf, n, "%.*g", d, v)) < 0 || strtod(buf, NULL) == v)
            break;
    return used;
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
    case KEY_FLOAT: float_text(buf, n, *(const double *)src); break;
    case KEY_STRING:
    case KEY_ENUM: snprintf(buf, n, "%s", (const char *)src); break;
    case KEY_FLOAT_LIST: {
        const struct float_list *l = src;
        size_t used = 0;
        buf[0] = '\0';
        for (int i = 0; i < l->n && used < n; i++) {
            used += (size_t)snprintf(buf + used, n - used, "%s", i ? "," : "");
            used += used < n ? (size_t)float_text(buf + used, n - used, l->v[i]) : 0;
        }
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

/* An integer, exactly: cJSON prints 15 digits, taking a miss of 2e-16 of the
 * value as a round trip (seed 2^53 - 1 read 2^53 - 2), so from 1e15 on it
 * goes as its digits (a raw item). */
static cJSON *json_int(long v)
{
    char digits[24];
    snprintf(digits, sizeof digits, "%ld", v);
    return labs(v) < 1000000000000000L ? cJSON_CreateNumber((double)v) : cJSON_CreateRaw(digits);
}

cJSON *config_to_json(const struct config *c)
{
    cJSON *root = cJSON_CreateObject();
    for (size_t i = 0; i < config_n_keys; i++) {
        const struct key *k = &config_keys[i];
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
        case KEY_INT: cJSON_AddItemToObject(parent, leaf, json_int(*(const long *)src)); break;
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

cJSON *config_overrides_json(const struct config *c)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < c->n_sweep; i++) {
        char v[CONFIG_STR];
        if (c->sweep[i].n_values == 1) // a point's: its value as swept
            snprintf(v, sizeof v, "%s", c->sweep[i].values[0]);
        else // not a point's: the value now
            config_get_text(c, c->sweep[i].key, v, sizeof v);
        cJSON_AddStringToObject(o, c->sweep[i].key, v);
    }
    return o;
}

char *config_yaml(const char *header, const struct config *c,
                  bool (*keep)(const struct config *c, const char *path))
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    cJSON *all = config_to_json(c);
    char section[CONFIG_STR] = "";
    if (!f || !all) {
        if (f)
            fclose(f);
        cJSON_Delete(all);
        free(text);
        return NULL;
    }
    fputs("# ", f);
    for (const char *h = header; *h; h++) // one comment line, whatever the header holds
        fputc((unsigned char)*h < ' ' || *h == 0x7f ? '?' : *h, f);
    fputc('\n', f);
    for (size_t i = 0; i < config_n_keys; i++) {
        const char *key = config_keys[i].path, *dot = strchr(key, '.');
        int len = dot ? (int)(dot - key) : 0;
        bool open = dot && ((int)strlen(section) != len || strncmp(section, key, (size_t)len));
        if (!keep(c, key))
            continue;
        if (open)
            snprintf(section, sizeof section, "%.*s", len, key);
        cJSON *v = cJSON_GetObjectItemCaseSensitive(
            dot ? cJSON_GetObjectItemCaseSensitive(all, section) : all, dot ? dot + 1 : key);
        char *value = v ? cJSON_PrintUnformatted(v) : NULL;
        if (value)
            fprintf(f, "%s%s%s%s: %s\n", open ? section : "", open ? ":\n" : "", dot ? "  " : "",
                    dot ? dot + 1 : key, value);
        free(value);
    }
    cJSON_Delete(all);
    bool failed = ferror(f); // out of memory on the way: never a truncated YAML
    if (fclose(f) != 0 || failed) {
        free(text);
        return NULL;
    }
    return text;
}
