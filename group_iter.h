/* group_iter.h -- the records of a part of the store that holds groups, in key order.
 *
 * Contract: the store's compact runs hold groups of records (group_codec.h),
 * each under the key of its first record.  RocksDB returns the groups of all
 * the runs of a part in the order of those keys, so the records of groups
 * from different runs interleave.  A group_iter opens each group when its
 * first key is due and keeps the open ones in a heap: it yields every
 * record once, by ascending key.  It borrows the RocksDB iterator, which
 * must have no lower bound (a group that starts below lo may hold records
 * from lo on); records below lo are skipped, and the iterator ends at the
 * first record at or above hi.  At most one group per run is open at once,
 * so memory is bounded by the runs times the group size.
 */
#ifndef GROUP_ITER_H
#define GROUP_ITER_H

#include <stddef.h>
#include <stdint.h>
#include <rocksdb/c.h>
#include "errmsg.h"

typedef struct group_iter group_iter;

/* lo, hi: NULL for open bounds; both are borrowed and must outlive gi. */
group_iter *group_iter_create(rocksdb_iterator_t *it, const uint8_t *lo, size_t lo_len,
                              const uint8_t *hi, size_t hi_len);
void group_iter_destroy(group_iter *gi);

/* Positions at the first record: seeks the RocksDB iterator to its first group. */
void group_iter_first(group_iter *gi);
int group_iter_valid(const group_iter *gi);
const uint8_t *group_iter_key(const group_iter *gi, size_t *len);
const uint8_t *group_iter_value(const group_iter *gi, size_t *len);
void group_iter_next(group_iter *gi);

/* After the end: 0, or -1 with the cause in err if a group did not decode
 * or memory ran out (RocksDB's own errors are the caller's to ask for). */
int group_iter_status(const group_iter *gi, errmsg *err);

#endif
