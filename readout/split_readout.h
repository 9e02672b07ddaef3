/* readout/split_readout.h -- --split's readout: each group of keys merged into its own output.
 *
 * Contract: with --split every key starts with its group (keys/split_key.h),
 * so each output is one contiguous key range.  split_readout_run() merges
 * the runs, the held batches and the last batch (readout/merge_sources.h)
 * and writes each group's records to its own output
 * (output/split_set.h), beginning the next output where the group
 * changes: one output open per writer, whatever the number of groups.
 * With -@ (or --merge-threads) of 2 or more, K writers take pieces of the
 * key space cut at group boundaries from the samples (never inside a
 * group: each output is written by one writer) and write their groups on
 * threads of their own; K is held to what the readers' memory and
 * `ulimit -n` allow, as readout/readout_plan.h holds it.  An output is
 * compressed on its writer's thread, except one whose group the samples
 * put at SPLIT_POOLED_FROM bytes or more, which is compressed on the -@
 * pool: htslib's threaded BGZF waits in 10 ms sleeps at each close, which
 * thousands of small outputs would each pay.  With --verify each record's
 * value is read again from the record as written and must be its
 * output's.  It fills *res (records and --verify's digest over all
 * outputs) and returns 0, or -1 with the cause of the first failure in
 * err; the outputs then stay in the hidden directory, for the caller to
 * remove.
 */
#ifndef SPLIT_READOUT_H
#define SPLIT_READOUT_H

#include <stdint.h>
#include <htslib/thread_pool.h>
#include "keys/sort_key.h"
#include "output/split_set.h"
#include "readout/merge_sources.h"
#include "readout/range_readout.h"
#include "util/errmsg.h"
#include "util/progress.h"

#define SPLIT_POOLED_FROM (8ULL << 20)

typedef struct {
    const readout_input *in;
    split_set *set;
    const sort_spec *sort;      /* the keys' spec, prepared (its --split and @RG IDs) */
    int verify;                 /* --verify: digests, and each record's value checked */
    int threads;                /* -@ */
    int merge_threads;          /* --merge-threads; 0: -@ */
    htsThreadPool *pool;        /* -@'s pool; NULL: none */
    uint64_t readers;           /* what the runs' readers may hold (engine/sort_plan.h) */
    const char *store_name;     /* for messages, or NULL */
    progress *prog;
} split_request;

int split_readout_run(const split_request *rq, readout_result *res, errmsg *err);

#endif
