/* codec/group_writer.c -- see codec/group_writer.h. */
#include <stdlib.h>
#include <htslib/thread_pool.h>
#include "codec/group_writer.h"
#include "codec/group_codec.h"
#include "util/thread.h"

typedef struct {
    group_encoder *enc;
    const uint8_t *blob;
    size_t len;
    uint64_t record_bytes;
    int status;
} encode_job;

struct group_writer {
    hts_tpool *pool;            /* NULL: encode on the caller's thread */
    int own_pool;
    hts_tpool_process *queue;
    group_encoder **idle;       /* encoders free for the next group */
    int n_idle, n_encoders, in_flight;
    group_encoder *filling;
    size_t group_bytes;
    group_layout layout;
    group_put_fn put;
    void *ctx;
};

static void *encode_job_run(void *arg)
{
    encode_job *j = arg;
    j->status = group_codec_encode(j->enc, &j->blob, &j->len);
    return j;
}

/* Puts an encoded group and makes its encoder idle again. */
static int store_group(group_writer *gw, encode_job *j, errmsg *err)
{
    int rc = 0;
    if (j->status < 0) {
        rc = errmsg_set(err, "a run's group could not be encoded (out of memory, or 4 GiB or more)");
    } else {
        group_span span;    /* the keys are still there after encoding */
        span.first = group_codec_first_key(j->enc, &span.first_len);
        span.last = group_codec_last_key(j->enc, &span.last_len);
        span.record_bytes = j->record_bytes;
        rc = gw->put(gw->ctx, &span, j->blob, j->len, err);
    }
    gw->idle[gw->n_idle++] = j->enc;
    free(j);
    return rc;
}

/* Takes the oldest group's result, waiting for it. */
static int collect_one(group_writer *gw, errmsg *err)
{
    hts_tpool_result *r = hts_tpool_next_result_wait(gw->queue);
    if (!r) return errmsg_set(err, "a compression thread failed");
    encode_job *j = hts_tpool_result_data(r);
    hts_tpool_delete_result(r, 0);
    gw->in_flight--;
    return store_group(gw, j, err);
}

static int dispatch(group_writer *gw, errmsg *err)
{
    encode_job *j = calloc(1, sizeof *j);
    if (!j) return errmsg_set(err, "out of memory while compressing a run");
    j->enc = gw->filling;
    j->record_bytes = group_codec_raw_bytes(j->enc);
    gw->filling = NULL;
    if (!gw->pool) return store_group(gw, encode_job_run(j), err);
    if (hts_tpool_dispatch(gw->pool, gw->queue, encode_job_run, j) < 0) {
        gw->idle[gw->n_idle++] = j->enc;
        free(j);
        return errmsg_set(err, "could not queue a group for compression");
    }
    gw->in_flight++;
    return 0;
}

group_writer *group_writer_create_on(hts_tpool *pool, int threads, size_t group_bytes,
                                     group_layout layout, group_put_fn put, void *ctx)
{
    group_writer *gw = calloc(1, sizeof *gw);
    if (!gw) return NULL;
    *gw = (group_writer){ .group_bytes = group_bytes, .layout = layout, .put = put, .ctx = ctx };
    /* Two more encoders than threads: one filling, one waiting to be put. */
    gw->n_encoders = threads > 1 ? threads + 2 : 1;
    gw->idle = calloc((size_t)gw->n_encoders, sizeof *gw->idle);
    for (int i = 0; gw->idle && i < gw->n_encoders; i++) {
        if (!(gw->idle[i] = group_codec_encoder_create(gw->layout))) break;
        gw->n_idle++;
    }
    thread_name_scope named;
    thread_name_push(&named, THREAD_ENCODE);  /* htslib's workers take the name */
    if (gw->n_idle == gw->n_encoders && threads > 1)
        gw->own_pool = !(gw->pool = pool) && (gw->pool = hts_tpool_init(threads));
    thread_name_pop(&named);
    if (gw->pool)
        gw->queue = hts_tpool_process_init(gw->pool, 2 * gw->n_encoders, 0);
    if (gw->n_idle < gw->n_encoders || (threads > 1 && !gw->queue)) {
        group_writer_destroy(gw);
        return NULL;
    }
    return gw;
}

void group_writer_set_group_bytes(group_writer *gw, size_t group_bytes)
{
    gw->group_bytes = group_bytes;
}

int group_writer_add(group_writer *gw, const uint8_t *key, size_t klen,
                     const uint8_t *val, size_t vlen, errmsg *err)
{
    if (!gw->filling) {
        if (!gw->n_idle && collect_one(gw, err) < 0) return -1;
        gw->filling = gw->idle[--gw->n_idle];
    }
    if (group_codec_add(gw->filling, key, klen, val, vlen) < 0)
        return errmsg_set(err, "a record could not be added to a run's group (out of memory?)");
    if (group_codec_raw_bytes(gw->filling) >= gw->group_bytes) return dispatch(gw, err);
    return 0;
}

int group_writer_finish(group_writer *gw, errmsg *err)
{
    if (gw->filling && group_codec_count(gw->filling) && dispatch(gw, err) < 0) return -1;
    while (gw->in_flight)
        if (collect_one(gw, err) < 0) return -1;
    return 0;
}

void group_writer_trim(group_writer *gw)
{
    for (int i = 0; gw && i < gw->n_idle; i++) {
        group_encoder *fresh = group_codec_encoder_create(gw->layout);
        if (!fresh) return;
        group_codec_encoder_destroy(gw->idle[i]);
        gw->idle[i] = fresh;
    }
}

void group_writer_destroy(group_writer *gw)
{
    if (!gw) return;
    if (gw->queue) {
        hts_tpool_process_flush(gw->queue);
        for (hts_tpool_result *r; (r = hts_tpool_next_result(gw->queue));) {
            encode_job *j = hts_tpool_result_data(r);
            hts_tpool_delete_result(r, 0);
            gw->idle[gw->n_idle++] = j->enc;
            free(j);
        }
        hts_tpool_process_destroy(gw->queue);
    }
    if (gw->own_pool) hts_tpool_destroy(gw->pool);
    if (gw->filling) gw->idle[gw->n_idle++] = gw->filling;
    for (int i = 0; gw->idle && i < gw->n_idle; i++) group_codec_encoder_destroy(gw->idle[i]);
    free(gw->idle);
    free(gw);
}
