/* load/batch_internal.h -- how a batch lays out its records and entries,
 * shared by load/batch.c (filling, reading, packing) and load/batch_sort.c
 * (ordering).  Only those two include it, and the batch's unit test, which
 * adds keys of its own making as batch_add() adds a record's: a packed
 * record written at sb->arena + sb->used between batch_make_room() and
 * batch_enter_record().
 */
#ifndef BATCH_INTERNAL_H
#define BATCH_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include "load/batch.h"

#define INLINE_KEY 24     /* key bytes held next to each record pointer */
#define SMALL_TIE 8       /* tie groups this small are sorted by whole keys */

/* A record in the arena is a packed record (codec/packed_record.h). */

/* 24 key bytes as big-endian integers, zero padded past the key's end,
 * decide most comparisons without touching the arena.  At first they are
 * the bytes after the prefix that every key of the batch shares (the
 * batch's skip): read names often share 10-30 bytes (instrument, run,
 * flowcell), which would leave a window at the start of the key nothing
 * to decide.  batch_sort() reloads them further on for entries that tie. */
typedef struct {
    uint64_t k[INLINE_KEY / 8];
    const uint8_t *rec;
} batch_entry;

/* Entries [lo, hi) that agree on their key bytes before depth, waiting
 * for batch_sort() to order them by the bytes from depth on. */
typedef struct {
    size_t lo, hi, depth;
} tie_group;

struct batch {
    uint8_t *arena;
    size_t used, cap;
    size_t claimed; /* arena bytes batch_claim_ahead() has handed out */
    size_t written; /* arena bytes that held records before the last clear */
    batch_entry *ent, *tmp;
    size_t n, m;
    size_t skip;    /* the inline keys start after this many key bytes */
    size_t shared;  /* bytes every key added so far shares with the first */
    size_t shortest, longest;   /* key lengths */
    tie_group *ties;            /* room for batch_max_ties(m) */
};

/* Pending tie groups are disjoint and larger than SMALL_TIE, so this many
 * always suffice, with one more for each part of a parallel sort
 * (BATCH_MAX_PARTS more are allocated): batch_sort() allocates nothing. */
static inline size_t batch_max_ties(size_t entries)
{
    return entries / (SMALL_TIE + 1) + 1;
}

/* Room at the arena's end for a packed record of up to need bytes: 1, 0 if
 * the batch is full, -1 if out of memory.  batch_enter_record() then takes
 * in the record written there. */
int batch_make_room(batch *sb, size_t need);
void batch_enter_record(batch *sb);

static inline packed_header header_of(const batch_entry *e)
{
    return packed_header_of(e->rec);
}

static inline const uint8_t *entry_key(const batch_entry *e, size_t *len)
{
    *len = header_of(e).key_len;
    return e->rec + sizeof(packed_header);
}

/* Eight bytes as one load where the key has them: the loader fills every
 * entry's words, and a loop over bytes was most of its time in
 * batch_enter_record(). */
static inline uint64_t load_be(const uint8_t *p, size_t avail)
{
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (avail >= 8) {
        memcpy(&v, p, 8);
        return __builtin_bswap64(v);
    }
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    if (avail >= 8) {
        memcpy(&v, p, 8);
        return v;
    }
#endif
    for (size_t i = 0; i < 8; i++)
        v = (v << 8) | (i < avail ? p[i] : 0);
    return v;
}

/* The key bytes from depth on, as big-endian integers (zero padded). */
static inline void load_inline_key(batch_entry *e, const uint8_t *key, size_t len, size_t depth)
{
    size_t rest = len > depth ? len - depth : 0;
    key += depth;
    for (size_t w = 0; w < INLINE_KEY / 8; w++)
        e->k[w] = rest > 8 * w ? load_be(key + 8 * w, rest - 8 * w) : 0;
}

#endif
