/* Signals and the watchdog; see signals.h. The handler only stores and posts
 * a semaphore (both async-signal-safe); the watchdog thread does the waiting.
 * The kernel gives a signal to the main thread first; the watchdog takes the
 * stop signals too (every other thread of ours blocks them), so one arriving
 * while the main thread cannot take it (held in a call under a tracer, or a
 * signal already pending there) still wakes the watchdog at once. */
#include "signals.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

enum { TRACKED = 4, /* a result's .json, .csv, -summary.csv */ PATH_MAX_LEN = 4400, CHUNK = 1 << 20 };
static const double GRACE_S = 1.5; // a stop point within this, or the process ends
static const double STUCK_S = 0.4; // in one call this long after a signal: stuck there

static sem_t wake;         // posted once per signal
static int n_signals;      // signals received (atomic)
static int n_settled;      // of them, those the main thread has answered (atomic)
static int free_signal;    // atomic: the next signal is answered as it comes (finishing)
static const char *signal_at; // DPBENCH_TEST_SIGNAL_AT: a phase a test stops the run in
static char tracked[TRACKED][PATH_MAX_LEN];
static int tracked_on[TRACKED]; // atomic: tracked[i] holds a path
enum { IDLE, IN_CALL, TAKEN };
static int call_state;           // atomic: enum above
static long call_seq;            // atomic: calls begun
static const char *phase;       // what the main thread does, for the message; NULL: the run
static void (*stuck_fn)(void *);
static void *stuck_arg;

const char *signals_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "SIGTERM";
}

/* A signal this soon after the last one counted is that one again: timeout(1)
 * signals the process and then its process group, two signals microseconds
 * apart for one request. A person's second Ctrl-C comes later. */
static const long long SAME_NS = 50000000;
static long long counted_ns; // atomic: when the last signal counted came (CLOCK_MONOTONIC)

static void on_signal(int sig)
{
    int saved = errno;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); // async-signal-safe
    long long now = ts.tv_sec * 1000000000LL + ts.tv_nsec;
    long long last = __atomic_load_n(&counted_ns, __ATOMIC_SEQ_CST);
    // the same one again, or counted by another thread's handler at this moment: nothing more
    if ((last && now - last < SAME_NS) ||
        !__atomic_compare_exchange_n(&counted_ns, &last, now, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST)) {
        errno = saved;
        return;
    }
    stop_request(sig);
    if (__atomic_exchange_n(&free_signal, 0, __ATOMIC_SEQ_CST)) // settled before it counts,
        __atomic_add_fetch(&n_settled, 1, __ATOMIC_SEQ_CST);   // so it is never pending
    __atomic_add_fetch(&n_signals, 1, __ATOMIC_SEQ_CST);
    sem_post(&wake);
    errno = saved;
}

void signals_settle(void)
{
    __atomic_store_n(&n_settled, __atomic_load_n(&n_signals, __ATOMIC_SEQ_CST),
                     __ATOMIC_SEQ_CST);
}

void signals_finishing(void)
{
    __atomic_store_n(&free_signal, !stop_requested(), __ATOMIC_SEQ_CST);
    signals_settle();
}

bool signals_pending(void)
{
    return __atomic_load_n(&n_signals, __ATOMIC_SEQ_CST) >
           __atomic_load_n(&n_settled, __ATOMIC_SEQ_CST);
}

/* The main thread missed its stop point: remove the temp files, say so with
 * write(2) (the main thread may hold stdio's locks) and end. */
static void end_now(void)
{
    for (int i = 0; i < TRACKED; i++)
        if (__atomic_load_n(&tracked_on[i], __ATOMIC_SEQ_CST))
            unlink(tracked[i]);
    int sig = train_stop ? train_stop : SIGTERM;
    char msg[384];
    const char *what = __atomic_load_n(&phase, __ATOMIC_SEQ_CST);
    bool held = __atomic_load_n(&call_state, __ATOMIC_SEQ_CST) == IN_CALL;
    int n = snprintf(msg, sizeof msg,
                     "dpbench: interrupted by %s while %s%s, which did not stop within %.1f s: "
                     "ending now (temp files removed)\n",
                     signals_name(sig), what ? what : "running",
                     held ? " (in a collective call that did not return: another rank stopped "
                            "responding)" : "", GRACE_S);
    if (n > 0 && write(STDERR_FILENO, msg, (size_t)n < sizeof msg ? (size_t)n : 0) < 0)
        n = 0;
    _exit(128 + sig);
}

/* The main thread is in the call it was in when the signal came (seq), and
 * now the watchdog's: write what completed and end. */
static void take_over(long seq)
{
    int in_call = IN_CALL;
    if (!stuck_fn || __atomic_load_n(&call_seq, __ATOMIC_SEQ_CST) != seq ||
        !__atomic_compare_exchange_n(&call_state, &in_call, TAKEN, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return;
    signals_settle(); // the output that follows is wanted
    stuck_fn(stuck_arg);
    fflush(stdout);
    _exit(128 + (train_stop ? train_stop : SIGTERM));
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGHUP);
    pthread_sigmask(SIG_UNBLOCK, &stops, NULL);
    for (;;) {
        if (sem_wait(&wake) != 0)
            continue;
        int k = __atomic_load_n(&n_signals, __ATOMIC_SEQ_CST);
        long seq = __atomic_load_n(&call_seq, __ATOMIC_SEQ_CST);
        double t0 = now_seconds(), t = t0;
        for (; __atomic_load_n(&n_settled, __ATOMIC_SEQ_CST) < k && t < t0 + GRACE_S;
             t = now_seconds()) {
            if (t >= t0 + STUCK_S)
                take_over(seq);
            nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
        }
        if (__atomic_load_n(&n_settled, __ATOMIC_SEQ_CST) < k)
            end_now();
    }
    return NULL;
}

void signals_call_begin(void)
{
    __atomic_add_fetch(&call_seq, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&call_state, IN_CALL, __ATOMIC_SEQ_CST);
}

void signals_call_end(void)
{
    int in_call = IN_CALL;
    if (__atomic_compare_exchange_n(&call_state, &in_call, IDLE, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
        return;
    for (;;) // the watchdog is writing the results and ends the process
        pause();
}

const char *signals_phase(const char *what)
{
    if (what && signal_at && *signal_at && strstr(what, signal_at))
        raise(SIGINT); // the test's stop, as the phase begins
    return __atomic_exchange_n(&phase, what, __ATOMIC_SEQ_CST);
}

void signals_on_stuck(void (*fn)(void *), void *arg)
{
    stuck_arg = arg;
    __atomic_store_n(&stuck_fn, fn, __ATOMIC_SEQ_CST);
}

void signals_init(void)
{
    sem_init(&wake, 0, 0);
    signal_at = getenv("DPBENCH_TEST_SIGNAL_AT");
    struct sigaction sa = {.sa_handler = on_signal}; // no SA_RESTART: a blocked write returns
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct sigaction hup;
    if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN) // nohup: ignored
        sigaction(SIGHUP, &sa, NULL);
    signal(SIGXFSZ, SIG_IGN);
    pthread_t t;
    if (thread_start(&t, watchdog_main, NULL) == 0)
        pthread_detach(t);
}

void signals_track(const char *path)
{
    for (int i = 0; i < TRACKED; i++)
        if (!__atomic_load_n(&tracked_on[i], __ATOMIC_SEQ_CST)) {
            snprintf(tracked[i], sizeof tracked[i], "%s", path);
            __atomic_store_n(&tracked_on[i], 1, __ATOMIC_SEQ_CST);
            return;
        }
}

void signals_untrack(const char *path)
{
    for (int i = 0; i < TRACKED; i++)
        if (__atomic_load_n(&tracked_on[i], __ATOMIC_SEQ_CST) && strcmp(tracked[i], path) == 0)
            __atomic_store_n(&tracked_on[i], 0, __ATOMIC_SEQ_CST);
}

/* fopencookie's write: whole chunks until a signal is pending; a short count
 * marks the stream in error */
static ssize_t cut_write(void *cookie, const char *buf, size_t n)
{
    int fd = (int)(long)cookie;
    size_t done = 0;
    while (done < n) {
        if (signals_pending()) {
            errno = EINTR;
            break;
        }
        ssize_t w = write(fd, buf + done, n - done < CHUNK ? n - done : CHUNK);
        if (w < 0 && errno == EINTR)
            continue; // checked again above
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    return (ssize_t)done;
}

FILE *signals_fdopen(int fd)
{
    cookie_io_functions_t io = {.write = cut_write};
    return fopencookie((void *)(long)fd, "w", io);
}
