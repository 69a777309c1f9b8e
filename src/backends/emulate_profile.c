/* The h2d profile file: written after --h2d-bandwidth's table, read by
 * emulate.profile. Format (docs/emulated.md):
 *   {"dpbench_h2d_profile": 1, "device": "...", "dpbench": "VERSION",
 *    "rows": [{"bytes": N, "pinned_gbps": x, "pageable_gbps": y}, ...]} */
#include "emulate_profile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "signals.h"

int h2d_profile_write(const struct h2d_profile *p, const char *dir, char *path, size_t n,
                      struct error *e)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "dpbench_h2d_profile", 1);
    cJSON_AddStringToObject(root, "dpbench", DPBENCH_VERSION);
    cJSON_AddStringToObject(root, "device", p->device);
    cJSON *rows = cJSON_AddArrayToObject(root, "rows");
    for (int i = 0; i < p->n; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "bytes", p->rows[i].bytes);
        cJSON_AddNumberToObject(r, "pinned_gbps", p->rows[i].pinned_gbps);
        cJSON_AddNumberToObject(r, "pageable_gbps", p->rows[i].pageable_gbps);
        cJSON_AddItemToArray(rows, r);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return error_set(e, "out of memory rendering the profile");
    char tmp[4200];
    snprintf(path, n, "%s/%s", dir, H2D_PROFILE_FILE);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int rc = 0;
    if (!f)
        rc = error_set(e, "%s: cannot create: %s", tmp, strerror(errno));
    else if (fputs(text, f) < 0 || fputc('\n', f) < 0 || fclose(f) != 0)
        rc = error_set(e, "%s: cannot write: %s", tmp, strerror(errno));
    else if (rename(tmp, path) != 0)
        rc = error_set(e, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
    if (rc)
        unlink(tmp);
    free(text);
    return rc;
}

/* The file's text, at most 1 MiB. A FIFO or a device is refused without
 * waiting on it; a signal meanwhile does not fail the read (the checks
 * around it stop the run), and a read that never returns is the watchdog's,
 * which names this phase. */
static int read_text(const char *path, char **out, size_t *len, struct error *e)
{
    enum { MAX_BYTES = 1 << 20 };
    int fd = file_open_regular(path, NULL, e);
    if (fd < 0)
        return -1;
    char *buf = malloc(MAX_BYTES + 1);
    size_t got = 0;
    ssize_t n = 1;
    const char *before = signals_phase("reading emulate.profile");
    while (buf && got <= MAX_BYTES && n != 0)
        if ((n = read(fd, buf + got, MAX_BYTES + 1 - got)) > 0)
            got += (size_t)n;
        else if (n < 0 && errno != EINTR)
            break;
    signals_phase(before);
    int err = errno;
    close(fd);
    if (!buf)
        return error_set(e, "out of memory");
    if (n < 0 || got > MAX_BYTES) {
        free(buf);
        return n < 0 ? error_set(e, "%s: cannot read: %s", path, strerror(err))
                     : error_set(e, "%s: larger than 1 MiB", path);
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return 0;
}

/* The range of config key `path` (the rates a row sets), as the key table has it. */
static void key_range(const char *path, double range[2])
{
    for (size_t i = 0; config_key_name(i); i++)
        if (!strcmp(config_key_name(i), path))
            config_key_type(i, &range[0], &range[1]);
}

static int read_row(const cJSON *r, struct h2d_profile *p, const char *path, struct error *e)
{
    static const char *const keys[] = {"bytes", "pinned_gbps", "pageable_gbps"};
    static const char *const sets[] = {NULL, "emulate.h2d_gbps", "emulate.pageable_gbps"};
    double v[3];
    for (int k = 0; k < 3; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(r, keys[k]);
        double range[2] = {0, INFINITY};
        if (!cJSON_IsNumber(x) || !(x->valuedouble > 0) || !isfinite(x->valuedouble))
            return error_set(e, "%s: rows[%d].%s: expected a positive number", path, p->n,
                             keys[k]);
        if (sets[k])
            key_range(sets[k], range);
        if (x->valuedouble < range[0] || x->valuedouble > range[1]) // what the key would refuse
            return error_set(e, "%s: rows[%d].%s: %g is outside [%g, %g] GB/s (%s's range)",
                             path, p->n, keys[k], x->valuedouble, range[0], range[1], sets[k]);
        v[k] = x->valuedouble;
    }
    p->rows[p->n].bytes = v[0];
    p->rows[p->n].pinned_gbps = v[1];
    p->rows[p->n].pageable_gbps = v[2];
    p->n++;
    return 0;
}

int h2d_profile_read(const char *path, struct h2d_profile *p, struct error *e)
{
    char *text = NULL;
    size_t len = 0;
    const char *end = NULL;
    if (read_text(path, &text, &len, e))
        return -1;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    while (root && end < text + len && strchr(" \t\r\n", *end) && *end) // what follows: blanks only
        end++;
    if (root && end < text + len) { // more after the document, a NUL among it
        cJSON_Delete(root);
        root = NULL;
    }
    free(text);
    memset(p, 0, sizeof *p);
    int rc = 0;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "dpbench_h2d_profile");
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows"), *r;
    if (!root)
        rc = error_set(e, "%s: not one JSON document (expected a profile from dpbench "
                          "--h2d-bandwidth --out DIR)", path);
    else if (!cJSON_IsNumber(ver) || ver->valuedouble != 1)
        rc = error_set(e, "%s: dpbench_h2d_profile: expected 1 (a profile from dpbench "
                          "--h2d-bandwidth --out DIR)", path);
    else if (!cJSON_IsArray(rows) || cJSON_GetArraySize(rows) == 0)
        rc = error_set(e, "%s: rows: expected a list of measured sizes", path);
    else if (cJSON_GetArraySize(rows) > H2D_PROFILE_MAX_ROWS)
        rc = error_set(e, "%s: rows: at most %d sizes", path, H2D_PROFILE_MAX_ROWS);
    if (!rc && cJSON_IsString(dev))
        snprintf(p->device, sizeof p->device, "%s", dev->valuestring);
    for (r = rc ? NULL : rows->child; r && !rc; r = r->next)
        rc = read_row(r, p, path, e);
    cJSON_Delete(root);
    return rc;
}

int emulate_profile_apply(struct config *c, struct error *e)
{
    if (!c->emulate.profile[0])
        return 0;
    struct h2d_profile p;
    if (h2d_profile_read(c->emulate.profile, &p, e))
        return error_wrap(e, "emulate.profile");
    int big = 0; // the largest copy: the engine's sustained rate
    for (int i = 1; i < p.n; i++)
        if (p.rows[i].bytes > p.rows[big].bytes)
            big = i;
    if (!config_is_explicit(c, "emulate.h2d_gbps"))
        c->emulate.h2d_gbps = p.rows[big].pinned_gbps;
    if (!config_is_explicit(c, "emulate.pageable_gbps"))
        c->emulate.pageable_gbps = p.rows[big].pageable_gbps;
    return 0;
}
