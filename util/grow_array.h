/* util/grow_array.h -- growing an array that is appended to.
 *
 * Contract: grow_array(&p, &cap, need, size) makes the array *p, with room
 * for *cap items of `size` bytes, hold at least `need` items, doubling from
 * 64 so that appending costs amortised constant time.  Returns 0, or -1
 * with *p and *cap unchanged when memory runs out or the size overflows.
 * The program's one doubling realloc: a byte buffer passes size 1; an array
 * whose new slots must start zeroed clears them itself (from the old *cap).
 */
#ifndef GROW_ARRAY_H
#define GROW_ARRAY_H

#include <stdint.h>
#include <stdlib.h>

static inline int grow_array(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > SIZE_MAX / 2) return -1;
        n *= 2;
    }
    if (n > SIZE_MAX / size) return -1;
    void *q = realloc(*p, n * size);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

#endif
