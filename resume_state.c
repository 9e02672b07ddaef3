/* resume_state.c -- see resume_state.h. */
#include "resume_state.h"

#define NOTE_VERSION 1

void note_encode(const resume_note *n, byte_writer *w)
{
    bw_u64(w, NOTE_VERSION);
    bw_u64(w, n->kind);
    bw_u64(w, n->pos);
    bw_u64(w, n->records);
    bw_u64(w, n->bytes);
    bw_u64(w, n->digest);
    bw_u64(w, n->stream_hash);
    bw_u64(w, n->placed);
    bw_u64(w, n->micros);
}

int note_decode(const uint8_t *p, size_t len, resume_note *n)
{
    byte_reader r = br_of(p, len);
    uint64_t version = br_u64(&r);
    n->kind = br_u64(&r);
    n->pos = br_u64(&r);
    n->records = br_u64(&r);
    n->bytes = br_u64(&r);
    n->digest = br_u64(&r);
    n->stream_hash = br_u64(&r);
    n->placed = br_u64(&r);
    n->micros = br_u64(&r);
    if (r.bad || version != NOTE_VERSION || r.at != len) return -1;
    return n->kind >= POS_BGZF && n->kind <= POS_RECORDS ? 0 : -1;
}
