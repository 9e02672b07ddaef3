/* load/batch_groups.c -- see load/batch_groups.h.
 *
 * Each range is a job on the pool's queue of this writer, which hands the
 * results back in the order the ranges were queued.  A job fills its
 * encoder and appends every encoded group to its slot's buffer (record
 * bytes, first key, last key, blob); the calling thread puts them.  Slots
 * are reused in turn: range i goes to slot i % ahead once range i - ahead
 * has been put.
 */
#include <stdlib.h>
#include "load/batch_groups.h"
#include "util/byte_io.h"
#include "codec/group_codec.h"

typedef struct {
    const batch *sb;
    size_t lo, hi;              /* the range's entries */
    size_t group_bytes;
    group_encoder *enc;
    byte_writer out;            /* the range's groups, encoded */
    int failed;
} range_slot;

struct batch_groups {
    group_layout layout;
    hts_tpool *pool;
    hts_tpool_process *queue;
    range_slot *slot;
    int ahead;
};

/* Encodes the encoder's records and appends the group to the slot. */
static int emit(range_slot *r)
{
    size_t raw = group_codec_raw_bytes(r->enc), len, first_len, last_len;
    const uint8_t *blob;
    if (group_codec_encode(r->enc, &blob, &len) < 0) return -1;
    const uint8_t *first = group_codec_first_key(r->enc, &first_len);
    const uint8_t *last = group_codec_last_key(r->enc, &last_len);
    bw_u64(&r->out, raw);
    bw_bytes(&r->out, first, first_len);
    bw_bytes(&r->out, last, last_len);
    bw_bytes(&r->out, blob, len);
    return r->out.failed ? -1 : 0;
}

static void *encode_range(void *arg)
{
    range_slot *r = arg;
    for (size_t i = r->lo; i < r->hi && !r->failed; i++) {
        size_t kl, vl;
        batch_prefetch(r->sb, i + BATCH_PREFETCH_DISTANCE);
        const uint8_t *k = batch_key(r->sb, i, &kl), *v = batch_value(r->sb, i, &vl);
        r->failed = group_codec_add(r->enc, k, kl, v, vl) < 0 ||
                    (group_codec_raw_bytes(r->enc) >= r->group_bytes && emit(r) < 0);
    }
    if (!r->failed && group_codec_count(r->enc)) r->failed = emit(r) < 0;
    return r;
}

/* Puts a finished range's groups; -1 with the cause in err. */
static int put_range(range_slot *r, group_put_fn put, void *ctx, errmsg *err)
{
    if (r->failed)
        return errmsg_set(err, "a run's group could not be encoded (out of memory, or 4 GiB or more)");
    byte_reader rd = br_of(r->out.p, r->out.n);
    while (rd.at < rd.n) {
        group_span span;
        size_t len;
        span.record_bytes = br_u64(&rd);
        span.first = br_bytes(&rd, &span.first_len);
        span.last = br_bytes(&rd, &span.last_len);
        const uint8_t *blob = br_bytes(&rd, &len);
        if (rd.bad) return errmsg_set(err, "a run's groups were garbled in memory");
        if (put(ctx, &span, blob, len, err) < 0) return -1;
    }
    return 0;
}

/* Takes the oldest range's result (waiting for it) and puts its groups,
 * unless an earlier range failed. */
static int collect(batch_groups *bg, int failed, group_put_fn put, void *ctx, errmsg *err)
{
    hts_tpool_result *res = hts_tpool_next_result_wait(bg->queue);
    if (!res) return failed ? -1 : errmsg_set(err, "a compression thread failed");
    range_slot *r = hts_tpool_result_data(res);
    hts_tpool_delete_result(res, 0);
    if (failed) return -1;
    return put_range(r, put, ctx, err);
}

static int dispatch(batch_groups *bg, const batch *sb, size_t group_bytes, int i, size_t lo,
                    size_t hi)
{
    range_slot *r = &bg->slot[i % bg->ahead];
    r->sb = sb;
    r->group_bytes = group_bytes;
    r->lo = lo;
    r->hi = hi;
    r->out.n = 0;
    r->out.failed = 0;
    r->failed = 0;
    return hts_tpool_dispatch(bg->pool, bg->queue, encode_range, r);
}

int batch_groups_write(batch_groups *bg, const batch *sb, size_t group_bytes,
                       group_put_fn put, void *ctx, errmsg *err)
{
    size_t n = batch_count(sb), bytes = batch_bytes(sb) ? batch_bytes(sb) : 1;
    size_t range_bytes = group_bytes * (bg->layout == GROUP_PLAIN ? BATCH_RANGE_PLAIN_GROUPS
                                                                  : BATCH_RANGE_GROUPS);
    size_t ranges = (bytes + range_bytes - 1) / range_bytes;
    if (ranges > n) ranges = n ? n : 1;
    int failed = 0, queued = 0, collected = 0;
    for (size_t i = 0; i < ranges && !failed; i++) {
        if (queued - collected == bg->ahead)
            failed = collect(bg, failed, put, ctx, err) < 0, collected++;
        size_t lo = n * i / ranges, hi = n * (i + 1) / ranges;
        if (!failed && dispatch(bg, sb, group_bytes, (int)i, lo, hi) < 0)
            failed = errmsg_set(err, "could not queue a run's records for compression") < 0;
        else if (!failed) queued++;
    }
    for (; collected < queued; collected++)
        failed = collect(bg, failed, put, ctx, err) < 0 || failed;
    return failed ? -1 : 0;
}

batch_groups *batch_groups_create(hts_tpool *pool, int ahead, group_layout layout)
{
    batch_groups *bg = calloc(1, sizeof *bg);
    if (!bg) return NULL;
    bg->pool = pool;
    bg->layout = layout;
    bg->ahead = ahead > 1 ? ahead : 1;
    bg->slot = calloc((size_t)bg->ahead, sizeof *bg->slot);
    int ok = bg->slot && (bg->queue = hts_tpool_process_init(pool, bg->ahead, 0));
    for (int i = 0; ok && i < bg->ahead; i++)
        ok = (bg->slot[i].enc = group_codec_encoder_create(layout)) != NULL;
    if (ok) return bg;
    batch_groups_destroy(bg);
    return NULL;
}

void batch_groups_destroy(batch_groups *bg)
{
    if (!bg) return;
    if (bg->queue) hts_tpool_process_destroy(bg->queue);
    for (int i = 0; bg->slot && i < bg->ahead; i++) {
        group_codec_encoder_destroy(bg->slot[i].enc);
        bw_free(&bg->slot[i].out);
    }
    free(bg->slot);
    free(bg);
}
