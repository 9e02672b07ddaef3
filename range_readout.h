/* range_readout.h -- the readout in key ranges, merged and written at once.
 *
 * Contract: ranges_plan() decides how many key ranges K the readout uses
 * and where they split.  K is --merge-threads, else readout_width()'s rule
 * from -@ and the output's compression level; it is 1 for CRAM output (a
 * CRAM file cannot be joined from parts written on their own), for an
 * index whose output is not a regular file, and when the keys sampled
 * have too few distinct values.  The split keys come from the samples
 * taken as runs were written (store_samples()) and from the batches held
 * in memory (key_ranges.h): no pass over the data.
 * readout_in_ranges() (K > 1) runs K threads, each merging its range
 * (merge_sources.h) and writing it through htslib in the output's format
 * and level, compressed on the shared thread pool: range 0 into the output
 * after the header, the others into parts of their own (output_parts.h).
 * Then it appends the parts in order, without their EOF markers: one file,
 * the header once, one EOF marker, the records exactly as one merge would
 * write them.  An index is then built from the closed output
 * (output_index_after()).  Returns 0, or -1 once the failure is reported.
 */
#ifndef RANGE_READOUT_H
#define RANGE_READOUT_H

#include "sort_job.h"
#include "key_ranges.h"

typedef struct {
    int n;                  /* ranges, >= 1 */
    key_sample *splits;     /* n - 1 keys, increasing */
    key_samples samples;    /* where the splits' keys were found */
} range_plan;

/* The ranges asked for, before the samples are seen. */
int readout_width(const sort_job *j);

/* Of the records' bytes, the share that parts of the output may hold under
 * the temp directory at once (the output not being a regular file), for
 * sizing the temp space before anything is read. */
double readout_parts_share(const rocksort_opts *o);

/* Returns 0, or -1 when out of memory (reported). */
int ranges_plan(sort_job *j, range_plan *p);
void ranges_free(range_plan *p);

int readout_in_ranges(sort_job *j, const range_plan *p);

#endif
