/* util/clock_util.h -- the one clock the phase timings and progress use.
 *
 * Contract: now_seconds() is monotonic (never goes back with the wall clock)
 * and only differences between two calls mean anything.
 * deadline_after() is the deadline `seconds` from now, on the same clock,
 * for pthread_cond_timedwait() on a worker's condition (util/worker.h):
 * a wall clock set back never stretches a wait.
 */
#ifndef CLOCK_UTIL_H
#define CLOCK_UTIL_H

#include <time.h>

static inline double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline struct timespec deadline_after(double seconds)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += (time_t)seconds;
    t.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

#endif
