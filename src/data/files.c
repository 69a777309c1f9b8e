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

/* Up to n bytes more of fd into b: what was read (0 at its end), -1 (errno). */
static ssize_t read_some(int fd, uint8_t *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -1 : (ssize_t)got;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

struct gz_in {
    int fd;
    uint8_t b[1 << 16];
    size_t at;  // the file offset of b[0]
    bool end;   // the file is all read
};

/* z's input topped up from the file: what zlib has not taken moved to the
 * front, the rest of the buffer read. 0, -1 (errno). */
static int gz_fill(struct gz_in *in, z_stream *z)
{
    in->at += (size_t)(z->next_in - in->b);
    memmove(in->b, z->next_in, z->avail_in);
    ssize_t r = read_some(in->fd, in->b + z->avail_in, sizeof in->b - z->avail_in);
    if (r < 0)
        return -1;
    in->end = (size_t)r < sizeof in->b - z->avail_in;
    z->next_in = in->b;
    z->avail_in += (uInt)r;
    return 0;
}

/* After a member: zero bytes skipped; whether another member follows (1),
 * the file ends (0), or -1 (errno; garbage: e set). */
static int gz_next(const char *path, struct gz_in *in, z_stream *z, struct error *e)
{
    for (;;) {
        while (z->avail_in && *z->next_in == 0)
            z->next_in++, z->avail_in--;
        if (z->avail_in >= 2 || in->end)
            break;
        if (gz_fill(in, z))
            return error_set(e, "%s: cannot read: %s", path, strerror(errno));
    }
    if (z->avail_in == 0)
        return 0;
    if (z->avail_in >= 2 && z->next_in[0] == 0x1f && z->next_in[1] == 0x8b)
        return 1;
    struct stat st;
    size_t from = in->at + (size_t)(z->next_in - in->b);
    size_t size = fstat(in->fd, &st) == 0 ? (size_t)st.st_size : from + z->avail_in;
    return error_set(e, "%s: trailing garbage after the gzip data (%zu byte%s from byte %zu; "
                        "Python's gzip module refuses it too)", path, size - from,
                     size - from == 1 ? "" : "s", from);
}

/* The gzip file open on fd inflated, at most max + 1 bytes of it, as
 * Python's gzip module reads it: members one after another, zero bytes
 * allowed after one; anything else after one (trailing garbage) is an
 * error. The file streams through a buffer. */
static int gunzip(int fd, const char *path, size_t max, uint8_t **buf, size_t *len,
                  struct error *e)
{
    struct gz_in *in = malloc(sizeof *in);
    z_stream z = {0};
    if (!in || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        free(in);
        return error_set(e, "%s: out of memory", path);
    }
    *in = (struct gz_in){.fd = fd};
    z.next_in = in->b;
    size_t cap = 0, got = 0, most = 1u << 30;
    uint8_t *b = NULL;
    int rc = 0;
    while (rc == 0 && got <= max) {
        if (got == cap) {
            size_t more = cap < (1u << 20) ? 1u << 20 : 2 * cap;
            uint8_t *nb = realloc(b, cap = more < max + 1 ? more : max + 1);
            rc = nb ? 0 : error_set(e, "%s: out of memory", path);
            b = nb ? nb : b;
            continue;
        }
        if (z.avail_in == 0 && !in->end && gz_fill(in, &z)) {
            rc = error_set(e, "%s: cannot read: %s", path, strerror(errno));
            break;
        }
        z.next_out = b + got;
        z.avail_out = (uInt)(cap - got < most ? cap - got : most);
        uInt room = z.avail_out;
        int zr = inflate(&z, Z_NO_FLUSH), next;
        got += room - z.avail_out;
        if (zr == Z_STREAM_END && (next = gz_next(path, in, &z, e)) <= 0) {
            rc = next; // the end of the file (0), or an error
            break;
        }
        if (zr == Z_STREAM_END)
            inflateReset(&z);
        else if (zr == Z_BUF_ERROR && z.avail_in == 0 && in->end)
            rc = error_set(e, "%s: truncated gzip data", path);
        else if (zr != Z_OK && zr != Z_BUF_ERROR)
            rc = error_set(e, "%s: corrupt gzip data: %s", path, z.msg ? z.msg : "zlib error");
    }
    inflateEnd(&z);
    free(in);
    if (rc)
        free(b);
    else
        *buf = b, *len = got;
    return rc;
}

/* Reads a file, gzip-compressed (gunzip) or plain, at most `max` bytes of
 * its content, so that a small gzip file cannot expand without bound (*n =
 * max + 1 flags more). */
int files_read_all(const char *path, size_t max, uint8_t **buf, size_t *n, struct error *e)
{
    uint8_t *magic;
    size_t n_magic;
    if (files_read_plain(path, 2, &magic, &n_magic, NULL, e))
        return -1;
    bool gz = n_magic == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    free(magic);
    if (!gz)
        return files_read_plain(path, max + 1, buf, n, NULL, e);
    int fd = file_open_regular(path, NULL, e);
    if (fd < 0)
        return -1;
    int rc = gunzip(fd, path, max, buf, n, e);
    close(fd);
    return rc;
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
