/* Shared helpers: error formatting and the monotonic clock. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t train_stop;
volatile sig_atomic_t train_abort;

bool stop_requested(void) { return __atomic_load_n(&train_stop, __ATOMIC_RELAXED) != 0; }
bool abort_requested(void) { return __atomic_load_n(&train_abort, __ATOMIC_RELAXED) != 0; }

void stop_request(int sig) // async-signal-safe: lock-free stores only
{
    if (__atomic_load_n(&train_stop, __ATOMIC_RELAXED))
        __atomic_store_n(&train_abort, 1, __ATOMIC_RELAXED);
    else
        __atomic_store_n(&train_stop, sig, __ATOMIC_RELAXED);
}

int error_set(struct error *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int error_wrap(struct error *e, const char *fmt, ...)
{
    char prefix[sizeof e->msg], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    if (snprintf(e->msg, sizeof e->msg, "%s: %s", prefix, old) >= (int)sizeof e->msg)
        memcpy(e->msg + sizeof e->msg - 4, "...", 4); // shortened, still one line
    return -1;
}

int file_open_regular(const char *path, const char *what, struct error *e)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return error_set(e, "%s: cannot open%s%s: %s", path, what ? " " : "", what ? what : "",
                         strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return error_set(e, "%s: not a regular file", path);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

float *floats_alloc(size_t n)
{
    void *p = NULL;
    return posix_memalign(&p, 64, (n ? n : 1) * sizeof(float)) == 0 ? p : NULL;
}

/* The kernel's transparent huge page size; 2 MiB where it does not say. */
static size_t huge_page(void)
{
    size_t huge = (size_t)2 << 20;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
    unsigned long long v;
    if (f && fscanf(f, "%llu", &v) == 1 && v >= 4096 && (v & (v - 1)) == 0)
        huge = (size_t)v;
    if (f)
        fclose(f);
    return huge;
}

void *huge_alloc(size_t bytes)
{
    const size_t huge = huge_page();
    if (bytes < huge)
        return malloc(bytes ? bytes : 1);
    void *p = NULL;
    if (posix_memalign(&p, huge, bytes) != 0)
        return NULL;
    (void)madvise(p, bytes, MADV_HUGEPAGE); // advice: where the kernel has no THP it is refused, harmlessly
    return p;
}

long cores_usable(void)
{
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : online > 0 ? online : 1;
}

void threads_pin_apart(const pthread_t *t, int n)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < n + 1)
        return;
    int here = sched_getcpu(), next = 0;
    for (int i = 0; i < n; i++) {
        while (!CPU_ISSET(next, &allowed) || next == here)
            next++;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(next++, &one);
        pthread_setaffinity_np(t[i], sizeof one, &one);
    }
}

int thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

size_t words_append(char *buf, size_t n, size_t used, const char *word)
{
    if (used >= n)
        return n;
    int k = snprintf(buf + used, n - used, "%s%s", used ? " " : "", word);
    if (k < 0 || (size_t)k >= n - used) {
        buf[used] = '\0';
        return n;
    }
    return used + (size_t)k;
}

char *str_trim(char *s)
{
    s += strspn(s, " ");
    for (char *end = s + strlen(s); end > s && end[-1] == ' ';)
        *--end = '\0';
    return s;
}

const char *getopt_refused(char *const argv[], char buf[3])
{
    const char *arg = argv[optind - 1], *now = argv[optind]; // now: a group getopt is inside
    bool inside = now && now[0] == '-' && now[1] != '-' && strchr(now + 1, optopt);
    if (optopt <= ' ' || optopt > '~' || (!inside && arg[0] == '-' && arg[1] == '-'))
        return arg; // an unknown long option, one given a value it takes not (--quiet=1)
    buf[0] = '-', buf[1] = (char)optopt, buf[2] = '\0';
    return buf;
}

size_t text_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof cur);
    }
    return prev[lb];
}

const char *getopt_hint(const char *refused, const struct option *longopts, char *buf, size_t n)
{
    buf[0] = '\0';
    if (strncmp(refused, "--", 2) != 0)
        return buf;
    char name[72];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(refused + 2, "="), refused + 2);
    const char *best = NULL, *sep = ": it could be";
    size_t best_d = SIZE_MAX, used = 0;
    for (const struct option *o = longopts; o->name; o++) {
        if (!strcmp(o->name, name) && refused[2 + strlen(name)] == '=')
            return snprintf(buf, n, ": --%s takes no value", name), buf;
        if (name[0] && !strncmp(o->name, name, strlen(name)) && used < n) // a prefix of several
            used += (size_t)snprintf(buf + used, n - used, "%s --%s", sep, o->name), sep = ",";
        size_t d = text_distance(name, o->name);
        best = d < best_d ? o->name : best, best_d = d < best_d ? d : best_d;
    }
    if (used)
        return buf;
    if (best && best_d <= (strlen(name) / 3 > 2 ? strlen(name) / 3 : 2))
        snprintf(buf, n, ": did you mean --%s?", best);
    return buf;
}
