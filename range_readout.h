/* range_readout.h -- the readout merged by several threads at once.
 *
 * Contract: ranges_plan() decides how many merge threads K the readout
 * uses: --merge-threads, else readout_width()'s rule from -@ and the
 * output's compression level; 1 for CRAM output (a CRAM file cannot be
 * joined from pieces written on their own), for an index whose output is
 * not a regular file, when runs were spilled in compact form (a piece's
 * records may start in any earlier group, group_iter.h), when the keys sampled have too few distinct values,
 * and where the system has no in-memory files (memfd); fewer where
 * `ulimit -n` leaves too few descriptors (two per thread).  With K > 1 it cuts
 * the key space into many pieces of about equal data, from the samples
 * taken as runs were written (store_samples()) and from the batches held
 * in memory (key_ranges.h): no pass over the data.
 * readout_in_ranges() runs K threads that take the pieces in key order;
 * each merges its piece (merge_sources.h) and writes it through htslib in
 * the output's format and level, compressed on the shared thread pool,
 * into an in-memory file (output_parts.h).  The calling thread appends the
 * finished pieces to the output in order, without their EOF markers, while
 * the next ones are merged; at most K + 2 pieces are in flight, so memory
 * stays bounded and nothing goes through the temp directory.  The result
 * is one file: the header once, one EOF marker, the records exactly as one
 * merge would write them.  An index is then built from the closed output
 * (output_index_after()).  Returns 0, or -1 once the failure is reported.
 */
#ifndef RANGE_READOUT_H
#define RANGE_READOUT_H

#include "sort_job.h"
#include "key_ranges.h"

typedef struct {
    int n;                  /* pieces, >= 1; 1: one merge on the calling thread */
    int threads;            /* merge threads, <= n */
    key_sample *splits;     /* n - 1 keys, increasing */
    key_samples samples;    /* where the splits' keys were found */
    int *slot_fd, n_slots;  /* in-memory files the pieces pass through */
} range_plan;

/* The merge threads asked for, before the samples are seen. */
int readout_width(const sort_job *j);

/* Returns 0, or -1 when out of memory (reported). */
int ranges_plan(sort_job *j, range_plan *p);
void ranges_free(range_plan *p);

int readout_in_ranges(sort_job *j, const range_plan *p);

#endif
