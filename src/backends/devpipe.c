/* The copy ring, copy thread and run-ahead limit of the device backends,
 * over their primitives (devpipe.h). */
#include "devpipe.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int devpipe_init(struct devpipe *p, const struct devpipe_ops *o, void *dev,
                 const struct backend_setup *s, struct error *e)
{
    memset(p, 0, sizeof *p);
    p->o = o;
    p->dev = dev;
    p->F = s->features;
    p->O = s->out_features;
    p->async = s->async_copy;
    p->depth = s->async_copy ? s->copy_depth : 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->slots = calloc((size_t)p->depth, sizeof *p->slots);
    if (!p->slots)
        return error_set(e, "out of memory");
    for (int k = 0; k < p->depth; k++) {
        if (!(p->slots[k].split = calloc((size_t)s->replicas, sizeof *p->slots[k].split)))
            return error_set(e, "out of memory");
        p->slots[k].meta.split = p->slots[k].split; // fill writes the rows there
    }
    return 0;
}

static void stop_copier(struct devpipe *p)
{
    if (!p->copier_live)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->copier, NULL);
    p->copier_live = false;
}

void devpipe_stop(struct devpipe *p)
{
    stop_copier(p);
    for (int k = 0; p->slots && k < p->depth; k++)
        if (p->slots[k].host) { // a slot whose step read the host batch itself
            loader_release(p->loader, p->slots[k].host);
            p->slots[k].host = NULL;
        }
}

void devpipe_free(struct devpipe *p)
{
    if (!p->o)
        return;
    stop_copier(p);
    for (int k = 0; p->slots && k < p->depth; k++)
        free(p->slots[k].split);
    free(p->slots);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    memset(p, 0, sizeof *p);
}

/* Gives slot sl's host batch back to the loader once its copies landed. */
static int give_back(struct devpipe *p, struct devpipe_slot *sl, struct error *e)
{
    int rc = p->o->copies_wait(p->dev, sl->meta.index, e);
    loader_release(p->loader, sl->host);
    sl->host = NULL;
    return rc;
}

/* The copy thread: the loader's only consumer while it runs. A slot keeps
 * its host batch until the slot comes round again, by when the copy has long
 * landed (its step was released), so the thread never waits on the device
 * before queueing the next copy; the loader's pool has copy_depth extra
 * buffers for the batches held this way. */
static void *copier_main(void *arg)
{
    struct devpipe *p = arg;
    struct error err;
    int rc = 0;
    for (long k = 0;; k++) {
        struct devpipe_slot *sl = &p->slots[k % p->depth];
        pthread_mutex_lock(&p->mu);
        while (sl->state != DEVPIPE_FREE && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        bool stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        if (sl->host && (rc = give_back(p, sl, &err)))
            break;
        struct batch *hb;
        rc = loader_next(p->loader, &hb, &err);
        if (rc <= 0)
            break;
        double loaded_at = now_seconds();
        rc = p->o->fill(p->dev, (int)(k % p->depth), hb, &sl->meta, &err);
        if (rc) {
            p->o->copies_drain(p->dev);
            loader_release(p->loader, hb);
            break;
        }
        sl->host = hb;
        pthread_mutex_lock(&p->mu); // the step may be queued before the copy lands
        sl->loaded_at = loaded_at;
        sl->state = DEVPIPE_READY;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    p->o->copies_drain(p->dev); // then the held batches can go back
    for (int i = 0; i < p->depth && !p->o->keep_host; i++)
        if (p->slots[i].host) {
            loader_release(p->loader, p->slots[i].host);
            p->slots[i].host = NULL;
        }
    pthread_mutex_lock(&p->mu);
    if (rc < 0) {
        p->failed = true;
        p->err = err;
        error_wrap(&p->err, "copy thread");
    } else {
        p->done = true;
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int devpipe_epoch_begin(struct devpipe *p, struct loader *l, struct error *e)
{
    p->loader = l;
    p->taken = 0;
    p->done = p->failed = p->stop = false;
    for (int k = 0; k < p->depth; k++)
        p->slots[k].state = DEVPIPE_FREE;
    if (p->async) {
        int rc = thread_start(&p->copier, copier_main, p);
        if (rc)
            return error_set(e, "cannot start the copy thread: %s", strerror(rc));
        p->copier_live = true;
    }
    return 0;
}

/* The async path of next: the copy thread's next slot, or its end. */
static int take_ready(struct devpipe *p, struct devpipe_slot *sl, struct epoch_stats *st,
                      struct error *e)
{
    double t0 = now_seconds(), loaded_at = 0;
    int rc = 1;
    pthread_mutex_lock(&p->mu);
    while (sl->state != DEVPIPE_READY && !p->failed && !p->done)
        pthread_cond_wait(&p->cv, &p->mu);
    if (sl->state == DEVPIPE_READY) { // batches copied before a failure still count
        sl->state = DEVPIPE_HELD;
        loaded_at = sl->loaded_at;
    } else if (p->failed) {
        *e = p->err;
        rc = -1;
    } else {
        rc = 0; // the loader is done and every copied batch was taken
    }
    pthread_mutex_unlock(&p->mu);
    /* waiting counts until the loader had the batch; the rest of the wait
     * went on issuing its copies, which copy_s accounts for */
    double t1 = now_seconds();
    if (rc == 1 && loaded_at < t1)
        t1 = loaded_at > t0 ? loaded_at : t0;
    st->wait_s += t1 - t0;
    return rc;
}

/* The sync path: the loop waits for the loader, then for its blocking copy. */
static int fill_now(struct devpipe *p, struct loader *l, struct devpipe_slot *sl,
                    struct epoch_stats *st, struct error *e)
{
    double t0 = now_seconds();
    struct batch *hb;
    int got = loader_next(l, &hb, e);
    st->wait_s += now_seconds() - t0;
    if (got <= 0)
        return got;
    long k = hb->index;
    int rc = p->o->fill(p->dev, 0, hb, &sl->meta, e);
    if (rc == 0)
        rc = p->o->copies_wait(p->dev, k, e);
    else
        p->o->copies_drain(p->dev);
    if (rc || !p->o->keep_host)
        loader_release(l, hb);
    else
        sl->host = hb; // back in devpipe_release, once the step has read it
    if (rc)
        return error_wrap(e, "batch %ld", k);
    sl->state = DEVPIPE_HELD;
    return 1;
}

int devpipe_next(struct devpipe *p, struct loader *l, struct step_batch **b,
                 struct epoch_stats *st, struct error *e)
{
    struct devpipe_slot *sl = &p->slots[p->taken % p->depth];
    int rc = p->async ? take_ready(p, sl, st, e) : fill_now(p, l, sl, st, e);
    if (rc != 1)
        return rc;
    p->taken++;
    st->copy_bytes += (double)sl->meta.rows * (double)(p->F + p->O) * sizeof(float);
    *b = &sl->meta;
    return 1;
}

int devpipe_begin(struct devpipe *p, long k, struct error *e)
{
    return k >= p->depth ? p->o->step_wait(p->dev, k - p->depth, e) : 0;
}

int devpipe_slot(const struct devpipe *p, const struct step_batch *b)
{
    const struct devpipe_slot *sl =
        (const struct devpipe_slot *)((const char *)b - offsetof(struct devpipe_slot, meta));
    return (int)(sl - p->slots);
}

void devpipe_release(struct devpipe *p, struct loader *l, struct step_batch *b)
{
    int s = devpipe_slot(p, b);
    struct devpipe_slot *sl = &p->slots[s];
    p->o->consumed(p->dev, s, b->index);
    if (!p->async && sl->host) { // sync: the training thread is the loader's consumer
        loader_release(l, sl->host);
        sl->host = NULL;
    }
    pthread_mutex_lock(&p->mu);
    sl->state = DEVPIPE_FREE;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

double devpipe_overlap(const double *a, long na, const double *b, long nb)
{
    double sum = 0;
    for (long i = 0, j = 0; i < na && j < nb;) {
        double lo = a[2 * i] > b[2 * j] ? a[2 * i] : b[2 * j];
        double hi = a[2 * i + 1] < b[2 * j + 1] ? a[2 * i + 1] : b[2 * j + 1];
        if (hi > lo)
            sum += hi - lo;
        if (a[2 * i + 1] < b[2 * j + 1])
            i++;
        else
            j++;
    }
    return sum;
}
