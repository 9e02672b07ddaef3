/* util/clock_util.h -- the one clock the phase timings and progress use.
 *
 * Contract: now_seconds() is monotonic (never goes back with the wall clock)
 * and only differences between two calls mean anything.
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

#endif
