/* readout/run_merge.h -- merge sorted sources into one stream in key order.
 *
 * Contract: the sources are streams of the spilled runs (readout/run_stream.h,
 * one per part of the store), or for compact runs feeds of their decoded
 * groups (readout/group_feed.h, one per part), and slices of sorted in-memory
 * batches (batch_sort()) and of packed runs (batch_pack()): a whole source,
 * or the part of it in one key range (readout/range_readout.h).  run_merge_next()
 * returns the values of all sources by ascending key; equal keys cannot
 * occur, since every key ends with the record's input sequence number.  A
 * value stays valid until the next run_merge_next() call.  This is the one
 * merge of records: RocksDB's own merging iterator only orders the groups.
 * run_merge_next() returns NULL at the end, and also when memory for an opened
 * group ran out, which run_merge_failed() then tells.  The merge borrows the
 * streams, the feeds, the batches and the packed runs: the caller keeps
 * and frees them.
 */
#ifndef RUN_MERGE_H
#define RUN_MERGE_H

#include <stddef.h>
#include <stdint.h>
#include "load/batch.h"
#include "readout/run_stream.h"
#include "readout/group_feed.h"

typedef struct run_merge run_merge;

/* Entries [begin, end) of a sorted batch. */
typedef struct {
    const batch *batch;
    size_t begin, end;
} batch_slice;

/* Records of a packed run from begin up to end (NULL: to the run's end);
 * begin NULL: none. */
typedef struct {
    const packed_run *run;
    const uint8_t *begin, *end;
} packed_slice;

batch_slice run_merge_batch_whole(const batch *sb);
packed_slice run_merge_packed_whole(const packed_run *pr);

/* Positions it at the first key.  NULL if out of memory. */
run_merge *run_merge_open(run_stream *const *streams, int n_streams,
                          group_feed *const *feeds, int n_feeds,
                          const batch_slice *batches, int n_batches,
                          const packed_slice *packed, int n_packed);

/* The next value in key order, or NULL once every source is exhausted. */
const uint8_t *run_merge_next(run_merge *m, size_t *vlen);
/* The key of the value run_merge_next() returned last, valid as long as it. */
const uint8_t *run_merge_key(const run_merge *m, size_t *klen);

int run_merge_failed(const run_merge *m);
void run_merge_close(run_merge *m);

#endif
