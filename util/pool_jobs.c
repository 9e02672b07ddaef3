/* util/pool_jobs.c -- see util/pool_jobs.h. */
#include <pthread.h>
#include <stdlib.h>
#include "util/pool_jobs.h"

typedef struct {
    pool_job_fn job;
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t done;
    int left;               /* calls queued and not yet returned */
} job_set;

typedef struct {
    job_set *set;
    int i;
} job_call;

static void *run_call(void *arg)
{
    job_call *c = arg;
    job_set *s = c->set;
    s->job(s->arg, c->i);
    pthread_mutex_lock(&s->lock);
    if (--s->left == 0) pthread_cond_signal(&s->done);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void pool_jobs_run(hts_tpool *pool, int n, pool_job_fn job, void *arg)
{
    job_set s = { .job = job, .arg = arg };
    job_call *calls = pool && n > 1 ? malloc((size_t)n * sizeof *calls) : NULL;
    /* Input only: the calls return nothing, and the queue never fills. */
    hts_tpool_process *q = calls ? hts_tpool_process_init(pool, n, 1) : NULL;
    int i = 0;
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.done, NULL);
    for (; q && i < n; i++) {
        calls[i] = (job_call){ &s, i };
        pthread_mutex_lock(&s.lock);
        s.left++;
        pthread_mutex_unlock(&s.lock);
        if (hts_tpool_dispatch(pool, q, run_call, &calls[i]) < 0) {
            pthread_mutex_lock(&s.lock);
            s.left--;
            pthread_mutex_unlock(&s.lock);
            break;
        }
    }
    for (; i < n; i++) job(arg, i);     /* what the pool could not take */
    pthread_mutex_lock(&s.lock);
    while (s.left > 0) pthread_cond_wait(&s.done, &s.lock);
    pthread_mutex_unlock(&s.lock);
    /* The workers may still hold the queue after the calls returned. */
    if (q) {
        hts_tpool_process_flush(q);
        hts_tpool_process_destroy(q);
    }
    free(calls);
    pthread_mutex_destroy(&s.lock);
    pthread_cond_destroy(&s.done);
}

void pool_jobs_runner(void *pool, int n, pool_job_fn job, void *arg)
{
    pool_jobs_run(pool, n, job, arg);
}
