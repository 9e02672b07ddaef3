/* mix64.h -- a 64-bit mixing function (the splitmix64 finaliser).
 *
 * Contract: mix64() is a bijection on 64-bit words in which every input bit
 * affects every output bit.  --shuffle's order is defined by it, so its
 * constants are part of the output format: never change them.  (The -M
 * minimiser hash is samtools' own and stays in minimiser.c.)
 */
#ifndef MIX64_H
#define MIX64_H

#include <stdint.h>

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

#endif
