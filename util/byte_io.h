/* util/byte_io.h -- a record's fields written into, and read back out of, a byte buffer.
 *
 * Contract: a byte_writer appends unsigned integers (8 bytes, little-endian,
 * or varints), raw bytes and length-prefixed byte strings to a growing malloc'd buffer; after any
 * allocation failure it stays failed (w->failed) and appends nothing.  A
 * byte_reader takes them back in the same order and never reads past its
 * end: a read beyond it sets r->bad and yields zeros.  The layout is this
 * process's own (the resume journal, read back by the same program), so
 * it needs no version of its own beyond what its users write.
 */
#ifndef BYTE_IO_H
#define BYTE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/hts_endian.h>
#include "util/grow_array.h"

typedef struct {
    uint8_t *p;
    size_t n, cap;
    int failed;
} byte_writer;

typedef struct {
    const uint8_t *p;
    size_t n, at;
    int bad;
} byte_reader;

static inline void bw_bytes_raw(byte_writer *w, const void *src, size_t len)
{
    if (w->failed) return;
    if (grow_array((void **)&w->p, &w->cap, w->n + len, 1) < 0) {
        w->failed = 1;
        return;
    }
    if (len) memcpy(w->p + w->n, src, len);
    w->n += len;
}

static inline void bw_u64(byte_writer *w, uint64_t v)
{
    uint8_t b[8];
    u64_to_le(v, b);
    bw_bytes_raw(w, b, 8);
}

/* An unsigned LEB128 varint: 7 bits a byte, low bits first. */
static inline void bw_varint(byte_writer *w, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    do {
        b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    bw_bytes_raw(w, b, n);
}

static inline void bw_bytes(byte_writer *w, const void *src, size_t len)
{
    bw_u64(w, len);
    bw_bytes_raw(w, src, len);
}

static inline void bw_free(byte_writer *w)
{
    free(w->p);
    memset(w, 0, sizeof *w);
}

static inline byte_reader br_of(const uint8_t *p, size_t n)
{
    return (byte_reader){ p, n, 0, 0 };
}

static inline uint64_t br_u64(byte_reader *r)
{
    if (r->bad || r->n - r->at < 8) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = le_to_u64(r->p + r->at);
    r->at += 8;
    return v;
}

/* A byte string's start, pointing into the buffer; *len its length. */
static inline const uint8_t *br_bytes(byte_reader *r, size_t *len)
{
    uint64_t n = br_u64(r);
    if (r->bad || n > r->n - r->at) {
        r->bad = 1;
        *len = 0;
        return (const uint8_t *)"";
    }
    const uint8_t *p = r->p + r->at;
    r->at += (size_t)n;
    *len = (size_t)n;
    return p;
}

#endif
