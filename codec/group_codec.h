/* codec/group_codec.h -- many sorted records as one compact RocksDB value.
 *
 * Contract: a group_encoder collects (key, value) pairs, values laid out as
 * codec/record.h packs them.  group_codec_encode() writes them as one blob and
 * empties the encoder: the pairs are split into columns (key lengths, keys,
 * the fixed record cores byte by byte, aux lengths, names, CIGARs, bases,
 * qualities, aux), qualities compressed by htscodecs' order-1 rANS
 * (bundled in htslib) and every other column by zstd level 1.
 * group_codec_decode() gives back the same pairs, byte for byte and in the same
 * order, into a reusable group_records.  A blob whose lengths do not add
 * up is an error, never records; a damaged temp file is caught before this,
 * by RocksDB's block checksums.
 *
 * Why: a run of a sort holds a thin slice of the genome, so neighbouring
 * records share little, and a general compressor on whole records is held
 * back by the mix of fields.  Like fields side by side, and qualities under
 * a model of the previous quality, take far fewer bytes (doc/DESIGN.md).
 */
#ifndef GROUP_CODEC_H
#define GROUP_CODEC_H

#include <stddef.h>
#include <stdint.h>

typedef struct group_encoder group_encoder;

/* How an encoder lays its groups out: in columns, compressed (above), or
 * plain, the pairs as they are (codec/group_plain.h).  The decoder reads
 * either: a blob says which it is. */
typedef enum { GROUP_COLUMNS, GROUP_PLAIN } group_layout;

group_encoder *group_codec_encoder_create(group_layout layout);
void group_codec_encoder_destroy(group_encoder *e);

/* Appends one pair.  Returns 0, or -1 if the value is not a packed record
 * or memory runs out. */
int group_codec_add(group_encoder *e, const uint8_t *key, size_t klen,
                    const uint8_t *val, size_t vlen);

/* Pairs added since the last encode, and their key and value bytes. */
size_t group_codec_count(const group_encoder *e);
size_t group_codec_raw_bytes(const group_encoder *e);

/* The first and the last key added before the last encode, or since it if
 * any were: valid until the next add.  They bound the group's keys. */
const uint8_t *group_codec_first_key(const group_encoder *e, size_t *klen);
const uint8_t *group_codec_last_key(const group_encoder *e, size_t *klen);

/* Encodes the pairs added so far; *blob stays valid until the next call on
 * e.  Returns 0, or -1 when out of memory or if the codecs fail. */
int group_codec_encode(group_encoder *e, const uint8_t **blob, size_t *len);

typedef struct {
    size_t n;
    uint8_t *bytes;            /* keys and values, back to back */
    size_t bytes_cap;
    size_t *off;               /* 2n + 1: pair i's key at off[2i], its value at off[2i + 1] */
    size_t off_cap;
} group_records;

/* The decoded columns and zstd's decoding context, needed only while a blob
 * is decoded: one can serve many group_records, on one thread at a time.
 * Starts zeroed; group_codec_scratch_free() releases it. */
typedef struct {
    uint8_t *p;
    size_t cap;
    void *zstd;                /* a ZSTD_DCtx, made at the first decode */
} group_scratch;

/* What group_codec_decode() found.  The two failures are told apart because
 * they mean different things to a sort: a blob that does not add up is a
 * damaged run, while memory running out says nothing about the run. */
enum { GROUP_DECODE_MALFORMED = -1, GROUP_DECODE_NO_MEMORY = -2 };

/* Decodes a blob into r (which starts zeroed and is reused across calls).
 * Returns 0, GROUP_DECODE_MALFORMED, or GROUP_DECODE_NO_MEMORY when an
 * allocation (here or in a codec) fails. */
int group_codec_decode(const uint8_t *blob, size_t len, group_records *r, group_scratch *s);
void group_codec_records_free(group_records *r);
void group_codec_scratch_free(group_scratch *s);

static inline const uint8_t *group_key(const group_records *r, size_t i, size_t *len)
{
    *len = r->off[2 * i + 1] - r->off[2 * i];
    return r->bytes + r->off[2 * i];
}

static inline const uint8_t *group_value(const group_records *r, size_t i, size_t *len)
{
    *len = r->off[2 * i + 2] - r->off[2 * i + 1];
    return r->bytes + r->off[2 * i + 1];
}

#endif
