/* The engine-independent part of comm.h: choosing the engine, a world of
 * one, the allreduce's timing and the stop flag that travels with it. */
#include "comm.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "signals.h"

#ifdef DPBENCH_HAVE_MPI
#define MPI_ENGINE (&comm_mpi)
#else
#define MPI_ENGINE NULL
#endif
#ifdef DPBENCH_HAVE_NCCL
#define NCCL_ENGINE (&comm_nccl)
#else
#define NCCL_ENGINE NULL
#endif

/* Every engine dpbench knows, in the order parallel.comm lists them (after
 * "auto"): the only list of them. `eng` is NULL where this build does not
 * have it; the name stays a valid value, and a run that asks for it says so.
 * `device_memory` is the engine's own (checked by a test where it is built):
 * parallel.comm auto takes the first engine for the backend's memory.
 * Adding an engine: its file, its Makefile lines, and one line here. */
static const struct {
    const char *name;    // = eng->name
    bool device_memory;  // = eng->device_memory
    const struct comm_engine *eng;
    const char *missing; // how to get it where the build lacks it, or NULL
} engines[] = {
    {"mpi", false, MPI_ENGINE, "install libopenmpi-dev and rebuild"},
    {"nccl", true, NCCL_ENGINE, NULL},
};
#define N_ENGINES (sizeof engines / sizeof engines[0])

const char *comm_engine_name(size_t i) { return i < N_ENGINES ? engines[i].name : NULL; }

const struct comm_engine *comm_engine_at(size_t i) { return i < N_ENGINES ? engines[i].eng : NULL; }

bool comm_engine_device_memory(const char *name)
{
    for (size_t i = 0; i < N_ENGINES; i++)
        if (strcmp(engines[i].name, name) == 0)
            return engines[i].device_memory;
    return false;
}

const char *comm_auto(bool device_memory)
{
    for (size_t i = 0; i < N_ENGINES; i++)
        if (engines[i].device_memory == device_memory)
            return engines[i].name;
    return NULL;
}


/* An engine's call, marked as one that may never return (signals.h): a
 * collective waits for every rank, and a rank that died never comes. */
#define HELD(call) (signals_call_begin(), held_end(call))
static int held_end(int rc)
{
    signals_call_end();
    return rc;
}

const char *comm_engines(void)
{
    static char list[256];
    size_t used = 0;
    list[0] = '\0';
    for (size_t i = 0; i < N_ENGINES; i++)
        if (engines[i].eng)
            used = words_append(list, sizeof list, used, engines[i].name);
    return list;
}

bool comm_launched(void)
{
    /* Open MPI's launcher sets these in every rank it starts */
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK");
}

/* A launcher's positive integer variable, else 0. */
static int launcher_int(const char *name)
{
    const char *v = getenv(name);
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    return v && *v && !*end && x > 0 && x <= INT_MAX ? (int)x : 0;
}

int comm_launched_world(int *rank)
{
    *rank = launcher_int("OMPI_COMM_WORLD_RANK");
    int world = launcher_int("OMPI_COMM_WORLD_SIZE");
    return world > 0 ? world : 1;
}

/* The engine of that name, or NULL with what to do about it in *missing. */
static const struct comm_engine *engine_find(const char *name, const char **missing)
{
    *missing = NULL;
    for (size_t i = 0; i < N_ENGINES; i++)
        if (strcmp(engines[i].name, name) == 0) {
            *missing = engines[i].missing;
            return engines[i].eng;
        }
    return NULL;
}

int comm_open(struct comm *c, const char *name, struct error *e)
{
    memset(c, 0, sizeof *c);
    c->world = 1;
    c->local_size = 1; // the engine's open says otherwise (MPI_COMM_TYPE_SHARED)
    c->device = -1;
    c->name = "self";
    if (gethostname(c->host, sizeof c->host - 1) != 0)
        snprintf(c->host, sizeof c->host, "%s", "unknown");
    const char *missing;
    const struct comm_engine *eng = engine_find(name, &missing);
    if (!eng) {
        const char *have = comm_engines();
        return error_set(e, "parallel.comm: %s is not compiled into this dpbench (comm engines: "
                            "%s)%s%s", name, have[0] ? have : "none", missing ? "; " : "",
                         missing ? missing : "");
    }
    if (!comm_launched())
        return 0; // a world of one: no engine to open
    c->engine = eng;
    c->name = eng->name;
    if (eng->open(c, e)) {
        c->engine = NULL;
        return error_wrap(e, "parallel.comm %s", name);
    }
    return 0;
}

/* Counts one timed allreduce call of n floats. */
static int account(struct comm *c, double seconds, size_t n, struct error *e)
{
    c->allreduce_s += seconds;
    c->allreduce_calls++;
    c->allreduce_bytes += (double)n * sizeof(float);
    if (c->n_calls == c->cap_calls) {
        size_t cap = c->cap_calls ? 2 * c->cap_calls : 1024;
        double *p = realloc(c->call_s, cap * sizeof *p);
        if (!p)
            return error_set(e, "out of memory");
        c->call_s = p;
        c->cap_calls = cap;
    }
    c->call_s[c->n_calls++] = seconds;
    return 0;
}

int comm_allreduce(struct comm *c, float *buf, size_t n, int stop_here, struct error *e)
{
    if (!c->engine) {
        c->stop = stop_here;
        return 0;
    }
    double seconds = 0;
    if (c->engine->device_memory) { // the stop flag after it, from the host
        int rc = HELD(c->engine->allreduce_sum(c, buf, n, &seconds, e));
        long most = 0;
        if (rc || account(c, seconds, n, e) || HELD(c->engine->max(c, stop_here, &most, e)))
            return -1;
        c->stop = (int)most;
        return 0;
    }
    /* The stop flags ride in two more floats (how many ranks asked to stop,
     * how many cannot go on), so that every rank leaves the loop after the
     * same step and none waits in an allreduce alone. The timed part is the
     * engine's call. */
    if (n + 2 > c->scratch_n) {
        free(c->scratch);
        c->scratch_n = 0;
        if (!(c->scratch = malloc((n + 2) * sizeof(float))))
            return error_set(e, "out of memory");
        c->scratch_n = n + 2;
    }
    memcpy(c->scratch, buf, n * sizeof(float));
    c->scratch[n] = stop_here >= COMM_STOP ? 1.0f : 0.0f;
    c->scratch[n + 1] = stop_here >= COMM_FAIL ? 1.0f : 0.0f;
    int rc = HELD(c->engine->allreduce_sum(c, c->scratch, n + 2, &seconds, e));
    if (rc || account(c, seconds, n, e))
        return -1;
    memcpy(buf, c->scratch, n * sizeof(float));
    c->stop = c->scratch[n + 1] > 0.5f ? COMM_FAIL : c->scratch[n] > 0.5f ? COMM_STOP : COMM_GO;
    return 0;
}

int comm_allreduce_wait(struct comm *c, double *wait_s, struct error *e)
{
    *wait_s = 0;
    size_t n = c->n_calls;
    c->n_calls = 0;
    if (!c->engine || n == 0)
        return 0;
    double *least = malloc(n * sizeof *least);
    if (!least)
        return error_set(e, "out of memory");
    memcpy(least, c->call_s, n * sizeof *least);
    int rc = HELD(c->engine->min(c, least, n, e));
    for (size_t k = 0; rc == 0 && k < n; k++)
        *wait_s += c->call_s[k] - least[k];
    free(least);
    return rc;
}

int comm_sum(struct comm *c, float *buf, size_t n, struct error *e)
{
    return c->engine ? HELD(c->engine->allreduce_sum(c, buf, n, NULL, e)) : 0;
}

int comm_device(const struct comm *c, const long *devices, int n_devices)
{
    return n_devices > 0 ? (int)devices[c->local_rank % n_devices] : c->local_rank;
}

int comm_bind(struct comm *c, int device, void *stream, struct error *e)
{
    c->stream = stream;
    if (c->engine && c->engine->bind && HELD(c->engine->bind(c, device, e)))
        return -1;
    c->device = device;
    return 0;
}

float *comm_buffer(struct comm *c, size_t n, struct error *e)
{
    if (c->engine && c->engine->buf_alloc)
        return c->engine->buf_alloc(c, n, e);
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p)
        error_set(e, "out of memory (%zu floats)", n);
    return p;
}

void comm_buffer_free(struct comm *c, float *buf)
{
    if (c->engine && c->engine->buf_alloc)
        c->engine->buf_free(c, buf);
    else
        free(buf);
}

int comm_buffer_put(struct comm *c, float *buf, const float *host, size_t n, struct error *e)
{
    if (c->engine && c->engine->buf_alloc)
        return c->engine->buf_copy(c, buf, host, n, true, e);
    memcpy(buf, host, n * sizeof(float));
    return 0;
}

int comm_buffer_get(struct comm *c, float *host, const float *buf, size_t n, struct error *e)
{
    if (c->engine && c->engine->buf_alloc)
        return c->engine->buf_copy(c, host, buf, n, false, e);
    memcpy(host, buf, n * sizeof(float));
    return 0;
}

int comm_bcast(struct comm *c, void *buf, size_t bytes, struct error *e)
{
    return c->engine ? HELD(c->engine->bcast(c, buf, bytes, e)) : 0;
}

int comm_gather(struct comm *c, const void *send, size_t bytes, void *recv, struct error *e)
{
    if (!c->engine) {
        memcpy(recv, send, bytes);
        return 0;
    }
    return HELD(c->engine->gather(c, send, bytes, recv, e));
}

bool comm_stopping(const struct comm *c)
{
    return c && c->world > 1 ? c->stop != COMM_GO : stop_requested();
}

int comm_max(struct comm *c, long v, long *max, struct error *e)
{
    if (!c->engine) {
        *max = v;
        return 0;
    }
    return HELD(c->engine->max(c, v, max, e));
}

bool comm_together(struct comm *c, long *v, double timeout_s)
{
    return c->world <= 1 || !c->engine || !c->engine->together ||
           c->engine->together(c, v, timeout_s);
}

void comm_abort(struct comm *c, int code)
{
    if (c->engine)
        c->engine->abort(c, code);
}

void comm_close(struct comm *c)
{
    if (c->engine)
        c->engine->close(c);
    c->engine = NULL;
    free(c->scratch);
    c->scratch = NULL;
    c->scratch_n = 0;
    free(c->call_s);
    c->call_s = NULL;
    c->n_calls = c->cap_calls = 0;
}
