/* run_merge.c -- see run_merge.h.
 *
 * A binary min-heap of sources, ordered by each source's current key.  The
 * source whose value was handed out last is advanced only on the next call,
 * because a stream's value lives only until the stream moves.
 */
#include <stdlib.h>
#include <string.h>
#include "run_merge.h"

typedef enum { FROM_STORE, FROM_BATCH, FROM_PACKED } source_kind;

typedef struct {
    source_kind kind;
    store_stream *stream;
    const sort_batch *batch;
    size_t pos, end;
    const packed_run *packed;
    const uint8_t *rec;         /* the packed run's current record, NULL at its end */
    const uint8_t *rec_end;     /* where the slice ends, NULL: at the run's end */
} source;

struct run_merge {
    source *src;
    int *heap;      /* indices into src; heap[0] holds the smallest key */
    int n_heap;
    int last;       /* the source handed out by the previous call, or -1 */
};

static const uint8_t *source_key(const run_merge *m, int s, size_t *len)
{
    const source *x = &m->src[s];
    switch (x->kind) {
    case FROM_STORE: return stream_key(x->stream, len);
    case FROM_BATCH: return batch_key(x->batch, x->pos, len);
    default: return packed_key(x->rec, len);
    }
}

static const uint8_t *source_value(const run_merge *m, int s, size_t *len)
{
    const source *x = &m->src[s];
    switch (x->kind) {
    case FROM_STORE: return stream_value(x->stream, len);
    case FROM_BATCH: return batch_value(x->batch, x->pos, len);
    default: return packed_value(x->rec, len);
    }
}

static int source_valid(const run_merge *m, int s)
{
    const source *x = &m->src[s];
    switch (x->kind) {
    case FROM_STORE: return stream_valid(x->stream);
    case FROM_BATCH: return x->pos < x->end;
    default: return x->rec != NULL;
    }
}

static void source_advance(run_merge *m, int s)
{
    source *x = &m->src[s];
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
}

static int less(const run_merge *m, int a, int b)
{
    size_t la, lb;
    const uint8_t *ka = source_key(m, a, &la), *kb = source_key(m, b, &lb);
    int c = memcmp(ka, kb, la < lb ? la : lb);
    return c ? c < 0 : la < lb;
}

static void sift_down(run_merge *m, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, min = i;
        if (l < m->n_heap && less(m, m->heap[l], m->heap[min])) min = l;
        if (r < m->n_heap && less(m, m->heap[r], m->heap[min])) min = r;
        if (min == i) return;
        int t = m->heap[i];
        m->heap[i] = m->heap[min];
        m->heap[min] = t;
        i = min;
    }
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
    m->last = -1;
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
    for (int s = 0; s < n; s++)
        if (source_valid(m, s)) m->heap[m->n_heap++] = s;
    for (int i = m->n_heap / 2 - 1; i >= 0; i--) sift_down(m, i);
    return m;
}

const uint8_t *merge_next(run_merge *m, size_t *vlen)
{
    if (m->last >= 0) {
        source_advance(m, m->last);
        if (!source_valid(m, m->last)) m->heap[0] = m->heap[--m->n_heap];
        sift_down(m, 0);
        m->last = -1;
    }
    if (m->n_heap == 0) return NULL;
    m->last = m->heap[0];
    return source_value(m, m->last, vlen);
}

void merge_close(run_merge *m)
{
    if (!m) return;
    free(m->src);
    free(m->heap);
    free(m);
}
