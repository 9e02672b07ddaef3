/* sort_resume.h -- a sort that picks up where a killed run of it stopped (--resume DIR).
 *
 * Contract: with o->resume_dir the store keeps its runs in DIR, journaled
 * (rocks_store.h), and each run carries a note of how far the input had
 * been read when its batch was full (resume_state.h).  open_resumable() is
 * the open phase then (sort_pipeline.c).  It opens the store under this
 * sort's identity: the input (a regular file's path, size, modification
 * time and header; a stream only as such), every option that changes the
 * records or their order, and the output format.  It takes back what an
 * earlier, interrupted run of the same sort stored, and prints one line
 * saying so, or why a state in DIR was discarded.  A file is then moved to
 * the record after the last stored one (seeked, or read past for CRAM).  A
 * stream is read again from its start, its stored records read past and
 * checked against their hash: a different stream is refused, and the state
 * kept.  When the state holds the whole input, no input is read at all:
 * the header comes from the state.  The load then journals a note with
 * every run, stores its last batch as well and marks the input complete
 * (resume_progress.h).  A signal keeps DIR and says how far the sort got.
 * open_resumable() returns 0, or -1 once the failure is reported.
 */
#ifndef SORT_RESUME_H
#define SORT_RESUME_H

#include "sort_job.h"

int open_resumable(sort_job *j);

/* -v's line: what was taken back, and the time that saved. */
void resume_report(const sort_job *j);

#endif
