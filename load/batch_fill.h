/* load/batch_fill.h -- the loading batch's fresh memory filled by the -@ pool.
 *
 * Contract: the loader reads each record into batch_fill_slot()'s bam1_t and
 * hands it over with batch_fill_add(), which returns as batch_add() does:
 * 1 added, 0 batch full (nothing taken: add the slot again to the next
 * batch), -1 with the cause in err; after a 1 the slot holds the record as
 * it will be written.  The loader keys, finishes and packs every record
 * (keys/sort_key.h, codec/packed_record.h) and takes its place in the
 * batch (batch_reserve()), so which batch a record joins, and every error,
 * come in input order, as with batch_add().  Where the place lies in
 * memory the arena never held records in, the record is packed into a
 * staging chunk instead, and pool jobs copy chunks of up to
 * BATCH_FILL_RECORDS records or BATCH_FILL_BYTES bytes into the arena and
 * enter them (batch_place_run()).  batch_fill_settle() waits for every
 * job: call it before the batch is read, sorted, or handed to another
 * thread.  batch_fill_free() settles first.  Only the loader calls these.
 * Without a pool every record goes in by batch_add().
 *
 * Why: held in memory, most of the loader's time was the kernel clearing
 * each fresh page of the batch it touched first, on the one thread that
 * reads every record; the touch-ahead jobs (load/touch_ahead.h) do not
 * keep up while the pool decodes the input.
 */
#ifndef BATCH_FILL_H
#define BATCH_FILL_H

#include <htslib/sam.h>
#include <htslib/thread_pool.h>
#include "load/batch.h"

#define BATCH_FILL_RECORDS 512
#define BATCH_FILL_BYTES ((size_t)128 << 10)

typedef struct batch_fill batch_fill;

/* pool NULL: no jobs.  NULL if out of memory. */
batch_fill *batch_fill_create(hts_tpool *pool);
void batch_fill_free(batch_fill *f);

bam1_t *batch_fill_slot(batch_fill *f);
int batch_fill_add(batch_fill *f, batch *sb, const sort_spec *spec, uint64_t seq, errmsg *err);
void batch_fill_settle(batch_fill *f);

#endif
