/* engine/sort_inputs.h -- the inputs, read one after another as one.
 *
 * Contract: o->in_fns lists the inputs (engine/rocksort_opts.h).  Their
 * records are sorted as one input, read input after input, each record
 * numbered on from the last (j->records_in): ties keep input order, the
 * inputs' order first, then the records'.  One input at a time is open for
 * reading, as engine/sort_input.h describes it; j->input is its place.
 * - sort_inputs_open() opens every input in turn before anything is
 *   sorted, reads its header and checks that it looks whole: a missing or
 *   damaged input fails the sort before its output exists.  One input's
 *   header is the output's; several inputs' are merged (load/header_merge.h:
 *   the same @SQ lines, @HD from the first, the other lines' union; a
 *   conflict fails the sort).  The first input is left open, to be read;
 *   the others are closed until their turn, but a stream, which cannot be
 *   opened again, is held open.  It then readies the order for the header
 *   and adds the @PG line (sort_inputs_prepare_header()).  Returns 0, or -1
 *   once the failure is reported; with empty_ok, 1 with nothing open when
 *   a sole input holds no byte at all (engine/sort_resume.h).
 * - sort_inputs_read() reads the next record, as sort_input_read() does;
 *   at the end of an input other than the last it checks that end, closes
 *   it and opens the next, whose header must still be the one read at the
 *   start.  -1 only at the end of the last input, whose end the caller
 *   checks (sort_input_check_end()); SORT_INPUT_REPORTED once a failure
 *   between two inputs is reported.
 * - sort_inputs_read_first() reads the first record ahead, before anything
 *   depends on the inputs being readable (a resumed sort's state is
 *   discarded for other inputs only then, engine/sort_resume.h); the load
 *   takes it first.  0 also when the inputs end without a record (the load
 *   checks that end); -1 once the read error is reported.
 * - sort_inputs_goto() makes input k the one read next, its first record
 *   numbered `first`, for a resumed sort whose state holds the inputs
 *   before it whole: those are passed over unread.  0, or -1 reported.
 * - sort_inputs_consumed() and sort_inputs_total(): the bytes of the input
 *   files consumed so far (-1 if unknown: CRAM, a stream) and their total
 *   (0 when an input is a stream), for the size estimate and the progress.
 * - sort_inputs_records(): records read from input i, for -v.
 * - sort_inputs_close() closes every input and frees the list.
 */
#ifndef SORT_INPUTS_H
#define SORT_INPUTS_H

#include <stdint.h>
#include "engine/sort_job.h"

int sort_inputs_open(sort_job *j, int empty_ok);
int sort_inputs_read(sort_job *j, bam1_t *b);
int sort_inputs_read_first(sort_job *j);
int sort_inputs_goto(sort_job *j, int k, uint64_t first);
int64_t sort_inputs_consumed(const sort_job *j);
uint64_t sort_inputs_total(const sort_job *j);
uint64_t sort_inputs_records(const sort_job *j, int i);
void sort_inputs_close(sort_job *j);

/* The sort order, readied for j->hdr, and the @PG line: sort_inputs_open()
 * does it; a resumed sort that reads no input does it on the header it kept. */
int sort_inputs_prepare_header(sort_job *j);

#endif
