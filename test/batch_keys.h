/* batch_keys.h -- for the C unit tests: a record of arbitrary key bytes
 * added to a batch, which no real record (batch_add()) would produce.
 * Returns what batch_add() returns: 1 added, 0 the batch is full, -1 out of
 * memory. */
#ifndef TEST_BATCH_KEYS_H
#define TEST_BATCH_KEYS_H

#include "load/batch_internal.h"

static inline int test_batch_add_key(batch *sb, const uint8_t *key, size_t key_len,
                                     const uint8_t *val, size_t val_len)
{
    int room = batch_make_room(sb, packed_record_size(key_len, val_len));
    if (room <= 0) return room;
    packed_put(sb->arena + sb->used, key, key_len, val, val_len);
    batch_enter_record(sb);
    return 1;
}

#endif
