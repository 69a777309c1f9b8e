/* Libraries opened at run time instead of linked (cudart, cuBLAS, libmpi,
 * libnccl), so that a run which does not use one never maps it. One way to
 * open them: the file an environment variable names, else the library's
 * soname, and every symbol the caller lists resolved at once into its slot;
 * a library that lacks one is closed again. The caller words the error, with
 * the file, and dlerror()'s text or the missing symbol, from struct dl_error. */
#ifndef DPBENCH_DL_H
#define DPBENCH_DL_H

#include <stddef.h>

struct dl_sym {
    const char *name; // the symbol
    void **slot;      // receives its address (a function pointer through
                      // `(void **)&fn`, POSIX's way to store dlsym's result)
};

struct dl_error {
    const char *path;    // the file dl_open tried
    const char *missing; // the first symbol it lacked; NULL when it did not open
    char reason[256];    // dlerror()'s text when it did not open
};

/* Opens $env (when set and not empty) or else `soname` with RTLD_NOW | flags
 * (RTLD_LOCAL or RTLD_GLOBAL) and resolves syms[0..n). Returns the handle,
 * or NULL with err filled in. */
void *dl_open(const char *env, const char *soname, int flags, const struct dl_sym *syms,
              size_t n, struct dl_error *err);
/* Resolves syms[0..n) in an open library: NULL, or the first symbol it lacks. */
const char *dl_resolve(void *handle, const struct dl_sym *syms, size_t n);

#endif
