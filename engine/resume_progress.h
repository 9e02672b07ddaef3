/* engine/resume_progress.h -- what the load of a resumable sort records as it goes.
 *
 * Contract: for a sort with --resume (engine/sort_resume.h), the load calls
 * resume_progress_position() before reading each record: the position in the
 * input being read, in the kind j->resume.kind says (resume/resume_state.h),
 * which resume_progress_kind() chooses as each input is opened: a BGZF
 * file's virtual offsets, a plain SAM file's byte offsets, else records
 * counted from the input's first (CRAM, gzip, any stream).  When a batch is full,
 * resume_progress_note_now() writes the note its run carries: that input and position, and
 * the counts, checksums and loading time of every record before it, and
 * for a file its ctime and prefix (engine/resume_recheck.h).  A
 * stream's records are hashed as they are read (resume_progress_stream_hash(), from
 * each record's digest, codec/record.h), so that a rerun can tell the same
 * stream again.  resume_progress_input_complete()
 * journals, after the last run, that the whole input is stored; 0, or -1
 * once the failure is reported.
 */
#ifndef RESUME_PROGRESS_H
#define RESUME_PROGRESS_H

#include "engine/sort_job.h"

position_kind resume_progress_kind(const sort_job *j);
uint64_t resume_progress_position(const sort_job *j);
void resume_progress_note_now(sort_job *j, byte_writer *w);
uint64_t resume_progress_stream_hash(uint64_t hash, uint64_t record_digest);
int resume_progress_input_complete(sort_job *j);

#endif
