/* codec/group_plain.c -- see codec/group_plain.h. */
#include <stdlib.h>
#include <string.h>
#include <htslib/hts_endian.h>
#include <htslib/sam.h>
#include "codec/group_plain.h"

int group_plain_add(group_plain_encoder *e, const uint8_t *key, size_t klen,
                    const uint8_t *val, size_t vlen)
{
    if (vlen < sizeof(bam1_core_t)) return -1;
    if (!e->n) {
        e->blob.n = e->lens.n = 0;
        e->blob.failed = e->lens.failed = 0;
        static const uint8_t header_room[GROUP_PLAIN_HEADER];
        bw_bytes_raw(&e->blob, header_room, sizeof header_room);
        e->first_len = klen;
    }
    size_t key_at = e->blob.n;
    bw_varint(&e->lens, klen);
    bw_varint(&e->lens, vlen);
    bw_bytes_raw(&e->blob, key, klen);
    bw_bytes_raw(&e->blob, val, vlen);
    if (e->blob.failed || e->lens.failed) return -1;
    e->last_at = key_at;
    e->last_len = klen;
    e->n++;
    return 0;
}

int group_plain_encode(group_plain_encoder *e, const uint8_t **blob, size_t *len)
{
    size_t data_len = e->blob.n - GROUP_PLAIN_HEADER;
    /* RocksDB's values, like the header's fields, are under 4 GiB. */
    if (!e->n || e->n > UINT32_MAX || e->blob.n + e->lens.n > UINT32_MAX) return -1;
    bw_bytes_raw(&e->blob, e->lens.p, e->lens.n);
    if (e->blob.failed) return -1;
    memcpy(e->blob.p, GROUP_PLAIN_MAGIC, 4);
    u32_to_le((uint32_t)e->n, e->blob.p + 4);
    u32_to_le((uint32_t)data_len, e->blob.p + 8);
    e->n = 0;
    *blob = e->blob.p;
    *len = e->blob.n;
    return 0;
}

const uint8_t *group_plain_first_key(const group_plain_encoder *e, size_t *klen)
{
    *klen = e->first_len;
    return e->blob.p + GROUP_PLAIN_HEADER;
}

const uint8_t *group_plain_last_key(const group_plain_encoder *e, size_t *klen)
{
    *klen = e->last_len;
    return e->blob.p + e->last_at;
}

void group_plain_free(group_plain_encoder *e)
{
    bw_free(&e->blob);
    bw_free(&e->lens);
}

int group_plain_is(const uint8_t *blob, size_t len)
{
    return len >= 4 && !memcmp(blob, GROUP_PLAIN_MAGIC, 4);
}

static int read_varint(const uint8_t **p, const uint8_t *end, size_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = (size_t)x;
            return 0;
        }
    }
    return -1;
}

/* The offsets of every pair from the lengths after the data; the lengths
 * must end with the blob and add up to the data. */
static int pair_offsets(const uint8_t *lens, const uint8_t *end, size_t n, size_t data_len,
                        size_t *off)
{
    size_t at = 0;
    for (size_t i = 0; i < 2 * n; i++) {
        size_t len;
        if (read_varint(&lens, end, &len) < 0 || len > data_len - at) return -1;
        if (i % 2 && len < sizeof(bam1_core_t)) return -1;
        off[i] = at;
        at += len;
    }
    off[2 * n] = at;
    return lens == end && at == data_len ? 0 : -1;
}

int group_plain_sizes(const uint8_t *blob, size_t len, size_t *n, size_t *data_len)
{
    if (len < GROUP_PLAIN_HEADER || !group_plain_is(blob, len)) return -1;
    *n = le_to_u32(blob + 4);
    *data_len = le_to_u32(blob + 8);
    /* Each pair takes two length bytes at least: a count beyond that is
     * damage, not a reason to ask for memory. */
    if (!*n || *data_len > len - GROUP_PLAIN_HEADER ||
        *n > (len - GROUP_PLAIN_HEADER - *data_len) / 2)
        return -1;
    return 0;
}

int group_plain_decode(const uint8_t *blob, size_t len, uint8_t *bytes, size_t *off)
{
    size_t n, data_len;
    if (group_plain_sizes(blob, len, &n, &data_len) < 0) return -1;
    const uint8_t *data = blob + GROUP_PLAIN_HEADER;
    if (pair_offsets(data + data_len, blob + len, n, data_len, off) < 0) return -1;
    memcpy(bytes, data, data_len);
    return 0;
}
