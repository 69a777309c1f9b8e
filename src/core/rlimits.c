/* Resource limits: what a run needs of the address space, checked before it
 * is taken, and the limits named when a thread or a write fails.
 *
 * OpenBLAS (Debian's 0.3.21) is the reason for the checks before anything
 * runs: its constructor starts one thread per core at load time, each of
 * which maps a 128 MiB buffer, and so does every thread on its first level-3
 * call; when the mapping fails it retries forever (blas_memory_alloc), and a
 * thread that cannot start makes it raise SIGINT. Under a low `ulimit -v` the
 * process would hang or end as if interrupted, with no word of the limit. */
#include "rlimits.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

extern char **environ;

#include "config.h"

enum {
    BLAS_BUFFER = 128 << 20, // OpenBLAS's per-thread buffer (BUFFER_SIZE, seen in strace)
    SLACK = 32 << 20,        // the libraries' own mappings, malloc's arenas, cached stacks
    /* RLIMIT_STACK sizes the main thread's stack and, through glibc, every
     * other thread's. The deepest path measured takes 210 KiB: libxsmm
     * generating a kernel, on the main thread or a replica's
     * (scripts/stack-depth.sh, docs/limits.md; the YAML
     * reader, the folder walk and cJSON have bounded depths). 1 MiB leaves
     * about five times that for the paths not measured (CUDA, NCCL, MPI). */
    STACK_DEEPEST = 210 << 10,
    STACK_MIN = 1 << 20,
};

static double mib(size_t bytes) { return (double)bytes / (1 << 20); }

/* Bytes mapped now (VmSize), from /proc/self/statm; read with plain system
 * calls, as it also runs before the C library's constructors. */
static size_t mapped_now(void)
{
    char buf[128] = "";
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return (size_t)strtoull(buf, NULL, 10) * (size_t)sysconf(_SC_PAGESIZE);
}

/* Bytes mapped now besides OpenBLAS's buffers (mappings of exactly their
 * size: its threads map theirs as they start, so at a given moment some may
 * be there and some not), from one reading of /proc/self/maps. */
static size_t mapped_but_blas(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    size_t n = 0;
    unsigned long lo, hi;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && hi - lo != BLAS_BUFFER)
            n += hi - lo;
    if (f)
        fclose(f);
    return n;
}

/* A new thread's stack: the default glibc gives pthread_create. */
static size_t thread_stack(void)
{
    pthread_attr_t a;
    size_t size = 8 << 20;
    if (pthread_getattr_default_np(&a) == 0) {
        pthread_attr_getstacksize(&a, &size);
        pthread_attr_destroy(&a);
    }
    return size + (size_t)sysconf(_SC_PAGESIZE); // and its guard page (4 KiB, 16 or 64 KiB on arm64)
}

/* The threads OpenBLAS starts at load: its environment variables, else the
 * cores this process may run on. */
static long blas_load_threads(char **envp)
{
    long cores = cores_usable();
    const char *vars[] = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        size_t len = strlen(vars[i]);
        long n = 0;
        for (char **v = envp; v && *v; v++) // the environment main would see
            if (strncmp(*v, vars[i], len) == 0 && (*v)[len] == '=')
                n = strtol(*v + len + 1, NULL, 10);
        if (n > 0)
            return n < cores ? n : cores;
    }
    return cores;
}

/* RLIMIT_AS's soft limit in bytes; 0 when there is none. */
static size_t as_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
        return 0;
    return (size_t)r.rlim_cur;
}

/* OpenBLAS raised SIGINT itself: one of its threads did not start (load) */
static volatile sig_atomic_t blas_raised;
static struct sigaction sigint_before; // restored once the libraries are loaded

static void on_load_sigint(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    if (info->si_code == SI_TKILL && info->si_pid == getpid()) {
        blas_raised = 1;
        return;
    }
    sigaction(sig, &sigint_before, NULL); // a real interrupt while loading
    raise(sig);
}

/* Runs after the libraries' constructors, before main: a thread OpenBLAS
 * could not start is reported with the limit that stopped it. */
__attribute__((constructor)) static void rlimits_loaded(void)
{
    sigaction(SIGINT, &sigint_before, NULL);
    if (!blas_raised)
        return;
    struct error e;
    rlimits_thread_error(&e, EAGAIN, "OPENBLAS_NUM_THREADS",
                        "OpenBLAS could not start its threads");
    fprintf(stderr, "dpbench: %s\n", e.msg);
    _exit(1); // its half-started pool cannot be shut down
}

/* Refuses a stack limit below STACK_MIN, before anything runs deep: below
 * it a thread's stack overflows (SIGSEGV, no word of the limit). Plain
 * system calls, as in rlimits_preinit. DPBENCH_STACK_MEASURE=1 lets it run
 * (scripts/stack-depth.sh measures the least each path needs). */
static void stack_check(char **envp)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_STACK, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= STACK_MIN)
        return;
    for (char **v = envp; v && *v; v++)
        if (strcmp(*v, "DPBENCH_STACK_MEASURE=1") == 0)
            return;
    char msg[512];
    int len = snprintf(msg, sizeof msg,
                       "dpbench: the stack limit (RLIMIT_STACK, ulimit -s) is %llu KiB; dpbench "
                       "needs at least %d KiB for the main thread and for each thread, whose "
                       "stacks this limit sizes (the deepest path measured takes %d KiB): raise "
                       "ulimit -s to at least %d (KiB)\n",
                       (unsigned long long)r.rlim_cur / 1024, STACK_MIN >> 10, STACK_DEEPEST >> 10,
                       STACK_MIN >> 10);
    if (write(STDERR_FILENO, msg, len > 0 && len < (int)sizeof msg ? (size_t)len : 0) < 0)
        _exit(2);
    _exit(2);
}

/* Runs before every library's constructor (.preinit_array): refuses, with the
 * limit's name, a stack limit too small for dpbench's deepest path and an
 * address space too small for OpenBLAS to start, and catches the SIGINT it
 * raises when a thread does not start. */
static void rlimits_preinit(int argc, char **argv, char **envp)
{
    (void)argc, (void)argv;
    stack_check(envp);
    struct sigaction sa = {.sa_sigaction = on_load_sigint, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &sigint_before);
    size_t limit = as_limit();
    if (!limit)
        return;
    long threads = blas_load_threads(envp);
    size_t each = BLAS_BUFFER + thread_stack(), now = mapped_now();
    size_t need = now + (size_t)(threads - 1) * each + BLAS_BUFFER + SLACK;
    if (need <= limit)
        return;
    char msg[1024];
    int len = snprintf(msg, sizeof msg,
                       "dpbench: the address-space limit (RLIMIT_AS, ulimit -v) is %.0f MiB; "
                       "OpenBLAS needs more to start: a %.0f MiB buffer for each of its %ld "
                       "thread%s and a %.0f MiB stack for each but the first, %.0f MiB with "
                       "what is mapped now: raise ulimit -v to at least %zu (KiB) for it to "
                       "start (the run's data and threads need more; dpbench then says how "
                       "much)%s\n",
                       mib(limit), mib(BLAS_BUFFER), threads, threads == 1 ? "" : "s",
                       mib(thread_stack()), mib(need), (need + 1023) / 1024,
                       threads > 1 ? ", or set OPENBLAS_NUM_THREADS=1 (fewer threads)" : "");
    if (write(STDERR_FILENO, msg, len > 0 && len < (int)sizeof msg ? (size_t)len : 0) < 0)
        _exit(2);
    _exit(2);
}

__attribute__((section(".preinit_array"), used)) static void (*const preinit)(int, char **,
                                                                            char **) =
    rlimits_preinit;

int rlimits_blas_threads(void) { return (int)blas_load_threads(environ); }

int rlimits_check_space(size_t data, size_t threads, size_t callers, struct error *e)
{
    size_t limit = as_limit();
    if (!limit)
        return 0;
    /* every thread's whole stack and each BLAS-calling thread's buffer
     * count; those buffers mapped already are counted in now */
    size_t stack = thread_stack(), stacks = 0, blas = 0, need;
    size_t now = mapped_but_blas();
    bool ok = !__builtin_mul_overflow(threads, stack, &stacks) &&
              !__builtin_mul_overflow(callers, (size_t)BLAS_BUFFER, &blas) &&
              !__builtin_add_overflow(data, stacks + blas + SLACK, &need) &&
              !__builtin_add_overflow(need, now, &need);
    if (ok && need <= limit)
        return 0;
    char more[160] = "";
    if (ok)
        snprintf(more, sizeof more, " to at least %zu (KiB)", need / 1024 + (need % 1024 > 0));
    return error_set(e, "the address-space limit (RLIMIT_AS, ulimit -v) is %.0f MiB and %.0f MiB "
                        "of it is mapped; the run needs about %.0f MiB more (data and buffers "
                        "%.0f, %zu thread stacks %.0f, OpenBLAS's buffers for %zu thread%s %.0f, "
                        "libraries %.0f): raise ulimit -v%s, or lower loader.num_workers, "
                        "parallel.replicas or dataset.length",
                     mib(limit), mib(now), ok ? mib(need - now) : 0.0, mib(data),
                     threads, mib(stacks), callers, callers == 1 ? "" : "s",
                     mib(blas), mib(SLACK), more);
}

int rlimits_thread_error(struct error *e, int err, const char *setting, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (err != EAGAIN)
        return error_set(e, "%s: %s", what, strerror(err));
    char why[512] = "";
    size_t used = 0;
    struct rlimit r;
    /* root's threads are not counted against RLIMIT_NPROC */
    if (geteuid() != 0 && getrlimit(RLIMIT_NPROC, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
        used += (size_t)snprintf(why, sizeof why, "the process limit (RLIMIT_NPROC, ulimit -u) "
                                 "is %llu for this user", (unsigned long long)r.rlim_cur);
    size_t as = as_limit();
    if (as && used < sizeof why)
        used += (size_t)snprintf(why + used, sizeof why - used, "%sthe address-space limit "
                                 "(RLIMIT_AS, ulimit -v) is %.0f MiB, %.0f MiB of it mapped, "
                                 "and a thread's stack takes %.0f MiB", used ? "; " : "",
                                 mib(as), mib(mapped_now()), mib(thread_stack()));
    if (!used)
        snprintf(why, sizeof why, "the system's limit on threads (kernel.threads-max, "
                 "a pids cgroup)");
    return error_set(e, "%s: %s; %s: lower %s or raise the limit", what, strerror(err), why,
                     setting);
}

const char *rlimits_write_error(int err, char *buf, size_t n)
{
    struct rlimit r;
    if (err == EFBIG && getrlimit(RLIMIT_FSIZE, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
        snprintf(buf, n, "%s: the file-size limit (RLIMIT_FSIZE, ulimit -f) is %llu bytes; "
                 "raise it", strerror(err), (unsigned long long)r.rlim_cur);
    else
        snprintf(buf, n, "%s", strerror(err));
    return buf;
}
