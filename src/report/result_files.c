/* The result files of --out: NAME-STAMP.json, .csv and -summary.csv written
 * as one result, whole or not at all, never replacing another run's. */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rlimits.h"
#include "signals.h"
#include "staging.h"

/* A pair NAME-STAMP[-K].json + .csv is one result: both temp files are written
 * and synced in full first, then hard-linked to their final names. link()
 * never replaces an existing file, so two runs that pick the same name in the
 * same second take K = 2, 3, ... instead of mixing or overwriting each other;
 * a failure removes whatever this run created, so the pair lands whole or not
 * at all. */

enum { MAX_SEQ = 999 };
/* The longest name this file creates beyond NAME-STAMP: a temp file
 * ".NAME-STAMP.PID-summary.csv.tmp" (pid up to 10 digits), or "-999-summary.csv". */
#define SUFFIX_MAX (sizeof ".." "4294967295" "-summary.csv.tmp" - 1)

static void result_base(const char *name, const char *stamp, char *buf, size_t n)
{
    snprintf(buf, n, "%s-%s", name, stamp);
    for (char *p = buf; *p; p++) // the name is user text: keep it one file
        if (*p == '/' || *p == ' ')
            *p = '_';
}

/* report_check_out's checks; `made`: the highest folder it created. */
static int out_usable(const char *dir, const char *name, char made[4096], struct error *e)
{
    struct stat st;
    if (stat(dir, &st) != 0) { // mkdir -p; made by another process meanwhile (a ddp rank): fine
        if (dirs_make(dir, made, 4096, e) || stat(dir, &st) != 0)
            return error_wrap(e, "report.out %s: cannot create directory", dir);
    }
    if (!S_ISDIR(st.st_mode))
        return error_set(e, "report.out %s: not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return error_set(e, "report.out %s: not a writable directory: %s", dir, strerror(errno));
    errno = 0;
    long name_max = pathconf(dir, _PC_NAME_MAX);
    if (name_max < 0 && errno == 0)
        name_max = 255; // no limit reported
    char base[CONFIG_STR + 64];
    result_base(name, "YYYYmmdd-HHMMSS", base, sizeof base);
    if (name_max > 0 && strlen(base) + SUFFIX_MAX > (size_t)name_max)
        return error_set(e, "report.out %s: name '%s' is too long for a result file name there "
                            "(%zu bytes with the stamp, the limit is %ld)",
                         dir, name, strlen(base) + SUFFIX_MAX, name_max);
    /* Some directories (/proc, /sys, read-only mounts) pass access() but take
     * no new file: try one. */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.dpbench-probe.%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return error_set(e, "report.out %s: cannot create a file there: %s", dir, strerror(errno));
    close(fd);
    unlink(probe);
    return 0;
}

int report_check_out(const char *dir, const char *name, char *made, struct error *e)
{
    made[0] = '\0';
    int rc = out_usable(dir, name, made, e);
    if (rc)
        dirs_unmake(dir, made);
    return rc;
}

/* A temp file of ours gone: removed, and no longer the signal handler's to remove. */
static void drop(const char *path)
{
    unlink(path);
    signals_untrack(path);
}

/* Writes text (or render(r) when text is NULL) to a new file at path,
 * synced; on failure (a signal on the way included: signals.h) removes it
 * and names the path in e. */
static int write_new(const char *path, const char *text, const struct results *r,
                     int (*render)(FILE *, const struct results *), struct error *e)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return error_set(e, "%s: cannot create: %s", path, strerror(errno));
    signals_track(path);
    FILE *f = signals_fdopen(fd);
    int err = f ? 0 : errno ? errno : ENOMEM;
    if (f && text)
        fputs(text, f);
    else if (f && render(f, r))
        err = ENOMEM;
    if (f && (fflush(f) != 0 || ferror(f)))
        err = errno ? errno : EIO;
    if (f && fclose(f) != 0 && !err)
        err = errno;
    if (!err && fsync(fd) != 0)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (err) {
        drop(path);
        char why[256];
        return error_set(e, "%s: cannot write: %s", path, rlimits_write_error(err, why, sizeof why));
    }
    return 0;
}

/* Gives tmp the name dst without replacing an existing dst: 0, 1 when dst
 * exists, -1 on another error (errno set). */
static int place(const char *tmp, const char *dst)
{
    if (link(tmp, dst) == 0)
        return 0;
    if (errno == EEXIST)
        return 1;
    if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS && errno != EMLINK)
        return -1;
    /* file systems without hard links: a rename that refuses to replace */
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dst, RENAME_NOREPLACE) == 0)
        return 0;
    return errno == EEXIST ? 1 : -1;
}

/* The files of one result: NAME-STAMP.json, .csv and -summary.csv. */
enum { N_FILES = 3 };
static const char *const file_suffix[N_FILES] = {".json", ".csv", "-summary.csv"};

/* Links every temp file to its name with sequence suffix seq: 0 when all
 * are placed, 1 when a name is taken (none left placed), -1 on an error. */
static int place_all(char tmp[][4400], const char *dir, const char *base, const char *seq,
                     char path[][4400], struct error *e)
{
    for (int i = 0; i < N_FILES; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s%s%s", dir, base, seq, file_suffix[i]);
        int got = place(tmp[i], path[i]);
        if (got == 0)
            continue;
        int err = errno;
        for (int j = 0; j < i; j++)
            unlink(path[j]); // this run's, just linked: the set goes whole or not at all
        if (got < 0)
            return error_set(e, "%s: cannot create: %s", path[i], strerror(err));
        return 1;
    }
    return 0;
}

int report_write_files(const struct results *r, const char *dir, char *json_path, size_t n,
                       struct error *e)
{
    char base[CONFIG_STR + 64];
    result_base(r->cfg.name, r->stamp, base, sizeof base);
    char tmp[N_FILES][4400], path[N_FILES][4400];
    for (int i = 0; i < N_FILES; i++)
        snprintf(tmp[i], sizeof tmp[i], "%s/.%s.%ld%s.tmp", dir, base, (long)getpid(),
                 file_suffix[i]);
    char *json = report_json(r);
    if (!json)
        return error_set(e, "out of memory rendering JSON");
    int rc = write_new(tmp[0], json, r, NULL, e);
    free(json);
    if (rc == 0 && (rc = write_new(tmp[1], NULL, r, report_csv, e)) != 0)
        drop(tmp[0]);
    if (rc == 0 && (rc = write_new(tmp[2], NULL, r, report_summary_csv, e)) != 0) {
        drop(tmp[0]);
        drop(tmp[1]);
    }
    if (rc)
        return -1;
    rc = 1; // 1: every name taken, -1: an error, 0: placed
    for (int k = 1; k <= MAX_SEQ && rc == 1; k++) {
        char seq[16] = "";
        if (k > 1)
            snprintf(seq, sizeof seq, "-%d", k);
        rc = place_all(tmp, dir, base, seq, path, e);
    }
    if (rc == 1)
        rc = error_set(e, "report.out %s: %s and %d more names like it are all taken", dir, base,
                  MAX_SEQ - 1);
    for (int i = 0; i < N_FILES; i++)
        drop(tmp[i]); // gone already where rename placed it
    if (rc == 0)
        snprintf(json_path, n, "%s", path[0]);
    return rc;
}

void report_unwrite_files(const char *json_path)
{
    size_t n = strlen(json_path) - strlen(file_suffix[0]);
    for (int i = 0; i < N_FILES; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%.*s%s", (int)n, json_path, file_suffix[i]);
        unlink(path);
    }
}

int report_check_replace(const char *dir, const char *name, const char *stamp, const char *ext,
                         struct error *e)
{
    char base[CONFIG_STR + 64];
    struct stat st;
    result_base(name, stamp, base, sizeof base);
    char path[strlen(dir) + strlen(base) + strlen(ext) + 3];
    snprintf(path, sizeof path, "%s/%s.%s", dir, base, ext);
    if (lstat(path, &st) != 0)
        return 0;
    if (S_ISDIR(st.st_mode)) // rename replaces all else (a link too)
        return error_set(e, "report.out %s: %s.%s is a folder, which a file cannot replace: "
                         "remove it or give another --out", dir, base, ext);
    struct stat d; // a sticky folder (/tmp): only the file's or the folder's owner replaces it
    uid_t me = geteuid();
    if (me != 0 && stat(dir, &d) == 0 && (d.st_mode & S_ISVTX) && st.st_uid != me && d.st_uid != me)
        return error_set(e, "report.out %s: %s.%s belongs to another user in a sticky folder, "
                         "where only its owner can replace or remove it: give another --out",
                         dir, base, ext);
    return 0;
}

int report_remove_text(const char *dir, const char *name, const char *stamp, const char *ext,
                       char *path, size_t n, struct error *e)
{
    char base[CONFIG_STR + 64];
    result_base(name, stamp, base, sizeof base);
    snprintf(path, n, "%s/%s.%s", dir, base, ext);
    if (unlink(path) == 0)
        return 1;
    int err = errno;
    path[0] = '\0';
    return err == ENOENT ? 0 : error_set(e, "%s/%s.%s: cannot remove: %s", dir, base, ext,
                                         strerror(err));
}

int report_write_text(const char *dir, const char *name, const char *stamp, const char *ext,
                      bool replace, const char *text, char *path, size_t n, struct error *e)
{
    char base[CONFIG_STR + 64], tmp[4400], dst[4400];
    result_base(name, stamp, base, sizeof base);
    snprintf(tmp, sizeof tmp, "%s/.%s.%ld.%s.tmp", dir, base, (long)getpid(), ext);
    if (write_new(tmp, text, NULL, NULL, e))
        return -1;
    snprintf(dst, sizeof dst, "%s/%s.%s", dir, base, ext);
    int got = replace ? -(rename(tmp, dst) != 0) : 1; // rename replaces a file, not a folder
    for (int k = 1; k <= MAX_SEQ && got == 1; k++) {
        char seq[16] = "";
        if (k > 1)
            snprintf(seq, sizeof seq, "-%d", k);
        snprintf(dst, sizeof dst, "%s/%s%s.%s", dir, base, seq, ext);
        got = place(tmp, dst);
    }
    int err = errno;
    drop(tmp); // gone already where rename placed it
    if (got == 1)
        return error_set(e, "report.out %s: %s.%s and %d more names like it are all taken", dir,
                         base, ext, MAX_SEQ - 1);
    if (got < 0)
        return error_set(e, "%s: cannot create: %s", dst, strerror(err));
    snprintf(path, n, "%s", dst);
    return 0;
}

