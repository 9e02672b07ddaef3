/* engine/sort_load.h -- the inputs read into sorted batches.
 *
 * Contract: sort_load_input() starts the spill thread and reads every record
 * of the inputs (engine/sort_inputs.h, opened already), in turn, into
 * batches, each full one handed to the spill thread (load/spill.h); it
 * refuses a record that names a reference the header lacks, and an input
 * that ends before its real end.  A resumable sort journals a note with
 * each run (engine/resume_progress.h) and stores its last batch too.
 * On success every batch but the last is a run or held in memory, the last
 * is sorted in j->tail, and the spill thread has stopped.  Returns 0, or -1
 * once the failure is reported.
 */
#ifndef SORT_LOAD_H
#define SORT_LOAD_H

#include "engine/sort_job.h"

int sort_load_input(sort_job *j);

#endif
