/* load/spill.c -- see load/spill.h. */
#include <stdlib.h>
#include "load/spill.h"
#include "load/batch_sort.h"
#include "util/clock_util.h"
#include "util/pool_jobs.h"
#include "util/thread.h"

void spill_init(spill_queue *q)
{
    worker_init(&q->w);
    touch_ahead_start(&q->ahead, NULL, 0);
}

static int put_group(void *store, const group_span *span, const uint8_t *blob, size_t len,
                     errmsg *err)
{
    return store_run_put_group(store, span, blob, len, err);
}

/* A sorted batch as one run: its groups encoded on the pool, or its
 * records put one by one. */
static int write_run(const spill_queue *q, batch *sb, const uint8_t *note, size_t note_len,
                     errmsg *err)
{
    rocks_store *st = q->store;
    size_t n = batch_count(sb);
    /* Only a resumable sort's last batch can be empty (a header-only input,
     * or a rerun whose runs hold every record): no run, and the input's
     * completion carries the note. */
    if (n == 0) return 0;
    if (store_run_begin(st, err) < 0) return -1;
    if (q->groups) {
        if (batch_groups_write(q->groups, sb, store_group_bytes(st), put_group, st, err) < 0)
            return -1;
        return store_run_end(st, note, note_len, err);
    }
    for (size_t i = 0; i < n; i++) {
        size_t kl, vl;
        /* Sorted order visits the arena at random: fetch ahead. */
        batch_prefetch(sb, i + BATCH_PREFETCH_DISTANCE);
        const uint8_t *k = batch_key(sb, i, &kl);
        const uint8_t *v = batch_value(sb, i, &vl);
        if (store_run_put(st, k, kl, v, vl, err) < 0) return -1;
    }
    return store_run_end(st, note, note_len, err);
}

/* A held run spilled after all: it is in key order already.  (Holding is
 * never planned for a resumable sort, whose runs carry notes.) */
static int write_packed(rocks_store *st, const packed_run *pr, errmsg *err)
{
    if (store_run_begin(st, err) < 0) return -1;
    for (const uint8_t *r = batch_packed_first(pr); r; r = batch_packed_next(pr, r)) {
        size_t kl, vl;
        const uint8_t *k = packed_key(r, &kl), *v = packed_value(r, &vl);
        if (store_run_put(st, k, kl, v, vl, err) < 0) return -1;
    }
    return store_run_end(st, NULL, 0, err);
}

/* The number of parts worth a job each for a batch, with the queue's pool. */
static int pool_parts(const spill_queue *q, const batch *sb)
{
    size_t parts = q->pool ? batch_count(sb) / BATCH_MIN_PART : 0;
    return parts < (size_t)q->threads ? (int)parts : q->threads;
}

static packed_run *spill_pack(const spill_queue *q, const batch *sb)
{
    int parts = pool_parts(q, sb);
    return parts >= 2 ? batch_pack_parallel(sb, pool_jobs_runner, q->pool, parts)
                      : batch_pack(sb);
}

/* Keeps a sorted batch in memory if the plan allows, and returns the batch
 * the loader fills next; NULL: sb must be spilled.  A packed copy, read in
 * order at the end, is cheaper to merge than the arena in sort order, and
 * the arena goes back to the loader, so holding touches each byte of new
 * memory once.  Where the copies would take markedly more memory (few
 * batches, or small records), the arena is kept itself, without its
 * sort's scratch (engine/sort_plan.c chooses). */
static batch *try_hold(spill_queue *q, batch *sb)
{
    if (q->n_held >= q->max_held) return NULL;
    if (q->packed) {
        packed_run *pr = spill_pack(q, sb);
        if (!pr) return NULL;
        q->packed[q->n_held++] = pr;
        return sb;
    }
    batch *fresh = batch_create(q->batch_cap);
    if (!fresh) return NULL;
    batch_drop_scratch(sb);
    q->kept[q->n_held++] = sb;
    return fresh;
}

static void drop_held(spill_queue *q)
{
    for (int i = 0; i < q->n_held; i++) {
        if (q->packed) batch_packed_destroy(q->packed[i]);
        else batch_destroy(q->kept[i]);
    }
    q->n_held = 0;
}

/* The input outgrew the estimate: held batches become runs like the rest. */
static int spill_held(spill_queue *q, errmsg *err)
{
    int ret = 0;
    if (q->max_held) q->hold_abandoned = 1;
    for (int i = 0; i < q->n_held && ret == 0; i++)
        ret = q->packed ? write_packed(q->store, q->packed[i], err)
                        : write_run(q, q->kept[i], NULL, 0, err);
    drop_held(q);
    q->max_held = 0;
    return ret;
}

/* Sorts a full batch, then holds or spills it; returns the empty batch the
 * loader gets back, and sets *failed (with the cause in err) on a write
 * error.  After a failure nothing more is written. */
static batch *settle_batch(spill_queue *q, batch *sb, const uint8_t *note,
                                size_t note_len, int *failed, errmsg *err)
{
    double t0 = now_seconds();
    spill_sort(q, sb);
    double t1 = now_seconds();
    batch *back = q->failed ? NULL : try_hold(q, sb);
    int held = back != NULL;
    if (!back) {
        if (!q->failed)
            *failed = spill_held(q, err) < 0 || write_run(q, sb, note, note_len, err) < 0;
        back = sb;
    }
    if (back == sb) batch_clear(sb);
    double t2 = now_seconds();
    progress_set_temp(q->prog, store_bytes_written(q->store));
    pthread_mutex_lock(&q->w.lock);
    q->sort_seconds += t1 - t0;
    *(held ? &q->hold_seconds : &q->write_seconds) += t2 - t1;
    pthread_mutex_unlock(&q->w.lock);
    return back;
}

void spill_loaded(spill_queue *q, batch *sb)
{
    touch_ahead_loaded(&q->ahead, sb);
}

void spill_input_ended(spill_queue *q)
{
    touch_ahead_stop(&q->ahead);
}

static void *spill_main(void *arg)
{
    spill_queue *q = arg;
    pthread_mutex_lock(&q->w.lock);
    for (;;) {
        while (!q->full && !q->w.stop) pthread_cond_wait(&q->w.changed, &q->w.lock);
        batch *sb = q->full;
        if (!sb) break;
        errmsg err;
        int failed = 0;
        byte_writer note = q->full_note;    /* the batch's note comes with it */
        q->full_note = (byte_writer){ 0 };
        q->full = NULL;
        pthread_cond_broadcast(&q->w.changed);
        pthread_mutex_unlock(&q->w.lock);

        batch *back = settle_batch(q, sb, note.n ? note.p : NULL, note.n, &failed, &err);
        bw_free(&note);

        pthread_mutex_lock(&q->w.lock);
        if (failed && !q->failed) {
            q->failed = 1;
            errmsg_copy(&q->error, &err);
        }
        /* A batch spilled fast (after an error nothing is written) can come
         * back before the loader took the previous one: never overwrite it. */
        while (q->empty && !q->w.stop) pthread_cond_wait(&q->w.changed, &q->w.lock);
        if (q->empty) batch_destroy(back);
        else q->empty = back;
        pthread_cond_broadcast(&q->w.changed);
    }
    pthread_mutex_unlock(&q->w.lock);
    thread_cpu_exiting();
    return NULL;
}

/* Hands a full batch over and returns the other one once it is spilled. */
batch *spill_swap(spill_queue *q, batch *full, byte_writer *note)
{
    double t0 = now_seconds();
    touch_ahead_settle(&q->ahead);  /* full is the spill thread's from now on */
    pthread_mutex_lock(&q->w.lock);
    while (q->full) pthread_cond_wait(&q->w.changed, &q->w.lock);
    if (note) {     /* moved, not copied: the spill thread frees it */
        q->full_note = *note;
        *note = (byte_writer){ 0 };
    }
    q->full = full;
    pthread_cond_broadcast(&q->w.changed);
    while (!q->empty) pthread_cond_wait(&q->w.changed, &q->w.lock);
    batch *next = q->empty;
    q->empty = NULL;
    pthread_cond_broadcast(&q->w.changed);     /* a spilled batch may wait for room */
    int failed = q->failed;
    q->wait_seconds += now_seconds() - t0;
    pthread_mutex_unlock(&q->w.lock);
    if (failed) {
        batch_destroy(next);
        return NULL;
    }
    return next;
}

void spill_sort(spill_queue *q, batch *sb)
{
    int parts = pool_parts(q, sb);
    if (parts >= 2) batch_sort_parallel(sb, pool_jobs_runner, q->pool, parts);
    else batch_sort(sb);
}

/* Ranges in flight: one per thread and two waiting, as the group writer's. */
static int use_pool(spill_queue *q, const spill_setup *s)
{
    q->pool = s->pool;
    q->threads = s->threads;
    if (!q->pool) return 0;
    if (touch_ahead_start(&q->ahead, q->pool, q->threads) < 0) return -1;
    if (!store_grouped(q->store)) return 0;
    q->groups = batch_groups_create(q->pool, q->threads + 2, store_run_group_layout(q->store));
    return q->groups ? 0 : -1;
}

int spill_start(spill_queue *q, const spill_setup *s)
{
    q->store = s->store;
    q->prog = s->prog;
    q->batch_cap = s->batch_cap;
    q->empty = batch_create(s->batch_cap);
    if (!q->empty || use_pool(q, s) < 0) return SPILL_NO_MEMORY;
    return worker_start(&q->w, THREAD_SPILL, spill_main, q) < 0 ? SPILL_NO_THREAD : 0;
}

int spill_allow_holding(spill_queue *q, int max_held, int packed)
{
    if (packed) q->packed = calloc((size_t)max_held, sizeof *q->packed);
    else q->kept = calloc((size_t)max_held, sizeof *q->kept);
    if (packed ? !q->packed : !q->kept) return -1;
    q->max_held = max_held;
    return 0;
}

void spill_stop(spill_queue *q)
{
    spill_input_ended(q);
    worker_stop(&q->w);
    batch_destroy(q->empty);    /* the idle batch: give its memory back */
    q->empty = NULL;
    batch_groups_destroy(q->groups);    /* and the encoders', each a group's */
    q->groups = NULL;
}

void spill_free(spill_queue *q)
{
    spill_stop(q);
    batch_destroy(q->full);
    bw_free(&q->full_note);
    drop_held(q);
    batch_groups_destroy(q->groups);
    free(q->packed);
    free(q->kept);
    worker_free(&q->w);
}
