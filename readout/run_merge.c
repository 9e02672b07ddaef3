/* readout/run_merge.c -- see readout/run_merge.h.
 *
 * A binary min-heap of sources (htslib's ksort.h heap, as samtools' own
 * merge uses), ordered by each source's current key, which every source
 * keeps at hand so that a comparison touches no source-specific code.  The
 * source whose value was handed out last is advanced only on the next
 * call, because a stream's value lives only until the stream moves.
 *
 * A feed of groups (readout/group_feed.h) stands in the heap as a sentinel keyed
 * by the first key of its next group.  When the sentinel comes first, no
 * record of that group or a later one can come before the group's first
 * record, so the group is opened there: a cursor over its records joins
 * the heap, and the sentinel moves on to the next group.  A group is given
 * back to its feed when its cursor is done.
 */
#include <stdlib.h>
#include <string.h>
#include <htslib/ksort.h>
#include "readout/run_merge.h"
#include "keys/key_bytes.h"
#include "util/grow_array.h"

typedef enum { FROM_STORE, FROM_BATCH, FROM_PACKED, FROM_FEED, FROM_GROUP } source_kind;

typedef struct {
    source_kind kind;
    const uint8_t *key;         /* the current key; NULL once the source is done */
    size_t klen;
    run_stream *stream;
    group_feed *feed;           /* FROM_FEED, and the feed a FROM_GROUP goes back to */
    fed_group *group;           /* FROM_GROUP: records [pos, end) of it are left */
    const batch *batch;
    size_t pos, end;
    const packed_run *packed;
    const uint8_t *rec;         /* the packed run's current record, NULL at its end */
    const uint8_t *rec_end;     /* where the slice ends, NULL: at the run's end */
} source;

/* ksort keeps the greatest element on top: "less" is "comes later".  Its
 * macros need the element type as one word. */
typedef source *source_ptr;
#define later(a, b) (key_cmp((b)->key, (b)->klen, (a)->key, (a)->klen) < 0)
KSORT_INIT_STATIC(merge, source_ptr, later)

struct run_merge {
    source *src;
    source **heap;      /* heap[0] holds the smallest key */
    size_t n_heap, heap_cap;
    source *last;       /* the source handed out by the previous call, or NULL */
    source **cursors;   /* FROM_GROUP sources, made as groups open */
    size_t n_cursors, cursors_cap;
    int failed;         /* out of memory opening a group */
};

/* Loads the source's current key, or NULL at its end. */
static void source_load(source *x)
{
    switch (x->kind) {
    case FROM_STORE:
        x->key = run_stream_valid(x->stream) ? run_stream_key(x->stream, &x->klen) : NULL;
        break;
    case FROM_BATCH:
        x->key = x->pos < x->end ? batch_key(x->batch, x->pos, &x->klen) : NULL;
        break;
    case FROM_PACKED:
        x->key = x->rec ? packed_key(x->rec, &x->klen) : NULL;
        break;
    case FROM_FEED:
        x->key = group_feed_peek(x->feed, &x->klen);
        break;
    case FROM_GROUP:
        x->key = x->pos < x->end ? group_key(&x->group->rec, x->pos, &x->klen) : NULL;
    }
}

static const uint8_t *source_value(const source *x, size_t *len)
{
    switch (x->kind) {
    case FROM_STORE: return run_stream_value(x->stream, len);
    case FROM_BATCH: return batch_value(x->batch, x->pos, len);
    case FROM_GROUP: return group_value(&x->group->rec, x->pos, len);
    default: return packed_value(x->rec, len);
    }
}

static void source_advance(source *x)
{
    switch (x->kind) {
    case FROM_STORE:
        run_stream_next(x->stream);
        break;
    case FROM_BATCH:
        x->pos++;
        /* Sorted order visits the arena at random: fetch ahead. */
        batch_prefetch(x->batch, x->pos + BATCH_PREFETCH_DISTANCE);
        break;
    case FROM_PACKED:
        x->rec = batch_packed_next(x->packed, x->rec);
        if (x->rec == x->rec_end) x->rec = NULL;
        break;
    case FROM_GROUP:
        x->pos++;
        break;
    case FROM_FEED:
        break;
    }
    source_load(x);
    if (!x->key && x->kind == FROM_GROUP) {
        group_feed_release(x->feed, x->group);
        x->group = NULL;
    }
}

/* A cursor for a group: a spare one, or a new one; NULL if out of memory. */
static source *new_cursor(run_merge *m)
{
    for (size_t i = 0; i < m->n_cursors; i++)
        if (!m->cursors[i]->group) return m->cursors[i];
    if (grow_array((void **)&m->cursors, &m->cursors_cap, m->n_cursors + 1, sizeof *m->cursors) < 0)
        return NULL;
    source *c = calloc(1, sizeof *c);
    if (c) m->cursors[m->n_cursors++] = c;
    return c;
}

static int heap_push(run_merge *m, source *x)
{
    if (grow_array((void **)&m->heap, &m->heap_cap, m->n_heap + 1, sizeof *m->heap) < 0)
        return -1;
    m->heap[m->n_heap++] = x;
    /* Groups open once per many records: rebuilding the heap is cheap. */
    ks_heapmake(merge, m->n_heap, m->heap);
    return 0;
}

/* The sentinel on top: its group opens, and it moves on to the next. */
static int open_group(run_merge *m)
{
    source *s = m->heap[0];
    fed_group *g = group_feed_take(s->feed);
    source_load(s);
    if (!s->key) m->heap[0] = m->heap[--m->n_heap];
    if (m->n_heap) ks_heapadjust(merge, 0, m->n_heap, m->heap);
    if (g->begin == g->end) {
        group_feed_release(s->feed, g);
        return 0;
    }
    source *c = new_cursor(m);
    if (!c) {
        group_feed_release(s->feed, g);
        return -1;
    }
    *c = (source){ .kind = FROM_GROUP, .feed = s->feed, .group = g, .pos = g->begin,
                   .end = g->end };
    source_load(c);
    return heap_push(m, c);
}

batch_slice run_merge_batch_whole(const batch *sb)
{
    return (batch_slice){ sb, 0, batch_count(sb) };
}

packed_slice run_merge_packed_whole(const packed_run *pr)
{
    return (packed_slice){ pr, batch_packed_first(pr), NULL };
}

run_merge *run_merge_open(run_stream *const *streams, int n_streams,
                          group_feed *const *feeds, int n_feeds,
                          const batch_slice *batches, int n_batches,
                          const packed_slice *packed, int n_packed)
{
    run_merge *m = calloc(1, sizeof *m);
    int n = n_streams + n_feeds + n_batches + n_packed;
    if (m) m->heap_cap = (size_t)n + 1;
    if (!m || !(m->src = calloc((size_t)n, sizeof *m->src))
           || !(m->heap = malloc(m->heap_cap * sizeof *m->heap))) {
        run_merge_close(m);
        return NULL;
    }
    for (int i = 0; i < n_streams; i++) {
        m->src[i].kind = FROM_STORE;
        m->src[i].stream = streams[i];
    }
    for (int i = 0; i < n_feeds; i++) {
        m->src[n_streams + i].kind = FROM_FEED;
        m->src[n_streams + i].feed = feeds[i];
    }
    n_streams += n_feeds;   /* the slots before the batches */
    for (int i = 0; i < n_batches; i++) {
        source *x = &m->src[n_streams + i];
        x->kind = FROM_BATCH;
        x->batch = batches[i].batch;
        x->pos = batches[i].begin;
        x->end = batches[i].end;
        batch_prefetch(x->batch, x->pos);
    }
    for (int i = 0; i < n_packed; i++) {
        source *x = &m->src[n_streams + n_batches + i];
        x->kind = FROM_PACKED;
        x->packed = packed[i].run;
        x->rec_end = packed[i].end;
        x->rec = packed[i].begin == x->rec_end ? NULL : packed[i].begin;
    }
    for (int s = 0; s < n; s++) {
        source_load(&m->src[s]);
        if (m->src[s].key) m->heap[m->n_heap++] = &m->src[s];
    }
    if (m->n_heap) ks_heapmake(merge, m->n_heap, m->heap);
    return m;
}

const uint8_t *run_merge_next(run_merge *m, size_t *vlen)
{
    if (m->last) {
        source_advance(m->last);
        if (!m->last->key) m->heap[0] = m->heap[--m->n_heap];
        if (m->n_heap) ks_heapadjust(merge, 0, m->n_heap, m->heap);
        m->last = NULL;
    }
    while (m->n_heap && m->heap[0]->kind == FROM_FEED)
        if (open_group(m) < 0) {
            m->failed = 1;
            return NULL;
        }
    if (m->n_heap == 0) return NULL;
    m->last = m->heap[0];
    return source_value(m->last, vlen);
}

const uint8_t *run_merge_key(const run_merge *m, size_t *klen)
{
    *klen = m->last->klen;
    return m->last->key;
}

int run_merge_failed(const run_merge *m)
{
    return m->failed;
}

void run_merge_close(run_merge *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->n_cursors; i++) free(m->cursors[i]);
    free(m->cursors);
    free(m->src);
    free(m->heap);
    free(m);
}
