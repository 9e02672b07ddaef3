/* load/batch_fill.c -- see load/batch_fill.h.
 *
 * The loader fills chunks in turn.  The slot it reads into is always the
 * next free one of the chunk being filled; a chunk handed to a job passes
 * that slot on to the next chunk, so a record refused by a full batch stays
 * where the loader reads it from.
 */
#include <pthread.h>
#include <stdlib.h>
#include "load/batch_fill.h"
#include "codec/record.h"

/* Chunks in flight or being filled: the jobs copy faster than the loader
 * reads, so a few keep it from ever waiting. */
#define FILL_CHUNKS 4
/* A slot whose data grew past this (a long read) gives it back before it
 * is read into again, so that the slots never hold much memory. */
#define SLOT_KEEP_BYTES ((size_t)64 << 10)

typedef struct {
    batch_fill *f;
    batch *sb;
    batch_place_at first;   /* recs[0]'s place; the others follow it (batch_reserve()) */
    bam1_t *recs[BATCH_FILL_RECORDS + 1];   /* one more: the slot passed on */
    uint32_t key_len[BATCH_FILL_RECORDS];   /* the keys, one after the other in keys */
    uint8_t *keys;
    size_t keys_len, keys_cap;
    int n;
    size_t bytes;
    int busy;           /* handed to a job: under f->mu */
} fill_chunk;

struct batch_fill {
    hts_tpool *pool;
    hts_tpool_process *jobs;
    pthread_mutex_t mu;
    pthread_cond_t done;
    fill_chunk chunks[FILL_CHUNKS];
    int cur;            /* the chunk being filled, never busy */
    bam1_t *single;     /* the slot, without a pool */
};

static void free_chunks(batch_fill *f)
{
    for (int c = 0; c < FILL_CHUNKS; c++) {
        for (int i = 0; i <= BATCH_FILL_RECORDS; i++)
            if (f->chunks[c].recs[i]) bam_destroy1(f->chunks[c].recs[i]);
        free(f->chunks[c].keys);
    }
}

static int make_chunks(batch_fill *f)
{
    for (int c = 0; c < FILL_CHUNKS; c++) {
        f->chunks[c].f = f;
        for (int i = 0; i <= BATCH_FILL_RECORDS; i++)
            if (!(f->chunks[c].recs[i] = bam_init1())) return -1;
    }
    return 0;
}

batch_fill *batch_fill_create(hts_tpool *pool)
{
    batch_fill *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    if (!pool) {
        if ((f->single = bam_init1())) return f;
        free(f);
        return NULL;
    }
    f->pool = pool;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->done, NULL);
    /* Input only: the jobs return nothing.  Room for every chunk, so that
     * handing one over never waits. */
    if (make_chunks(f) < 0 || !(f->jobs = hts_tpool_process_init(pool, FILL_CHUNKS, 1))) {
        batch_fill_free(f);
        return NULL;
    }
    return f;
}

static void place_chunk(fill_chunk *c)
{
    batch_place_at at = c->first;
    const uint8_t *key = c->keys;
    for (int i = 0; i < c->n; i++) {
        batch_place(c->sb, at, key, c->key_len[i], c->recs[i]);
        at.index++;
        at.rec += packed_record_size(c->key_len[i], record_value_len(c->recs[i]));
        key += c->key_len[i];
    }
}

static void *fill_job(void *arg)
{
    fill_chunk *c = arg;
    place_chunk(c);
    pthread_mutex_lock(&c->f->mu);
    c->busy = 0;
    pthread_cond_broadcast(&c->f->done);
    pthread_mutex_unlock(&c->f->mu);
    return NULL;
}

/* Waits until chunk c is no job's. */
static void wait_free(batch_fill *f, fill_chunk *c)
{
    pthread_mutex_lock(&f->mu);
    while (c->busy) pthread_cond_wait(&f->done, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

/* Hands the chunk being filled to a job (or copies it here if the pool
 * takes no more) and moves on to the next, once it is free. */
static void hand_over(batch_fill *f)
{
    fill_chunk *c = &f->chunks[f->cur];
    pthread_mutex_lock(&f->mu);
    c->busy = 1;
    pthread_mutex_unlock(&f->mu);
    bam1_t *slot = c->recs[c->n];   /* no job of c reads it */
    if (hts_tpool_dispatch2(f->pool, f->jobs, fill_job, c, 1) < 0) fill_job(c);
    f->cur = (f->cur + 1) % FILL_CHUNKS;
    fill_chunk *next = &f->chunks[f->cur];
    wait_free(f, next);
    next->n = 0;
    next->bytes = next->keys_len = 0;
    c->recs[c->n] = next->recs[0];
    next->recs[0] = slot;
}

void batch_fill_settle(batch_fill *f)
{
    if (!f || !f->pool) return;
    if (f->chunks[f->cur].n) hand_over(f);
    for (int c = 0; c < FILL_CHUNKS; c++) wait_free(f, &f->chunks[c]);
}

void batch_fill_free(batch_fill *f)
{
    if (!f) return;
    if (f->single) bam_destroy1(f->single);
    if (f->pool) {
        batch_fill_settle(f);
        if (f->jobs) {
            /* The workers may still hold the queue after the jobs returned. */
            hts_tpool_process_flush(f->jobs);
            hts_tpool_process_destroy(f->jobs);
        }
        free_chunks(f);
        pthread_mutex_destroy(&f->mu);
        pthread_cond_destroy(&f->done);
    }
    free(f);
}

bam1_t *batch_fill_slot(batch_fill *f)
{
    if (!f->pool) return f->single;
    fill_chunk *c = &f->chunks[f->cur];
    bam1_t *b = c->recs[c->n];
    if (b->m_data > SLOT_KEEP_BYTES) {
        bam1_t *fresh = bam_init1();
        if (fresh) {
            bam_destroy1(b);
            b = c->recs[c->n] = fresh;
        }
    }
    return b;
}

/* Room for a key of up to len bytes after the chunk's keys. */
static uint8_t *key_room(fill_chunk *c, size_t len)
{
    if (c->keys_len + len > c->keys_cap) {
        size_t cap = c->keys_cap ? c->keys_cap : 4096;
        while (cap < c->keys_len + len) cap *= 2;
        uint8_t *k = realloc(c->keys, cap);
        if (!k) return NULL;
        c->keys = k;
        c->keys_cap = cap;
    }
    return c->keys + c->keys_len;
}

/* The record keyed as key[0, len): its place, or 0 (full) or -1. */
static int reserve(batch_fill *f, batch *sb, const uint8_t *key, size_t len, size_t val_len,
                   batch_place_at *at)
{
    int r = batch_reserve(sb, key, len, val_len, 0, at);
    if (r != BATCH_UNSETTLED) return r;
    for (int c = 0; c < FILL_CHUNKS; c++) wait_free(f, &f->chunks[c]);
    return batch_reserve(sb, key, len, val_len, 1, at);
}

int batch_fill_add(batch_fill *f, batch *sb, const sort_spec *spec, uint64_t seq, errmsg *err)
{
    if (!f->pool) return batch_add(sb, spec, f->single, seq, err);
    fill_chunk *c = &f->chunks[f->cur];
    if (c->n && c->sb != sb) {      /* a new batch without settling: never */
        hand_over(f);
        c = &f->chunks[f->cur];
    }
    bam1_t *b = c->recs[c->n];
    uint8_t *key = key_room(c, sort_key_max_len(spec, b));
    if (!key) return errmsg_set(err, "out of memory");
    size_t len = sort_key_encode(spec, b, seq, key);
    if (len == 0) return errmsg_set(err, "read '%s' %s", bam_get_qname(b), sort_key_error(spec, b));
    batch_place_at at;
    int r = reserve(f, sb, key, len, record_value_len(b), &at);
    if (r <= 0) return r < 0 ? errmsg_set(err, "out of memory") : 0;
    sort_key_record_finish(spec, b);    /* keeps the value's length */
    /* The first record at once: later reserves compare keys with it.  So
     * too a record in memory the arena held records in before, where the
     * copy is cheap: only first touches are worth a job.  Those come last
     * in a batch, so a chunk's records stay one after the other. */
    if (at.index == 0 || (!at.fresh && c->n == 0)) {
        batch_place(sb, at, key, len, b);
        return 1;
    }
    if (c->n == 0) {
        c->first = at;
        c->sb = sb;
    }
    c->key_len[c->n] = (uint32_t)len;
    c->keys_len += len;
    c->bytes += len + record_value_len(b);
    if (++c->n == BATCH_FILL_RECORDS || c->bytes >= BATCH_FILL_BYTES) hand_over(f);
    return 1;
}
