/* Small shared helpers: error messages that travel up as return codes, a
 * monotonic clock, and checked allocation. */
#ifndef DPBENCH_UTIL_H
#define DPBENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#define DPBENCH_VERSION "0.1.0"

/* Bytes that keep two threads' hot fields off each other's cache line: 64 on
 * x86-64, 128 on arm64 (Apple's cores have 128-byte lines). */
#if defined(__aarch64__)
#define CACHE_LINE 128
#else
#define CACHE_LINE 64
#endif

struct error {
    char msg[1024]; // one line, no trailing newline
};

/* Formats into e->msg and returns -1, so callers can `return error_set(...)`. */
int error_set(struct error *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefixes the existing message with more context ("while X: <msg>"). */
int error_wrap(struct error *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Opens path for reading if it is a regular file; anything else (a FIFO,
 * whose open would wait for a writer: hence O_NONBLOCK, which regular files
 * ignore; a device; a folder) is refused as "PATH: not a regular file"
 * without blocking. The descriptor, or -1 with e set ("PATH: cannot open
 * WHAT: why"; what may be NULL). */
int file_open_regular(const char *path, const char *what, struct error *e);

double now_seconds(void); // CLOCK_MONOTONIC, seconds

/* Stop requests, set by main's SIGINT/SIGTERM handler. train_stop holds the
 * first signal's number: every long phase (generation, checks, epochs) ends at
 * its next check and keeps what is complete. train_abort is set by a second
 * signal: work in flight (a batch being loaded) is dropped at once. Threads
 * read them with stop_requested() / abort_requested(). */
#include <signal.h>
extern volatile sig_atomic_t train_stop;
extern volatile sig_atomic_t train_abort;
bool stop_requested(void);
bool abort_requested(void);
/* The signal handler's side: a first signal sets train_stop, a second train_abort. */
void stop_request(int sig);

/* pthread_create with every signal blocked in the new thread, so SIGINT and
 * SIGTERM reach the main thread only. Returns 0 or an errno value. */
#include <pthread.h>
int thread_start(pthread_t *t, void *(*fn)(void *), void *arg);
/* n floats on a 64-byte boundary (a cache line, an AVX-512 vector), for
 * free(); NULL when out of memory. Matrix kernels load whole vectors: an
 * operand off that boundary splits loads across cache lines. */
float *floats_alloc(size_t n);

/* A large array read at random for the whole run (the dataset): from one
 * transparent huge page up (2 MiB with 4 KiB pages, as on x86-64; an arm64
 * kernel with 16 or 64 KiB pages has 32 or 512 MiB ones), aligned to it and
 * advised to huge pages, so a random row costs no TLB miss. Freed with free(). */
void *huge_alloc(size_t bytes);
/* The cores this process may run on (its affinity), at least 1. */
long cores_usable(void);
/* Pins threads t[0..n-1] each to a core of its own, none on the calling
 * thread's current core; leaves them to the scheduler when there are not
 * enough cores. */
void threads_pin_apart(const pthread_t *t, int n);

/* Appends `word` to the space-separated list in buf (size n, holding `used`
 * characters); the new length, or n when it no longer fits (the list stays
 * cut at a word). The plug-in tables' name lists (backend_list, comm_engines). */
size_t words_append(char *buf, size_t n, size_t used, const char *word);
/* s without the spaces at either end: the start moved past them, the end
 * cut in place (a list's items: config lists, tune.knobs). */
char *str_trim(char *s);
/* The option getopt_long just refused ('?'): "-x" for a short one, also
 * inside a group (-qx) where argv[optind - 1] is another argument, else the
 * argument as given (an unknown long option, --quiet=1). buf holds the
 * short form. */
const char *getopt_refused(char *const argv[], char buf[3]);
/* What to add to an unknown long option's error, into buf: ": did you mean
 * --format?" for a near miss, ": it could be --set, --sweep" for a prefix of
 * several, ": --verbose takes no value"; "" for none. */
struct option;
const char *getopt_hint(const char *refused, const struct option *longopts, char *buf, size_t n);
/* The edit distance between two texts of at most 64 bytes (else SIZE_MAX). */
size_t text_distance(const char *a, const char *b);

#endif
