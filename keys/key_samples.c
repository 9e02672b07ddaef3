/* keys/key_samples.c -- see keys/key_samples.h. */
#include <stdlib.h>
#include "keys/key_samples.h"
#include "util/grow_array.h"

int key_samples_add(key_samples *s, const uint8_t *key, size_t len, uint64_t weight)
{
    if (grow_array((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v) < 0) return -1;
    s->v[s->n++] = (key_sample){ key, len, weight };
    return 0;
}

void key_samples_free(key_samples *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

int key_samples_add_copy(key_samples *s, const uint8_t *key, size_t len, uint64_t weight)
{
    uint8_t *copy = key_dup(key, len);
    if (copy && key_samples_add(s, copy, len, weight) == 0) return 0;
    free(copy);
    return -1;
}

void key_samples_free_copies(key_samples *s)
{
    for (size_t i = 0; i < s->n; i++) free((uint8_t *)s->v[i].key);
    key_samples_free(s);
}

static int by_key(const void *a, const void *b)
{
    const key_sample *x = a, *y = b;
    return key_cmp(x->key, x->len, y->key, y->len);
}

/* A split goes at the first sample whose preceding weight reaches the next
 * share.  A split equal to the smallest key or to the previous split would
 * only make an empty range, so it is left out. */
int key_samples_split(key_samples *s, int k, key_sample *splits)
{
    if (k < 2 || s->n == 0) return 0;
    qsort(s->v, s->n, sizeof *s->v, by_key);
    uint64_t total = 0, before = 0;
    for (size_t i = 0; i < s->n; i++) total += s->v[i].weight;
    int n = 0;
    for (size_t i = 0; i < s->n && n < k - 1; i++) {
        const key_sample *x = &s->v[i];
        double share = (double)total * (n + 1) / k;
        int fresh = by_key(x, &s->v[0]) != 0 && (n == 0 || by_key(x, &splits[n - 1]) != 0);
        if ((double)before >= share && fresh) splits[n++] = *x;
        before += x->weight;
    }
    return n;
}
