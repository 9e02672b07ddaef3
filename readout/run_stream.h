/* readout/run_stream.h -- the spilled runs, read in key order on a thread of their own.
 *
 * Contract: run_stream_open() takes an iterator over one part of the store
 * (store_iter_open_range()); from then on only the stream's thread touches it.
 * That thread seeks to the first key and copies the records, in key order,
 * into a few fixed-size chunks, waiting while all of them are full.  The
 * caller reads the current record with run_stream_key() and run_stream_value()
 * (valid until the next run_stream_next()) and checks run_stream_valid().  Once the
 * stream ends, run_stream_status() says whether the iterator failed.
 * run_stream_restart() reads the iterator again from its first key, on the
 * same thread and chunks, once the stream has ended (run_stream_valid() 0)
 * and the caller has moved the iterator to its next range
 * (store_iter_retarget()): 0, or -1 if the stream had failed.
 * run_stream_close() stops and joins the thread; the caller then closes the
 * iterator (store_iter_close()).
 *
 * Why: RocksDB reads the runs with synchronous direct I/O, so the thread
 * that iterates sits idle on every refill.  Here that wait overlaps with
 * the caller's merging and writing.
 */
#ifndef RUN_STREAM_H
#define RUN_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include "store/store.h"

typedef struct run_stream run_stream;

/* n_chunks >= 2 chunks of chunk_bytes each (a larger record gets a chunk
 * of its own size).  NULL if out of memory or the thread cannot start. */
run_stream *run_stream_open(store_iter *it, size_t chunk_bytes, int n_chunks);

int run_stream_valid(const run_stream *s);
const uint8_t *run_stream_key(const run_stream *s, size_t *len);
const uint8_t *run_stream_value(const run_stream *s, size_t *len);
void run_stream_next(run_stream *s);

/* After the end: 0, or -1 with the iterator's error (or "out of memory")
 * in err. */
int run_stream_status(const run_stream *s, errmsg *err);
int run_stream_restart(run_stream *s);

void run_stream_close(run_stream *s);

#endif
