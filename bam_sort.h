/* bam_sort.h -- the sort orders of samtools sort, as byte-comparable keys.
 *
 * Contract: for each order, sort_key_encode() turns a record and its input
 * sequence number into a key such that memcmp() order of two keys (shorter
 * key first on a common prefix) is exactly samtools 1.24's order of the two
 * records, with ties broken by input order.  So RocksDB's built-in bytewise
 * comparator sorts them, and no comparator callback runs per comparison.
 * sort_order_set_hd_tags() gives the header the @HD tags samtools writes for
 * that order.
 */
#ifndef BAM_SORT_H
#define BAM_SORT_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/sam.h>

typedef enum {
    ORDER_COORDINATE,   /* default: tid, pos, strand */
    ORDER_NAME_NATURAL, /* -n: read name, digit runs compared as numbers */
    ORDER_NAME_ASCII    /* -N: read name, plain byte order */
} sort_order;

/* Largest key sort_key_encode() can produce for this record. */
size_t sort_key_max_len(sort_order order, const bam1_t *b);

/* Writes the key of record b (input number seq) to out, which holds at least
 * sort_key_max_len() bytes.  Returns the key length. */
size_t sort_key_encode(sort_order order, const bam1_t *b, uint64_t seq, uint8_t *out);

/* The tie-break samtools applies between records of equal name: READ1 before
 * READ2, and within each, primary, then supplementary, then secondary. */
unsigned sort_name_flag_rank(uint16_t flag);

/* Sets @HD SO (and SS, removing GO) as samtools sort does for this order,
 * adding an @HD line when there is none.  Returns 0, or -1 on failure. */
int sort_order_set_hd_tags(sam_hdr_t *h, sort_order order);

#endif
