/* load/batch_sort.h -- a batch's entries put in key order.
 *
 * Contract: batch_sort() orders a batch's entries (load/batch.h) by key:
 * memcmp() over the common length, then the shorter key first, which is
 * RocksDB's bytewise order.  batch_sort_parallel() gives the same order,
 * the sort split into `parts` (at most BATCH_MAX_PARTS and batch_count())
 * run by run(ctx, ...) as load/batch.h says: the parts are sorted each on
 * its own, merged pairwise, and their ties ordered part by part.  Fewer
 * than two parts: batch_sort().
 */
#ifndef BATCH_SORT_H
#define BATCH_SORT_H

#include "load/batch.h"

void batch_sort(batch *sb);
void batch_sort_parallel(batch *sb, batch_runner run, void *ctx, int parts);

#endif
