/* engine/resume_progress.c -- see engine/resume_progress.h. */
#include <htslib/bgzf.h>
#include <htslib/hfile.h>
#include "engine/resume_progress.h"
#include "engine/resume_recheck.h"
#include "util/clock_util.h"
#include "util/mix64.h"

uint64_t resume_progress_stream_hash(uint64_t hash, uint64_t digest)
{
    return mix64(hash ^ digest);
}

position_kind resume_progress_kind(const sort_job *j)
{
    if (!j->in_file_size) return POS_RECORDS;
    if (j->in->format.compression == bgzf) return POS_BGZF;
    if (j->in->format.format == sam && j->in->format.compression == no_compression)
        return POS_BYTES;
    return POS_RECORDS;
}

uint64_t resume_progress_position(const sort_job *j)
{
    switch (j->resume.kind) {
    case POS_BGZF: return (uint64_t)bgzf_tell(j->in->fp.bgzf);
    case POS_BYTES: return (uint64_t)htell(j->in->fp.hfile);
    default: return j->records_in - j->input_first;
    }
}

void resume_progress_note_now(sort_job *j, byte_writer *w)
{
    resume_note n = {
        .input = (uint64_t)j->input, .input_first = j->input_first, .kind = j->resume.kind, .pos = j->resume.pos_before, .records = j->records_in,
        .bytes = j->bytes_in, .digest = j->digest_in, .digested = (uint64_t)j->resume.digested,
        .stream_hash = j->resume.stream_hash,
        .placed = (uint64_t)sort_key_saw_placed(&j->sort),
        .micros = (uint64_t)(1e6 * (j->resume.seconds_before + now_seconds()
                                    - j->resume.load_started)),
    };
    resume_recheck_note(j, &n);
    resume_state_note_encode(&n, w);
}

int resume_progress_input_complete(sort_job *j)
{
    byte_writer w = { 0 };
    errmsg err;
    j->resume.pos_before = resume_progress_position(j);
    resume_progress_note_now(j, &w);
    int r = w.failed ? errmsg_set(&err, "out of memory")
          : store_state_complete(j->store, w.p, w.n, &err);
    bw_free(&w);
    return r < 0 ? sort_job_fail("%s", err.msg) : 0;
}

