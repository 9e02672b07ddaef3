/* load/touch_ahead.h -- the batch being loaded backed with memory a little ahead
 * of the loader, by the -@ pool.
 *
 * Contract: memory touched for the first time costs the kernel a page
 * clearing, slow on some machines.  The loader calls touch_ahead_loaded()
 * after each record it adds to a batch; each time the batch's bytes cross
 * a slice (TOUCH_AHEAD_SLICE), it queues pool jobs, without waiting for
 * them, that back the batch's arena up to TOUCH_AHEAD_SLICES slices past
 * the one being filled (batch_claim_ahead(), batch_prefault()).  So no
 * more than that is touched for records that may never come, whichever
 * batch is loading and however large it is.  At most a few jobs are in
 * flight, each one slice, never more than half the pool: its threads stay
 * free for the input's decoding; while the pool is behind, the loader
 * touches what it reaches first itself.
 *
 * touch_ahead_settle() before a batch leaves the loader (spill_swap()):
 * queued jobs then do nothing and running ones are waited for, so no job
 * touches an arena its owner may replace or free.  touch_ahead_stop() once
 * the input has ended (idempotent): the same, for good.  Only the loader's
 * thread calls these.  Without a pool, all of them do nothing.
 */
#ifndef TOUCH_AHEAD_H
#define TOUCH_AHEAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <htslib/thread_pool.h>
#include "load/batch.h"

#define TOUCH_AHEAD_SLICE ((size_t)2 << 20)   /* a huge page */
#define TOUCH_AHEAD_SLICES 3

typedef struct {
    hts_tpool *pool;
    hts_tpool_process *jobs;    /* NULL: touches nothing */
    int max_jobs;               /* in flight at once */
    pthread_mutex_t mu;
    pthread_cond_t idle;
    int in_flight;              /* jobs queued or running */
    atomic_int cancel;          /* queued jobs return at once */
    size_t due;                 /* the loading batch's bytes that call for more */
} touch_ahead;

/* With threads pool threads; pool NULL: nothing is ever touched ahead.
 * -1 if out of memory. */
int touch_ahead_start(touch_ahead *t, hts_tpool *pool, int threads);

/* touch_ahead_loaded()'s work once the batch reaches t->due. */
void touch_ahead_more(touch_ahead *t, batch *sb);

/* Cheap until the batch reaches the next slice. */
static inline void touch_ahead_loaded(touch_ahead *t, batch *sb)
{
    if (t->jobs && batch_bytes(sb) >= t->due) touch_ahead_more(t, sb);
}

void touch_ahead_settle(touch_ahead *t);
void touch_ahead_stop(touch_ahead *t);

#endif
