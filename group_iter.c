/* group_iter.c -- see group_iter.h. */
#include <stdlib.h>
#include <string.h>
#include "group_iter.h"
#include <htslib/ksort.h>
#include "group_codec.h"
#include "key_bytes.h"

typedef struct {
    group_records rec;
    size_t at;                  /* the record due next */
} open_group;

struct group_iter {
    rocksdb_iterator_t *it;
    const uint8_t *lo, *hi;
    size_t lo_len, hi_len;
    open_group **heap;          /* min-heap by the due record's key */
    open_group **spare;         /* finished groups, reused for their buffers */
    size_t n, n_spare, cap;     /* cap: of both arrays */
    group_scratch scratch;
    const char *error;
};

static const uint8_t *due_key(const open_group *g, size_t *len)
{
    return group_key(&g->rec, g->at, len);
}

/* ksort keeps the greatest element on top: "less" is "due later". */
static int due_later(const open_group *a, const open_group *b)
{
    size_t al, bl;
    const uint8_t *ak = due_key(a, &al), *bk = due_key(b, &bl);
    return key_cmp(bk, bl, ak, al) < 0;
}
typedef open_group *open_group_ptr;     /* ksort's macros need one word */
KSORT_INIT_STATIC(groups, open_group_ptr, due_later)

static open_group *new_group(group_iter *gi)
{
    if (gi->n_spare) return gi->spare[--gi->n_spare];
    if (gi->n + 1 > gi->cap) {
        size_t cap = gi->cap ? 2 * gi->cap : 16;
        open_group **h = realloc(gi->heap, cap * sizeof *h);
        if (h) gi->heap = h;
        open_group **s = h ? realloc(gi->spare, cap * sizeof *s) : NULL;
        if (!s) return NULL;
        gi->spare = s;
        gi->cap = cap;
    }
    return calloc(1, sizeof(open_group));
}

static void open_next_group(group_iter *gi)
{
    size_t len;
    const uint8_t *blob = (const uint8_t *)rocksdb_iter_value(gi->it, &len);
    open_group *g = new_group(gi);
    if (!g) {
        gi->error = "out of memory while reading the temporary runs";
        return;
    }
    if (group_decode(blob, len, &g->rec, &gi->scratch) < 0 || !g->rec.n) {
        gi->spare[gi->n_spare++] = g;
        gi->error = "a temporary run is corrupt: a group of records does not decode";
        return;
    }
    g->at = 0;
    /* Groups open once per many records: rebuilding the heap is cheap. */
    gi->heap[gi->n++] = g;
    ks_heapmake(groups, gi->n, gi->heap);
    rocksdb_iter_next(gi->it);
}

/* Opens every group whose first key comes before the due record: no record
 * of a later group can then come before it. */
static void open_due_groups(group_iter *gi)
{
    while (!gi->error && rocksdb_iter_valid(gi->it)) {
        size_t kl, ml;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(gi->it, &kl);
        if (gi->n) {
            const uint8_t *due = due_key(gi->heap[0], &ml);
            if (key_cmp(k, kl, due, ml) > 0) return;
        }
        open_next_group(gi);
    }
}

static void advance(group_iter *gi)
{
    open_group *g = gi->heap[0];
    if (++g->at == g->rec.n) {
        gi->heap[0] = gi->heap[--gi->n];
        gi->spare[gi->n_spare++] = g;
    }
    if (gi->n) ks_heapadjust(groups, 0, gi->n, gi->heap);
    open_due_groups(gi);
}

group_iter *group_iter_create(rocksdb_iterator_t *it, const uint8_t *lo, size_t lo_len,
                              const uint8_t *hi, size_t hi_len)
{
    group_iter *gi = calloc(1, sizeof *gi);
    if (!gi) return NULL;
    *gi = (group_iter){ .it = it, .lo = lo, .lo_len = lo_len, .hi = hi, .hi_len = hi_len };
    return gi;
}

void group_iter_destroy(group_iter *gi)
{
    if (!gi) return;
    for (size_t i = 0; i < gi->n; i++) group_records_free(&gi->heap[i]->rec), free(gi->heap[i]);
    for (size_t i = 0; i < gi->n_spare; i++) group_records_free(&gi->spare[i]->rec), free(gi->spare[i]);
    free(gi->heap);
    free(gi->spare);
    free(gi->scratch.p);
    free(gi);
}

void group_iter_first(group_iter *gi)
{
    rocksdb_iter_seek_to_first(gi->it);
    open_due_groups(gi);
    size_t kl;
    while (gi->lo && !gi->error && gi->n) {
        const uint8_t *k = due_key(gi->heap[0], &kl);
        if (key_cmp(k, kl, gi->lo, gi->lo_len) >= 0) break;
        advance(gi);
    }
}

int group_iter_valid(const group_iter *gi)
{
    if (gi->error || !gi->n) return 0;
    size_t kl;
    const uint8_t *k = due_key(gi->heap[0], &kl);
    return !gi->hi || key_cmp(k, kl, gi->hi, gi->hi_len) < 0;
}

const uint8_t *group_iter_key(const group_iter *gi, size_t *len)
{
    return due_key(gi->heap[0], len);
}

const uint8_t *group_iter_value(const group_iter *gi, size_t *len)
{
    return group_value(&gi->heap[0]->rec, gi->heap[0]->at, len);
}

void group_iter_next(group_iter *gi) { advance(gi); }

int group_iter_status(const group_iter *gi, errmsg *err)
{
    return gi->error ? errmsg_set(err, "%s", gi->error) : 0;
}
