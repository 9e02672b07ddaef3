/* readout/readout_plan.h -- how the readout is split: one stream, or K threads over pieces.
 *
 * Contract: readout_plan_ranges() decides how many merge threads K the readout
 * uses: rq->merge_threads (--merge-threads), else readout_model_ranges_for()'s
 * rule from -@ and the output's compression level (readout/readout_model.h); 1 for
 * CRAM output (a CRAM file cannot be joined from pieces written on their
 * own), for an index whose output is not a regular file, when the keys
 * sampled have too few distinct values, and where the system has no
 * in-memory files (memfd); fewer where
 * `ulimit -n` leaves too few descriptors (two per thread), and where the
 * readers' memory (rq->readers) cannot hold K merges' readers, each at
 * the smallest readahead, with their writers and the pieces held in
 * memory (store/run_readers.h).  It sets the readahead of each run's reader:
 * the largest that fits one merge's share of that memory, at most
 * STORE_DIRECT_READAHEAD, and for pieces at most the run's share of a
 * piece (more would be read twice).  With K > 1 it
 * cuts the key space into many pieces of about equal data, from the
 * samples taken as runs were written (store_samples()) and from the
 * batches held in memory (keys/key_samples.h): no pass over the data.  It
 * returns 0, or -1 with the cause in err.  The pieces are merged by
 * readout/range_readout.h.
 */
#ifndef READOUT_PLAN_H
#define READOUT_PLAN_H

#include <htslib/sam.h>
#include "util/errmsg.h"
#include "keys/key_samples.h"
#include "readout/merge_sources.h"
#include "output/output_file.h"
#include "util/progress.h"

/* What the readout is asked to do, gathered by the engine. */
typedef struct {
    const readout_input *in;
    output_file *out;           /* opened; the header is written before the readout */
    const sam_hdr_t *hdr;
    const char *out_mode;       /* htslib mode ("wb6"), for the pieces */
    hts_opt *out_opts;          /* --output-fmt-option, also for the pieces */
    int verify;                 /* --verify: sum the records' digests */
    int threads;                /* -@ */
    int merge_threads;          /* --merge-threads; 0: automatic */
    int indexed;                /* an index is wanted */
    uint64_t memory;            /* the sort's memory budget, bytes */
    uint64_t readers;           /* what the runs' readers may hold (engine/sort_plan.h) */
    uint64_t bytes;             /* record bytes to merge (all the input's) */
    progress *prog;
} readout_request;

typedef struct {
    int n;                  /* pieces, >= 1; 1: one merge on the calling thread */
    int threads;            /* merge threads, <= n */
    key_sample *splits;     /* n - 1 keys, increasing */
    key_samples samples;    /* where the splits' keys were found */
    int *slot_fd, n_slots;  /* in-memory files the pieces pass through */
    size_t readahead;       /* bytes each run's reader fetches at a time, per merge */
} range_plan;

int readout_plan_ranges(const readout_request *rq, range_plan *p, errmsg *err);

/* The samples of every key the readout merges, unsorted: the spilled
 * runs', and the held and last batches' (borrowed from them). */
void readout_plan_samples(const readout_input *in, key_samples *s);
void readout_plan_free(range_plan *p);

#endif
