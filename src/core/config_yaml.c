/* The YAML reader built on libyaml's event parser. It accepts exactly the
 * shape dpbench uses (a mapping of scalars and sections, sections of scalars
 * or scalar lists, and `sweep:` of key -> list) and refuses anything else at
 * the first event that does not fit, so deep nesting or alias bombs never get
 * expanded. */
#include "config_keys.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

/* ---- YAML ---------------------------------------------------------------- */

struct reader {
    yaml_parser_t parser;
    yaml_event_t ev; // the current event
    bool have_ev;
    const char *file;
    const char *text; // the input, for where a reader error is (libyaml gives its offset)
    size_t len;
    struct config *c;
    const char *where; // the key (or section) whose value or keys come next, for errors
    bool seen[CONFIG_MAX_KEYS]; // a key given twice is refused
    bool seen_section[CONFIG_MAX_SECTIONS + 1]; // + sweep
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

/* The characters of the key that ends at m, the ':' libyaml stopped at
 * (marks count characters, a BOM not among them): from the line's first one
 * after any indent and "- "; 0 where a ':' and a space or tab come before it
 * on the line (a value then, not a key). */
static size_t key_chars(const struct reader *r, yaml_mark_t m)
{
    size_t i = r->len >= 3 && !memcmp(r->text, "\xef\xbb\xbf", 3) ? 3 : 0, c = 0, skip = 0;
    for (; i < r->len; i++) // to the line's first character
        if (((unsigned char)r->text[i] & 0xC0) != 0x80 && c++ == m.index - m.column)
            break;
    for (; i < r->len && (r->text[i] == ' ' || r->text[i] == '-'); i++)
        skip++;
    for (c = skip; i + 1 < r->len && c < m.column; i++) {
        if (r->text[i] == ':' && (r->text[i + 1] == ' ' || r->text[i + 1] == '\t'))
            return 0;
        c += ((unsigned char)r->text[i] & 0xC0) != 0x80;
    }
    return m.column - skip;
}

/* libyaml's error, placed: a byte that is no text at its column (libyaml
 * gives only its offset), at the one that began the character it breaks
 * off; a construct not closed from where it began. */
static int parse_error(struct reader *r)
{
    yaml_parser_t *p = &r->parser;
    yaml_mark_t m = p->problem_mark;
    if (p->error == YAML_READER_ERROR) { // a byte that is no text: only its offset is set
        m = (yaml_mark_t){0};
        size_t i = r->len >= 3 && !memcmp(r->text, "\xef\xbb\xbf", 3) ? 3 : 0; // a BOM is no column
        size_t end = p->problem_offset, lead = end - (end > 0); // a byte that breaks off a
        while (lead > i && ((unsigned char)r->text[lead] & 0xC0) == 0x80) // sequence: where
            lead--;                                                       // that began
        bool cut = !strcmp(p->problem, "invalid trailing UTF-8 octet") && end < r->len;
        for (end = cut ? lead : end; i < end && i < r->len; i++)
            if (r->text[i] == '\n' || r->text[i] == '\r') // CR LF, LF or CR alone: one break
                m.line++, m.column = 0, i += r->text[i] == '\r' && i + 1 < r->len &&
                                             r->text[i + 1] == '\n';
            else
                m.column += ((unsigned char)r->text[i] & 0xC0) != 0x80; // a character's first byte
        char byte[16] = "";
        if (p->problem_value >= 0) // -1: a sequence cut short, no one byte to name
            snprintf(byte, sizeof byte, " (0x%02x)", (unsigned)p->problem_value);
        if (cut)
            return at(r, m, "malformed YAML: not UTF-8: the byte 0x%02x begins a character that "
                      "0x%02x does not continue (Latin-1 text? save the file as UTF-8)",
                      (unsigned char)r->text[lead], (unsigned)p->problem_value);
        return at(r, m, "malformed YAML: %s%s%s", p->problem, byte, strstr(p->problem, "UTF-8")
                  ? " (Latin-1 text? save the file as UTF-8)" : "");
    }
    if (p->context) // where the construct that is not closed began
        return at(r, m, "malformed YAML: %s (from line %zu, column %zu): %s", p->context,
                  p->context_mark.line + 1, p->context_mark.column + 1, p->problem);
    if (p->problem && !strcmp(p->problem, "mapping values are not allowed in this context") &&
        key_chars(r, m) > 1024) // libyaml ends a plain key there
        return at(r, m, "malformed YAML: a key longer than 1024 characters (YAML's limit; "
                  "no dpbench key is)");
    return at(r, m, "malformed YAML: %s", p->problem ? p->problem : "parse error");
}

/* Advances to the next event; refuses aliases everywhere. */
static int next(struct reader *r)
{
    if (r->have_ev)
        yaml_event_delete(&r->ev);
    r->have_ev = false;
    if (!yaml_parser_parse(&r->parser, &r->ev))
        return parse_error(r);
    r->have_ev = true;
    /* a "\0" escape: a C string ends there; refused by the reading pass, which knows the
     * key, with what comes before it (a control byte as '?') */
    if (r->c && r->ev.type == YAML_SCALAR_EVENT &&
        r->ev.data.scalar.length != strlen((const char *)r->ev.data.scalar.value)) {
        char shown[48];
        snprintf(shown, sizeof shown, "%s", (const char *)r->ev.data.scalar.value);
        for (char *p = shown; *p; p++)
            *p = (unsigned char)*p < ' ' || *p == 0x7f ? '?' : *p;
        return at(r, r->ev.start_mark, "%s: a NUL byte (\\0) after '%s': not allowed in a key "
                  "or value", r->where ? r->where : "config", shown);
    }
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

/* The scalar's text; a plain null (~, null, Null, NULL) reads as empty, as the
 * empty value does: `out: ~` sets no folder, never one named "~". */
static const char *scalar(const struct reader *r)
{
    const char *v = (const char *)r->ev.data.scalar.value;
    bool null = r->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                (!strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL"));
    return null ? "" : v;
}

/* Reads a scalar, or a list of scalars joined with commas, for `k`. */
static int read_value(struct reader *r, const struct key *k, const char *path)
{
    yaml_mark_t m = r->ev.start_mark;
    if (r->ev.type == YAML_SCALAR_EVENT) {
        if ((k->type == KEY_INT_LIST || k->type == KEY_FLOAT_LIST) && scalar(r)[0] == '\0')
            return set_value(r->c, k, "", r->e) ? at(r, m, "%s", r->e->msg) : 0;
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
        else if (strchr(scalar(r), ',') || !scalar(r)[strspn(scalar(r), " ")])
            rc = at(r, r->ev.start_mark, "%s: expected %s, found '%s'", path,
                    k->type == KEY_INT_LIST ? "an integer" : "a number", scalar(r));
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
        r->where = "sweep";
        if (next(r))
            return -1;
        if (r->ev.type == YAML_MAPPING_END_EVENT)
            return 0;
        yaml_mark_t km = r->ev.start_mark;
        if (read_key(r, "sweep", key, sizeof key))
            return -1;
        r->where = key;
        if (sweep_add(r->c, key, r->e))
            return at(r, km, "%s", r->e->msg);
        r->c->sweep[r->c->n_sweep - 1].line = (int)km.line + 1;
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
    r->where = path;
    if (next(r))
        return -1;

    if (!prefix[0]) {
        for (size_t s = 0; s <= config_n_sections; s++) {
            const char *name = s < config_n_sections ? config_sections[s] : "sweep";
            if (strcmp(key, name) != 0)
                continue;
            if (r->seen_section[s])
                return at(r, km, "duplicate key '%s'", key);
            r->seen_section[s] = true;
            if (s == config_n_sections)
                return read_sweep(r);
            if (r->ev.type != YAML_MAPPING_START_EVENT)
                return at(r, r->ev.start_mark, "%s: expected a mapping of %s.* keys, found %s",
                          key, key, event_name(r->ev.type));
            for (;;) {
                r->where = name; // its keys
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
    if (r->seen[k - config_keys])
        return at(r, km, "duplicate key '%s'", path);
    r->seen[k - config_keys] = true;
    if (read_value(r, k, path))
        return -1;
    r->c->key_line[k - config_keys] = (int)km.line + 1; // for the rules' errors
    return 0;
}

/* The whole text through libyaml once, before any key is read: a syntax error
 * anywhere (an unclosed [ or {, a bad indent) is reported as itself, with its
 * line, rather than as what the half-read value looked like to the reader.
 * Nesting deeper than CONFIG_MAX_DEPTH is refused here, at its first level
 * too many: a config needs 3 (the document, sweep:, a key's list). */
static int syntax_check(const char *text, size_t len, const char *file, struct error *e)
{
    struct reader r = {.file = file, .text = text, .len = len, .e = e};
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
    struct reader r = {.file = file, .text = text, .len = len, .c = c, .e = e};
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
        r.where = NULL; // a top-level key
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

