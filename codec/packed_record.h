/* codec/packed_record.h -- a key and its value, laid out one after the other in memory.
 *
 * Contract: a packed record is a packed_header (the key's and the value's
 * lengths), the key, then the value, padded to a multiple of 8 bytes so
 * that the next record's header and a value's integers stay aligned.
 * Records packed back to back are walked with packed_after().  This is the
 * layout of a batch's arena (load/batch.h), of a packed run held in memory
 * and of the readout's chunks (readout/run_stream.h): one layout, so that the
 * merge reads all of them alike.
 */
#ifndef PACKED_RECORD_H
#define PACKED_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint32_t key_len, val_len;
} packed_header;

static inline packed_header packed_header_of(const uint8_t *rec)
{
    packed_header h;
    memcpy(&h, rec, sizeof h);
    return h;
}

/* Bytes a record with these lengths takes, padding included. */
static inline size_t packed_record_size(size_t key_len, size_t val_len)
{
    return (sizeof(packed_header) + key_len + val_len + 7) & ~(size_t)7;
}

/* Writes one record at dst: packed_record_size() bytes. */
static inline void packed_put(uint8_t *dst, const uint8_t *key, size_t key_len,
                              const uint8_t *val, size_t val_len)
{
    packed_header h = { (uint32_t)key_len, (uint32_t)val_len };
    memcpy(dst, &h, sizeof h);
    memcpy(dst + sizeof h, key, key_len);
    memcpy(dst + sizeof h + key_len, val, val_len);
}

static inline const uint8_t *packed_key(const uint8_t *rec, size_t *len)
{
    *len = packed_header_of(rec).key_len;
    return rec + sizeof(packed_header);
}

static inline const uint8_t *packed_value(const uint8_t *rec, size_t *len)
{
    packed_header h = packed_header_of(rec);
    *len = h.val_len;
    return rec + sizeof h + h.key_len;
}

/* Where the record after rec starts. */
static inline const uint8_t *packed_after(const uint8_t *rec)
{
    packed_header h = packed_header_of(rec);
    return rec + packed_record_size(h.key_len, h.val_len);
}

#endif
