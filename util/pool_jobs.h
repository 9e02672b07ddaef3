/* util/pool_jobs.h -- independent jobs run at once on an htslib thread pool, and waited for.
 *
 * Contract: pool_jobs_runner(pool, n, job, arg) calls job(arg, i) once for
 * every i in [0, n), on the threads of the hts_tpool `pool`, and returns
 * when every call has returned.  The jobs must not wait for each other,
 * and it must not be called from one of the pool's own threads (it would
 * wait for itself).  With no pool, n == 1, or jobs that cannot be queued
 * (out of memory), the calls left run on the calling thread, in order: it
 * never fails.  The pool is an opaque pointer, so that the function is a
 * batch_runner (load/batch.h).
 */
#ifndef POOL_JOBS_H
#define POOL_JOBS_H

#include <htslib/thread_pool.h>

typedef void (*pool_job_fn)(void *arg, int i);

void pool_jobs_runner(void *pool, int n, pool_job_fn job, void *arg);

#endif
