/* codec/record.h -- a BAM record as a RocksDB value, and back.
 *
 * Contract: the value is htslib's in-memory record: the bam1_core_t followed by
 * the variable-length data (name, CIGAR, sequence, qualities, aux).  It keeps
 * 64-bit positions, which the on-disk BAM layout cannot, and it is private to
 * one process run, so its layout never needs to be portable.
 */
#ifndef RECORD_H
#define RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/sam.h>

static inline size_t record_value_len(const bam1_t *b)
{
    return sizeof(bam1_core_t) + (size_t)b->l_data;
}

/* Writes record_value_len(b) bytes to out. */
void record_value_pack(const bam1_t *b, uint8_t *out);

/* Points view at a value without copying: view->data aliases val, which
 * must outlive it, and may be unaligned, so only byte-wise consumers (BAM
 * writing of records with at most 65535 CIGAR operations) may use it.
 * Returns 0, or -1 if the value is malformed. */
int record_value_view(const uint8_t *val, size_t len, bam1_t *view);

/* Fills b from a value; returns 0, or -1 if the value is malformed or memory
 * runs out. */
int record_value_unpack(const uint8_t *val, size_t len, bam1_t *b);

/* A 64-bit hash of the record's core and data.  Sums of these over a set of
 * records do not depend on their order, which --verify relies on. */
uint64_t record_digest(const bam1_t *b);

#endif
