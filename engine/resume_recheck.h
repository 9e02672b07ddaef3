/* engine/resume_recheck.h -- a resumed file whose ctime changed: what the state holds of it checked again.
 *
 * Contract: the identity (resume/resume_identity.h) sees a file's path,
 * inode, size, mtime and sampled blocks, not an edit that keeps them all:
 * one byte changed in place with the mtime put back (`touch -r`), or
 * `cp -p` over it.  Any such edit changes the ctime, which no one can set
 * back; so do a chmod, a chown, a new link, a rename away and back.  So
 * each note (resume/resume_state.h) holds the file's ctime and a CRC-32 of
 * its first bytes, up to where the records before the note's position end
 * (a plain SAM's byte offset; a BGZF file's block offset and that block,
 * whole), and a rerun that finds the ctime changed reads those bytes again:
 * the same CRC resumes (only the status changed), another one, or a file
 * read by record counts (CRAM, plain gzip), discards the state with a line
 * saying why, and the sort starts afresh.  An unchanged ctime costs
 * nothing on a rerun; the load reads each batch's bytes a second time, from
 * the page cache, for the CRC (bench/RESULTS.md).  Of several inputs, the
 * note's prefix is the one being read; those read whole before it are in
 * the note as a hash of their ctimes and one of their whole bytes' CRCs: a
 * rerun that finds one ctime changed reads them all again.
 * - resume_recheck_open(), before an input is opened to be read: the file
 *   opened again for the CRC (a regular file only: nothing for a stream),
 *   and its ctime and size.
 * - resume_recheck_input_done(), at the end of an input that is not the
 *   last: its CRC taken to its end and folded into those read whole; closes it.
 * - resume_recheck_state(), before the store opens, for a sort of files:
 *   the check above, against DIR's state if it has this sort's identity;
 *   sets j->resume.stale (the store then discards the state).  0, or -1 once
 *   a failure to read a file is reported (DIR then untouched).
 * - resume_recheck_take_back(): the CRCs go on from the last note's, once
 *   the input it was in is open.
 * - resume_recheck_note(): a note's ctime and prefix, the CRC extended over
 *   the bytes read since the last note.  A read that fails leaves the
 *   prefix out of every later note (a rerun then checks nothing).
 * - resume_recheck_close(): closes the file.
 */
#ifndef RESUME_RECHECK_H
#define RESUME_RECHECK_H

#include "engine/sort_job.h"

void resume_recheck_open(sort_job *j, const char *fn);
void resume_recheck_input_done(sort_job *j);
int resume_recheck_state(sort_job *j);
void resume_recheck_take_back(sort_job *j, const resume_note *n);
void resume_recheck_note(sort_job *j, resume_note *n);
void resume_recheck_close(sort_job *j);

#endif
