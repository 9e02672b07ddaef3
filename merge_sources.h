/* merge_sources.h -- everything the readout merges, for one key range.
 *
 * Contract: sources_open() gathers, for the keys from lo (inclusive) to hi
 * (exclusive), a NULL key being an open bound: a reader thread over each
 * part of the store (store_stream.h, with RocksDB iterators bounded to the
 * range), and slices of the batches held in memory and of the last batch
 * (run_merge.h); then it opens the merge of them all.  The whole key space
 * (both bounds open) is the single readout of before ranges existed.
 * After the merge has ended, sources_error() gives a reader's error, or
 * NULL.  sources_close() stops the readers and frees what sources_open()
 * made (also after a failed open).  Returns 0, or -1 when out of memory.
 */
#ifndef MERGE_SOURCES_H
#define MERGE_SOURCES_H

#include "sort_job.h"
#include "run_merge.h"

typedef struct {
    const uint8_t *key;     /* NULL: open */
    size_t len;
} key_bound;

typedef struct {
    int n_streams;
    store_iter *it[STORE_MAX_PARTS];
    store_stream *stream[STORE_MAX_PARTS];
    batch_slice *batches;
    packed_slice *packed;
    int n_batches, n_packed;
    run_merge *merge;
} merge_sources;

/* readahead: bytes each run's reader fetches at a time (direct I/O). */
int sources_open(merge_sources *s, sort_job *j, key_bound lo, key_bound hi, size_t readahead);
const char *sources_error(const merge_sources *s);
void sources_close(merge_sources *s);

#endif
