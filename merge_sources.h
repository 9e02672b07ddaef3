/* merge_sources.h -- everything the readout merges, for one key range.
 *
 * Contract: a readout_input names what the load left to merge: the store's
 * spilled runs, the batches held in memory (sorted in place, or packed in
 * key order) and the last batch.  sources_open() gathers, for the keys
 * from lo (inclusive) to hi (exclusive), a NULL bound being open: a reader
 * thread over each part of the store (store_stream.h, with RocksDB
 * iterators bounded to the range; for compact runs a feed of decoded
 * groups, group_feed.h), and slices of the
 * held batches and of the last batch (run_merge.h); then it opens the
 * merge of them all.  sources_open_pass() opens a merge pass's group of
 * runs instead.  The
 * whole key space (both bounds open) is the readout in one stream.  After
 * the merge has ended, sources_status() gives 0, or -1 with a reader's
 * error.  sources_close() stops the readers and frees what sources_open()
 * made (also after a failed open).  sources_open() returns 0, or -1 with
 * the cause in err.
 */
#ifndef MERGE_SOURCES_H
#define MERGE_SOURCES_H

#include "errmsg.h"
#include "key_bytes.h"
#include "rocks_store.h"
#include "run_merge.h"

typedef struct {
    rocks_store *store;         /* the spilled runs; NULL: none */
    sort_batch *const *kept;    /* n_held batches sorted in place, or NULL */
    packed_run *const *packed;  /* n_held batches packed in key order, or NULL */
    int n_held;
    const sort_batch *tail;     /* the last batch, sorted */
} readout_input;

typedef struct {
    int n_streams;
    store_iter **it;            /* the streams' iterators */
    store_stream **stream;
    group_feed **feed;
    int n_feeds;
    batch_slice *batches;
    packed_slice *packed;
    int n_batches, n_packed;
    run_merge *merge;
} merge_sources;

/* readahead: bytes each run's reader fetches at a time (direct I/O). */
int sources_open(merge_sources *s, const readout_input *in, const key_sample *lo,
                 const key_sample *hi, size_t readahead, errmsg *err);
/* A merge pass's group (run_passes.h): runs first..first+n-1 of p, each
 * read by a stream or a feed of its own (feeds decoding `ahead` groups
 * ahead), merged whole. */
int sources_open_pass(merge_sources *s, rocks_store *st, store_pass *p, int first, int n,
                      size_t readahead, int ahead, errmsg *err);
int sources_status(const merge_sources *s, errmsg *err);
void sources_close(merge_sources *s);

#endif
