/* sort_batch.c -- see sort_batch.h.
 *
 * Performance notes (the measurements are in bench/RESULTS.md, the reasons
 * in doc/DESIGN.md):
 *  - After sorting, the writer visits records in key order, i.e. at random
 *    places in a large arena; each first touch was a TLB and cache miss, a
 *    large share of all cycles.  The arena is asked for transparent huge
 *    pages and the writer prefetches a few records ahead (batch_prefetch).
 *    It fetches every line of a record, not only the first: the SST writer
 *    copies the whole record, and stalled on the lines not fetched.
 *  - glibc's qsort calls the comparator through a pointer; the merge sort
 *    below inlines it and decides nearly every comparison on integers.
 *  - Name keys: inline bytes from the key's start decided almost nothing,
 *    as names share their instrument prefix; the bytes after the batch's
 *    shared prefix decide most comparisons.  Loading them in a pass at sort
 *    time slowed coordinate sorts down; batch_add() now loads them while the
 *    key is in cache, and the pass runs only when a batch's prefix changes.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "sort_batch.h"
#include "record_codec.h"

#define HUGE_PAGE (2u << 20)
#define INSERTION_RUN 24
#define INLINE_KEY 24     /* key bytes held next to each record pointer */
#define FIRST_ENTRIES 4096
#define CACHE_LINE 64

/* A record in the arena: key length, value length, key, value. */
typedef struct {
    uint32_t key_len, val_len;
} rec_header;

/* 24 key bytes as big-endian integers decide most comparisons without
 * touching the arena.  They are taken after the prefix that every key of
 * the batch shares (the batch's skip): read names often share 10-30 bytes
 * (instrument, run, flowcell), which left a window at the start of the key
 * nothing to decide and sent nearly every name comparison to memcmp. */
typedef struct {
    uint64_t k[INLINE_KEY / 8];
    const uint8_t *rec;
} batch_entry;

struct sort_batch {
    uint8_t *arena;
    size_t used, cap;
    batch_entry *ent, *tmp;
    size_t n, m;
    size_t skip;    /* the inline keys start after this many key bytes */
    size_t shared;  /* bytes every key added so far shares with the first */
};

static uint8_t *arena_alloc(size_t size)
{
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, size) != 0) return NULL;
    madvise(p, size, MADV_HUGEPAGE);   /* a hint: fine if refused */
    return p;
}

sort_batch *batch_create(size_t capacity)
{
    sort_batch *sb = calloc(1, sizeof *sb);
    if (!sb) return NULL;
    sb->cap = capacity;
    sb->arena = arena_alloc(capacity);
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
    free(sb->tmp);
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
    size_t m = sb->m ? sb->m * 2 : FIRST_ENTRIES;
    batch_entry *e = realloc(sb->ent, m * sizeof *e);
    if (!e) return -1;
    sb->ent = e;
    batch_entry *t = realloc(sb->tmp, m * sizeof *t);
    if (!t) return -1;
    sb->tmp = t;
    sb->m = m;
    return 0;
}

/* Entries point into the arena, so it may only be replaced while empty. */
static int grow_arena_for_huge_record(sort_batch *sb, size_t need)
{
    uint8_t *a = arena_alloc(need);
    if (!a) return -1;
    free(sb->arena);
    sb->arena = a;
    sb->cap = need;
    return 0;
}

/* Bytes the batch holds: the arena plus both entry arrays. */
static size_t footprint(const sort_batch *sb, size_t extra_bytes, size_t extra_entries)
{
    return sb->used + extra_bytes + (sb->n + extra_entries) * 2 * sizeof(batch_entry);
}

/* The key bytes after skip, as big-endian integers (zero-padded). */
static void load_inline_key(batch_entry *e, const uint8_t *key, size_t len, size_t skip)
{
    size_t rest = len > skip ? len - skip : 0;
    key += skip;
    for (size_t w = 0; w < INLINE_KEY / 8; w++)
        e->k[w] = rest > 8 * w ? load_be(key + 8 * w, rest - 8 * w) : 0;
}

/* Records stay 8-byte aligned: headers and cores are read as integers. */
static inline size_t record_size(rec_header h)
{
    return (sizeof h + h.key_len + h.val_len + 7) & ~(size_t)7;
}

static inline rec_header header_of(const batch_entry *e)
{
    rec_header h;
    memcpy(&h, e->rec, sizeof h);
    return h;
}

static const uint8_t *entry_key(const batch_entry *e, size_t *len)
{
    *len = header_of(e).key_len;
    return e->rec + sizeof(rec_header);
}

/* Done while the new key is still in cache: a separate pass over the arena
 * at sort time made coordinate sorts markedly slower. */
static void track_shared_prefix(sort_batch *sb, const uint8_t *key, size_t len)
{
    if (sb->n == 0) {
        sb->shared = len;
        return;
    }
    size_t len0;
    const uint8_t *key0 = entry_key(&sb->ent[0], &len0);
    size_t limit = len < sb->shared ? len : sb->shared, same = 0;
    while (same < limit && key[same] == key0[same]) same++;
    sb->shared = same;
}

int batch_add(sort_batch *sb, const sort_spec *spec, bam1_t *b, uint64_t seq)
{
    size_t need = sizeof(rec_header) + sort_key_max_len(spec, b) + record_value_len(b);
    if (footprint(sb, need, 1) > sb->cap) {
        if (sb->n > 0) return 0;
        if (need > sb->cap && grow_arena_for_huge_record(sb, need) < 0) return -1;
    }
    if (sb->n == sb->m && grow_entries(sb) < 0) return -1;

    uint8_t *rec = sb->arena + sb->used;
    uint8_t *key = rec + sizeof(rec_header);
    rec_header h;
    h.key_len = (uint32_t)sort_key_encode(spec, b, seq, key);
    if (h.key_len == 0) return -2;
    sort_record_finish(spec, b);     /* keeps the value's length */
    h.val_len = (uint32_t)record_value_len(b);
    memcpy(rec, &h, sizeof h);
    record_value_pack(b, key + h.key_len);

    track_shared_prefix(sb, key, h.key_len);
    load_inline_key(&sb->ent[sb->n], key, h.key_len, sb->skip);
    sb->ent[sb->n++].rec = rec;
    sb->used += record_size(h);
    return 1;
}

/* Keys share their first skip bytes, so comparing what follows is enough. */
static inline int entry_less(const batch_entry *a, const batch_entry *b, size_t skip)
{
    if (a->k[0] != b->k[0]) return a->k[0] < b->k[0];
    if (a->k[1] != b->k[1]) return a->k[1] < b->k[1];
    if (a->k[2] != b->k[2]) return a->k[2] < b->k[2];
    size_t la = header_of(a).key_len, lb = header_of(b).key_len;
    size_t common = la < lb ? la : lb, seen = skip + INLINE_KEY;
    if (common > seen) {
        int c = memcmp(a->rec + sizeof(rec_header) + seen, b->rec + sizeof(rec_header) + seen,
                       common - seen);
        if (c) return c < 0;
    }
    return la < lb;
}

static void insertion_sort(batch_entry *e, size_t n, size_t skip)
{
    for (size_t i = 1; i < n; i++) {
        batch_entry x = e[i];
        size_t j = i;
        for (; j > 0 && entry_less(&x, &e[j - 1], skip); j--) e[j] = e[j - 1];
        e[j] = x;
    }
}

static void merge(const batch_entry *a, size_t na, const batch_entry *b, size_t nb,
                  batch_entry *out, size_t skip)
{
    size_t i = 0, j = 0, k = 0;
    /* Which side goes next is a coin toss for the branch predictor: select
     * it with arithmetic, and settle most pairs on the first inline word. */
    while (i < na && j < nb) {
        const batch_entry *x = &a[i], *y = &b[j];
        int take_b = y->k[0] != x->k[0] ? y->k[0] < x->k[0] : entry_less(y, x, skip);
        out[k++] = *(take_b ? y : x);
        j += take_b;
        i += !take_b;
    }
    while (i < na) out[k++] = a[i++];
    while (j < nb) out[k++] = b[j++];
}

/* The inline keys were loaded at batch_add() time, after the skip the
 * previous batch ended with: a guess that holds batch after batch, as
 * coordinate keys share nothing and names share their instrument prefix.
 * Only a wrong guess costs a pass over the arena. */
static void settle_inline_keys(sort_batch *sb)
{
    if (sb->n == 0 || sb->shared == sb->skip) return;
    sb->skip = sb->shared;
    for (size_t i = 0; i < sb->n; i++) {
        size_t len;
        const uint8_t *key = entry_key(&sb->ent[i], &len);
        load_inline_key(&sb->ent[i], key, len, sb->skip);
    }
}

/* Bottom-up merge sort: O(n log n) whatever the input order. */
void batch_sort(sort_batch *sb)
{
    size_t n = sb->n;
    settle_inline_keys(sb);
    size_t skip = sb->skip;
    for (size_t i = 0; i < n; i += INSERTION_RUN)
        insertion_sort(sb->ent + i, n - i < INSERTION_RUN ? n - i : INSERTION_RUN, skip);
    batch_entry *src = sb->ent, *dst = sb->tmp;
    for (size_t width = INSERTION_RUN; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            merge(src + lo, mid - lo, src + mid, hi - mid, dst + lo, skip);
        }
        batch_entry *t = src;
        src = dst;
        dst = t;
    }
    if (src != sb->ent) {
        sb->tmp = sb->ent;
        sb->ent = src;
    }
}

void batch_clear(sort_batch *sb)
{
    sb->n = 0;
    sb->used = 0;
}

size_t batch_count(const sort_batch *sb) { return sb->n; }

size_t batch_bytes(const sort_batch *sb) { return sb->used; }

/* The record's header comes first, from BATCH_PREFETCH_DISTANCE records
 * further on, so that its size is known, and in cache, when the rest is
 * fetched. */
void batch_prefetch(const sort_batch *sb, size_t i)
{
    if (i + BATCH_PREFETCH_DISTANCE < sb->n)
        __builtin_prefetch(sb->ent[i + BATCH_PREFETCH_DISTANCE].rec);
    if (i >= sb->n) return;
    const uint8_t *r = sb->ent[i].rec;
    const uint8_t *end = r + record_size(header_of(&sb->ent[i]));
    uintptr_t line = ((uintptr_t)r | (CACHE_LINE - 1)) + 1;
    for (; line < (uintptr_t)end; line += CACHE_LINE) __builtin_prefetch((const void *)line);
}

const uint8_t *batch_key(const sort_batch *sb, size_t i, size_t *len)
{
    return entry_key(&sb->ent[i], len);
}

const uint8_t *batch_value(const sort_batch *sb, size_t i, size_t *len)
{
    rec_header h = header_of(&sb->ent[i]);
    *len = h.val_len;
    return sb->ent[i].rec + sizeof(rec_header) + h.key_len;
}

/* ---- packed runs ---- */

struct packed_run {
    uint8_t *data;
    size_t size;
};

/* Plain pages, not the batch's huge ones: where first touches are slow, a
 * fresh huge page cost several times as much to touch first, and a packed
 * run is read in order, so the TLB has little to gain. */
packed_run *batch_pack(const sort_batch *sb)
{
    packed_run *pr = calloc(1, sizeof *pr);
    if (!pr) return NULL;
    pr->data = malloc(sb->used ? sb->used : 1);
    if (!pr->data) {
        free(pr);
        return NULL;
    }
    for (size_t i = 0; i < sb->n; i++) {
        batch_prefetch(sb, i + BATCH_PREFETCH_DISTANCE);
        size_t size = record_size(header_of(&sb->ent[i]));
        memcpy(pr->data + pr->size, sb->ent[i].rec, size);
        pr->size += size;
    }
    return pr;
}

void packed_destroy(packed_run *pr)
{
    if (!pr) return;
    free(pr->data);
    free(pr);
}

const uint8_t *packed_first(const packed_run *pr)
{
    return pr->size ? pr->data : NULL;
}

const uint8_t *packed_after(const uint8_t *rec)
{
    rec_header h;
    memcpy(&h, rec, sizeof h);
    return rec + record_size(h);
}

const uint8_t *packed_next(const packed_run *pr, const uint8_t *rec)
{
    rec = packed_after(rec);
    return rec < pr->data + pr->size ? rec : NULL;
}

const uint8_t *packed_key(const uint8_t *rec, size_t *len)
{
    rec_header h;
    memcpy(&h, rec, sizeof h);
    *len = h.key_len;
    return rec + sizeof h;
}

size_t packed_record_size(size_t key_len, size_t val_len)
{
    rec_header h = { (uint32_t)key_len, (uint32_t)val_len };
    return record_size(h);
}

void packed_put(uint8_t *dst, const uint8_t *key, size_t key_len,
                const uint8_t *val, size_t val_len)
{
    rec_header h = { (uint32_t)key_len, (uint32_t)val_len };
    memcpy(dst, &h, sizeof h);
    memcpy(dst + sizeof h, key, key_len);
    memcpy(dst + sizeof h + key_len, val, val_len);
}

const uint8_t *packed_value(const uint8_t *rec, size_t *len)
{
    rec_header h;
    memcpy(&h, rec, sizeof h);
    *len = h.val_len;
    return rec + sizeof h + h.key_len;
}
