/* engine/sort_resume.h -- a sort that picks up where a killed run of it stopped (--resume DIR).
 *
 * Contract: with o->resume_dir the store keeps its runs in DIR, journaled
 * (store/store_state.h), and each run carries a note of how far the input had
 * been read when its batch was full (resume/resume_state.h).  sort_resume_open() is
 * the open phase then (engine/sort_pipeline.c).  It opens the store under this
 * sort's identity (resume/resume_identity.h), takes back what an earlier,
 * interrupted run of the same sort stored, and prints one line saying so,
 * or why a state in DIR was discarded.  The input, a file or a stream, is
 * opened and its header read first, and before a state of another input
 * is discarded its first record too: one that cannot be read leaves DIR
 * untouched.  Several inputs must all be files (refused otherwise, DIR
 * untouched); the identity covers each, in order.
 * - A file is moved to the record after the last stored one: seeked, or
 *   read past (CRAM; and with --verify when the state's digest does not
 *   cover every stored record, so that --verify checks them as read now).
 *   Of several files, those the state holds whole are passed over unread
 *   (with --verify and no digest, all are read again from the first), and
 *   the one the last note is in is moved to its record.
 * - A stream is read again from its start, its header and records checked
 *   against the state.  When the state holds the whole stream, a stream
 *   given is read to its end (an upstream never gets SIGPIPE) and must be
 *   the stored stream, before any output is written.  A stream that
 *   differs is refused.
 * - No input (an empty or closed standard input, a terminal) finishes a
 *   state of the whole input, a file's too, from DIR alone; any other
 *   state is kept, with a line naming the input to rerun with, or as it
 *   was if it is another sort's.
 * - The output's and the index's hidden names are journaled, and those an
 *   earlier run left behind (SIGKILL) are removed, whatever -o is now.
 * The load then journals a note with every run, stores its last batch as
 * well and marks the input complete (engine/resume_progress.h).
 * sort_resume_open() returns 0, or -1 once the failure is reported.
 * What becomes of DIR when the sort ends, and the lines that say so, are
 * engine/resume_fate.h's.
 */
#ifndef SORT_RESUME_H
#define SORT_RESUME_H

#include "engine/sort_job.h"

int sort_resume_open(sort_job *j);

#endif
