/* util/worker.c -- see util/worker.h. */
#include <time.h>
#include "util/worker.h"

void worker_init(worker *w)
{
    pthread_mutex_init(&w->lock, NULL);
    /* Timed waits count on the monotonic clock (deadline_after()). */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->changed, &attr);
    pthread_condattr_destroy(&attr);
    w->started = w->stop = 0;
}

int worker_start(worker *w, const char *name, void *(*run)(void *), void *arg)
{
    if (pthread_create(&w->thread, NULL, run, arg) != 0) return -1;
    w->started = 1;
    pthread_setname_np(w->thread, name);
    return 0;
}

void worker_stop(worker *w)
{
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    if (w->started) pthread_join(w->thread, NULL);
    w->started = 0;
}

void worker_free(worker *w)
{
    worker_stop(w);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->changed);
}
