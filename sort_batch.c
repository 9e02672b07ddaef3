/* sort_batch.c -- see sort_batch.h. */
#include <stdlib.h>
#include <string.h>
#include "sort_batch.h"
#include "record_codec.h"

/* The first 16 key bytes as two big-endian integers decide most comparisons
 * without touching the arena, which keeps the sort cache-friendly. */
typedef struct {
    uint64_t k0, k1;
    const uint8_t *key;
    uint32_t key_len, val_len;
} batch_entry;

struct sort_batch {
    uint8_t *arena;
    size_t used, cap;
    batch_entry *ent;
    size_t n, m;
};

sort_batch *batch_create(size_t capacity)
{
    sort_batch *sb = calloc(1, sizeof *sb);
    if (!sb) return NULL;
    sb->cap = capacity;
    sb->arena = malloc(capacity);
    if (!sb->arena) {
        free(sb);
        return NULL;
    }
    return sb;
}

void batch_destroy(sort_batch *sb)
{
    if (!sb) return;
    free(sb->arena);
    free(sb->ent);
    free(sb);
}

static uint64_t load_be(const uint8_t *p, size_t avail)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++)
        v = (v << 8) | (i < avail ? p[i] : 0);
    return v;
}

static int grow_entries(sort_batch *sb)
{
    size_t m = sb->m ? sb->m * 2 : 1024;
    batch_entry *e = realloc(sb->ent, m * sizeof *e);
    if (!e) return -1;
    sb->ent = e;
    sb->m = m;
    return 0;
}

/* Entries are pointers into the arena, so the arena may only grow while the
 * batch is empty. */
static int grow_arena_for_huge_record(sort_batch *sb, size_t need)
{
    uint8_t *a = realloc(sb->arena, need);
    if (!a) return -1;
    sb->arena = a;
    sb->cap = need;
    return 0;
}

int batch_add(sort_batch *sb, sort_order order, const bam1_t *b, uint64_t seq)
{
    size_t need = sort_key_max_len(order, b) + record_value_len(b);
    if (sb->used + need + (sb->n + 1) * sizeof(batch_entry) > sb->cap) {
        if (sb->n > 0) return 0;
        if (need > sb->cap && grow_arena_for_huge_record(sb, need) < 0) return -1;
    }
    if (sb->n == sb->m && grow_entries(sb) < 0) return -1;

    uint8_t *key = sb->arena + sb->used;
    size_t key_len = sort_key_encode(order, b, seq, key);
    record_value_pack(b, key + key_len);

    batch_entry *e = &sb->ent[sb->n++];
    e->key = key;
    e->key_len = (uint32_t)key_len;
    e->val_len = (uint32_t)record_value_len(b);
    e->k0 = load_be(key, key_len);
    e->k1 = key_len > 8 ? load_be(key + 8, key_len - 8) : 0;
    sb->used += key_len + e->val_len;
    return 1;
}

static int entry_cmp(const void *pa, const void *pb)
{
    const batch_entry *a = pa, *b = pb;
    if (a->k0 != b->k0) return a->k0 < b->k0 ? -1 : 1;
    if (a->k1 != b->k1) return a->k1 < b->k1 ? -1 : 1;
    size_t la = a->key_len, lb = b->key_len;
    size_t common = la < lb ? la : lb;
    if (common > 16) {
        int c = memcmp(a->key + 16, b->key + 16, common - 16);
        if (c) return c;
    }
    return la < lb ? -1 : la > lb;
}

void batch_sort(sort_batch *sb)
{
    qsort(sb->ent, sb->n, sizeof *sb->ent, entry_cmp);
}

void batch_clear(sort_batch *sb)
{
    sb->n = 0;
    sb->used = 0;
}

size_t batch_count(const sort_batch *sb) { return sb->n; }

size_t batch_bytes(const sort_batch *sb) { return sb->used; }

const uint8_t *batch_key(const sort_batch *sb, size_t i, size_t *len)
{
    *len = sb->ent[i].key_len;
    return sb->ent[i].key;
}

const uint8_t *batch_value(const sort_batch *sb, size_t i, size_t *len)
{
    *len = sb->ent[i].val_len;
    return sb->ent[i].key + sb->ent[i].key_len;
}
