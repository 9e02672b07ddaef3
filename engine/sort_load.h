/* engine/sort_load.h -- the input: opened, checked, read into sorted batches.
 *
 * Contract: sort_load_open_input() opens the input, reads its header on this
 * thread, checks that a regular file looks whole (load/input_check.h), readies the sort order for the
 * header and adds the @PG line.  sort_load_input() starts the spill thread and reads
 * every record into batches, each full one handed to the spill thread
 * (load/spill.h); it refuses a record that names a reference the header
 * lacks, and an input that ends before its real end.
 * On success every batch but the last is a run or held in memory, the last
 * is sorted in j->tail, and the spill thread has stopped.  Each returns 0,
 * or -1 once the failure is reported.
 */
#ifndef SORT_LOAD_H
#define SORT_LOAD_H

#include "engine/sort_job.h"

int sort_load_open_input(sort_job *j);
int sort_load_input(sort_job *j);

/* Puts the input's reading on the pool (-@), once: after the header is read
 * and the input positioned, never before (htslib's threaded reader, stopped
 * on a cut block, would leave a later EOF check or seek waiting forever).
 * sort_load_input() calls it; so does a resumed sort before it reads its
 * stored records again.  0, or -1 once the failure is reported. */
int sort_load_start_threads(sort_job *j);

/* sort_load_open_input(), or 1 with nothing opened when the input holds no byte at
 * all (an empty or closed standard input): a resumed sort whose state holds
 * the whole stream needs none (engine/sort_resume.h). */
int sort_load_open_input_unless_empty(sort_job *j);

/* The next record, as sam_read1() returns it: SAM parsed on this thread
 * goes through load/sam_lines.h, which sees where each line ends. */
int sort_load_read_record(sort_job *j, bam1_t *b);

/* Reads the input's first record ahead, before anything depends on the
 * input being readable (a resumed sort's state is discarded for another
 * input only then, engine/sort_resume.h); sort_load_input() takes it first.  0 also when the
 * input ends after its header (sort_load_input() checks that end); -1 once the read
 * error is reported. */
int sort_load_read_first_record(sort_job *j);

/* sort_load_read_record()'s last result r, b its record: 0 for an end of file that
 * is also the input's real end (load/input_check.h), else -1 once the read error
 * or the early end is reported.  A stream must end with a whole line; a
 * SAM line that does not parse is named by its number.  An early end of a
 * stream that a fatal signal follows is left to the signal's line. */
int sort_load_check_read_end(const sort_job *j, const bam1_t *b, int r);

/* The sort order, readied for j->hdr, and the @PG line: sort_load_open_input() does
 * it; a resumed sort that reads no input does it on the header it kept. */
int sort_load_prepare_header(sort_job *j);

#endif
