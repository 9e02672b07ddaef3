/* keys/key_samples.h -- sampled keys with their weights, and the key space split
 * into ranges holding about equal data.
 *
 * Contract: the caller adds samples of the keys to be merged, each with the
 * record bytes it stands for (the spilled runs' samples, store_samples();
 * entries of the batches held in memory).  key_samples_split() sorts them
 * and returns up to k - 1 split keys at equal shares of the total weight,
 * in increasing order and distinct; range r holds the keys from split r - 1
 * (inclusive) to split r (exclusive), the first and last ranges being open.
 * Fewer splits come back when the samples have too few distinct keys.  The
 * samples borrow their keys: the sources must outlive the splits.  A set
 * that outlives its sources (the store's) owns copies instead: it adds
 * with key_samples_add_copy() and frees with key_samples_free_copies().
 */
#ifndef KEY_SAMPLES_H
#define KEY_SAMPLES_H

#include <stddef.h>
#include <stdint.h>
#include "keys/key_bytes.h"

typedef struct {
    key_sample *v;
    size_t n, cap;
} key_samples;

/* Returns 0, or -1 when out of memory (the sample is dropped). */
int key_samples_add(key_samples *s, const uint8_t *key, size_t len, uint64_t weight);
void key_samples_free(key_samples *s);

/* The same, adding a malloc'd copy of the key: -1 when out of memory
 * (nothing added).  key_samples_free_copies() frees the copies too. */
int key_samples_add_copy(key_samples *s, const uint8_t *key, size_t len, uint64_t weight);
void key_samples_free_copies(key_samples *s);

/* Writes at most k - 1 splits; returns how many. */
int key_samples_split(key_samples *s, int k, key_sample *splits);

#endif
