/* readout/merge_sources.c -- see readout/merge_sources.h. */
#include <stdlib.h>
#include <string.h>
#include "readout/merge_sources.h"
#include "store/store.h"

/* Room for n readers of each kind. */
static int reserve_readers(merge_sources *s, int n)
{
    size_t k = (size_t)(n > 0 ? n : 1);
    s->it = calloc(k, sizeof *s->it);
    s->stream = calloc(k, sizeof *s->stream);
    s->feed = calloc(k, sizeof *s->feed);
    return s->it && s->stream && s->feed ? 0 : -1;
}

/* The runs are read ahead on their own thread (readout/run_stream.h) in chunks
 * of half a readahead: with 2 MiB direct reads per run, four 1 MiB chunks
 * cover a read's wait with room to spare at the rate the merge takes
 * records; a smaller readahead (little memory) refills sooner.  The
 * stream's iterator is the sources' to close, even when the stream does
 * not start. */
static int add_stream(merge_sources *s, store_iter *it, size_t readahead)
{
    if (!it) return -1;
    s->it[s->n_streams] = it;
    s->stream[s->n_streams] = run_stream_open(it, run_readers_chunk_bytes(readahead), STREAM_CHUNKS);
    if (!s->stream[s->n_streams]) {
        store_iter_close(it);
        return -1;
    }
    s->n_streams++;
    return 0;
}

/* Each part of the store is read by a stream of its own: one iterator
 * over all runs kept a single thread busy with RocksDB's merge and its
 * synchronous reads for the whole -u readout. */
/* Compact runs: a feed of decoded groups per part. */
static int open_feeds(merge_sources *s, const readout_input *in, const key_sample *lo,
                      const key_sample *hi, size_t readahead, errmsg *err)
{
    int parts = store_parts(in->store);
    if (reserve_readers(s, parts) < 0) return errmsg_set(err, "out of memory for the final merge");
    for (s->n_feeds = 0; s->n_feeds < parts; s->n_feeds++) {
        s->feed[s->n_feeds] = group_feed_open(in->store, s->n_feeds, lo, hi, readahead, err);
        if (!s->feed[s->n_feeds]) return -1;
    }
    return 0;
}

static int open_streams(merge_sources *s, rocks_store *st, const key_sample *lo,
                        const key_sample *hi, size_t readahead)
{
    int parts = st ? store_parts(st) : 0;
    if (reserve_readers(s, parts) < 0) return -1;
    for (int p = 0; p < parts; p++)
        if (add_stream(s, store_iter_open_range(st, p, readahead, lo ? lo->key : NULL,
                                                lo ? lo->len : 0, hi ? hi->key : NULL,
                                                hi ? hi->len : 0), readahead) < 0)
            return -1;
    return 0;
}

static batch_slice slice_batch(const batch *sb, const key_sample *lo, const key_sample *hi)
{
    batch_slice x = run_merge_batch_whole(sb);
    if (lo) x.begin = batch_seek(sb, lo->key, lo->len);
    if (hi) x.end = batch_seek(sb, hi->key, hi->len);
    if (x.end < x.begin) x.end = x.begin;
    return x;
}

static packed_slice slice_packed(const packed_run *pr, const key_sample *lo,
                                 const key_sample *hi)
{
    packed_slice x = run_merge_packed_whole(pr);
    if (lo) x.begin = batch_packed_seek(pr, lo->key, lo->len);
    if (hi) x.end = batch_packed_seek(pr, hi->key, hi->len);
    if (!x.begin) x.end = NULL;
    return x;
}

/* The held batches (sorted in place, or packed) and the last batch. */
static int slice_held(merge_sources *s, const readout_input *in, const key_sample *lo,
                      const key_sample *hi)
{
    int n_kept = in->kept ? in->n_held : 0;
    int n_packed = in->packed ? in->n_held : 0;
    s->batches = malloc((size_t)(n_kept + 1) * sizeof *s->batches);
    s->packed = malloc((size_t)(n_packed + 1) * sizeof *s->packed);
    if (!s->batches || !s->packed) return -1;
    for (int i = 0; i < n_kept; i++) s->batches[i] = slice_batch(in->kept[i], lo, hi);
    s->batches[n_kept] = slice_batch(in->tail, lo, hi);
    for (int i = 0; i < n_packed; i++) s->packed[i] = slice_packed(in->packed[i], lo, hi);
    s->n_batches = n_kept + 1;
    s->n_packed = n_packed;
    return 0;
}

int merge_sources_open(merge_sources *s, const readout_input *in, const key_sample *lo,
                       const key_sample *hi, size_t readahead, errmsg *err)
{
    memset(s, 0, sizeof *s);
    if (in->store && store_grouped(in->store)) {
        if (open_feeds(s, in, lo, hi, readahead, err) < 0) return -1;
    } else if (open_streams(s, in->store, lo, hi, readahead) < 0) {
        return errmsg_set(err, "out of memory for the final merge");
    }
    if (slice_held(s, in, lo, hi) < 0) return errmsg_set(err, "out of memory for the final merge");
    s->merge = run_merge_open(s->stream, s->n_streams, s->feed, s->n_feeds, s->batches,
                              s->n_batches, s->packed, s->n_packed);
    return s->merge ? 0 : errmsg_set(err, "out of memory for the final merge");
}

/* Each reader to [lo, hi): a feed's thread reads the new range; a stream's
 * iterator moves there and its thread reads it again. */
static int move_readers(merge_sources *s, const key_sample *lo, const key_sample *hi, errmsg *err)
{
    for (int i = 0; i < s->n_feeds; i++)
        if (group_feed_restart(s->feed[i], lo, hi, err) < 0) return -1;
    for (int i = 0; i < s->n_streams; i++) {
        if (store_iter_retarget(s->it[i], lo ? lo->key : NULL, lo ? lo->len : 0,
                                hi ? hi->key : NULL, hi ? hi->len : 0) < 0
            || run_stream_restart(s->stream[i]) < 0)
            return errmsg_set(err, "out of memory for the final merge");
    }
    return 0;
}

int merge_sources_move(merge_sources *s, const readout_input *in, const key_sample *lo,
                       const key_sample *hi, errmsg *err)
{
    run_merge_close(s->merge);
    s->merge = NULL;
    free(s->batches);
    free(s->packed);
    s->batches = NULL;
    s->packed = NULL;
    if (move_readers(s, lo, hi, err) < 0) return -1;
    if (slice_held(s, in, lo, hi) < 0) return errmsg_set(err, "out of memory for the final merge");
    s->merge = run_merge_open(s->stream, s->n_streams, s->feed, s->n_feeds, s->batches,
                              s->n_batches, s->packed, s->n_packed);
    return s->merge ? 0 : errmsg_set(err, "out of memory for the final merge");
}

int merge_sources_open_pass(merge_sources *s, rocks_store *st, store_pass *p, int first, int n,
                            size_t readahead, int ahead, errmsg *err)
{
    memset(s, 0, sizeof *s);
    if (reserve_readers(s, n) < 0) return errmsg_set(err, "out of memory merging runs");
    for (int i = first; i < first + n; i++) {
        store_iter *it = store_pass_iter(p, i, readahead, err);
        if (!it) return -1;
        if (!store_grouped(st)) {
            if (add_stream(s, it, readahead) < 0) return errmsg_set(err, "out of memory merging runs");
        } else if ((s->feed[s->n_feeds] = group_feed_open_iter(it, ahead, err))) {
            s->n_feeds++;
        } else {
            return -1;
        }
    }
    s->merge = run_merge_open(s->stream, s->n_streams, s->feed, s->n_feeds, NULL, 0, NULL, 0);
    return s->merge ? 0 : errmsg_set(err, "out of memory merging runs");
}

int merge_sources_status(const merge_sources *s, errmsg *err)
{
    for (int i = 0; i < s->n_streams; i++)
        if (run_stream_status(s->stream[i], err) < 0) return -1;
    for (int i = 0; i < s->n_feeds; i++)
        if (group_feed_status(s->feed[i], err) < 0) return -1;
    return 0;
}

void merge_sources_close(merge_sources *s)
{
    run_merge_close(s->merge);
    for (int i = 0; i < s->n_feeds; i++) group_feed_close(s->feed[i]);
    for (int i = 0; i < s->n_streams; i++) {
        run_stream_close(s->stream[i]);
        store_iter_close(s->it[i]);
    }
    free(s->it);
    free(s->stream);
    free(s->feed);
    free(s->batches);
    free(s->packed);
    memset(s, 0, sizeof *s);
}
