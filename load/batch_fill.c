/* load/batch_fill.c -- see load/batch_fill.h.
 *
 * The loader packs records into the chunks in turn, each staged chunk
 * holding records reserved one after the other, so that a job copies it
 * into the arena in one piece.  The staging buffers are reused chunk after
 * chunk and stay in cache; the first touch of the arena's pages happens in
 * the job.  Once a batch's records go to chunks, the rest of that batch
 * does too: a record added directly meanwhile could grow the entries under
 * a running job.
 */
#include <pthread.h>
#include <stdlib.h>
#include "load/batch_fill.h"
#include "codec/record.h"

/* Chunks in flight or being filled: the jobs copy faster than the loader
 * packs, so a few keep it from waiting. */
#define FILL_CHUNKS 4
/* A staging buffer grown past this (for a long read) is given back once
 * its chunk is copied. */
#define STAGE_KEEP_BYTES (4 * BATCH_FILL_BYTES)

typedef struct {
    batch_fill *f;
    batch *sb;
    batch_place_at first;   /* where the first staged record goes */
    uint8_t *stage;         /* packed records, one after the other */
    size_t bytes, cap;
    size_t n;
    int busy;               /* handed to a job: under f->mu */
} fill_chunk;

struct batch_fill {
    hts_tpool *pool;
    hts_tpool_process *jobs;
    pthread_mutex_t mu;
    pthread_cond_t done;
    fill_chunk chunks[FILL_CHUNKS];
    int cur;                /* the chunk being filled, never busy */
    batch *staging;         /* the batch whose records go to chunks */
    bam1_t *slot;
};

batch_fill *batch_fill_create(hts_tpool *pool)
{
    batch_fill *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    if (!(f->slot = bam_init1())) {
        free(f);
        return NULL;
    }
    if (!pool) return f;
    f->pool = pool;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->done, NULL);
    for (int c = 0; c < FILL_CHUNKS; c++) f->chunks[c].f = f;
    /* Input only: the jobs return nothing.  Room for every chunk, so that
     * handing one over never waits. */
    if (!(f->jobs = hts_tpool_process_init(pool, FILL_CHUNKS, 1))) {
        batch_fill_free(f);
        return NULL;
    }
    return f;
}

static void *fill_job(void *arg)
{
    fill_chunk *c = arg;
    batch_place_run(c->sb, c->first, c->stage, c->bytes, c->n);
    pthread_mutex_lock(&c->f->mu);
    c->busy = 0;
    pthread_cond_broadcast(&c->f->done);
    pthread_mutex_unlock(&c->f->mu);
    return NULL;
}

static void wait_free(batch_fill *f, fill_chunk *c)
{
    pthread_mutex_lock(&f->mu);
    while (c->busy) pthread_cond_wait(&f->done, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

static void wait_all(batch_fill *f)
{
    for (int c = 0; c < FILL_CHUNKS; c++) wait_free(f, &f->chunks[c]);
}

/* Hands the chunk being filled to a job (or copies it here if the pool
 * takes no more) and moves on to the next, once it is free. */
static void hand_over(batch_fill *f)
{
    fill_chunk *c = &f->chunks[f->cur];
    pthread_mutex_lock(&f->mu);
    c->busy = 1;
    pthread_mutex_unlock(&f->mu);
    if (hts_tpool_dispatch2(f->pool, f->jobs, fill_job, c, 1) < 0) fill_job(c);
    f->cur = (f->cur + 1) % FILL_CHUNKS;
    fill_chunk *next = &f->chunks[f->cur];
    wait_free(f, next);
    next->n = next->bytes = 0;
    if (next->cap > STAGE_KEEP_BYTES) {
        free(next->stage);
        next->stage = NULL;
        next->cap = 0;
    }
}

void batch_fill_settle(batch_fill *f)
{
    if (!f || !f->pool) return;
    if (f->chunks[f->cur].n) hand_over(f);
    wait_all(f);
    f->staging = NULL;
}

void batch_fill_free(batch_fill *f)
{
    if (!f) return;
    if (f->pool) {
        batch_fill_settle(f);
        if (f->jobs) {
            /* The workers may still hold the queue after the jobs returned. */
            hts_tpool_process_flush(f->jobs);
            hts_tpool_process_destroy(f->jobs);
        }
        for (int c = 0; c < FILL_CHUNKS; c++) free(f->chunks[c].stage);
        pthread_mutex_destroy(&f->mu);
        pthread_cond_destroy(&f->done);
    }
    bam_destroy1(f->slot);
    free(f);
}

bam1_t *batch_fill_slot(batch_fill *f)
{
    return f->slot;
}

/* Room for a packed record of up to need bytes after the chunk's. */
static uint8_t *stage_room(fill_chunk *c, size_t need)
{
    if (c->bytes + need > c->cap) {
        size_t cap = c->cap ? c->cap : BATCH_FILL_BYTES;
        while (cap < c->bytes + need) cap *= 2;
        uint8_t *s = realloc(c->stage, cap);
        if (!s) return NULL;
        c->stage = s;
        c->cap = cap;
    }
    return c->stage + c->bytes;
}

/* The place of a record keyed key[0, len): 1, 0 (full) or -1. */
static int reserve(batch_fill *f, batch *sb, const uint8_t *key, size_t len, size_t val_len,
                   batch_place_at *at)
{
    int r = batch_reserve(sb, key, len, val_len, 0, at);
    if (r != BATCH_UNSETTLED) return r;
    wait_all(f);    /* the chunk being filled is no job's yet */
    return batch_reserve(sb, key, len, val_len, 1, at);
}

/* Into the chunk being filled: the record in the slot, packed where its
 * place (reserved here) follows the chunk's others. */
static int stage_record(batch_fill *f, batch *sb, const sort_spec *spec, uint64_t seq,
                        errmsg *err)
{
    fill_chunk *c = &f->chunks[f->cur];
    bam1_t *b = f->slot;
    size_t val_len = record_value_len(b);
    uint8_t *rec = stage_room(c, packed_record_size(sort_key_max_len(spec, b), val_len));
    if (!rec) return errmsg_set(err, "out of memory");
    uint8_t *key = rec + sizeof(packed_header);
    size_t len = sort_key_encode(spec, b, seq, key);
    if (len == 0) return errmsg_set(err, "read '%s' %s", bam_get_qname(b), sort_key_error(spec, b));
    batch_place_at at;
    int r = reserve(f, sb, key, len, val_len, &at);
    if (r <= 0) return r < 0 ? errmsg_set(err, "out of memory") : 0;
    sort_key_record_finish(spec, b);    /* keeps the value's length */
    packed_header h = { (uint32_t)len, (uint32_t)val_len };
    memcpy(rec, &h, sizeof h);
    record_value_pack(b, key + len);
    if (c->n == 0) {
        c->first = at;
        c->sb = sb;
    }
    c->bytes += packed_record_size(len, val_len);
    if (++c->n == BATCH_FILL_RECORDS || c->bytes >= BATCH_FILL_BYTES) hand_over(f);
    return 1;
}

int batch_fill_add(batch_fill *f, batch *sb, const sort_spec *spec, uint64_t seq, errmsg *err)
{
    bam1_t *b = f->slot;
    /* The first record, which later reserves compare keys with, and those
     * bound for memory the arena held records in, where the copy is cheap,
     * go in at once. */
    if (!f->pool || (f->staging != sb &&
                     (batch_count(sb) == 0 ||
                      batch_warm(sb, packed_record_size(sort_key_max_len(spec, b),
                                                        record_value_len(b))))))
        return batch_add(sb, spec, b, seq, err);
    f->staging = sb;
    return stage_record(f, sb, spec, seq, err);
}
