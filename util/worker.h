/* util/worker.h -- a thread that serves its owner until told to stop.
 *
 * Contract: the owner embeds a worker.  Its lock guards the state the
 * owner shares with the thread, and changed is broadcast at each change
 * of it; stop, set under the lock by worker_stop(), tells the thread to
 * finish (the thread reads it under the lock).  worker_init() makes the
 * lock and the condition, whose timed waits take a deadline on the
 * monotonic clock (deadline_after(), util/clock_util.h).  worker_start()
 * runs run(arg) on a thread named `name` (its role, util/thread.h): 0, or
 * -1 when no thread could be made.
 * worker_stop() sets stop, wakes every waiter and joins the thread, if it
 * was started and is not joined yet.  worker_free() stops it and destroys
 * the lock and the condition.
 *
 * Why: the readout's readers, the spill thread and the progress line each
 * wrote this start and stop by hand.
 */
#ifndef WORKER_H
#define WORKER_H

#include <pthread.h>

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t thread;
    int started;        /* running, or finished but not joined */
    int stop;           /* worker_stop() was called: the thread finishes */
} worker;

void worker_init(worker *w);
int worker_start(worker *w, const char *name, void *(*run)(void *), void *arg);
void worker_stop(worker *w);
void worker_free(worker *w);

#endif
