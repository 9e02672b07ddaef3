/* keys/key_bytes.h -- the building blocks of byte-comparable sort keys.
 *
 * Contract: each put_* writes a value at p and returns the byte after it,
 * such that memcmp() of two encodings orders them as the values compare:
 * unsigned integers big-endian; signed ones with the sign bit flipped;
 * doubles with the sign bit flipped (negatives: all bits); strings
 * NUL-terminated (SAM strings hold no NUL, and the NUL makes a prefix sort
 * first, as strcmp does).  Shared by keys/sort_key.c and keys/template_key.c.
 *
 * key_cmp() is the one order of keys everywhere: the batch sort, RocksDB's
 * bytewise comparator, the merges.  key_sample is the one key-with-length
 * the code passes around: a sampled key and the record bytes it stands for
 * (keys/key_samples.h, store_samples()), or a bound of a key range; key_dup()
 * is how a key is kept beyond the buffer it came in.
 */
#ifndef KEY_BYTES_H
#define KEY_BYTES_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* memcmp() over the common length, then the shorter key first: RocksDB's
 * bytewise order.  Negative, 0 or positive. */
static inline int key_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
    int c = memcmp(a, b, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

/* A malloc'd copy of a key of any length, 0 too; NULL if out of memory. */
static inline uint8_t *key_dup(const uint8_t *key, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (copy && len) memcpy(copy, key, len);
    return copy;
}

typedef struct {
    const uint8_t *key;
    size_t len;
    uint64_t weight;    /* record bytes the key stands for; 0 for a bound */
} key_sample;

static inline uint8_t *put_be(uint8_t *p, uint64_t v, int nbytes)
{
    for (int i = nbytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
    return p + nbytes;
}

static inline uint8_t *put_i32(uint8_t *p, int32_t v)
{
    return put_be(p, (uint32_t)v ^ 0x80000000u, 4);
}

static inline uint8_t *put_i64(uint8_t *p, int64_t v)
{
    return put_be(p, (uint64_t)v ^ (1ULL << 63), 8);
}

/* -0 equals +0, as with ==.  NaN goes after +inf: samtools has no place
 * for it (its comparison says NaN > x and x > NaN). */
static inline uint8_t *put_double(uint8_t *p, double v)
{
    uint64_t u;
    if (v == 0) v = 0.0;
    if (isnan(v)) v = NAN;
    memcpy(&u, &v, sizeof u);
    if (isnan(v)) u &= ~(1ULL << 63);
    u = (u >> 63) ? ~u : u | (1ULL << 63);
    return put_be(p, u, 8);
}

static inline uint8_t *put_string(uint8_t *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    p[n] = 0;
    return p + n + 1;
}

#endif
