/* readout/merge_sources.h -- everything the readout merges, for one key range.
 *
 * Contract: a readout_input names what the load left to merge: the store's
 * spilled runs, the batches held in memory (sorted in place, or packed in
 * key order) and the last batch.  merge_sources_open() gathers, for the keys
 * from lo (inclusive) to hi (exclusive), a NULL bound being open: a reader
 * thread over each part of the store (readout/run_stream.h, with RocksDB
 * iterators bounded to the range; for compact runs a feed of decoded
 * groups, readout/group_feed.h), and slices of the
 * held batches and of the last batch (readout/run_merge.h); then it opens the
 * merge of them all.  merge_sources_move() takes sources whose merge has
 * ended to the next key range: the same readers (their threads and
 * buffers) read it, as merge_sources_open() would have opened them.
 * merge_sources_open_pass() opens a merge pass's group of runs instead.  The
 * whole key space (both bounds open) is the readout in one stream.  After
 * the merge has ended, merge_sources_status() gives 0, or -1 with a reader's
 * error.  merge_sources_close() stops the readers and frees what merge_sources_open()
 * made (also after a failed open).  merge_sources_open() returns 0, or -1 with
 * the cause in err.
 */
#ifndef MERGE_SOURCES_H
#define MERGE_SOURCES_H

#include "util/errmsg.h"
#include "keys/key_bytes.h"
#include "store/store.h"
#include "readout/run_merge.h"

typedef struct {
    rocks_store *store;         /* the spilled runs; NULL: none */
    batch *const *kept;    /* n_held batches sorted in place, or NULL */
    packed_run *const *packed;  /* n_held batches packed in key order, or NULL */
    int n_held;
    const batch *tail;     /* the last batch, sorted */
} readout_input;

typedef struct {
    int n_streams;
    store_iter **it;            /* the streams' iterators */
    run_stream **stream;
    group_feed **feed;
    int n_feeds;
    batch_slice *batches;
    packed_slice *packed;
    int n_batches, n_packed;
    run_merge *merge;
} merge_sources;

/* readahead: bytes each run's reader fetches at a time (direct I/O). */
int merge_sources_open(merge_sources *s, const readout_input *in, const key_sample *lo,
                       const key_sample *hi, size_t readahead, errmsg *err);
int merge_sources_move(merge_sources *s, const readout_input *in, const key_sample *lo,
                       const key_sample *hi, errmsg *err);
/* A merge pass's group (readout/run_passes.h): runs first..first+n-1 of p, each
 * read by a stream or a feed of its own (feeds decoding `ahead` groups
 * ahead), merged whole. */
int merge_sources_open_pass(merge_sources *s, rocks_store *st, store_pass *p, int first, int n,
                            size_t readahead, int ahead, errmsg *err);
int merge_sources_status(const merge_sources *s, errmsg *err);
void merge_sources_close(merge_sources *s);

#endif
