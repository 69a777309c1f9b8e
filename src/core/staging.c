/* Staging folders: see staging.h. Renames within one file system are
 * atomic, so a file or a folder moved out of the staging folder is either at
 * its final name whole or still in the staging folder. */
#include "staging.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void strip_slashes(char *p)
{
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
}

/* path exists as a symbolic link whose target does not: the message says so */
static int dangling(const char *path, struct error *e)
{
    char to[PATH_MAX];
    ssize_t n = readlink(path, to, sizeof to - 1);
    to[n > 0 ? n : 0] = '\0';
    return error_set(e, "%s is a dangling symbolic link (to '%s', which does not exist)", path,
                     to);
}

/* One level of dirs_make: 1 when it created the folder, 0 when it was there. */
static int dir_level(const char *p, struct error *e)
{
    struct stat st;
    if (stat(p, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return error_set(e, "%s: not a directory", p);
        return 0;
    }
    if (errno == ENOENT && lstat(p, &st) == 0 && S_ISLNK(st.st_mode))
        return dangling(p, e);
    if (errno != ENOENT)
        return error_set(e, "%s: %s", p, strerror(errno));
    if (mkdir(p, 0777) == 0)
        return 1;
    if (errno == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode))
        return 0; // made by another process meanwhile
    return error_set(e, "%s: cannot create folder: %s", p, strerror(errno));
}

int dirs_make(const char *path, char *made, size_t n, struct error *e)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return error_set(e, "%s: path too long", path);
    strip_slashes(buf);
    if (made)
        made[0] = '\0';
    for (char *p = buf + 1;; p++) {
        if (*p && *p != '/')
            continue;
        char c = *p;
        *p = '\0';
        int rc = dir_level(buf, e);
        if (rc < 0)
            return -1;
        if (rc == 1 && made && !made[0])
            snprintf(made, n, "%s", buf);
        *p = c;
        if (!c)
            return 0;
    }
}

static int remove_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    remove(p);
    return 0; // go on: remove what can be removed
}

void staging_tree_remove(const char *path)
{
    nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT); // not into another file system
}

/* Removes the staging folders `dir`/PREFIXpid of processes that are gone (a
 * SIGKILL leaves one): a live process's, another run's, is left alone. */
static void stale_remove(const char *dir, const char *prefix)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    size_t n = strlen(prefix);
    struct dirent *de;
    while ((de = readdir(dp))) {
        char *end;
        if (strncmp(de->d_name, prefix, n) != 0 || !de->d_name[n])
            continue;
        long pid = strtol(de->d_name + n, &end, 10);
        if (*end || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; // not ours, or its process lives
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        staging_tree_remove(p);
    }
    closedir(dp);
}

int staging_open(struct staging *s, const char *target, const char *what, struct error *e)
{
    *s = (struct staging){0};
    if (!target[0] || snprintf(s->target, sizeof s->target, "%s", target) >= (int)sizeof s->target - 64)
        return error_set(e, "%s '%s': expected a folder name of at most 4000 bytes", what, target);
    strip_slashes(s->target);
    struct stat st;
    if (stat(s->target, &st) == 0) { // write inside: the target may be a mount point
        if (!S_ISDIR(st.st_mode))
            return error_set(e, "%s %s: not a directory", what, s->target);
        snprintf(s->path, sizeof s->path, "%s/.dpbench-stage.%ld", s->target, (long)getpid());
        stale_remove(s->target, ".dpbench-stage.");
    } else if (errno == ENOENT && lstat(s->target, &st) == 0) {
        dangling(s->target, e);
        return error_wrap(e, "%s", what);
    } else if (errno != ENOENT && errno != ENOTDIR) { // ENOTDIR: dirs_make names the file
        return error_set(e, "%s %s: %s", what, s->target, strerror(errno));
    } else { // beside it, to become it by one rename
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", s->target);
        char *slash = strrchr(parent, '/');
        const char *base = slash ? slash + 1 : parent;
        if (slash == parent)
            parent[1] = '\0';
        else if (slash)
            *slash = '\0';
        if (slash && dirs_make(parent, s->made, sizeof s->made, e))
            return error_wrap(e, "%s %s", what, s->target);
        snprintf(s->path, sizeof s->path, "%s/.%s.dpbench-stage.%ld", slash ? parent : ".",
                 base, (long)getpid());
        char prefix[4200];
        snprintf(prefix, sizeof prefix, ".%s.dpbench-stage.", base);
        stale_remove(slash ? parent : ".", prefix);
        s->whole = true;
    }
    staging_tree_remove(s->path); // a stale one of a process that had this pid
    if (mkdir(s->path, 0777) != 0) {
        int err = errno;
        staging_abort(s);
        return error_set(e, "%s %s: cannot create a folder there: %s", what, s->target,
                         strerror(err));
    }
    s->open = true;
    return 0;
}

/* Moves staging entry `name` to target/name; a folder there is swapped out
 * into the staging folder first, to go with it. */
static int move_one(struct staging *s, const char *name, struct error *e)
{
    char src[4400], dst[4400], old[4400];
    snprintf(src, sizeof src, "%s/%s", s->path, name);
    snprintf(dst, sizeof dst, "%s/%s", s->target, name);
    if (rename(src, dst) == 0)
        return 0;
    if (errno == ENOTEMPTY || errno == EEXIST || errno == EISDIR || errno == ENOTDIR) {
        snprintf(old, sizeof old, "%s/.old-%s", s->path, name);
        if (rename(dst, old) == 0) {
            if (rename(src, dst) == 0)
                return 0;
            int err = errno;
            rename(old, dst); // put the old one back
            errno = err;
        }
    }
    return error_set(e, "%s: cannot move into place: %s", dst, strerror(errno));
}

static int move_all(struct staging *s, const char *last, struct error *e)
{
    DIR *dp = opendir(s->path);
    if (!dp)
        return error_set(e, "%s: cannot read: %s", s->path, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(dp)) && !rc) { // listed first: moving changes the folder
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            (last && strcmp(de->d_name, last) == 0))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **m = realloc(names, cap * sizeof *names);
            if (!m) {
                rc = error_set(e, "out of memory");
                break;
            }
            names = m;
        }
        if (!(names[n] = strdup(de->d_name)))
            rc = error_set(e, "out of memory");
        else
            n++;
    }
    closedir(dp);
    for (size_t i = 0; i < n && !rc; i++)
        rc = move_one(s, names[i], e);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (!rc && last) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", s->path, last);
        if (access(p, F_OK) == 0)
            rc = move_one(s, last, e);
    }
    return rc;
}

int staging_commit(struct staging *s, const char *last, struct error *e)
{
    if (s->whole && rename(s->path, s->target) == 0) {
        s->open = false;
        return 0;
    }
    /* the target exists (made meanwhile, or written inside from the start) */
    if (move_all(s, last, e)) {
        staging_abort(s);
        return -1;
    }
    staging_tree_remove(s->path); // empty, or the folders that were replaced
    s->open = false;
    s->made[0] = '\0';
    return 0;
}

void staging_abort(struct staging *s)
{
    if (s->open)
        staging_tree_remove(s->path);
    s->open = false;
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", s->target);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) { // the parents made, deepest first
        *slash = '\0';
        dirs_unmake(parent, s->made);
    }
    s->made[0] = '\0';
}

void dirs_unmake(const char *path, const char *made)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (size_t n = strlen(p); n > 1 && p[n - 1] == '/';) // "a/b/" is made as "a/b"
        p[--n] = '\0';
    for (char *slash; made[0] && rmdir(p) == 0 && strcmp(p, made) != 0;) {
        if (!(slash = strrchr(p, '/')) || slash == p)
            break;
        *slash = '\0';
    }
}
