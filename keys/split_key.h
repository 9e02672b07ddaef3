/* keys/split_key.h -- --split: the value that picks a record's output, in front of its key.
 *
 * Contract: with --split, every key starts with the record's group
 * (split_key_prefix()), then the order's own key: memcmp order is then
 * (group, samtools' order), so each output is one contiguous key range,
 * sorted as samtools sort sorts it.  The value is read as samtools 1.24's
 * split reads it (bam_split.c): a Z or H string as it is, an integer
 * (c C s S i I) in decimal, zero-padded to `pad` digits (one more for a
 * negative) as split's -p pads it; any other type, or no tag, has no
 * value.  A group is SPLIT_VALUE_MARK, the value and a NUL (no SAM string
 * holds a NUL, so groups never overlap), or SPLIT_OTHER_MARK alone for the
 * records without a value: with `by_rg` (split by the header's @RG lines,
 * split's default) also those whose value is no @RG line's ID
 * (split_key_ids_new() lists them).
 * A value that would put its file outside the output directory is
 * refused as the record is keyed: a '/' when the file name holds the value
 * (value_named), and "", "." or ".." when the name is the value alone
 * (value_alone); split_key_problem() says why, naming the value.
 * split_key_group_len() and split_key_group_value() read a group back from
 * a key, for the readout.
 */
#ifndef SPLIT_KEY_H
#define SPLIT_KEY_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/sam.h>

#define SPLIT_VALUE_MARK 0x01
#define SPLIT_OTHER_MARK 0x02
/* Room for an integer's decimal form, padded to at most SPLIT_PAD_MAX digits. */
#define SPLIT_NUMBER_MAX 32
#define SPLIT_PAD_MAX 20

typedef struct {
    int on;             /* --split given */
    int by_rg;          /* --split RG: the header's @RG lines are the outputs */
    char tag[2];        /* the tag read, RG for by_rg */
    int pad;            /* --split-pad: integers zero-padded to this many digits */
    int value_named;    /* the file name holds the value (%!) */
    int value_alone;    /* the file name is nothing but the value */
} split_spec;

/* The IDs of a header's @RG lines, for by_rg. */
typedef struct split_ids split_ids;

split_ids *split_key_ids_new(sam_hdr_t *h);
void split_key_ids_free(split_ids *ids);
int split_key_ids_has(const split_ids *ids, const char *value);

/* b's value: its length, with *str pointing at it (into b's data, or num);
 * -1 when b has none. */
int split_key_value(const split_spec *s, const bam1_t *b, char num[SPLIT_NUMBER_MAX],
                    const char **str);

/* The most bytes split_key_prefix() writes for b (0 when off). */
size_t split_key_max_len(const split_spec *s, const bam1_t *b);

/* Writes b's group at p and returns the byte after it; NULL for a value
 * refused (split_key_problem()).  ids: by_rg's, else NULL. */
uint8_t *split_key_prefix(const split_spec *s, const split_ids *ids, const bam1_t *b, uint8_t *p);

/* Why b's value is refused, or NULL when it is not.  The text is this
 * thread's, valid until its next call. */
const char *split_key_problem(const split_spec *s, const bam1_t *b);

/* Whether value (a group's, or a header's @RG ID) is refused; why, as
 * split_key_problem() says it, into why. */
int split_key_value_refused(const split_spec *s, const char *value, char *why, size_t size);

/* The length of the group that key starts with; 0 if it starts with none. */
size_t split_key_group_len(const uint8_t *key, size_t len);

/* A group's value: 0 with *value and *vlen (not NUL-terminated in key),
 * or 1 for the records without one. */
int split_key_group_value(const uint8_t *group, size_t len, const char **value, size_t *vlen);

#endif
