/* store/run_readers.h -- what the readers of the spilled runs hold, and how much they may.
 *
 * Contract: pure arithmetic, no I/O.  One merge of the runs (the readout's
 * one stream, each piece of a readout in K merge threads, a merge pass's
 * group of runs) holds, besides the records it merges:
 *   per run, an open file: RocksDB's readahead buffer (the readahead and
 *     a block), the block being read, and with a block codec (lz4, snappy,
 *     zstd) that block decompressed;
 *   runs in groups (compact, or plain: codec/group_codec.h): every group
 *     open at once, decoded (a RocksDB merge copies groups whole, so one
 *     per run ever written to the part), the groups each part's feed
 *     decodes ahead, and one group's columns and the decoders' state per
 *     feed (readout/group_feed.h; plain groups need neither, and are
 *     counted as compact ones);
 *   records runs: per part, the ring of chunks its reader thread fills
 *     (readout/run_stream.h), chunks sized by run_readers_chunk_bytes().
 * run_readers_bytes() sums that for a shape at a readahead.  run_readers_fit()
 * picks the readahead: the largest up to STORE_DIRECT_READAHEAD whose
 * readers fit in `memory`, never below READERS_MIN_READAHEAD; 0 when even
 * that does not fit, and the runs must first be merged in passes
 * (readout/run_passes.h).  run_readers_threads() caps K merge threads, each with
 * readers of its own and READOUT_THREAD_BYTES for its writer, to what
 * fits.  READOUT_MIN_MEMORY is the least the readers get whatever the
 * budget: below it even a merge of a dozen runs would not fit.
 *
 * The figures are measured (heaptrack on the readout, doc/DESIGN.md "The
 * readout's memory"): they count what the heap holds, not what the
 * allocator keeps around it, for which the bound leaves room.
 */
#ifndef RUN_READERS_H
#define RUN_READERS_H

#include <stddef.h>
#include <stdint.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define READOUT_MIN_MEMORY (16ULL << 20)
#define READERS_MIN_READAHEAD (256u << 10)
/* A piece's writer: its BGZF buffers and deflate state. */
#define READOUT_THREAD_BYTES (1ULL << 20)
/* Groups a compact runs' feed decodes ahead (readout/group_feed.h). */
#define READERS_FEED_AHEAD 4
/* A feed's decoders, kept for its thread's life: zstd's context
 * (ZSTD_sizeof_DCtx(): 96 KB in zstd 1.5), and the order-1 tables
 * htscodecs' rANS keeps per thread for the qualities, of which a column
 * touches the rows of the values it holds (measured resident: up to
 * 432 KiB for 94 distinct values, doc/DESIGN.md "The readout's memory"). */
#define READERS_FEED_DECODER_BYTES (640u << 10)

typedef struct {
    uint64_t runs;      /* files open */
    uint64_t groups;    /* compact runs: groups open at once, decoded; 0 with records runs */
    int grouped;        /* compact runs */
    int parts;          /* reader threads: feeds (compact runs) or streams (records) */
    int ahead;          /* compact runs: groups each feed decodes ahead */
    int block_codec;    /* RocksDB decompresses each block */
    size_t group_bytes; /* compact runs: records per group (store_group_bytes());
                           0: STORE_GROUP_BYTES */
} run_readers_shape;

/* The chunks of a records runs' stream (readout/run_stream.h) at a readahead:
 * STREAM_CHUNKS of them, half a readahead each, at most 1 MiB. */
#define STREAM_CHUNKS 4
size_t run_readers_chunk_bytes(size_t readahead);

/* One run's reader: its readahead and blocks. */
uint64_t run_readers_per_run(size_t readahead, int block_codec);
uint64_t run_readers_bytes(const run_readers_shape *s, size_t readahead);
size_t run_readers_fit(const run_readers_shape *s, uint64_t memory);
int run_readers_threads(const run_readers_shape *s, size_t readahead, uint64_t memory, int k);

/* The group size for `runs` compact runs written, read at the readout
 * from `files` files by `parts` feeds, when the readers may hold `memory`:
 * STORE_GROUP_BYTES wherever those readers fit at READERS_MIN_READAHEAD;
 * else the larger of its half and its quarter (STORE_GROUP_MIN_BYTES) at
 * which they fit with READERS_GROUPS_READAHEAD a file (room for runs
 * beyond the estimate), else at READERS_MIN_READAHEAD; STORE_GROUP_BYTES
 * where neither fits, as merge passes will rewrite the runs anyway.
 * Why: a RocksDB merge copies groups whole, so the readout holds a group of
 * every run written however the runs were merged; where those groups fill
 * the readers' memory, every run is rewritten in a merge pass before the
 * readout.  Smaller groups cost some density and encoding time
 * (doc/DESIGN.md, "The readout's memory"); a pass costs a rewrite. */
#define READERS_GROUPS_READAHEAD (2 * READERS_MIN_READAHEAD)
size_t run_readers_group_bytes(uint64_t runs, uint64_t files, int parts, uint64_t memory);

/* Gives the pages the allocator holds free back to the system: between a
 * merge pass's groups, and before the readout, so that what one phase's
 * threads freed does not stay resident beside the next's. */
static inline void run_readers_release_freed(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

#endif
