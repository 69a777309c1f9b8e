/* The resource limits a run depends on (setrlimit, the shell's ulimit): the
 * address space (RLIMIT_AS, ulimit -v) that the buffers, thread stacks and
 * OpenBLAS's per-thread buffers take, the processes a user may run
 * (RLIMIT_NPROC, ulimit -u) that every thread counts against, the size
 * of a file (RLIMIT_FSIZE, ulimit -f), and the stack (RLIMIT_STACK, ulimit
 * -s: below 1 MiB refused before anything runs). Each is checked before it is needed,
 * or its failure is explained with the limit's name and the setting to
 * lower, instead of a hang or a bare errno. */
#ifndef DPBENCH_RLIMITS_H
#define DPBENCH_RLIMITS_H

#include <stddef.h>

#include "util.h"

/* The address space a run needs beyond what is mapped now against RLIMIT_AS:
 * data bytes of buffers, `threads` more thread stacks, and OpenBLAS's buffer
 * for each of `callers` threads that call BLAS. -1 with e naming the limit,
 * how much the run needs and the settings to lower when it does not fit
 * (estimate_check_limits says it for a run's config). */
int rlimits_check_space(size_t data, size_t threads, size_t callers, struct error *e);

/* The threads OpenBLAS started at load (OPENBLAS_NUM_THREADS or the cores):
 * a run asks for no more, since a thread it adds later is started unchecked
 * (a thread that fails to start there would hang the first product). */
int rlimits_blas_threads(void);

/* e for a thread that did not start (pthread_create's err): the message fmt
 * made, err's text and, for EAGAIN, the limits that can cause it (RLIMIT_NPROC,
 * RLIMIT_AS) with their values and `setting`, the config key that sets how
 * many threads start. Returns -1. */
int rlimits_thread_error(struct error *e, int err, const char *setting, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The text of a write error err: strerror, and for EFBIG the file-size limit
 * (RLIMIT_FSIZE, ulimit -f) that caused it. */
const char *rlimits_write_error(int err, char *buf, size_t n);

#endif
