/* load/batch_fill.h -- records copied into the loading batch by the -@ pool.
 *
 * Contract: the loader reads each record into batch_fill_slot()'s bam1_t and
 * hands it over with batch_fill_add(), which returns as batch_add() does:
 * 1 added, 0 batch full (nothing taken: add the same slot to the next batch),
 * -1 with the cause in err.  On the loader it keys the record, finishes it
 * (keys/sort_key.h) and takes its place (batch_reserve()), so which batch a
 * record joins, and every error, come in input order, as with batch_add();
 * after a 1 the slot holds the record as it will be written, until the next
 * batch_fill_slot().  The copy into the batch's arena, which also backs the
 * arena with memory, and the entry's inline key are left to pool jobs of up
 * to BATCH_FILL_RECORDS records (batch_place()).  batch_fill_settle() waits
 * for every job: call it before the batch is read, sorted, or handed to
 * another thread.  batch_fill_free() settles first.  Only the loader calls
 * these.  Without a pool every record is copied at once, by batch_add().
 *
 * Why: on many cores the loader is one thread for every record of the input,
 * and the copy, with the kernel clearing the pages it touches first, was
 * much of its time.
 */
#ifndef BATCH_FILL_H
#define BATCH_FILL_H

#include <htslib/sam.h>
#include <htslib/thread_pool.h>
#include "load/batch.h"

#define BATCH_FILL_RECORDS 512
/* A job also ends once its records reach this many bytes: with the jobs
 * in flight, it bounds the memory the slots hold. */
#define BATCH_FILL_BYTES ((size_t)128 << 10)

typedef struct batch_fill batch_fill;

/* pool NULL: no jobs.  NULL if out of memory. */
batch_fill *batch_fill_create(hts_tpool *pool);
void batch_fill_free(batch_fill *f);

bam1_t *batch_fill_slot(batch_fill *f);
int batch_fill_add(batch_fill *f, batch *sb, const sort_spec *spec, uint64_t seq, errmsg *err);
void batch_fill_settle(batch_fill *f);

#endif
