/* bam_sort.c -- sort keys and @HD tags for samtools sort's orders.
 *
 * Why encoded keys rather than a custom RocksDB comparator: a comparator
 * registered through the C API is an indirect call per comparison that RocksDB
 * cannot inline, and it must re-parse both records each time.  An encoded key
 * is compared with memcmp by the built-in comparator, by our in-memory batch
 * sort and by RocksDB's merging iterator alike.
 */
#include <ctype.h>
#include <string.h>
#include "bam_sort.h"

/* tid, pos+1, strand, seq */
#define COORD_KEY_LEN (4 + 8 + 1 + 8)
/* NUL after the name, flag rank, seq */
#define NAME_KEY_TAIL (1 + 2 + 8)
/* A digit run starts with this byte: any value in '0'..'9' keeps a run's
 * order against non-digit bytes, which is how samtools compares them. */
#define DIGIT_RUN_MARK '0'

static uint8_t *put_be(uint8_t *p, uint64_t v, int nbytes)
{
    for (int i = nbytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
    return p + nbytes;
}

unsigned sort_name_flag_rank(uint16_t flag)
{
    return ((flag & BAM_FREAD1) << 8) | ((flag & BAM_FREAD2) << 8)
         | ((flag & BAM_FSECONDARY) << 3) | ((flag & BAM_FSUPPLEMENTARY) >> 3);
}

size_t sort_key_max_len(sort_order order, const bam1_t *b)
{
    if (order == ORDER_COORDINATE)
        return COORD_KEY_LEN;
    /* A one-digit run costs 3 bytes: mark, length, digit. */
    return 3 * (size_t)b->core.l_qname + NAME_KEY_TAIL;
}

/* samtools compares tid as an unsigned 64-bit value after sign extension, so
 * tid -1 (unmapped) sorts last; as a 32-bit unsigned value it orders the same.
 * pos -1 becomes 0 after the +1. */
static size_t coord_key(const bam1_t *b, uint64_t seq, uint8_t *out)
{
    uint8_t *p = put_be(out, (uint32_t)b->core.tid, 4);
    p = put_be(p, (uint64_t)(b->core.pos + 1), 8);
    *p++ = bam_is_rev(b) ? 1 : 0;
    p = put_be(p, seq, 8);
    return (size_t)(p - out);
}

/* Natural order compares digit runs by numeric value, ignoring leading zeros
 * (so "r01" equals "r1"), and everything else byte by byte.  A run becomes
 * MARK, count of significant digits, the significant digits: equal-length
 * runs then compare digit by digit, and longer numbers sort higher. */
static uint8_t *natural_name(const char *name, uint8_t *p)
{
    const unsigned char *s = (const unsigned char *)name;
    while (*s) {
        if (!isdigit(*s)) {
            *p++ = *s++;
            continue;
        }
        while (*s == '0') s++;
        const unsigned char *digits = s;
        while (isdigit(*s)) s++;
        size_t n = (size_t)(s - digits);
        *p++ = DIGIT_RUN_MARK;
        *p++ = (uint8_t)n;      /* names are < 255 bytes */
        memcpy(p, digits, n);
        p += n;
    }
    return p;
}

static size_t name_key(const bam1_t *b, int natural, uint64_t seq, uint8_t *out)
{
    const char *name = bam_get_qname(b);
    uint8_t *p;
    if (natural) {
        p = natural_name(name, out);
    } else {
        size_t n = strlen(name);
        memcpy(out, name, n);
        p = out + n;
    }
    *p++ = 0;   /* end of name: a shorter name sorts first */
    p = put_be(p, sort_name_flag_rank(b->core.flag), 2);
    p = put_be(p, seq, 8);
    return (size_t)(p - out);
}

size_t sort_key_encode(sort_order order, const bam1_t *b, uint64_t seq, uint8_t *out)
{
    switch (order) {
    case ORDER_NAME_NATURAL: return name_key(b, 1, seq, out);
    case ORDER_NAME_ASCII:   return name_key(b, 0, seq, out);
    default:                 return coord_key(b, seq, out);
    }
}

int sort_order_set_hd_tags(sam_hdr_t *h, sort_order order)
{
    const char *so = order == ORDER_COORDINATE ? "coordinate" : "queryname";
    const char *ss = order == ORDER_NAME_NATURAL ? "queryname:natural"
                   : order == ORDER_NAME_ASCII ? "queryname:lexicographical" : NULL;

    if (sam_hdr_count_lines(h, "HD") <= 0) {
        if (sam_hdr_add_line(h, "HD", "VN", SAM_FORMAT_VERSION, NULL) < 0)
            return -1;
    }
    if (sam_hdr_update_hd(h, "SO", so) < 0)
        return -1;
    if (ss) {
        if (sam_hdr_update_hd(h, "SS", ss) < 0)
            return -1;
    } else {
        sam_hdr_remove_tag_hd(h, "SS");
    }
    sam_hdr_remove_tag_hd(h, "GO");
    return 0;
}
