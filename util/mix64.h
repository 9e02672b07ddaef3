/* util/mix64.h -- a 64-bit mixing function (the splitmix64 finaliser).
 *
 * Contract: mix64() is a bijection on 64-bit words in which every input bit
 * affects every output bit; mix64_bytes() hashes a byte string with it.
 * --shuffle's order is defined by mix64(), so its constants are part of
 * the output format: never change them.  (The -M
 * minimiser hash is samtools' own and stays in keys/minimiser.c.)
 */
#ifndef MIX64_H
#define MIX64_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A 64-bit hash of n bytes, continuing from h: mix64() over each 8-byte
 * word, then the tail with its length.  Every bit of the input reaches
 * every bit of the result; the golden-ratio step keeps a zero word from
 * leaving the state unchanged.  --verify's record digest is built on it. */
static inline uint64_t mix64_step(uint64_t h, uint64_t w)
{
    return mix64(h ^ w) + 0x9e3779b97f4a7c15ULL;
}

static inline uint64_t mix64_bytes(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t w;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = mix64_step(h, w);
    }
    w = 0;
    memcpy(&w, p, n);
    return mix64_step(h, w ^ ((uint64_t)n << 56));
}

#endif
