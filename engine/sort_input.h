/* engine/sort_input.h -- the input being read: opened, its header read, its records read, its end checked.
 *
 * Contract: a sort reads one input at a time (engine/sort_inputs.h takes
 * them in turn): j->in, named j->in_fn, whose records are read with its own
 * header, j->in_hdr.  Every failure is reported (sort_job_fail()) naming
 * that input and, where it helps, the records read from it before the
 * failure (counted from j->input_first).
 * - sort_input_open() opens the input, reads its header on this thread and
 *   checks that a regular file looks whole (load/input_check.h).  It returns
 *   0; 1, with nothing left open, when the input holds no byte at all (an
 *   empty or closed standard input); or -1 once the failure is reported.
 * - sort_input_start_threads() puts its reading on the pool (-@), once the
 *   header is read and the input positioned, never before (htslib's
 *   threaded reader, stopped on a cut block, would leave a later EOF check
 *   or seek waiting forever).
 * - sort_input_read() reads its next record, as sam_read1() returns it: SAM
 *   parsed on this thread goes through load/sam_lines.h, which sees where
 *   each line ends.
 * - sort_input_check_end() judges sort_input_read()'s last result r (b its
 *   record): 0 for an end of file that is also the input's real end
 *   (load/input_check.h), else -1 once the read error or the early end is
 *   reported.  A stream must end with a whole line; a SAM line that does
 *   not parse is named by its number.  An early end of a stream that a
 *   fatal signal follows is left to the signal's line.  r ==
 *   SORT_INPUT_REPORTED (a failure reported already) gives -1 at once.
 * - sort_input_check_refs() refuses a record naming a reference the header
 *   lacks: 0, or -1 once reported.
 * - sort_input_offset() says how many bytes of a regular file are consumed
 *   (-1 if unknown: CRAM, a stream); sort_input_close() closes the input.
 * - sort_input_hold() puts the open input aside in h, its header read, and
 *   leaves j with none; sort_input_take_up() makes it j's input again, to
 *   be read from where it was; sort_input_drop_held() closes one never
 *   taken up.
 */
#ifndef SORT_INPUT_H
#define SORT_INPUT_H

#include <stdint.h>
#include "engine/sort_job.h"

/* A read result: the failure is reported already. */
#define SORT_INPUT_REPORTED (-100)

int sort_input_open(sort_job *j, const char *fn);
int sort_input_start_threads(sort_job *j);
int sort_input_read(sort_job *j, bam1_t *b);
int sort_input_check_end(const sort_job *j, const bam1_t *b, int r);
int sort_input_check_refs(const sort_job *j, const bam1_t *b);
int64_t sort_input_offset(const sort_job *j);
void sort_input_close(sort_job *j);
void sort_input_hold(sort_job *j, held_input *h);
void sort_input_take_up(sort_job *j, held_input *h);
void sort_input_drop_held(held_input *h);

#endif
