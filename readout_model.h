/* readout_model.h -- how many key ranges the readout should merge at once.
 *
 * Contract: pure arithmetic, no I/O.  readout_ranges_for() models the
 * readout's time per byte of records with K ranges on T threads as
 *     max(merge / K, (merge + compress + part * (K - 1) / K) / T)
 * -- one range's merge on its own thread, or all the work shared by the
 * threads, where ranges after the first are written to parts and copied
 * onto the output (range_readout.h) -- and returns the smallest K within
 * READOUT_K_SLACK of the best, never more ranges than bytes / min_range.
 * The per-byte costs are measured (doc/DESIGN.md, bench/RESULTS.md).
 */
#ifndef READOUT_MODEL_H
#define READOUT_MODEL_H

#include <stdint.h>

/* Seconds per GB of records, one thread. */
#define READOUT_MERGE_S_PER_GB 0.5
#define READOUT_PART_S_PER_GB 2.3

/* Compressing at deflate level `level` (0: BGZF's stored blocks). */
double readout_compress_s_per_gb(int level);

/* The modeled seconds per GB with k ranges on `threads` threads. */
double readout_seconds_per_gb(int k, int threads, int level);

/* A larger K must beat a smaller one by this fraction to be chosen. */
#define READOUT_K_SLACK 0.05

int readout_ranges_for(int threads, int level, uint64_t bytes, uint64_t min_range, int max_k);

#endif
