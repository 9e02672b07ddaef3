/* run_merge.c -- see run_merge.h.
 *
 * A binary min-heap of sources, ordered by each source's current key.  The
 * source whose value was handed out last is advanced only on the next call,
 * because a RocksDB value lives only until its iterator moves.
 */
#include <stdlib.h>
#include <string.h>
#include "run_merge.h"

typedef struct {
    const sort_batch *batch;    /* NULL: the RocksDB iterator */
    size_t pos;
} source;

struct run_merge {
    rocksdb_iterator_t *it;
    source *src;
    int *heap;      /* indices into src; heap[0] holds the smallest key */
    int n_heap;
    int last;       /* the source handed out by the previous call, or -1 */
};

static const uint8_t *source_key(const run_merge *m, int s, size_t *len)
{
    const source *x = &m->src[s];
    if (!x->batch) return (const uint8_t *)rocksdb_iter_key(m->it, len);
    return batch_key(x->batch, x->pos, len);
}

static int source_valid(const run_merge *m, int s)
{
    const source *x = &m->src[s];
    return x->batch ? x->pos < batch_count(x->batch) : rocksdb_iter_valid(m->it);
}

static void source_advance(run_merge *m, int s)
{
    source *x = &m->src[s];
    if (!x->batch) {
        rocksdb_iter_next(m->it);
        return;
    }
    x->pos++;
    /* Sorted order visits the arena at random: fetch ahead. */
    batch_prefetch(x->batch, x->pos + 8);
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

run_merge *merge_open(rocksdb_iterator_t *runs, sort_batch *const *batches, int n_batches)
{
    run_merge *m = calloc(1, sizeof *m);
    int n = n_batches + 1;
    if (!m || !(m->src = calloc((size_t)n, sizeof *m->src))
           || !(m->heap = malloc((size_t)n * sizeof *m->heap))) {
        merge_close(m);
        return NULL;
    }
    m->it = runs;
    m->last = -1;
    if (runs) rocksdb_iter_seek_to_first(runs);
    for (int s = 0; s < n; s++) {
        m->src[s].batch = s < n_batches ? batches[s] : NULL;
        if (m->src[s].batch) batch_prefetch(m->src[s].batch, 0);
        if ((m->src[s].batch || runs) && source_valid(m, s)) m->heap[m->n_heap++] = s;
    }
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
    int s = m->heap[0];
    m->last = s;
    const source *x = &m->src[s];
    if (x->batch) return batch_value(x->batch, x->pos, vlen);
    return (const uint8_t *)rocksdb_iter_value(m->it, vlen);
}

void merge_close(run_merge *m)
{
    if (!m) return;
    free(m->src);
    free(m->heap);
    free(m);
}
