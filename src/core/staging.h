/* Output folders that appear whole or not at all. A command that writes
 * several files (--make-dataset, --export) writes them into a staging folder
 * beside or inside its target, on the same file system, and moves them into
 * place only when every one is written; a failure (a full disk, a file size
 * limit, a write error, a signal) removes the staging folder, so nothing
 * partial is left and the same command can simply run again. */
#ifndef DPBENCH_STAGING_H
#define DPBENCH_STAGING_H

#include <stdbool.h>

#include "util.h"

struct staging {
    char target[4096]; // the folder the files end up in, no trailing '/'
    char path[4200]; // where to write them meanwhile
    bool whole; // path replaces target by one rename (target did not exist)
    char made[4096]; // the highest parent folder this created ("" if none)
    bool open;
};

/* mkdir -p: creates path and every missing parent. `made` (when not NULL,
 * n bytes) receives the highest folder it created, "" if none. A dangling
 * symbolic link on the way is named as such. */
int dirs_make(const char *path, char *made, size_t n, struct error *e);
/* Undoes dirs_make: removes path, then its parents up to `made` (the highest
 * folder dirs_make created; "": none), each only while it is empty. */
void dirs_unmake(const char *path, const char *made);

/* Creates target's missing parents and the staging folder; s->path is where
 * to write. `what` names the command in messages ("--export"). */
int staging_open(struct staging *s, const char *target, const char *what, struct error *e);
/* Moves everything written into target, `last` (a top-level name, or NULL)
 * after the rest, so a reader that waits for it sees the others first. A
 * folder already at a name is replaced whole; then removes the staging folder. */
int staging_commit(struct staging *s, const char *last, struct error *e);
/* Removes the staging folder and the parents staging_open created; safe to
 * call after a commit or twice. */
void staging_abort(struct staging *s);
/* Removes path and all below it, as far as it can (links not followed). */
void staging_tree_remove(const char *path);

#endif
