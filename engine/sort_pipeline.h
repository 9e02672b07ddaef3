/* engine/sort_pipeline.h -- rocksort's engine: read, spill sorted runs, merge out.
 *
 * Contract: sort_pipeline_run() sorts opts->in_fns, as one input, into
 * opts->out_fn.  The output holds every input record exactly once (as
 * samtools writes it: -M rewrites unplaced reads), in samtools sort's order
 * for opts->sort, ties in input order (the inputs', then the records'),
 * under the input header (several inputs' merged: engine/sort_inputs.h)
 * with @HD updated (and @PG added unless opts->pg_cmdline is NULL).  On any failure it prints one line naming the
 * file and the cause, leaves no temporary data and no output file, and
 * returns -1.
 */
#ifndef SORT_PIPELINE_H
#define SORT_PIPELINE_H

#include "engine/rocksort_opts.h"

int sort_pipeline_run(const rocksort_opts *opts);

#endif
