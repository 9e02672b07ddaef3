/* util/pool_jobs.h -- independent jobs run at once on an htslib thread pool, and waited for.
 *
 * Contract: pool_jobs_run() calls job(arg, i) once for every i in [0, n),
 * on the pool's threads, and returns when every call has returned.  The
 * jobs must not wait for each other, and pool_jobs_run() must not be
 * called from one of the pool's own threads (it would wait for itself).
 * With no pool, n == 1, or jobs that cannot be queued (out of memory),
 * the calls left run on the calling thread, in order: it never fails.
 * pool_jobs_runner() is the same as a batch_runner (load/batch.h).
 */
#ifndef POOL_JOBS_H
#define POOL_JOBS_H

#include <htslib/thread_pool.h>

typedef void (*pool_job_fn)(void *arg, int i);

void pool_jobs_run(hts_tpool *pool, int n, pool_job_fn job, void *arg);

/* pool_jobs_run() with the pool as an opaque context. */
void pool_jobs_runner(void *pool, int n, pool_job_fn job, void *arg);

#endif
