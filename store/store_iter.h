/* store/store_iter.h -- the store's runs read back: iterators over a part, and
 * compact runs' groups found by key.
 *
 * Contract: one part's entries in key order: records, or in compact runs the
 * groups under their first keys.  store_iter_first() positions the iterator at the
 * first key, on the thread that will read (it also turns off RocksDB's
 * per-thread perf counting there, see store_run_begin()).  Key and value
 * stay valid until store_iter_next().  After the end, store_iter_status()
 * returns 0, or -1 with the iterator's error in err.  Close every iterator
 * before store_close().
 */
#ifndef STORE_ITER_H
#define STORE_ITER_H

#include <stddef.h>
#include <stdint.h>
#include "util/errmsg.h"
#include "keys/key_bytes.h"
#include "store/store_types.h"

/* NULL if out of memory.  store_iter_open_range() sees only the keys from
 * lo (inclusive) to hi (exclusive); a NULL bound is open. */
store_iter *store_iter_open_range(rocks_store *st, int part, size_t readahead,
                                  const uint8_t *lo, size_t lo_len,
                                  const uint8_t *hi, size_t hi_len);
/* Moves an iterator store_iter_open_range() made to the keys from lo to hi,
 * keeping what it holds (its readahead buffers): the next store_iter_first()
 * starts there.  0, or -1 if out of memory (the iterator is then as it was). */
int store_iter_retarget(store_iter *it, const uint8_t *lo, size_t lo_len, const uint8_t *hi,
                        size_t hi_len);
void store_iter_first(store_iter *it);
int store_iter_valid(const store_iter *it);
const uint8_t *store_iter_key(const store_iter *it, size_t *len);
const uint8_t *store_iter_value(const store_iter *it, size_t *len);
void store_iter_next(store_iter *it);
int store_iter_status(const store_iter *it, errmsg *err);
void store_iter_close(store_iter *it);

/* When runs hold groups of records (compact or plain,
 * store_grouped()), an iterator with a lower bound lo misses, in each run,
 * the group that begins below lo and holds records from lo on:
 * store_iter_straddlers() names those (store/run_index.h), with room in out for
 * store_iter_indexed_runs() keys, and store_iter_get() reads one.  store_iter_get()
 * returns 0 with a malloc'd value, or -1 with the cause in err. */
size_t store_iter_indexed_runs(const rocks_store *st);
size_t store_iter_straddlers(const rocks_store *st, int part, const uint8_t *lo, size_t lo_len,
                        key_sample *out);
int store_iter_get(rocks_store *st, int part, const uint8_t *key, size_t klen, size_t readahead,
              uint8_t **val, size_t *vlen, errmsg *err);

/* For store/store_pass.c: an iterator over one SST file (a merge pass's input). */
store_iter *store_iter_over_file(const char *path, int direct, size_t readahead, errmsg *err);

#endif
