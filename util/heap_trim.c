/* util/heap_trim.c -- see util/heap_trim.h. */
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include "util/heap_trim.h"
#include "util/clock_util.h"
#include "util/thread.h"
#include "util/worker.h"

struct heap_trimmer {
    worker w;
    double period;
};

#ifdef __GLIBC__
static void *trimmer(void *arg)
{
    heap_trimmer *t = arg;
    pthread_mutex_lock(&t->w.lock);
    while (!t->w.stop) {
        struct timespec until = deadline_after(t->period);
        pthread_cond_timedwait(&t->w.changed, &t->w.lock, &until);
        if (t->w.stop) break;
        /* Unlocked: heap_trim_stop() waits only for the wait above. */
        pthread_mutex_unlock(&t->w.lock);
        malloc_trim(0);
        pthread_mutex_lock(&t->w.lock);
    }
    pthread_mutex_unlock(&t->w.lock);
    thread_cpu_exiting();
    return NULL;
}

heap_trimmer *heap_trim_start(double period)
{
    heap_trimmer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->period = period;
    worker_init(&t->w);
    if (worker_start(&t->w, THREAD_TRIM, trimmer, t) < 0) {
        worker_free(&t->w);
        free(t);
        return NULL;
    }
    return t;
}
#else
heap_trimmer *heap_trim_start(double period)
{
    (void)period;
    return NULL;
}
#endif

void heap_trim_stop(heap_trimmer *t)
{
    if (!t) return;
    worker_free(&t->w);
    free(t);
}
