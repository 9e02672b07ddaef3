/* engine/sort_setup.h -- what the command line asks of the engine before a sort:
 * the process-wide set-up, and the checks made before any input is read.
 *
 * Contract: sort_setup_std_fds(), first thing, keeps descriptors 0, 1 and 2
 * open (util/std_fds.h) and returns the mask of those that were closed
 * (bit fd).  sort_setup_check_temp() refuses the temp directories (-T) and
 * a --resume DIR that cannot hold a state; sort_setup_check_outputs() an
 * output, or its index, that can never be written (output/output_target.h),
 * so that a sort is refused now, not after hours of sorting.  Each prints
 * its one-line cause and returns -1, else 0; neither creates anything.
 * sort_setup_process(), once and before sort_pipeline_run() starts any
 * thread, makes an exception RocksDB throws end the run as a signal does,
 * with the temporary paths removed (disk/temp_env.h, util/cleanup.h), and
 * gives each thread a libdeflate state to reuse (util/deflate_cache.h).
 */
#ifndef SORT_SETUP_H
#define SORT_SETUP_H

#include "engine/rocksort_opts.h"

int sort_setup_std_fds(void);
int sort_setup_check_temp(const rocksort_opts *o);
int sort_setup_check_outputs(const rocksort_opts *o);
void sort_setup_process(void);

#endif
