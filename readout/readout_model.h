/* readout/readout_model.h -- how many threads the readout should merge with.
 *
 * Contract: pure arithmetic, no I/O.  The readout's costs are CPU seconds
 * per GB of records, each on the thread that pays it (measured per thread,
 * -v's "threads in phase readout" lines; bench/RESULTS.md):
 *   one stream (K = 1): the merge on one thread; reading the runs back
 *     (and decoding compact runs' groups) on a thread per part of the
 *     store; compressing on the -@ pool; BGZF's writer thread writing the
 *     output;
 *   K merge threads (readout/range_readout.h): each merges and compresses pieces
 *     of its own; each piece reads its runs on threads of its own, and
 *     decodes once more the group of each run that spans its start
 *     (straddle); every byte of output passes through memory once more
 *     (pass); one writer appends the pieces.
 * readout_model_costs() gives the CPU of the whole readout and its longest
 * single thread, per GB; the readout's wall on T cores is at least
 * max(longest, CPU / min(K, T)) (the pool has T threads, K merge threads
 * share T cores).  readout_model_ranges_for() keeps one stream when no single
 * thread of it needs more than its share of the cores, CPU / T; otherwise
 * it takes as many merge threads as there are threads (K merge threads
 * compress alone, so fewer would leave cores idle), within max_k and
 * bytes / min_range, if the model says that is faster; else one stream.
 * read is the cost of reading the runs back (READOUT_READ_S_PER_GB,
 * READOUT_DECODE_S_PER_GB for compact runs, 0 with none spilled); parts
 * the store's parts, each read by its own thread.
 */
#ifndef READOUT_MODEL_H
#define READOUT_MODEL_H

#include <stdint.h>

/* Seconds per GB of records, on one thread: the merge; reading the runs
 * back, all parts together, uncompressed or compact (reading and decoding
 * the groups). */
#define READOUT_MERGE_S_PER_GB 0.7
#define READOUT_READ_S_PER_GB 1.1
#define READOUT_DECODE_S_PER_GB 1.6
/* Seconds per GB of output: BGZF's writer thread (one stream), the pieces'
 * pass through memory, the one writer's appending of pieces. */
#define READOUT_WRITE_S_PER_GB 0.6
#define READOUT_PASS_S_PER_GB 0.42
#define READOUT_APPEND_S_PER_GB 0.4
/* The output's size against the records', at a level above 0. */
#define READOUT_COMPRESSED_SHARE 0.4
/* A piece's extra reading of its runs' groups that span its start, with
 * pieces of at least READOUT_RUN_SHARE per run; with s bytes per run it
 * is READOUT_STRADDLE_SHARE * READOUT_RUN_SHARE / s. */
#define READOUT_STRADDLE_SHARE 0.25
#define READOUT_RUN_SHARE (1ULL << 20)

typedef struct {
    double cpu;         /* all threads' */
    double longest;     /* the busiest single thread's */
} readout_cost;

readout_cost readout_model_costs(int k, int level, double read, int parts);

/* The modeled wall per GB with k merge threads on `threads` threads. */
double readout_model_seconds_per_gb(int k, int threads, int level, double read, int parts);
/* The same two with pieces whose runs' shares are smaller than 1 MiB: a
 * straddle other than READOUT_STRADDLE_SHARE. */
readout_cost readout_model_costs_straddling(int k, int level, double read, int parts,
                                            double straddle);
double readout_model_seconds_straddling(int k, int threads, int level, double read, int parts,
                                        double straddle);

/* Whether one stream is kept on its own merits: none of its single
 * threads needs more than its share of the cores (the first test of
 * readout_model_ranges_for()). */
int readout_model_one_stream(int threads, int level, double read, int parts);
int readout_model_ranges_for(int threads, int level, double read, int parts, uint64_t bytes,
                             uint64_t min_range, int max_k);

/* What bounds the pieces (readout/readout_plan.c): each holds at least
 * run_share bytes of each of `runs` spilled runs and piece_min bytes, at
 * most piece_max, and the k + 2 in flight share `room` bytes. */
typedef struct {
    uint64_t runs, room, piece_min, piece_max;
} readout_room;

/* The bytes of records in one of k threads' pieces, or 0 if they do not fit. */
uint64_t readout_model_piece(const readout_room *r, int k, uint64_t run_share);

typedef struct {
    int k;              /* merge threads; 1: one stream */
    uint64_t piece;     /* the bytes of records in a piece, 0 with one stream */
} readout_shape;

/* Where k threads' pieces at READOUT_RUN_SHARE a run do not fit: of the
 * most threads (at most k) whose pieces fit at that share, and the most at
 * half of it (twice the straddle), the faster by the model if it beats one
 * stream; else one stream. */
readout_shape readout_model_fewer_or_smaller(const readout_room *r, int k, int threads, int level,
                                             double read, int parts);

#endif
