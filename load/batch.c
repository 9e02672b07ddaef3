/* load/batch.c -- see load/batch.h; the sort itself is in load/batch_sort.c.
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
 *  - batch_add() loads each entry's inline key bytes while the key is in
 *    cache: a pass over the arena at sort time slowed coordinate sorts down.
 *    The pass runs only when a batch's shared prefix changes.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "load/batch_internal.h"
#include "keys/key_bytes.h"
#include "codec/record.h"

#define HUGE_PAGE (2u << 20)
#define FIRST_ENTRIES 4096  /* entry slots a new batch starts with */
#define CACHE_LINE 64

static uint8_t *arena_alloc(size_t size)
{
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, size) != 0) return NULL;
    madvise(p, size, MADV_HUGEPAGE);   /* a hint: fine if refused */
    return p;
}

batch *batch_create(size_t capacity)
{
    batch *sb = calloc(1, sizeof *sb);
    if (!sb) return NULL;
    sb->cap = capacity;
    sb->arena = arena_alloc(capacity);
    if (!sb->arena) {
        free(sb);
        return NULL;
    }
    return sb;
}

void batch_destroy(batch *sb)
{
    if (!sb) return;
    free(sb->arena);
    free(sb->ent);
    free(sb->tmp);
    free(sb->ties);
    free(sb);
}

/* Twice the entries in both arrays and their tie groups; after
 * batch_drop_scratch() (m is 0) the first FIRST_ENTRIES again. */
static int grow_entries(batch *sb)
{
    size_t m = sb->m ? sb->m * 2 : FIRST_ENTRIES;
    batch_entry *e = realloc(sb->ent, m * sizeof *e);
    if (!e) return -1;
    sb->ent = e;
    batch_entry *t = realloc(sb->tmp, m * sizeof *t);
    if (!t) return -1;
    sb->tmp = t;
    tie_group *g = realloc(sb->ties, (batch_max_ties(m) + BATCH_MAX_PARTS) * sizeof *g);
    if (!g) return -1;
    sb->ties = g;
    sb->m = m;
    return 0;
}

/* Entries point into the arena, so it may only be replaced while empty. */
static int grow_arena_for_huge_record(batch *sb, size_t need)
{
    uint8_t *a = arena_alloc(need);
    if (!a) return -1;
    free(sb->arena);
    sb->arena = a;
    sb->cap = need;
    sb->claimed = 0;
    sb->written = 0;
    return 0;
}

/* Bytes the batch holds: the arena, both entry arrays and the tie groups. */
static size_t footprint(const batch *sb, size_t extra_bytes, size_t extra_entries)
{
    size_t n = sb->n + extra_entries;
    return sb->used + extra_bytes + n * 2 * sizeof(batch_entry) +
           batch_max_ties(n) * sizeof(tie_group);
}

/* Records stay 8-byte aligned: headers and cores are read as integers. */
static inline size_t record_size(packed_header h)
{
    return packed_record_size(h.key_len, h.val_len);
}

/* The shared prefix and the range of key lengths, which batch_sort() uses.
 * Done while the new key is still in cache: a separate pass over the arena
 * at sort time made coordinate sorts markedly slower. */
static void track_keys(batch *sb, const uint8_t *key, size_t len)
{
    if (sb->n == 0) {
        sb->shared = sb->shortest = sb->longest = len;
        return;
    }
    sb->shortest = len < sb->shortest ? len : sb->shortest;
    sb->longest = len > sb->longest ? len : sb->longest;
    size_t len0;
    const uint8_t *key0 = entry_key(&sb->ent[0], &len0);
    size_t limit = len < sb->shared ? len : sb->shared, same = 0;
    while (same < limit && key[same] == key0[same]) same++;
    sb->shared = same;
}

int batch_make_room(batch *sb, size_t need)
{
    if (footprint(sb, need, 1) > sb->cap) {
        if (sb->n > 0) return 0;
        if (need > sb->cap && grow_arena_for_huge_record(sb, need) < 0) return -1;
    }
    if (sb->n == sb->m && grow_entries(sb) < 0) return -1;
    return 1;
}

void batch_enter_record(batch *sb)
{
    uint8_t *rec = sb->arena + sb->used;
    packed_header h = packed_header_of(rec);
    const uint8_t *key = rec + sizeof h;
    track_keys(sb, key, h.key_len);
    load_inline_key(&sb->ent[sb->n], key, h.key_len, sb->skip);
    sb->ent[sb->n++].rec = rec;
    sb->used += record_size(h);
}

int batch_add(batch *sb, const sort_spec *spec, bam1_t *b, uint64_t seq, errmsg *err)
{
    /* Padding included: a replaced arena is exactly this large, and the
     * record's padding is copied with it (batch_pack()). */
    size_t need = packed_record_size(sort_key_max_len(spec, b), record_value_len(b));
    int room = batch_make_room(sb, need);
    if (room < 0) return errmsg_set(err, "out of memory");
    if (room == 0) return 0;
    uint8_t *rec = sb->arena + sb->used;
    uint8_t *key = rec + sizeof(packed_header);
    packed_header h;
    h.key_len = (uint32_t)sort_key_encode(spec, b, seq, key);
    if (h.key_len == 0)
        return errmsg_set(err, "read '%s' %s", bam_get_qname(b), sort_key_error(spec, b));
    sort_key_record_finish(spec, b);     /* keeps the value's length */
    h.val_len = (uint32_t)record_value_len(b);
    memcpy(rec, &h, sizeof h);
    record_value_pack(b, key + h.key_len);
    batch_enter_record(sb);
    return 1;
}

int batch_reserve(batch *sb, const uint8_t *key, size_t key_len, size_t val_len, int settled,
                  batch_place_at *at)
{
    size_t need = packed_record_size(key_len, val_len);
    /* batch_make_room() would grow the entries: not under a running job. */
    if (sb->n == sb->m && !settled && footprint(sb, need, 1) <= sb->cap) return BATCH_UNSETTLED;
    int room = batch_make_room(sb, need);
    if (room <= 0) return room;
    track_keys(sb, key, key_len);
    *at = (batch_place_at){ sb->n++, sb->arena + sb->used };
    sb->used += need;
    return 1;
}

void batch_place_run(batch *sb, batch_place_at at, const uint8_t *src, size_t bytes, size_t n)
{
    memcpy(at.rec, src, bytes);
    const uint8_t *rec = at.rec;
    for (size_t i = 0; i < n; i++) {
        packed_header h = packed_header_of(rec);
        batch_entry *e = &sb->ent[at.index + i];
        load_inline_key(e, rec + sizeof h, h.key_len, sb->skip);
        e->rec = rec;
        rec += record_size(h);
    }
}

int batch_reserve_span(batch *sb, const uint32_t *need, size_t n, int settled, batch_span *span)
{
    size_t k = 0, bytes = 0;
    while (k < n && footprint(sb, bytes + need[k], k + 1) <= sb->cap) bytes += need[k++];
    if (k == 0 && n > 0) {
        if (sb->n > 0) return 0;
        if (need[0] > sb->cap && grow_arena_for_huge_record(sb, need[0]) < 0) return -1;
        k = 1;
        bytes = need[0];
    }
    if (sb->n + k > sb->m) {
        if (!settled) return BATCH_UNSETTLED;
        while (sb->n + k > sb->m)
            if (grow_entries(sb) < 0) return -1;
    }
    *span = (batch_span){ { sb->n, sb->arena + sb->used }, k, bytes };
    sb->n += k;
    sb->used += bytes;
    return 1;
}

void batch_place_entry(batch *sb, size_t index, const uint8_t *rec)
{
    packed_header h = packed_header_of(rec);
    batch_entry *e = &sb->ent[index];
    load_inline_key(e, rec + sizeof h, h.key_len, sb->skip);
    e->rec = rec;
}

void batch_span_keys(batch *sb, size_t index, size_t shared, size_t shortest, size_t longest)
{
    if (index == 0) {
        sb->shared = shared;
        sb->shortest = shortest;
        sb->longest = longest;
        return;
    }
    sb->shortest = shortest < sb->shortest ? shortest : sb->shortest;
    sb->longest = longest > sb->longest ? longest : sb->longest;
    /* Every key shares with the batch's first key at least what the span's
     * first shares with it and with them, and no more. */
    size_t len0, len;
    const uint8_t *key0 = entry_key(&sb->ent[0], &len0), *key = entry_key(&sb->ent[index], &len);
    size_t limit = shared < sb->shared ? shared : sb->shared, same = 0;
    while (same < limit && key[same] == key0[same]) same++;
    sb->shared = same;
}

int batch_warm(const batch *sb, size_t need)
{
    return sb->n > 0 && sb->used + need <= sb->written;
}

batch_memory batch_claim_ahead(batch *sb, size_t upto, size_t most)
{
    size_t from = sb->claimed, to = upto < sb->cap ? upto : sb->cap;
    if (to <= from) return (batch_memory){ NULL, 0 };
    if (to - from > most) to = from + most;
    sb->claimed = to;
    return (batch_memory){ sb->arena + from, to - from };
}

void batch_prefault(batch_memory m)
{
#ifdef MADV_POPULATE_WRITE
    /* madvise() takes whole pages: the partial ones at the ends are left. */
    uintptr_t page = 4096, lo = ((uintptr_t)m.p + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)m.p + m.len) & ~(page - 1);
    if (lo < hi) madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)m;
#endif
}

void batch_clear(batch *sb)
{
    if (sb->used > sb->written) sb->written = sb->used;
    sb->n = 0;
    sb->used = 0;
}

/* The scratch is as large as the entries: for small records a fifth of
 * the batch, dead once it is sorted.  No room is left for entries, so the
 * first record after batch_clear() grows both arrays anew, and the
 * per-record test stays the one it was. */
void batch_drop_scratch(batch *sb)
{
    free(sb->tmp);
    free(sb->ties);
    sb->tmp = NULL;
    sb->ties = NULL;
    sb->m = 0;
}

size_t batch_count(const batch *sb) { return sb->n; }

size_t batch_index_bytes(const batch *sb) { return sb->n * sizeof(batch_entry); }

size_t batch_bytes(const batch *sb) { return sb->used; }

/* The record's header comes first, from BATCH_PREFETCH_DISTANCE records
 * further on, so that its size is known, and in cache, when the rest is
 * fetched. */
void batch_prefetch(const batch *sb, size_t i)
{
    if (i + BATCH_PREFETCH_DISTANCE < sb->n)
        __builtin_prefetch(sb->ent[i + BATCH_PREFETCH_DISTANCE].rec);
    if (i >= sb->n) return;
    const uint8_t *r = sb->ent[i].rec;
    const uint8_t *end = r + record_size(header_of(&sb->ent[i]));
    uintptr_t line = ((uintptr_t)r | (CACHE_LINE - 1)) + 1;
    for (; line < (uintptr_t)end; line += CACHE_LINE) __builtin_prefetch((const void *)line);
}

const uint8_t *batch_key(const batch *sb, size_t i, size_t *len)
{
    return entry_key(&sb->ent[i], len);
}

const uint8_t *batch_value(const batch *sb, size_t i, size_t *len)
{
    packed_header h = header_of(&sb->ent[i]);
    *len = h.val_len;
    return sb->ent[i].rec + sizeof(packed_header) + h.key_len;
}

/* ---- packed runs ---- */

struct packed_run {
    uint8_t *data;
    size_t size;
    size_t *marks;      /* offsets of every PACKED_MARK_EVERY-th record */
    size_t n_marks;
};

/* Plain pages, not the batch's huge ones: where first touches are slow, a
 * fresh huge page cost several times as much to touch first, and a packed
 * run is read in order, so the TLB has little to gain. */
packed_run *batch_pack(const batch *sb)
{
    packed_run *pr = calloc(1, sizeof *pr);
    if (!pr) return NULL;
    pr->data = malloc(sb->used ? sb->used : 1);
    pr->marks = malloc((sb->n / PACKED_MARK_EVERY + 1) * sizeof *pr->marks);
    if (!pr->data || !pr->marks) {
        batch_packed_destroy(pr);
        return NULL;
    }
    for (size_t i = 0; i < sb->n; i++) {
        batch_prefetch(sb, i + BATCH_PREFETCH_DISTANCE);
        if (i % PACKED_MARK_EVERY == 0) pr->marks[pr->n_marks++] = pr->size;
        size_t size = record_size(header_of(&sb->ent[i]));
        memcpy(pr->data + pr->size, sb->ent[i].rec, size);
        pr->size += size;
    }
    return pr;
}

/* ---- the same copy in parts, on other threads ---- */

typedef struct {
    const batch *sb;
    packed_run *pr;
    size_t cut[BATCH_MAX_PARTS + 1];    /* part i copies entries [cut[i], cut[i + 1]) */
    size_t at[BATCH_MAX_PARTS + 1];     /* ... to data + at[i] */
} pack_parts;

static void size_part(void *arg, int i)
{
    pack_parts *pp = arg;
    size_t bytes = 0;
    for (size_t e = pp->cut[i]; e < pp->cut[i + 1]; e++) {
        if (e + BATCH_PREFETCH_DISTANCE < pp->cut[i + 1])
            __builtin_prefetch(pp->sb->ent[e + BATCH_PREFETCH_DISTANCE].rec);
        bytes += record_size(header_of(&pp->sb->ent[e]));
    }
    pp->at[i + 1] = bytes;
}

static void copy_part(void *arg, int i)
{
    pack_parts *pp = arg;
    const batch *sb = pp->sb;
    size_t at = pp->at[i];
    for (size_t e = pp->cut[i]; e < pp->cut[i + 1]; e++) {
        batch_prefetch(sb, e + BATCH_PREFETCH_DISTANCE);
        if (e % PACKED_MARK_EVERY == 0) pp->pr->marks[e / PACKED_MARK_EVERY] = at;
        size_t size = record_size(header_of(&sb->ent[e]));
        memcpy(pp->pr->data + at, sb->ent[e].rec, size);
        at += size;
    }
}

packed_run *batch_pack_parallel(const batch *sb, batch_runner run, void *ctx, int parts)
{
    if (parts > BATCH_MAX_PARTS) parts = BATCH_MAX_PARTS;
    if ((size_t)parts > sb->n) parts = (int)sb->n;
    if (parts < 2 || !run) return batch_pack(sb);
    pack_parts pp = { .sb = sb };
    pp.pr = calloc(1, sizeof *pp.pr);
    if (!pp.pr) return NULL;
    pp.pr->data = malloc(sb->used ? sb->used : 1);
    pp.pr->marks = malloc((sb->n / PACKED_MARK_EVERY + 1) * sizeof *pp.pr->marks);
    if (!pp.pr->data || !pp.pr->marks) {
        batch_packed_destroy(pp.pr);
        return NULL;
    }
    for (int i = 0; i <= parts; i++) pp.cut[i] = sb->n * (size_t)i / (size_t)parts;
    run(ctx, parts, size_part, &pp);
    for (int i = 0; i < parts; i++) pp.at[i + 1] += pp.at[i];
    run(ctx, parts, copy_part, &pp);
    pp.pr->size = pp.at[parts];
    pp.pr->n_marks = (sb->n + PACKED_MARK_EVERY - 1) / PACKED_MARK_EVERY;
    return pp.pr;
}

void batch_packed_destroy(packed_run *pr)
{
    if (!pr) return;
    free(pr->data);
    free(pr->marks);
    free(pr);
}

const uint8_t *batch_packed_first(const packed_run *pr)
{
    return pr->size ? pr->data : NULL;
}

const uint8_t *batch_packed_next(const packed_run *pr, const uint8_t *rec)
{
    rec = packed_after(rec);
    return rec < pr->data + pr->size ? rec : NULL;
}

size_t batch_seek(const batch *sb, const uint8_t *key, size_t len)
{
    size_t lo = 0, hi = sb->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, klen;
        const uint8_t *k = entry_key(&sb->ent[mid], &klen);
        if (key_cmp(k, klen, key, len) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

size_t batch_packed_marks(const packed_run *pr) { return pr->n_marks; }

const uint8_t *batch_packed_mark(const packed_run *pr, size_t i)
{
    return pr->data + pr->marks[i];
}

static int packed_below(const uint8_t *rec, const uint8_t *key, size_t len)
{
    size_t klen;
    const uint8_t *k = packed_key(rec, &klen);
    return key_cmp(k, klen, key, len) < 0;
}

/* The marks narrow the search to PACKED_MARK_EVERY records, walked in order. */
const uint8_t *batch_packed_seek(const packed_run *pr, const uint8_t *key, size_t len)
{
    size_t lo = 0, hi = pr->n_marks;    /* marks [0, lo) are below key */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (packed_below(batch_packed_mark(pr, mid), key, len)) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return batch_packed_first(pr);
    const uint8_t *rec = batch_packed_mark(pr, lo - 1);
    while (rec && packed_below(rec, key, len)) rec = batch_packed_next(pr, rec);
    return rec;
}
