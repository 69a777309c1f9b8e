/* Setting a config's keys from text (a YAML scalar, --set, --sweep): one
 * number grammar for every numeric key, ranges and choices from the key
 * table, lists, the sweep's keys and values. */
#include "config_keys.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Quotes a value for an error message, shortened if long. */
static const char *shown(const char *v, char *buf, size_t n)
{
    size_t len = strlen(v);
    if (len == 0) // 'key:' or a YAML null
        snprintf(buf, n, "no value");
    else if (len > 40)
        snprintf(buf, n, "'%.40s...' (%zu bytes)", v, len);
    else
        snprintf(buf, n, "'%s'", v);
    return buf;
}

/* The one number grammar, for YAML scalars, --set and the flags alike: an
 * integer is decimal digits, a real is decimal digits with an optional point
 * and exponent (1, 1.5, .5, 5., 2e-3); a sign only where the key's range has
 * negative values; no spaces, no hex (0x10, 0x1p3), no inf or nan, no '_'.
 * strtoll and strtod accept more (leading spaces, hex, "inf"): they only
 * convert what this has accepted. */
size_t config_number_span(const char *v, bool real, bool sign)
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
        i = exp ? j + exp : i;
    }
    return i;
}

/* Whether v is one number of the grammar, whole. */
static bool number_whole(const char *v, bool real, bool sign)
{
    size_t n = config_number_span(v, real, sign);
    return n > 0 && v[n] == '\0';
}

/* 0, or an error naming what the grammar wants when v is not k's number: a
 * sign on a key without negative values is named as such. */
static int number_check(const struct key *k, const char *v, bool real, struct error *e)
{
    char b[96];
    bool sign = k->min < 0;
    if (number_whole(v, real, sign))
        return 0;
    if (!sign && (v[0] == '-' || v[0] == '+') && number_whole(v + 1, real, false))
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

/* Splits "[a, b]", "a,b" or "" (no item) into trimmed items; calls add for
 * each. An empty item ("a,,b", "a,") is refused, not skipped. */
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
    bool none = !s[strspn(s, " ")]; // "", "[]", "[ ]": no item
    for (char *tok; !none && !rc && (tok = strsep(&s, ",")) != NULL;) {
        tok = str_trim(tok);
        rc = *tok ? add(k, dst, n++, tok, e)
                  : error_set(e, "%s: an empty item in '%s' (each item is a number)", k->path, v);
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
 * the JSON, the CSV and the text headers); and, from both, the characters
 * that reorder text (a result named one way would show as another). */
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
        // the bidirectional embeddings, overrides and isolates: a name could show as another
        // (the marks U+200E and U+200F, found in right-to-left file names, stay)
        if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
            return error_set(e, "%s: bidirectional control character U+%04X at byte %zu (it "
                             "reorders the text shown around it)", k->path, (unsigned)cp, i + 1);
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

int set_value(struct config *c, const struct key *k, const char *v, struct error *e)
{
    char b[96];
    void *dst = (char *)c + k->offset;
    if (check_text(k, v, e))
        return -1;
    c->explicit_keys |= 1ull << (k - config_keys);
    c->key_line[k - config_keys] = 0; // the file's reader sets it after
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

void config_set_line(struct config *c, const char *path, int line)
{
    const struct key *k = key_find(path);
    if (k)
        c->key_line[k - config_keys] = line;
}

bool config_is_explicit(const struct config *c, const char *path)
{
    const struct key *k = key_find(path);
    return k && (c->explicit_keys >> (k - config_keys) & 1);
}

void config_resolve(struct config *c, const char *path, const char *value)
{
    const struct key *k = key_find(path);
    struct error e;
    if (!k)
        return;
    unsigned long long given = c->explicit_keys;
    int line = c->key_line[k - config_keys];
    if (set_value(c, k, value, &e) == 0)
        c->explicit_keys = given, c->key_line[k - config_keys] = line;
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
    for (size_t i = 0; i < config_n_keys; i++)
        if (set_value(c, &config_keys[i], config_keys[i].def, &e)) // defaults are valid by construction
            abort();
    c->explicit_keys = 0; // none given by the user yet
}

static void sweep_drop(struct config *c, const char *key);

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
    for (int i = 0; i < c->n_sweep; i++) // the command line's value replaces the file's
        if (!c->sweep[i].from_cli && !strcmp(c->sweep[i].key, path)) // sweep of the key; a
            sweep_drop(c, path); // --sweep's values replace the value at each point
    return 0;
}

int sweep_add(struct config *c, const char *key, struct error *e)
{
    if (!key_find(key))
        return unknown_key(key, e);
    if (strcmp(key, "parallel.devices") == 0 || strcmp(key, "report.format") == 0 ||
        strcmp(key, "report.out") == 0 || strcmp(key, "name") == 0)
        return error_set(e, "sweep: key %s cannot be swept", key);
    if (!strncmp(key, "bench.", 6) || !strncmp(key, "tune.", 5) || !strncmp(key, "report.", 7))
        return error_set(e, "sweep: key %s cannot be swept: bench.*, tune.* and report.* hold "
                            "for the whole run, not for a point", key);
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
int sweep_value(struct config *c, const char *v, struct error *e)
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

/* A sweep's error as the command line's: "--sweep: train.lr: ..." (its
 * "sweep: " is the config file's). */
static int sweep_arg_error(struct error *e)
{
    size_t n = strlen("sweep: ");
    if (!strncmp(e->msg, "sweep: ", n))
        memmove(e->msg, e->msg + n, strlen(e->msg + n) + 1);
    return error_wrap(e, "--sweep");
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
        return sweep_arg_error(e);
    c->sweep[c->n_sweep - 1].from_cli = true;
    char *vals = strdup(eq + 1); // as long as it is: sweep_value limits the count
    if (!vals)
        return error_set(e, "--sweep %s: out of memory", key);
    int rc = 0;
    char *list = str_trim(vals);
    size_t n = strlen(list);
    if (n >= 2 && list[0] == '[' && list[n - 1] == ']') // YAML's flow style, as --set takes it
        list[n - 1] = '\0', list++;
    for (char *tok = list, *end; tok && !rc; tok = end) { // every value, empty ones too
        if ((end = strchr(tok, ',')))
            *end++ = '\0';
        if (sweep_value(c, str_trim(tok), e)) // spaces around a comma are the list's
            rc = sweep_arg_error(e);
    }
    free(vals);
    return rc;
}

