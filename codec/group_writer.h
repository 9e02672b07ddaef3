/* codec/group_writer.h -- a run written group by group (compact or plain), encoded on a pool.
 *
 * Contract: group_writer_add() takes a run's (key, value) pairs in key order
 * and fills groups of about group_bytes of them; each full group is encoded
 * (codec/group_codec.h) on an htslib thread pool of its own, and the blobs are
 * handed to put(), with the first and the last key of their records, in
 * the order of the groups, on the caller's thread.  group_writer_finish() ends the run: it encodes the
 * last group and waits for every blob to be put.  After a failure the
 * writer must only be destroyed.  A group closes once its records reach
 * group_bytes, so it holds less than group_bytes plus its last record.  With threads <= 1 it encodes on the
 * caller's thread.  Failures return -1 with the cause in err (util/errmsg.h).
 *
 * Why: the spill thread is what the loader waits for, and the codecs cost
 * more than writing the bytes; other cores are idle while it writes.
 */
#ifndef GROUP_WRITER_H
#define GROUP_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/thread_pool.h>
#include "util/errmsg.h"
#include "codec/group_codec.h"

typedef struct {
    const uint8_t *first, *last;
    size_t first_len, last_len;
    uint64_t record_bytes;  /* the group's records, keys and values, as added */
} group_span;

typedef int (*group_put_fn)(void *ctx, const group_span *span, const uint8_t *blob, size_t len,
                            errmsg *err);

typedef struct group_writer group_writer;

/* NULL when out of memory or if the threads cannot start.  With a pool,
 * the groups are encoded on it (shared with others, and left running)
 * instead of a pool of the writer's own. */
group_writer *group_writer_create_on(hts_tpool *pool, int threads, size_t group_bytes,
                                     group_layout layout, group_put_fn put, void *ctx);
/* Groups from the next one filled on are of about group_bytes. */
void group_writer_set_group_bytes(group_writer *gw, size_t group_bytes);
int group_writer_add(group_writer *gw, const uint8_t *key, size_t klen,
                     const uint8_t *val, size_t vlen, errmsg *err);
int group_writer_finish(group_writer *gw, errmsg *err);
/* Between runs (after group_writer_finish()): the idle encoders' buffers,
 * each as large as the largest group it held, go back; fresh encoders
 * take their places (an encoder that cannot be made keeps the old one). */
void group_writer_trim(group_writer *gw);
void group_writer_destroy(group_writer *gw);

#endif
