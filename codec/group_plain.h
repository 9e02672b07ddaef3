/* codec/group_plain.h -- the plain group layout: records as they are, with their lengths.
 *
 * Contract (internal to codec/group_codec.c, which picks the layout):
 * a plain blob is GROUP_PLAIN_MAGIC, the pair count and the data's length
 * (u32 LE each), the keys and values back to back (the data), then two
 * varints per pair, its key's and its value's lengths.  The encoder
 * appends the data straight into the blob it will hand out, after
 * GROUP_PLAIN_HEADER bytes, so a pair is copied once when added and not
 * again when encoded; the lengths follow the data for that reason.
 * group_plain_sizes() reads a blob's pair count and data length, for the
 * caller to size its arrays exactly (codec/group_codec.c's group_records);
 * then group_plain_decode() fills them, once it has checked that the
 * lengths account for the data exactly and that every value holds a
 * record's core.  Both return 0, or -1 for a blob that does not add up.
 *
 * Why: uncompressed runs written record by record cost RocksDB one entry
 * per record on the single spill thread, and one iterator step per record
 * at the readout.  A group of records as one value costs one entry, and
 * is laid out on the pool (doc/DESIGN.md "Uncompressed runs in groups").
 */
#ifndef GROUP_PLAIN_H
#define GROUP_PLAIN_H

#include <stddef.h>
#include <stdint.h>
#include "util/byte_io.h"

#define GROUP_PLAIN_MAGIC "RSP1"
#define GROUP_PLAIN_HEADER 12

/* Starts zeroed; group_plain_free() releases it. */
typedef struct {
    byte_writer blob;           /* the header's room, then the pairs */
    byte_writer lens;           /* a key's length, then its value's, pair by pair */
    size_t n, first_len, last_at, last_len;
} group_plain_encoder;

/* Returns 0, or -1 if the value is shorter than a record's core or memory
 * runs out. */
int group_plain_add(group_plain_encoder *e, const uint8_t *key, size_t klen,
                    const uint8_t *val, size_t vlen);
/* The blob stays valid, and so do the keys below, until the next add. */
int group_plain_encode(group_plain_encoder *e, const uint8_t **blob, size_t *len);
const uint8_t *group_plain_first_key(const group_plain_encoder *e, size_t *klen);
const uint8_t *group_plain_last_key(const group_plain_encoder *e, size_t *klen);
void group_plain_free(group_plain_encoder *e);

int group_plain_is(const uint8_t *blob, size_t len);
int group_plain_sizes(const uint8_t *blob, size_t len, size_t *n, size_t *data_len);
/* Pair i's key at off[2i] of bytes, its value at off[2i + 1]; off has room
 * for the sizes' 2n + 1 offsets, bytes for data_len. */
int group_plain_decode(const uint8_t *blob, size_t len, uint8_t *bytes, size_t *off);

#endif
