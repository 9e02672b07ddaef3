/* keys/sort_key.h -- the sort orders of samtools sort, as byte-comparable keys.
 *
 * Contract: for each order, sort_key_encode() turns a record and its input
 * sequence number into a key such that memcmp() order of two keys (shorter
 * key first on a common prefix) is exactly samtools 1.24's order of the two
 * records, with ties broken by input order.  So RocksDB's built-in bytewise
 * comparator sorts them, and no comparator callback runs per comparison.
 * sort_key_record_finish() then turns the record into the form samtools writes
 * (only -M changes records), and sort_key_set_hd_tags() gives the header
 * the @HD tags samtools writes for that order.  With --split, each key starts
 * with the record's output (keys/split_key.h).
 */
#ifndef SORT_KEY_H
#define SORT_KEY_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/sam.h>
#include "util/errmsg.h"
#include "keys/split_key.h"

typedef enum {
    ORDER_COORDINATE,   /* default: tid, pos, strand */
    ORDER_NAME_NATURAL, /* -n: read name, digit runs compared as numbers */
    ORDER_NAME_ASCII,   /* -N: read name, plain byte order */
    ORDER_TEMPLATE,     /* --template-coordinate */
    ORDER_MINIMISER,    /* -M: placed reads by coordinate, the rest by minimiser */
    ORDER_SHUFFLE       /* --shuffle SEED (rocksort only): seeded random order */
} sort_order;

typedef struct sort_ctx sort_ctx;

/* What to sort by.  Plain data, filled by the command line; a copy given to
 * sort_key_spec_prepare() gains the context some orders need. */
typedef struct {
    sort_order order;
    int by_tag;         /* -t: TAG's value first, then order (coordinate or a name order) */
    char tag[2];        /* as samtools keeps it: "X" becomes 'X', '\0' */
    int kmer;           /* -K [20], 1..31 */
    int window;         /* -w [100] */
    int squash;         /* -H */
    int try_rev;        /* 0 with -R */
    const char *minimiser_ref;  /* -I FASTA, or NULL */
    uint64_t seed;      /* --shuffle */
    split_spec split;   /* --split: the output's value first (keys/split_key.h) */
    sort_ctx *ctx;      /* set by sort_key_spec_prepare() */
} sort_spec;

/* samtools' defaults for order. */
void sort_key_spec_init(sort_spec *s, sort_order order);

/* Reads what the order needs: @RG libraries from h, the -I index.  On
 * failure returns -1 with the cause (naming the file at fault) in err. */
int sort_key_spec_prepare(sort_spec *s, sam_hdr_t *h, errmsg *err);
void sort_key_spec_free(sort_spec *s);

/* --split RG's @RG IDs, read by sort_key_spec_prepare(); NULL otherwise. */
const split_ids *sort_key_split_ids(const sort_spec *s);

/* The largest key sort_key_encode() can produce for any record, where that
 * does not depend on the record's name or data (coordinate, -M, --shuffle,
 * without -t or a split); 0 where it does. */
size_t sort_key_max_len_any(const sort_spec *s);

/* Largest key sort_key_encode() can produce for this record. */
size_t sort_key_max_len(const sort_spec *s, const bam1_t *b);

/* Writes the key of record b (input number seq) to out, which holds at least
 * sort_key_max_len() bytes.  Returns the key length, or 0 if the order
 * cannot place this record (sort_key_error() says why). */
size_t sort_key_encode(const sort_spec *s, const bam1_t *b, uint64_t seq, uint8_t *out);
const char *sort_key_error(const sort_spec *s, const bam1_t *b);

/* Turns b, once its key is made, into the record samtools writes, and notes
 * what the @HD tags depend on.  Call once per record, in input order. */
void sort_key_record_finish(const sort_spec *s, bam1_t *b);

/* The same for a record finished on another thread: notes nothing, and
 * returns whether the record is placed, for the owner of s to note with
 * sort_key_set_placed() in input order's stead. */
int sort_key_record_rewrite(const sort_spec *s, bam1_t *b);

/* Whether a placed record (tid >= 0) went through sort_key_record_finish():
 * -M's @HD tags depend on it.  A resumed sort, which does not read again
 * the records it took back, sets it from its state. */
int sort_key_saw_placed(const sort_spec *s);
void sort_key_set_placed(sort_spec *s);

/* Sets @HD SO, SS and GO as samtools sort does for this order (removing
 * those it does not set), adding an @HD line when there is none.  For -M,
 * call it after the records went through sort_key_record_finish().  Returns 0,
 * or -1 on failure. */
int sort_key_set_hd_tags(sam_hdr_t *h, const sort_spec *s);

#endif
