/* load/touch_ahead.c -- see load/touch_ahead.h. */
#include <stdlib.h>
#include "load/touch_ahead.h"

typedef struct {
    touch_ahead *t;
    batch_memory m;
} touch_job;

int touch_ahead_start(touch_ahead *t, hts_tpool *pool, int threads)
{
    *t = (touch_ahead){ .pool = pool };
    atomic_init(&t->cancel, 0);
    if (!pool) return 0;
    /* Half the pool at most, so that decoding the input always has threads. */
    t->max_jobs = threads / 2 < TOUCH_AHEAD_SLICES ? threads / 2 : TOUCH_AHEAD_SLICES;
    if (t->max_jobs < 1) t->max_jobs = 1;
    /* Input only: the jobs return nothing. */
    t->jobs = hts_tpool_process_init(pool, t->max_jobs, 1);
    if (!t->jobs) return -1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->idle, NULL);
    return 0;
}

static void job_done(touch_ahead *t)
{
    pthread_mutex_lock(&t->mu);
    if (--t->in_flight == 0) pthread_cond_broadcast(&t->idle);
    pthread_mutex_unlock(&t->mu);
}

static void *touch_job_run(void *arg)
{
    touch_job *job = arg;
    touch_ahead *t = job->t;
    if (!atomic_load(&t->cancel)) batch_prefault(job->m);
    free(job);
    job_done(t);
    return NULL;
}

/* Only the loader adds jobs: room seen here lasts until it adds one. */
static int has_room(touch_ahead *t)
{
    pthread_mutex_lock(&t->mu);
    int room = t->in_flight < t->max_jobs;
    pthread_mutex_unlock(&t->mu);
    return room;
}

/* Never waits (the queue holds max_jobs); 0 if the job could not be made. */
static int dispatch(touch_ahead *t, batch_memory m)
{
    touch_job *job = malloc(sizeof *job);
    if (!job) return 0;
    *job = (touch_job){ t, m };
    pthread_mutex_lock(&t->mu);
    t->in_flight++;
    pthread_mutex_unlock(&t->mu);
    if (hts_tpool_dispatch2(t->pool, t->jobs, touch_job_run, job, 1) == 0) return 1;
    free(job);
    job_done(t);
    return 0;
}

/* The batch has reached slice `at`: the slices up to TOUCH_AHEAD_SLICES
 * past it that no job has had yet, one job each, as far as the pool has
 * room; if it has none, the loader looks again a little further on, and
 * touches what the pool did not reach itself. */
#define TOUCH_RETRY_BYTES ((size_t)64 << 10)

void touch_ahead_more(touch_ahead *t, batch *sb)
{
    size_t used = batch_bytes(sb), at = used / TOUCH_AHEAD_SLICE;
    size_t upto = (at + 1 + TOUCH_AHEAD_SLICES) * TOUCH_AHEAD_SLICE;
    t->due = (at + 1) * TOUCH_AHEAD_SLICE;
    while (has_room(t)) {
        batch_memory m = batch_claim_ahead(sb, upto, TOUCH_AHEAD_SLICE);
        if (!m.len || !dispatch(t, m)) return;
    }
    if (used + TOUCH_RETRY_BYTES < t->due) t->due = used + TOUCH_RETRY_BYTES;
}

/* Queued jobs return at once; those running finish their slice. */
static void wait_idle(touch_ahead *t)
{
    atomic_store(&t->cancel, 1);
    pthread_mutex_lock(&t->mu);
    while (t->in_flight > 0) pthread_cond_wait(&t->idle, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

void touch_ahead_settle(touch_ahead *t)
{
    if (!t->jobs) return;
    wait_idle(t);
    atomic_store(&t->cancel, 0);
    t->due = 0;     /* the next batch starts with its first record */
}

void touch_ahead_stop(touch_ahead *t)
{
    if (!t->jobs) return;
    wait_idle(t);
    /* The workers may still hold the queue after the jobs returned. */
    hts_tpool_process_flush(t->jobs);
    hts_tpool_process_destroy(t->jobs);
    t->jobs = NULL;
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->idle);
}
