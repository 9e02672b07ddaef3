/* order_rules.h -- samtools sort's ordering rules, written straight from
 * their description (not from the key encoder), for tests and fuzzers to
 * check encoded keys against.  Each comparison returns -1, 0 or 1. */
#ifndef ORDER_RULES_H
#define ORDER_RULES_H

#include <ctype.h>
#include <string.h>
#include "bam_sort.h"

static inline int sign(long v) { return (v > 0) - (v < 0); }

static inline int key_cmp(sort_order order, const bam1_t *a, uint64_t sa, const bam1_t *b, uint64_t sb)
{
    uint8_t ka[1024], kb[1024];
    size_t la = sort_key_encode(order, a, sa, ka), lb = sort_key_encode(order, b, sb, kb);
    int c = memcmp(ka, kb, la < lb ? la : lb);
    return c ? sign(c) : sign((long)la - (long)lb);
}

/* Natural order as documented for samtools sort -n: runs of digits compare
 * by numeric value (leading zeros ignored), other bytes by unsigned value,
 * and a string that runs out first is smaller. */
static inline int natural_cmp(const char *a, const char *b)
{
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    while (*p && *q) {
        if (isdigit(*p) && isdigit(*q)) {
            while (*p == '0') p++;
            while (*q == '0') q++;
            const unsigned char *ps = p, *qs = q;
            while (isdigit(*p)) p++;
            while (isdigit(*q)) q++;
            long lp = p - ps, lq = q - qs;
            if (lp != lq) return sign(lp - lq);
            int c = memcmp(ps, qs, (size_t)lp);
            if (c) return sign(c);
        } else {
            if (*p != *q) return sign((long)*p - (long)*q);
            p++, q++;
        }
    }
    return sign((long)(*p != 0) - (long)(*q != 0));
}

static inline int flag_rank(uint16_t f)
{
    int read = f & BAM_FREAD1 ? 1 : f & BAM_FREAD2 ? 2 : 0;
    if (f & BAM_FREAD1 && f & BAM_FREAD2) read = 3;
    int kind = f & BAM_FSECONDARY ? 2 : f & BAM_FSUPPLEMENTARY ? 1 : 0;
    if (f & BAM_FSECONDARY && f & BAM_FSUPPLEMENTARY) kind = 3;
    return read * 4 + kind;
}

static inline int name_ref_cmp(int natural, const char *na, uint16_t fa, uint64_t sa,
                        const char *nb, uint16_t fb, uint64_t sb)
{
    int c = natural ? natural_cmp(na, nb) : sign(strcmp(na, nb));
    if (c) return c;
    if (flag_rank(fa) != flag_rank(fb)) return sign(flag_rank(fa) - flag_rank(fb));
    return sign((long)sa - (long)sb);
}

/* Coordinate: tid as unsigned (so -1 last), then pos+1, forward before
 * reverse, then input order. */
static inline int coord_ref_cmp(int ta, int64_t pa, int ra, uint64_t sa,
                                int tb, int64_t pb, int rb, uint64_t sb)
{
    if (ta != tb) return (uint32_t)ta < (uint32_t)tb ? -1 : 1;
    if (pa != pb) return pa < pb ? -1 : 1;
    if (ra != rb) return ra < rb ? -1 : 1;
    return sa < sb ? -1 : sa > sb;
}

#endif
