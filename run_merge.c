/* run_merge.c -- see run_merge.h.
 *
 * A binary min-heap of sources (htslib's ksort.h heap, as samtools' own
 * merge uses), ordered by each source's current key, which every source
 * keeps at hand so that a comparison touches no source-specific code.  The
 * source whose value was handed out last is advanced only on the next
 * call, because a stream's value lives only until the stream moves.
 */
#include <stdlib.h>
#include <string.h>
#include <htslib/ksort.h>
#include "run_merge.h"
#include "key_bytes.h"

typedef enum { FROM_STORE, FROM_BATCH, FROM_PACKED } source_kind;

typedef struct {
    source_kind kind;
    const uint8_t *key;         /* the current key; NULL once the source is done */
    size_t klen;
    store_stream *stream;
    const sort_batch *batch;
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
    source **heap;  /* heap[0] holds the smallest key */
    size_t n_heap;
    source *last;   /* the source handed out by the previous call, or NULL */
};

/* Loads the source's current key, or NULL at its end. */
static void source_load(source *x)
{
    switch (x->kind) {
    case FROM_STORE:
        x->key = stream_valid(x->stream) ? stream_key(x->stream, &x->klen) : NULL;
        break;
    case FROM_BATCH:
        x->key = x->pos < x->end ? batch_key(x->batch, x->pos, &x->klen) : NULL;
        break;
    default:
        x->key = x->rec ? packed_key(x->rec, &x->klen) : NULL;
    }
}

static const uint8_t *source_value(const source *x, size_t *len)
{
    switch (x->kind) {
    case FROM_STORE: return stream_value(x->stream, len);
    case FROM_BATCH: return batch_value(x->batch, x->pos, len);
    default: return packed_value(x->rec, len);
    }
}

static void source_advance(source *x)
{
    switch (x->kind) {
    case FROM_STORE:
        stream_next(x->stream);
        break;
    case FROM_BATCH:
        x->pos++;
        /* Sorted order visits the arena at random: fetch ahead. */
        batch_prefetch(x->batch, x->pos + BATCH_PREFETCH_DISTANCE);
        break;
    default:
        x->rec = packed_next(x->packed, x->rec);
        if (x->rec == x->rec_end) x->rec = NULL;
    }
    source_load(x);
}

batch_slice batch_whole(const sort_batch *sb)
{
    return (batch_slice){ sb, 0, batch_count(sb) };
}

packed_slice packed_whole(const packed_run *pr)
{
    return (packed_slice){ pr, packed_first(pr), NULL };
}

run_merge *merge_open(store_stream *const *streams, int n_streams,
                      const batch_slice *batches, int n_batches,
                      const packed_slice *packed, int n_packed)
{
    run_merge *m = calloc(1, sizeof *m);
    int n = n_streams + n_batches + n_packed;
    if (!m || !(m->src = calloc((size_t)n, sizeof *m->src))
           || !(m->heap = malloc((size_t)n * sizeof *m->heap))) {
        merge_close(m);
        return NULL;
    }
    for (int i = 0; i < n_streams; i++) {
        m->src[i].kind = FROM_STORE;
        m->src[i].stream = streams[i];
    }
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

const uint8_t *merge_next(run_merge *m, size_t *vlen)
{
    if (m->last) {
        source_advance(m->last);
        if (!m->last->key) m->heap[0] = m->heap[--m->n_heap];
        if (m->n_heap) ks_heapadjust(merge, 0, m->n_heap, m->heap);
        m->last = NULL;
    }
    if (m->n_heap == 0) return NULL;
    m->last = m->heap[0];
    return source_value(m->last, vlen);
}

void merge_close(run_merge *m)
{
    if (!m) return;
    free(m->src);
    free(m->heap);
    free(m);
}
