/* store/run_index.c -- see store/run_index.h. */
#include <stdlib.h>
#include <string.h>
#include "store/run_index.h"
#include "util/grow_array.h"

typedef struct {
    size_t first_at, first_len, last_at, last_len;    /* in the key arena */
} span;

typedef struct {
    int part;
    size_t first_span, n_spans;
} run;

struct run_index {
    uint8_t *keys;
    size_t keys_used, keys_cap;
    span *spans;
    size_t n_spans, spans_cap;
    size_t open_from;           /* the spans of the run being written start here */
    run *runs;
    size_t n_runs, runs_cap;
};

run_index *run_index_create(void)
{
    return calloc(1, sizeof(run_index));
}

void run_index_destroy(run_index *ix)
{
    if (!ix) return;
    free(ix->keys);
    free(ix->spans);
    free(ix->runs);
    free(ix);
}

int run_index_add_group(run_index *ix, const uint8_t *first, size_t first_len,
                        const uint8_t *last, size_t last_len)
{
    if (grow_array((void **)&ix->keys, &ix->keys_cap, ix->keys_used + first_len + last_len, 1) < 0 ||
        grow_array((void **)&ix->spans, &ix->spans_cap, ix->n_spans + 1, sizeof(span)) < 0)
        return -1;
    span *s = &ix->spans[ix->n_spans++];
    *s = (span){ ix->keys_used, first_len, ix->keys_used + first_len, last_len };
    memcpy(ix->keys + s->first_at, first, first_len);
    memcpy(ix->keys + s->last_at, last, last_len);
    ix->keys_used += first_len + last_len;
    return 0;
}

int run_index_end_run(run_index *ix, int part)
{
    if (grow_array((void **)&ix->runs, &ix->runs_cap, ix->n_runs + 1, sizeof(run)) < 0) return -1;
    ix->runs[ix->n_runs++] = (run){ part, ix->open_from, ix->n_spans - ix->open_from };
    ix->open_from = ix->n_spans;
    return 0;
}

void run_index_drop_run(run_index *ix)
{
    ix->n_spans = ix->open_from;
    ix->keys_used = ix->n_spans ? ix->spans[ix->n_spans - 1].last_at
                                  + ix->spans[ix->n_spans - 1].last_len : 0;
}

size_t run_index_runs(const run_index *ix) { return ix->n_runs; }

size_t run_index_part_runs(const run_index *ix, int part)
{
    size_t n = 0;
    for (size_t r = 0; r < ix->n_runs; r++) n += ix->runs[r].part == part;
    return n;
}

/* The runs' spans and keys stay in the arenas, unused: a pass or two
 * leave little there. */
void run_index_forget(run_index *ix, int part, size_t before)
{
    size_t kept = 0;
    for (size_t r = 0; r < ix->n_runs; r++)
        if (r >= before || ix->runs[r].part != part) ix->runs[kept++] = ix->runs[r];
    ix->n_runs = kept;
}

size_t run_index_open_groups(const run_index *ix) { return ix->n_spans - ix->open_from; }

void run_index_open_span(const run_index *ix, size_t i, const uint8_t **first, size_t *first_len,
                         const uint8_t **last, size_t *last_len)
{
    const span *s = &ix->spans[ix->open_from + i];
    *first = ix->keys + s->first_at;
    *first_len = s->first_len;
    *last = ix->keys + s->last_at;
    *last_len = s->last_len;
}

static int key_vs(const run_index *ix, size_t at, size_t len, const uint8_t *k, size_t klen)
{
    return key_cmp(ix->keys + at, len, k, klen);
}

/* The run's first group whose last key is not below lo; n_spans if none. */
static size_t first_reaching(const run_index *ix, const run *r, const uint8_t *lo, size_t lo_len)
{
    size_t a = 0, b = r->n_spans;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        const span *s = &ix->spans[r->first_span + mid];
        if (key_vs(ix, s->last_at, s->last_len, lo, lo_len) < 0) a = mid + 1;
        else b = mid;
    }
    return a;
}

static int by_key(const void *a, const void *b)
{
    const key_sample *x = a, *y = b;
    return key_cmp(x->key, x->len, y->key, y->len);
}

size_t run_index_straddlers(const run_index *ix, int part, const uint8_t *lo, size_t lo_len,
                            key_sample *out)
{
    size_t n = 0;
    for (size_t r = 0; r < ix->n_runs; r++) {
        const run *x = &ix->runs[r];
        if (x->part != part) continue;
        size_t g = first_reaching(ix, x, lo, lo_len);
        if (g == x->n_spans) continue;
        const span *s = &ix->spans[x->first_span + g];
        if (key_vs(ix, s->first_at, s->first_len, lo, lo_len) < 0)
            out[n++] = (key_sample){ ix->keys + s->first_at, s->first_len, 0 };
    }
    qsort(out, n, sizeof *out, by_key);
    return n;
}
