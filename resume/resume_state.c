/* resume/resume_state.c -- see resume/resume_state.h. */
#include "resume/resume_state.h"

/* The layout is the state's: STORE_STATE_VERSION (store/store_types.h) covers it. */
void resume_state_note_encode(const resume_note *n, byte_writer *w)
{
    bw_u64(w, n->input);
    bw_u64(w, n->input_first);
    bw_u64(w, n->kind);
    bw_u64(w, n->pos);
    bw_u64(w, n->records);
    bw_u64(w, n->bytes);
    bw_u64(w, n->digest);
    bw_u64(w, n->digested);
    bw_u64(w, n->stream_hash);
    bw_u64(w, n->placed);
    bw_u64(w, n->micros);
    bw_u64(w, n->ctime);
    bw_u64(w, n->prefix_bytes);
    bw_u64(w, n->prefix_crc);
    bw_u64(w, n->done_ctimes);
    bw_u64(w, n->done_crcs);
}

int resume_state_note_decode(const uint8_t *p, size_t len, resume_note *n)
{
    byte_reader r = br_of(p, len);
    n->input = br_u64(&r);
    n->input_first = br_u64(&r);
    n->kind = br_u64(&r);
    n->pos = br_u64(&r);
    n->records = br_u64(&r);
    n->bytes = br_u64(&r);
    n->digest = br_u64(&r);
    n->digested = br_u64(&r);
    n->stream_hash = br_u64(&r);
    n->placed = br_u64(&r);
    n->micros = br_u64(&r);
    n->ctime = br_u64(&r);
    n->prefix_bytes = br_u64(&r);
    n->prefix_crc = br_u64(&r);
    n->done_ctimes = br_u64(&r);
    n->done_crcs = br_u64(&r);
    if (r.bad || r.at != len) return -1;
    return n->kind >= POS_BGZF && n->kind <= POS_RECORDS && n->input_first <= n->records ? 0 : -1;
}
