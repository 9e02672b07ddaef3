/* engine/sort_output.h -- the output: opened early, filled by the readout, committed.
 *
 * Contract: sort_output_open() opens the output before any sorting (output/output_file.h:
 * a temporary name beside a regular file), so that a name that cannot be
 * written fails at once, as does BAM output for a reference longer than
 * BAM can hold.  sort_output_readout() writes the header, then merges the spilled runs
 * (one reader thread per part of the store, readout/run_stream.h), the batches
 * held in memory and the last batch into it in key order, counting
 * records_out; it names the cause of a failed write.  sort_output_commit()
 * flushes what htslib's threads hold and renames the output into place.
 * Each returns 0, or -1 once the failure is reported.
 */
#ifndef SORT_OUTPUT_H
#define SORT_OUTPUT_H

#include "engine/sort_job.h"

/* Before the load. */
int sort_output_open(sort_job *j);

/* After the load, once store_merge_settle() has returned. */
int sort_output_readout(sort_job *j);

/* Last, after sort_report_check_accounting() (engine/sort_report.h). */
int sort_output_commit(sort_job *j);

#endif
