/* load/batch_sort.c -- batch_sort(): orders a batch's entries by whole key
 * (memcmp, then shorter first), the order of RocksDB's bytewise comparator.
 *
 * A merge sort compares the entries' inline words only: integers, no arena
 * access.  Entries left with equal words (a tie group) agree on the key
 * bytes the words hold, so each group is then ordered by the bytes that
 * follow, a window at a time: one arena access per entry and level, in a
 * pass that can fetch ahead, instead of one per comparison, which a merge
 * cannot fetch ahead (the next comparison depends on this one).  Keys are
 * unique in practice (they end with the input number), so the sort need
 * not be stable; equal keys are equal bytes, in any order.
 *
 * Not glibc's qsort: it calls the comparator through a pointer, where the
 * merge sort below inlines it.
 */
#include <stdlib.h>
#include <string.h>
#include "load/batch_internal.h"
#include "load/batch_sort.h"

#define INSERTION_RUN 24

/* a's inline words before b's. */
static inline int window_less(const batch_entry *a, const batch_entry *b)
{
    if (a->k[0] != b->k[0]) return a->k[0] < b->k[0];
    if (a->k[1] != b->k[1]) return a->k[1] < b->k[1];
    return a->k[2] < b->k[2];
}

static inline int window_equal(const batch_entry *a, const batch_entry *b)
{
    return ((a->k[0] ^ b->k[0]) | (a->k[1] ^ b->k[1]) | (a->k[2] ^ b->k[2])) == 0;
}

/* Whole-key order (memcmp, then shorter first) of two keys known to agree
 * on their first from bytes, zero padded. */
static int key_less_from(const batch_entry *a, const batch_entry *b, size_t from)
{
    size_t la, lb;
    const uint8_t *ka = entry_key(a, &la), *kb = entry_key(b, &lb);
    size_t common = la < lb ? la : lb;
    if (common > from) {
        int c = memcmp(ka + from, kb + from, common - from);
        if (c) return c < 0;
    }
    return la < lb;
}

static void insertion_sort(batch_entry *e, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        batch_entry x = e[i];
        size_t j = i;
        for (; j > 0 && window_less(&x, &e[j - 1]); j--) e[j] = e[j - 1];
        e[j] = x;
    }
}

/* For tie groups too small to be worth a pass of their own. */
static void insertion_sort_from(batch_entry *e, size_t n, size_t from)
{
    for (size_t i = 1; i < n; i++) {
        batch_entry x = e[i];
        size_t j = i;
        for (; j > 0 && key_less_from(&x, &e[j - 1], from); j--) e[j] = e[j - 1];
        e[j] = x;
    }
}

static void merge(const batch_entry *a, size_t na, const batch_entry *b, size_t nb,
                  batch_entry *out)
{
    size_t i = 0, j = 0, k = 0;
    /* Which side goes next is a coin toss for the branch predictor: select
     * it with arithmetic. */
    while (i < na && j < nb) {
        const batch_entry *x = &a[i], *y = &b[j];
        int take_b = window_less(y, x);
        out[k++] = *(take_b ? y : x);
        j += take_b;
        i += !take_b;
    }
    while (i < na) out[k++] = a[i++];
    while (j < nb) out[k++] = b[j++];
}

/* Bottom-up merge sort of e[0..n) by inline words, tmp as scratch: O(n log n)
 * whatever the input order.  Returns where the sorted entries are, e or tmp. */
static batch_entry *window_sort(batch_entry *e, batch_entry *tmp, size_t n)
{
    for (size_t i = 0; i < n; i += INSERTION_RUN)
        insertion_sort(e + i, n - i < INSERTION_RUN ? n - i : INSERTION_RUN);
    batch_entry *src = e, *dst = tmp;
    for (size_t width = INSERTION_RUN; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            merge(src + lo, mid - lo, src + mid, hi - mid, dst + lo);
        }
        batch_entry *t = src;
        src = dst;
        dst = t;
    }
    return src;
}

/* The header and the key bytes from depth on (a hint: never faults). */
static inline void prefetch_key(const batch_entry *e, size_t depth)
{
    __builtin_prefetch(e->rec);
    __builtin_prefetch((const void *)((uintptr_t)e->rec + sizeof(packed_header) + depth));
}

/* Tie groups waiting for their next window: a part of sb->ties. */
typedef struct {
    tie_group *g;
    size_t n;
} tie_stack;

/* Entries e[0..n), sorted by inline words that hold key bytes [depth,
 * depth + INLINE_KEY): sorts each run of equal words, small runs on the
 * spot, larger ones pushed for the next window. */
static void split_ties(batch *sb, tie_stack *ties, size_t base, size_t n, size_t depth)
{
    const batch_entry *e = sb->ent + base;
    size_t next = depth + INLINE_KEY, lo = 0;
    for (size_t i = 1; i <= n; i++) {
        /* The few entries that tie are fetched ahead of their turn. */
        size_t ahead = i + BATCH_PREFETCH_DISTANCE;
        if (ahead < n && window_equal(&e[ahead], &e[ahead - 1])) {
            prefetch_key(&e[ahead], next);
            prefetch_key(&e[ahead - 1], next);
        }
        if (i < n && window_equal(&e[i], &e[lo])) continue;
        if (i - lo > SMALL_TIE)
            ties->g[ties->n++] = (tie_group){ base + lo, base + i, next };
        else if (i - lo > 1)
            insertion_sort_from(sb->ent + base + lo, i - lo, next);
        lo = i;
    }
}

/* Loads the group's next window; returns 0 if every key ended before it
 * (then the keys are prefixes of one another and the inline words hold
 * their lengths, shorter first). */
static int load_next_window(batch_entry *e, size_t n, size_t depth)
{
    size_t longest = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + BATCH_PREFETCH_DISTANCE < n) prefetch_key(&e[i + BATCH_PREFETCH_DISTANCE], depth);
        size_t len;
        const uint8_t *key = entry_key(&e[i], &len);
        load_inline_key(&e[i], key, len, depth);
        longest = len > longest ? len : longest;
    }
    if (longest > depth) return 1;
    for (size_t i = 0; i < n; i++) {
        e[i].k[0] = header_of(&e[i]).key_len;
        e[i].k[1] = e[i].k[2] = 0;
    }
    return 0;
}

static void sort_range(batch *sb, size_t lo, size_t hi)
{
    batch_entry *out = window_sort(sb->ent + lo, sb->tmp + lo, hi - lo);
    if (out != sb->ent + lo) memcpy(sb->ent + lo, out, (hi - lo) * sizeof *out);
}

/* Orders entries [lo, hi), sorted by their first window, by whole key:
 * the tie groups they hold go on `ties`, which has room for them. */
static void resolve_ties(batch *sb, tie_group *room, size_t lo, size_t hi)
{
    tie_stack ties = { room, 0 };
    split_ties(sb, &ties, lo, hi - lo, sb->skip);
    while (ties.n > 0) {
        tie_group g = ties.g[--ties.n];
        int more = load_next_window(sb->ent + g.lo, g.hi - g.lo, g.depth);
        sort_range(sb, g.lo, g.hi);
        if (more) split_ties(sb, &ties, g.lo, g.hi - g.lo, g.depth);
    }
}

/* Keys of one length that end inside the window cannot tie. */
static int may_tie(const batch *sb)
{
    return !(sb->longest <= sb->skip + INLINE_KEY && sb->shortest == sb->longest);
}

/* The inline keys were loaded at batch_add() time, after the skip the
 * previous batch ended with: a guess that holds batch after batch, as
 * coordinate keys share nothing and names share their instrument prefix.
 * Only a wrong guess costs a pass over the arena. */
static void settle_inline_keys(batch *sb)
{
    if (sb->n == 0 || sb->shared == sb->skip) return;
    sb->skip = sb->shared;
    for (size_t i = 0; i < sb->n; i++) {
        size_t len;
        const uint8_t *key = entry_key(&sb->ent[i], &len);
        load_inline_key(&sb->ent[i], key, len, sb->skip);
    }
}

void batch_sort(batch *sb)
{
    settle_inline_keys(sb);
    batch_entry *out = window_sort(sb->ent, sb->tmp, sb->n);
    if (out != sb->ent) {
        sb->tmp = sb->ent;
        sb->ent = out;
    }
    if (may_tie(sb)) resolve_ties(sb, sb->ties, 0, sb->n);
}

/* ---- the same sort in parts, run by other threads ---- */

typedef struct {
    batch *sb;
    int parts;
    size_t cut[BATCH_MAX_PARTS + 1];    /* part i is entries [cut[i], cut[i + 1]) */
    size_t width;                       /* parts per sorted range, this merge round */
    batch_entry *src, *dst;
} parts_sort;

static void sort_part(void *arg, int i)
{
    parts_sort *ps = arg;
    sort_range(ps->sb, ps->cut[i], ps->cut[i + 1]);
}

/* Merges the round's i-th pair of sorted ranges into dst (a range without
 * a partner is copied). */
static void merge_pair(void *arg, int i)
{
    parts_sort *ps = arg;
    size_t p = (size_t)ps->parts, a = 2 * (size_t)i * ps->width;
    size_t b = a + ps->width < p ? a + ps->width : p;
    size_t c = a + 2 * ps->width < p ? a + 2 * ps->width : p;
    size_t lo = ps->cut[a], mid = ps->cut[b], hi = ps->cut[c];
    merge(ps->src + lo, mid - lo, ps->src + mid, hi - mid, ps->dst + lo);
}

/* Each part's tie groups take room from sb->ties after those of the parts
 * before it: a part of m entries has at most m / (SMALL_TIE + 1) pending
 * at once, so part i's room starts at cut[i] / (SMALL_TIE + 1) + i. */
static void resolve_part(void *arg, int i)
{
    parts_sort *ps = arg;
    size_t lo = ps->cut[i], hi = ps->cut[i + 1];
    resolve_ties(ps->sb, ps->sb->ties + lo / (SMALL_TIE + 1) + (size_t)i, lo, hi);
}

/* Moves the cuts to where the first window changes, so that no tie group
 * is split between two parts. */
static void cut_at_windows(parts_sort *ps)
{
    const batch_entry *e = ps->sb->ent;
    size_t n = ps->sb->n;
    for (int i = 1; i < ps->parts; i++) {
        size_t c = ps->cut[i] > ps->cut[i - 1] ? ps->cut[i] : ps->cut[i - 1];
        while (c > 0 && c < n && window_equal(&e[c], &e[c - 1])) c++;
        ps->cut[i] = c;
    }
}

void batch_sort_parallel(batch *sb, batch_runner run, void *ctx, int parts)
{
    if (parts > BATCH_MAX_PARTS) parts = BATCH_MAX_PARTS;
    if ((size_t)parts > sb->n) parts = (int)sb->n;
    if (parts < 2 || !run) {
        batch_sort(sb);
        return;
    }
    settle_inline_keys(sb);
    parts_sort ps = { .sb = sb, .parts = parts };
    for (int i = 0; i <= parts; i++) ps.cut[i] = sb->n * (size_t)i / (size_t)parts;
    run(ctx, parts, sort_part, &ps);
    ps.src = sb->ent;
    ps.dst = sb->tmp;
    for (ps.width = 1; ps.width < (size_t)parts; ps.width *= 2) {
        run(ctx, (int)(((size_t)parts + 2 * ps.width - 1) / (2 * ps.width)), merge_pair, &ps);
        batch_entry *t = ps.src;
        ps.src = ps.dst;
        ps.dst = t;
    }
    if (ps.src != sb->ent) {
        sb->tmp = sb->ent;
        sb->ent = ps.src;
    }
    if (!may_tie(sb)) return;
    cut_at_windows(&ps);
    run(ctx, parts, resolve_part, &ps);
}
