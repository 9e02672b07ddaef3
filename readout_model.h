/* readout_model.h -- how many threads the readout should merge with.
 *
 * Contract: pure arithmetic, no I/O.  readout_seconds_per_gb() models the
 * readout's time per GB of records on T threads:
 *   one stream (K = 1): max(merge, (merge + decode + compress) / T) -- one
 *     merge thread, fed by compact runs' groups decoded on the pool and
 *     feeding the pool's compression;
 *   K merge threads (range_readout.h):
 *     max(append, (merge + decode * (1 + straddle) + compress + pass)
 *                 / min(K, T)) -- each thread merges and compresses pieces
 *     of its own, each piece decodes its runs' groups that span its start
 *     once more (straddle), every byte of output passes through memory once
 *     more (pass), and one writer appends the pieces.
 * decode is 0 for uncompressed runs and data held in memory.  pass and
 * append count per GB of output, which at a level above 0 is
 * READOUT_COMPRESSED_SHARE of the records.  readout_ranges_for() returns
 * the smallest K within READOUT_K_SLACK of the best, never more threads
 * than bytes / min_range.  The per-byte costs are measured
 * (doc/DESIGN.md, bench/RESULTS.md).
 */
#ifndef READOUT_MODEL_H
#define READOUT_MODEL_H

#include <stdint.h>

/* Seconds per GB, one thread: of records merged, of output passed through
 * memory (written to an in-memory file, then handed to the output) and of
 * output appended by the writer. */
#define READOUT_MERGE_S_PER_GB 0.6
#define READOUT_PASS_S_PER_GB 0.42
#define READOUT_APPEND_S_PER_GB 0.4
#define READOUT_COMPRESSED_SHARE 0.4
/* Decoding compact runs' groups, on one thread; a piece's extra share of
 * it, a 256 KiB group per run of at least 1 MiB per run (readout_plan.c). */
#define READOUT_DECODE_S_PER_GB 1.15
#define READOUT_STRADDLE_SHARE 0.25

/* Compressing at deflate level `level` (0: BGZF's stored blocks). */
double readout_compress_s_per_gb(int level);

/* The modeled seconds per GB with k merge threads on `threads` threads. */
double readout_seconds_per_gb(int k, int threads, int level, double decode);

/* A larger K must beat a smaller one by this fraction to be chosen: more
 * than the model missed by on two cores (bench/RESULTS.md). */
#define READOUT_K_SLACK 0.2

int readout_ranges_for(int threads, int level, double decode, uint64_t bytes, uint64_t min_range,
                       int max_k);

#endif
