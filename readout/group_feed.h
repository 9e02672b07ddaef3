/* readout/group_feed.h -- one part's groups (compact or plain), decoded, in first-key order.
 *
 * Contract: group_feed_open() starts a thread that reads the groups of one
 * part of the store (store/store_iter.h) that hold records with keys from lo
 * (inclusive) to hi (exclusive), a NULL bound being open: first, in each
 * run, the group that begins below lo and holds records from lo on
 * (store_iter_straddlers()); then every group whose first key lies in [lo, hi).
 * The groups are decoded (codec/group_codec.h) ahead of use on that thread,
 * straight from where RocksDB holds them, and come out in the order of
 * their first keys, which is the order a merge must open them in.
 * group_feed_peek() gives the next group's first key, waiting for it;
 * NULL at the end.  group_feed_take() hands that group over with the
 * records [begin, end) that lie in [lo, hi) (possibly none); the caller
 * gives it back with group_feed_release() once its records are no longer
 * needed, from any point on.  After the end, group_feed_status() returns 0,
 * or -1 with the cause (a failed read, a group that does not decode).
 * group_feed_restart() gives a feed that has ended (its last group taken,
 * its merge over, every group released) the next key range to read, on
 * the same thread, slots and iterator; it returns 0, or -1 with the cause.
 * group_feed_close() stops the thread and frees every group, taken or not.
 * group_feed_open_iter() feeds the groups of an iterator instead (one run
 * of a merge pass, readout/run_passes.h), read whole; the feed owns it, and
 * decodes `ahead` groups ahead (1..GROUP_FEED_AHEAD; group_feed_open()
 * decodes GROUP_FEED_AHEAD).
 *
 * Memory: the groups decoded ahead, the groups the merge holds (one per
 * run whose records are being merged, more where a RocksDB merge copied
 * several runs' groups into one file) and the columns of the one group
 * being decoded (store/run_readers.h counts them).
 *
 * Why: decoding a group costs more than merging its records, so it runs
 * on a thread of its own while the merge goes on (each part, and each
 * piece of a readout in key ranges, has its own), and the merge reads the
 * records where decoding put them, without copying them again.  On the
 * htslib pool instead, the hand-offs cost more than they saved on two
 * cores (bench/RESULTS.md).
 */
#ifndef GROUP_FEED_H
#define GROUP_FEED_H

#include <stddef.h>
#include <stdint.h>
#include "util/errmsg.h"
#include "codec/group_codec.h"
#include "keys/key_bytes.h"
#include "store/store.h"
#include "store/run_readers.h"

typedef struct {
    group_records rec;
    size_t begin, end;      /* the records in the feed's key range */
} fed_group;

typedef struct group_feed group_feed;

/* Groups a feed decodes ahead: counted in its readers' memory there. */
#define GROUP_FEED_AHEAD READERS_FEED_AHEAD

/* lo and hi are copied.  NULL with the cause in err if the feed cannot start. */
group_feed *group_feed_open(rocks_store *st, int part, const key_sample *lo, const key_sample *hi,
                            size_t readahead, errmsg *err);
/* Takes it over, closed even on failure. */
group_feed *group_feed_open_iter(store_iter *it, int ahead, errmsg *err);
int group_feed_restart(group_feed *f, const key_sample *lo, const key_sample *hi, errmsg *err);
const uint8_t *group_feed_peek(group_feed *f, size_t *klen);
fed_group *group_feed_take(group_feed *f);
void group_feed_release(group_feed *f, fed_group *g);
int group_feed_status(const group_feed *f, errmsg *err);
void group_feed_close(group_feed *f);

#endif
