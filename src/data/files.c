/* The file readers the labelled dataset kinds share. */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int files_add_source(struct file_data *f, const char *path, struct error *e)
{
    char **s = realloc(f->sources, (size_t)(f->n_sources + 1) * sizeof *s);
    if (!s)
        return error_set(e, "out of memory");
    f->sources = s;
    if (!(s[f->n_sources] = strdup(path)))
        return error_set(e, "out of memory");
    f->n_sources++;
    return 0;
}

/* Reads a file (gzip-compressed or plain: zlib reads both), at most `max`
 * bytes of its content, so that a small gzip file cannot expand without
 * bound (*n = max + 1 flags more). A truncated gzip stream is an error. */
int files_read_all(const char *path, size_t max, uint8_t **buf, size_t *n, struct error *e)
{
    int fd = file_open_regular(path, NULL, e);
    if (fd < 0)
        return -1;
    gzFile g = gzdopen(fd, "rb");
    if (!g) {
        close(fd);
        return error_set(e, "%s: cannot open: out of memory", path);
    }
    size_t cap = 1 << 20, len = 0;
    uint8_t *b = malloc(cap);
    for (;;) {
        if (!b) {
            gzclose(g);
            return error_set(e, "%s: out of memory", path);
        }
        size_t room = (max + 1 < cap ? max + 1 : cap) - len;
        unsigned want = (unsigned)(room > (1u << 30) ? (1u << 30) : room);
        int got = gzread(g, b + len, want);
        if (got < 0) {
            int zerr;
            const char *msg = gzerror(g, &zerr);
            char why[256];
            snprintf(why, sizeof why, "%s", zerr == Z_ERRNO ? strerror(errno) : msg);
            free(b);
            gzclose(g);
            return error_set(e, "%s: cannot read: %s", path, why);
        }
        len += (size_t)got;
        if (got == 0 || len > max)
            break;
        if (len == cap) {
            uint8_t *nb = realloc(b, cap * 2);
            if (!nb)
                free(b);
            b = nb;
            cap *= 2;
        }
    }
    int zerr;
    gzerror(g, &zerr);
    gzclose(g);
    if (zerr == Z_BUF_ERROR) {
        free(b);
        return error_set(e, "%s: truncated gzip data", path);
    }
    *buf = b;
    *n = len;
    return 0;
}

/* Reads at most `max` bytes of a plain file (all of it when max is 0). */
int files_read_plain(const char *path, size_t max, uint8_t **buf, size_t *n, bool *whole,
                     struct error *e)
{
    int fd = file_open_regular(path, NULL, e);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return error_set(e, "%s: cannot read: %s", path, strerror(errno));
    }
    size_t size = (size_t)st.st_size, want = max && max < size ? max : size;
    uint8_t *b = malloc(want ? want : 1);
    if (!b) {
        close(fd);
        return error_set(e, "%s: out of memory (%zu bytes)", path, want);
    }
    size_t got = 0;
    while (got < want) {
        ssize_t r = read(fd, b + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int err = r < 0 ? errno : 0;
            free(b);
            close(fd);
            return error_set(e, "%s: cannot read: %s", path, err ? strerror(err) : "file shrank");
        }
        got += (size_t)r;
    }
    close(fd);
    *buf = b;
    *n = got;
    if (whole)
        *whole = got == size;
    return 0;
}

uint32_t files_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

bool files_exist(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int files_lock_dir(const char *path, struct error *e)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    int fd;
    for (;;) { // path's parent, or the nearest of its ancestors that exists
        char *slash = strrchr(dir, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else
            slash[slash == dir] = '\0'; // "/x" -> "/"
        if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 || !slash || errno != ENOENT)
            break;
    }
    if (fd < 0)
        return error_set(e, "%s: cannot open: %s", dir, strerror(errno));
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR || stop_requested()) {
            int err = errno;
            close(fd);
            return error_set(e, "%s: cannot lock: %s", dir, strerror(err));
        }
    }
    return fd;
}

void files_unlock_dir(int fd)
{
    close(fd); // releases the lock
}

void files_free_names(char **v, int n)
{
    for (int i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}
