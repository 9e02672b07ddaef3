/* load/batch_groups.h -- a sorted batch encoded as groups (compact or plain) on many threads.
 *
 * Contract: batch_groups_write() cuts a sorted batch (load/batch.h) into
 * ranges of consecutive records, BATCH_RANGE_GROUPS groups' worth each
 * (BATCH_RANGE_PLAIN_GROUPS for plain groups),
 * and encodes each range's records as groups of about group_bytes (the
 * store's, store_group_bytes(), which may change between runs)
 * (codec/group_codec.h) on a thread pool, several ranges at once.  The groups
 * reach put() on the calling thread in key order, each with its first and
 * last key and the bytes of records it holds (group_span): the groups a group_writer
 * (codec/group_writer.h) would make of the same records, except that every
 * range ends a group.  At most `ahead` ranges are encoded or wait to be put
 * at once, which bounds the memory: `ahead` encoders and their ranges'
 * groups.  It returns 0, or -1 with the cause in err (put()'s, or out of
 * memory); every range has ended either way, and after a failure the
 * writer must only be destroyed.  Otherwise it is reused run after run, by
 * one thread at a time.
 *
 * Why: a spill thread that fills groups record by record, visiting the
 * batch in sorted order (at random places in its arena), is one thread for
 * all the input's bytes; ranges spread that over the pool.
 */
#ifndef BATCH_GROUPS_H
#define BATCH_GROUPS_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/thread_pool.h>
#include "util/errmsg.h"
#include "codec/group_writer.h"
#include "load/batch.h"

/* Plain groups are as large as their records, compact ones about a
 * quarter: a range's encoded groups, which its slot holds until they are
 * put, take about as much memory either way. */
#define BATCH_RANGE_GROUPS 16
#define BATCH_RANGE_PLAIN_GROUPS 4

typedef struct batch_groups batch_groups;

/* NULL when out of memory.  The groups are laid out as `layout` says. */
batch_groups *batch_groups_create(hts_tpool *pool, int ahead, group_layout layout);
int batch_groups_write(batch_groups *bg, const batch *sb, size_t group_bytes,
                       group_put_fn put, void *ctx, errmsg *err);
void batch_groups_destroy(batch_groups *bg);

#endif
