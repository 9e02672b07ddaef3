/* codec/group_codec.c -- see codec/group_codec.h.
 *
 * Blob in columns: "RSG1", the pair count (u32 LE), a flags byte (FLAG_KEY_PLANES),
 * then per column its method (u8), its decoded length and its stored length
 * (u32 LE each) and the stored bytes.  Columns follow the order of enum
 * column.  Blobs live only as long as the sort's temp store, so the layout
 * may change freely between versions.  Plain blobs: codec/group_plain.h.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>
#include <htslib/hts_endian.h>
#include <htslib/sam.h>
#include "codec/group_codec.h"
#include "codec/group_plain.h"
#include "util/grow_array.h"

#define CORE_BYTES sizeof(bam1_core_t)
#define ZSTD_LEVEL 1
#define MAGIC "RSG1"

enum method { METHOD_RAW, METHOD_ZSTD, METHOD_RANS };

#ifdef ROCKSORT_NO_RANS
/* A shared system htslib does not export htscodecs: qualities take zstd,
 * and these stand-ins, never called, leave their arguments unused. */
#define QUAL_METHOD METHOD_ZSTD
#define rans_compress_bound_4x16(size, order) 0
#define rans_compress_to_4x16(in, in_size, out, out_size, order) NULL
#define rans_uncompress_to_4x16(in, in_size, out, out_size) NULL
#define RANS_ORDER_STRIPE 0
#define RANS_ORDER_NOSZ 0
#define var_get_u32(cp, endp, i) 0
#else
/* htscodecs' rANS (CRAM 3.1's entropy coder), compiled into the bundled
 * htslib: its header comes from the htscodecs directory of that source
 * tree (the Makefile's -Ihtslib/htscodecs), as htslib does not install it. */
#include "htscodecs/rANS_static4x16.h"
#include "htscodecs/varint.h"
#define QUAL_METHOD METHOD_RANS
/* Order 1 (each quality under a model of the one before), 32-way
 * interleaved so that the SIMD paths apply: faster than 4-way, as small.
 * The flag is htscodecs' own, from its header. */
#define QUAL_RANS_ORDER (1 | RANS_ORDER_X32)
#endif

enum column { COL_KEY_LEN, COL_KEY, COL_CORE, COL_AUX_LEN, COL_NAME, COL_CIGAR,
              COL_SEQ, COL_QUAL, COL_AUX, N_COLUMNS };
#define HEADER_BYTES 9
/* Every key has the same length and the key column is stored byte-plane by
 * byte-plane, as the cores are. */
#define FLAG_KEY_PLANES 1
#define POS_AT offsetof(bam1_core_t, pos)
#define MPOS_AT offsetof(bam1_core_t, mpos)

typedef struct {
    uint8_t *p;
    size_t n, cap;
} byte_buf;

struct group_encoder {
    group_layout layout;
    group_plain_encoder plain;          /* GROUP_PLAIN's state; the rest is GROUP_COLUMNS' */
    byte_buf col[N_COLUMNS];
    byte_buf blob, core_planes, key_planes;
    size_t count, raw_bytes, key_len;   /* key_len: SIZE_MAX once lengths differ */
    size_t last_key_at, last_key_len;   /* the last key added, in col[COL_KEY] */
    ZSTD_CCtx *zstd;
};

static int buf_reserve(byte_buf *b, size_t extra)
{
    return grow_array((void **)&b->p, &b->cap, b->n + extra, 1);
}

static int buf_put(byte_buf *b, const void *src, size_t n)
{
    if (buf_reserve(b, n) < 0) return -1;
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
    return 0;
}

static int buf_varint(byte_buf *b, uint64_t v)
{
    if (buf_reserve(b, 10) < 0) return -1;
    do {
        b->p[b->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return 0;
}

group_encoder *group_codec_encoder_create(group_layout layout)
{
    group_encoder *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->layout = layout;
    if (layout == GROUP_COLUMNS && !(e->zstd = ZSTD_createCCtx())) {
        free(e);
        return NULL;
    }
    return e;
}

void group_codec_encoder_destroy(group_encoder *e)
{
    if (!e) return;
    for (int i = 0; i < N_COLUMNS; i++) free(e->col[i].p);
    free(e->blob.p);
    free(e->core_planes.p);
    free(e->key_planes.p);
    group_plain_free(&e->plain);
    ZSTD_freeCCtx(e->zstd);
    free(e);
}

size_t group_codec_count(const group_encoder *e) { return e->count; }
size_t group_codec_raw_bytes(const group_encoder *e) { return e->raw_bytes; }

const uint8_t *group_codec_first_key(const group_encoder *e, size_t *klen)
{
    if (e->layout == GROUP_PLAIN) return group_plain_first_key(&e->plain, klen);
    uint64_t v = 0;
    size_t i = 0;
    int shift = 0;
    do v |= (uint64_t)(e->col[COL_KEY_LEN].p[i] & 0x7f) << shift, shift += 7;
    while (e->col[COL_KEY_LEN].p[i++] & 0x80);
    *klen = (size_t)v;
    return e->col[COL_KEY].p;
}

const uint8_t *group_codec_last_key(const group_encoder *e, size_t *klen)
{
    if (e->layout == GROUP_PLAIN) return group_plain_last_key(&e->plain, klen);
    *klen = e->last_key_len;
    return e->col[COL_KEY].p + e->last_key_at;
}

int group_codec_add(group_encoder *e, const uint8_t *key, size_t klen,
                    const uint8_t *val, size_t vlen)
{
    bam1_core_t c;
    if (e->layout == GROUP_PLAIN) {
        if (group_plain_add(&e->plain, key, klen, val, vlen) < 0) return -1;
        e->count++;
        e->raw_bytes += klen + vlen;
        return 0;
    }
    if (vlen < CORE_BYTES) return -1;
    memcpy(&c, val, CORE_BYTES);
    const uint8_t *d = val + CORE_BYTES;
    size_t l_data = vlen - CORE_BYTES;
    size_t cig = 4 * (size_t)c.n_cigar, seq = c.l_qseq > 0 ? ((size_t)c.l_qseq + 1) / 2 : 0;
    size_t qual = c.l_qseq > 0 ? (size_t)c.l_qseq : 0;
    if (c.l_qseq < 0 || (size_t)c.l_qname + cig + seq + qual > l_data) return -1;
    size_t aux = l_data - c.l_qname - cig - seq - qual;
    size_t key_at = e->col[COL_KEY].n;
    if (buf_varint(&e->col[COL_KEY_LEN], klen) < 0 || buf_put(&e->col[COL_KEY], key, klen) < 0 ||
        buf_put(&e->col[COL_CORE], val, CORE_BYTES) < 0 || buf_varint(&e->col[COL_AUX_LEN], aux) < 0 ||
        buf_put(&e->col[COL_NAME], d, c.l_qname) < 0 ||
        buf_put(&e->col[COL_CIGAR], d + c.l_qname, cig) < 0 ||
        buf_put(&e->col[COL_SEQ], d + c.l_qname + cig, seq) < 0 ||
        buf_put(&e->col[COL_QUAL], d + c.l_qname + cig + seq, qual) < 0 ||
        buf_put(&e->col[COL_AUX], d + l_data - aux, aux) < 0)
        return -1;
    e->key_len = !e->count ? klen : e->key_len == klen ? klen : SIZE_MAX;
    e->last_key_at = key_at;
    e->last_key_len = klen;
    e->count++;
    e->raw_bytes += klen + vlen;
    return 0;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void set_u64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* Byte j of every item side by side: a field's high bytes, mostly alike,
 * become long runs. */
static int to_planes(const byte_buf *src, size_t n, size_t width, byte_buf *dst)
{
    dst->n = 0;
    if (buf_reserve(dst, src->n) < 0) return -1;
    for (size_t j = 0; j < width; j++)
        for (size_t i = 0; i < n; i++)
            dst->p[j * n + i] = src->p[i * width + j];
    dst->n = src->n;
    return 0;
}

/* Positions as steps from the previous record's, and the mate's position
 * from the record's: small numbers in a sorted run.  Wrapping arithmetic,
 * so any value comes back exactly. */
static void delta_positions(uint8_t *cores, size_t n)
{
    for (size_t i = n; i-- > 0;) {
        uint8_t *c = cores + i * CORE_BYTES;
        uint64_t pos = get_u64(c + POS_AT);
        set_u64(c + MPOS_AT, get_u64(c + MPOS_AT) - pos);
        if (i) set_u64(c + POS_AT, pos - get_u64(c - CORE_BYTES + POS_AT));
    }
}

static int encode_column(group_encoder *e, const byte_buf *col, int method)
{
    if (col->n > UINT32_MAX / 2) return -1;
    size_t bound = method == METHOD_RANS ? rans_compress_bound_4x16((unsigned)col->n, QUAL_RANS_ORDER)
                                         : ZSTD_compressBound(col->n);
    if (buf_reserve(&e->blob, 9 + bound) < 0) return -1;
    uint8_t *hdr = e->blob.p + e->blob.n, *out = hdr + 9;
    size_t stored = 0;
    if (col->n && method == METHOD_RANS) {
        unsigned int out_size = (unsigned)bound;
        if (!rans_compress_to_4x16(col->p, (unsigned)col->n, out, &out_size, QUAL_RANS_ORDER)) return -1;
        stored = out_size;
    } else if (col->n) {
        stored = ZSTD_compressCCtx(e->zstd, out, bound, col->p, col->n, ZSTD_LEVEL);
        if (ZSTD_isError(stored)) return -1;
    }
    if (!col->n || stored >= col->n) {   /* incompressible: keep it as it is */
        method = METHOD_RAW;
        stored = col->n;
        if (stored) memcpy(out, col->p, stored);
    }
    hdr[0] = (uint8_t)method;
    u32_to_le((uint32_t)col->n, hdr + 1);
    u32_to_le((uint32_t)stored, hdr + 5);
    e->blob.n += 9 + stored;
    return 0;
}

int group_codec_encode(group_encoder *e, const uint8_t **blob, size_t *len)
{
    if (e->layout == GROUP_PLAIN) {
        e->count = e->raw_bytes = 0;
        return group_plain_encode(&e->plain, blob, len);
    }
    e->blob.n = 0;
    int key_planes = e->key_len != SIZE_MAX;
    delta_positions(e->col[COL_CORE].p, e->count);
    if (e->count > UINT32_MAX || buf_reserve(&e->blob, HEADER_BYTES) < 0 ||
        to_planes(&e->col[COL_CORE], e->count, CORE_BYTES, &e->core_planes) < 0 ||
        (key_planes && to_planes(&e->col[COL_KEY], e->count, e->key_len, &e->key_planes) < 0))
        return -1;
    memcpy(e->blob.p, MAGIC, 4);
    u32_to_le((uint32_t)e->count, e->blob.p + 4);
    e->blob.p[8] = key_planes ? FLAG_KEY_PLANES : 0;
    e->blob.n = HEADER_BYTES;
    for (int i = 0; i < N_COLUMNS; i++) {
        const byte_buf *col = i == COL_CORE ? &e->core_planes
                            : i == COL_KEY && key_planes ? &e->key_planes : &e->col[i];
        if (encode_column(e, col, i == COL_QUAL ? QUAL_METHOD : METHOD_ZSTD) < 0) return -1;
    }
    for (int i = 0; i < N_COLUMNS; i++) e->col[i].n = 0;
    e->count = e->raw_bytes = 0;
    *blob = e->blob.p;
    *len = e->blob.n;
    return 0;
}

/* ---- decoding ---- */

typedef struct {
    const uint8_t *p;
    size_t n, at;
} cursor;

static int take(cursor *c, size_t n, const uint8_t **out)
{
    if (n > c->n - c->at) return -1;
    *out = c->p + c->at;
    c->at += n;
    return 0;
}

static int take_varint(cursor *c, size_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->at >= c->n) return -1;
        uint8_t b = c->p[c->at++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = (size_t)x;
            return 0;
        }
    }
    return -1;
}

static int grow(void **p, size_t *cap, size_t need, size_t unit)
{
    if (need <= *cap) return 0;
    void *q = realloc(*p, need * unit);
    if (!q) return GROUP_DECODE_NO_MEMORY;
    *p = q;
    *cap = need;
    return 0;
}

/* One column's stored bytes into out (raw bytes long).  A codec that fails
 * for want of memory says so: zstd by its error code, htscodecs' rANS only by
 * malloc's errno, as it returns NULL for both causes. */
static int decode_column(int method, const uint8_t *stored, size_t n_stored, uint8_t *out,
                         size_t raw, group_scratch *s)
{
    if (method == METHOD_RAW) {
        if (raw) memcpy(out, stored, raw);
    } else if (method == METHOD_ZSTD) {
        /* One context per scratch: ZSTD_decompress() makes and frees one per
         * call, which costs more than decoding a small column. */
        if (!s->zstd && !(s->zstd = ZSTD_createDCtx())) return GROUP_DECODE_NO_MEMORY;
        size_t got = ZSTD_decompressDCtx(s->zstd, out, raw, stored, n_stored);
        if (ZSTD_isError(got))
            return ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation ? GROUP_DECODE_NO_MEMORY
                                                                          : GROUP_DECODE_MALFORMED;
        if (got != raw) return GROUP_DECODE_MALFORMED;
    } else if (method == METHOD_RANS) {
        unsigned int got = (unsigned)raw;
        errno = 0;
        if (!rans_uncompress_to_4x16((unsigned char *)stored, (unsigned)n_stored, out, &got))
            return errno == ENOMEM ? GROUP_DECODE_NO_MEMORY : GROUP_DECODE_MALFORMED;
        if (got != raw) return GROUP_DECODE_MALFORMED;
    } else {
        return GROUP_DECODE_MALFORMED;
    }
    return 0;
}

/* Whether a compressed column's own frame states the size its header in
 * the blob gives.  Checked before the columns' buffer is sized from those
 * headers: a damaged size must read as damage, not as memory running out
 * for a buffer of gigabytes.  zstd's frame states it (ZSTD_compressCCtx()
 * writes it); rANS 4x16 as its first varint after the order byte, which
 * this encoder never sets to striped or size-less. */
static int column_size_agrees(int method, const uint8_t *stored, size_t n_stored, size_t raw)
{
    if (method == METHOD_RAW) return n_stored == raw;
    if (method == METHOD_ZSTD) return ZSTD_getFrameContentSize(stored, n_stored) == raw;
    if (method != METHOD_RANS || n_stored < 2 || stored[0] & (RANS_ORDER_STRIPE | RANS_ORDER_NOSZ))
        return 0;
    uint32_t size = 0;
    int used = var_get_u32((uint8_t *)stored + 1, stored + n_stored, &size);
    return used > 0 && size == raw;
}

/* Decodes every column into s; col[i] then views column i. */
static int decode_columns(const uint8_t *blob, size_t len, group_scratch *s, cursor col[N_COLUMNS])
{
    cursor in = { blob, len, HEADER_BYTES };
    const uint8_t *hdr[N_COLUMNS], *stored[N_COLUMNS];
    size_t total = 0;
    for (int i = 0; i < N_COLUMNS; i++) {
        if (take(&in, 9, &hdr[i]) < 0 || take(&in, le_to_u32(hdr[i] + 5), &stored[i]) < 0)
            return GROUP_DECODE_MALFORMED;
        if (!column_size_agrees(hdr[i][0], stored[i], le_to_u32(hdr[i] + 5), le_to_u32(hdr[i] + 1)))
            return GROUP_DECODE_MALFORMED;
        total += le_to_u32(hdr[i] + 1);
    }
    if (in.at != len) return GROUP_DECODE_MALFORMED;
    if (grow((void **)&s->p, &s->cap, total, 1) < 0) return GROUP_DECODE_NO_MEMORY;
    size_t off = 0;
    for (int i = 0; i < N_COLUMNS; i++) {
        size_t raw = le_to_u32(hdr[i] + 1), n_stored = le_to_u32(hdr[i] + 5);
        int r = decode_column(hdr[i][0], stored[i], n_stored, s->p + off, raw, s);
        if (r < 0) return r;
        col[i] = (cursor){ s->p + off, raw, 0 };
        off += raw;
    }
    return 0;
}

/* What rebuilding record i needs besides the columns' cursors. */
typedef struct {
    size_t n, key_len;              /* key_len: 0 unless keys are planes */
    const uint8_t *core_planes, *key_planes;
    uint64_t prev_pos;
} rebuild_state;

static void from_planes(const uint8_t *planes, size_t n, size_t i, size_t width, uint8_t *out)
{
    for (size_t j = 0; j < width; j++) out[j] = planes[j * n + i];
}

/* The core of record i, with delta_positions() undone. */
static void rebuild_core(rebuild_state *s, size_t i, uint8_t *core, bam1_core_t *c)
{
    from_planes(s->core_planes, s->n, i, CORE_BYTES, core);
    uint64_t pos = get_u64(core + POS_AT) + s->prev_pos;
    set_u64(core + POS_AT, pos);
    set_u64(core + MPOS_AT, get_u64(core + MPOS_AT) + pos);
    s->prev_pos = pos;
    memcpy(c, core, CORE_BYTES);
}

/* Lays record i out as key then value, from the columns' cursors. */
static int rebuild_record(group_records *r, size_t i, rebuild_state *s, cursor col[N_COLUMNS], size_t *at)
{
    size_t klen, aux;
    const uint8_t *key = NULL, *name, *cigar, *bases, *qual, *auxp;
    if (take_varint(&col[COL_KEY_LEN], &klen) < 0 || take_varint(&col[COL_AUX_LEN], &aux) < 0 ||
        (s->key_len ? klen != s->key_len : take(&col[COL_KEY], klen, &key) < 0) ||
        *at + klen + CORE_BYTES > r->bytes_cap)
        return -1;
    uint8_t *out = r->bytes + *at, *core = out + klen;
    if (key) memcpy(out, key, klen);
    else from_planes(s->key_planes, s->n, i, klen, out);
    bam1_core_t c;
    rebuild_core(s, i, core, &c);
    size_t cig = 4 * (size_t)c.n_cigar, seq = c.l_qseq > 0 ? ((size_t)c.l_qseq + 1) / 2 : 0;
    size_t nq = c.l_qseq > 0 ? (size_t)c.l_qseq : 0;
    size_t vlen = CORE_BYTES + c.l_qname + cig + seq + nq + aux;
    if (c.l_qseq < 0 || *at + klen + vlen > r->bytes_cap ||
        take(&col[COL_NAME], c.l_qname, &name) < 0 || take(&col[COL_CIGAR], cig, &cigar) < 0 ||
        take(&col[COL_SEQ], seq, &bases) < 0 || take(&col[COL_QUAL], nq, &qual) < 0 ||
        take(&col[COL_AUX], aux, &auxp) < 0)
        return -1;
    uint8_t *d = core + CORE_BYTES;
    memcpy(d, name, c.l_qname);
    d += c.l_qname;
    if (cig) memcpy(d, cigar, cig);
    d += cig;
    if (seq) memcpy(d, bases, seq);
    d += seq;
    if (nq) memcpy(d, qual, nq);
    if (aux) memcpy(d + nq, auxp, aux);
    r->off[2 * i] = *at;
    r->off[2 * i + 1] = *at + klen;
    *at += klen + vlen;
    return 0;
}

/* Sized exactly: the readers' memory counts a decoded group at its size. */
static int decode_plain(const uint8_t *blob, size_t len, group_records *r)
{
    size_t n, data_len;
    if (group_plain_sizes(blob, len, &n, &data_len) < 0) return GROUP_DECODE_MALFORMED;
    if (grow((void **)&r->bytes, &r->bytes_cap, data_len, 1) < 0 ||
        grow((void **)&r->off, &r->off_cap, 2 * n + 1, sizeof(size_t)) < 0)
        return GROUP_DECODE_NO_MEMORY;
    if (group_plain_decode(blob, len, r->bytes, r->off) < 0) return GROUP_DECODE_MALFORMED;
    r->n = n;
    return 0;
}

int group_codec_decode(const uint8_t *blob, size_t len, group_records *r, group_scratch *scratch)
{
    enum { BAD = GROUP_DECODE_MALFORMED };
    cursor col[N_COLUMNS];
    if (group_plain_is(blob, len)) return decode_plain(blob, len, r);
    if (len < HEADER_BYTES || memcmp(blob, MAGIC, 4) || blob[8] > FLAG_KEY_PLANES) return BAD;
    int decoded = decode_columns(blob, len, scratch, col);
    if (decoded < 0) return decoded;
    rebuild_state s = { .n = le_to_u32(blob + 4), .core_planes = col[COL_CORE].p };
    size_t n = s.n;
    if (col[COL_CORE].n != n * CORE_BYTES || !n) return BAD;
    if (blob[8] & FLAG_KEY_PLANES) {
        if (col[COL_KEY].n % n || !col[COL_KEY].n) return BAD;
        s.key_len = col[COL_KEY].n / n;
        s.key_planes = col[COL_KEY].p;
        col[COL_KEY].at = col[COL_KEY].n;
    }
    size_t total = col[COL_KEY].n + col[COL_CORE].n + col[COL_NAME].n + col[COL_CIGAR].n +
                   col[COL_SEQ].n + col[COL_QUAL].n + col[COL_AUX].n;
    if (grow((void **)&r->bytes, &r->bytes_cap, total, 1) < 0 ||
        grow((void **)&r->off, &r->off_cap, 2 * n + 1, sizeof(size_t)) < 0)
        return GROUP_DECODE_NO_MEMORY;
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        if (rebuild_record(r, i, &s, col, &at) < 0) return BAD;
    col[COL_CORE].at = col[COL_CORE].n;   /* read in place, plane by plane */
    for (int i = 0; i < N_COLUMNS; i++)
        if (col[i].at != col[i].n) return BAD;
    r->off[2 * n] = at;
    r->n = n;
    return 0;
}

void group_codec_records_free(group_records *r)
{
    free(r->bytes);
    free(r->off);
    memset(r, 0, sizeof *r);
}

void group_codec_scratch_free(group_scratch *s)
{
    free(s->p);
    ZSTD_freeDCtx(s->zstd);
    memset(s, 0, sizeof *s);
}
