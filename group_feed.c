/* group_feed.c -- see group_feed.h.
 *
 * The reader thread fetches each group's blob and dispatches its decoding
 * to a process queue of the pool, whose results come back in dispatch
 * order; the end of the feed, or its failure, is one more job in that
 * order.  Decoded groups are kept in a list of all the feed ever made, so
 * that closing frees them whoever holds them; released ones are reused.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "group_feed.h"

/* Groups decoded ahead of the merge, per feed. */
#define FEED_AHEAD 6

typedef enum { JOB_GROUP, JOB_END, JOB_FAILED } job_kind;

typedef struct {
    fed_group g;
    group_scratch scratch;
    int spare;              /* released, free for the next group */
} feed_slot;

typedef struct {
    job_kind kind;
    uint8_t *blob;          /* malloc'd */
    size_t len;
    feed_slot *out;
    int decoded;            /* group_decode()'s result */
    errmsg err;             /* JOB_FAILED's cause */
} feed_job;

struct group_feed {
    rocks_store *st;
    int part;
    size_t readahead;
    uint8_t *lo, *hi;       /* NULL: open */
    size_t lo_len, hi_len;
    hts_tpool *own_pool;
    hts_tpool *pool;
    hts_tpool_process *q;
    pthread_t reader;
    int started;
    _Atomic int stop;
    pthread_mutex_t lock;   /* guards slots */
    feed_slot **slots;
    size_t n_slots, slots_cap;
    feed_job *pending;      /* peeked, not yet taken */
    feed_job *last;         /* the end or the failure, made at the open: it never fails */
    int ended, failed;
    errmsg error;
};

static void free_job(void *arg)
{
    feed_job *j = arg;
    if (!j) return;
    free(j->blob);
    free(j);
}

static void *decode_job(void *arg)
{
    feed_job *j = arg;
    if (j->kind == JOB_GROUP)
        j->decoded = group_decode(j->blob, j->len, &j->out->g.rec, &j->out->scratch) < 0
                     || !j->out->g.rec.n ? -1 : 0;
    return j;
}

/* A released slot, or a new one; NULL when out of memory. */
static feed_slot *get_slot(group_feed *f)
{
    feed_slot *s = NULL;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n_slots && !s; i++)
        if (f->slots[i]->spare) s = f->slots[i];
    if (!s && f->n_slots == f->slots_cap) {
        size_t cap = f->slots_cap ? 2 * f->slots_cap : 16;
        feed_slot **v = realloc(f->slots, cap * sizeof *v);
        if (v) f->slots = v, f->slots_cap = cap;
    }
    if (!s && f->n_slots < f->slots_cap && (s = calloc(1, sizeof *s)))
        f->slots[f->n_slots++] = s;
    if (s) s->spare = 0;
    pthread_mutex_unlock(&f->lock);
    return s;
}

/* Queues one job; the feed ends, freeing it, once the feed is closing. */
static int send(group_feed *f, feed_job *j)
{
    if (hts_tpool_dispatch3(f->pool, f->q, decode_job, j, free_job, free_job, 0) == 0) return 0;
    free_job(j);
    return -1;
}

/* Hands a malloc'd blob to the decoder; -1 once the feed stops. */
static int send_group(group_feed *f, uint8_t *blob, size_t len, errmsg *err)
{
    feed_job *j = calloc(1, sizeof *j);
    feed_slot *s = j ? get_slot(f) : NULL;
    if (!s) {
        free(j);
        free(blob);
        return errmsg_set(err, "out of memory reading the temporary runs");
    }
    *j = (feed_job){ .kind = JOB_GROUP, .blob = blob, .len = len, .out = s };
    return send(f, j) < 0 ? 1 : 0;
}

static void send_end(group_feed *f, const errmsg *failure)
{
    feed_job *j = f->last;
    f->last = NULL;
    j->kind = failure ? JOB_FAILED : JOB_END;
    if (failure) errmsg_copy(&j->err, failure);
    send(f, j);
}

/* In each run, the group that begins below lo and holds records from lo
 * on: RocksDB's iterator, bounded below by lo, passes over it. */
static int send_straddlers(group_feed *f, errmsg *err)
{
    size_t cap = store_indexed_runs(f->st);
    key_sample *keys = malloc((cap ? cap : 1) * sizeof *keys);
    if (!keys) return errmsg_set(err, "out of memory reading the temporary runs");
    size_t n = store_straddlers(f->st, f->part, f->lo, f->lo_len, keys);
    int r = 0;
    for (size_t i = 0; i < n && r == 0 && !atomic_load(&f->stop); i++) {
        uint8_t *blob;
        size_t len;
        r = store_get(f->st, f->part, keys[i].key, keys[i].len, f->readahead, &blob, &len, err);
        if (r == 0) r = send_group(f, blob, len, err);
    }
    free(keys);
    return r;
}

/* The groups whose first keys lie in [lo, hi), copied out of RocksDB. */
static int send_range(group_feed *f, errmsg *err)
{
    store_iter *it = store_iter_open_range(f->st, f->part, f->readahead, f->lo, f->lo_len,
                                           f->hi, f->hi_len);
    if (!it) return errmsg_set(err, "out of memory reading the temporary runs");
    int r = 0;
    for (store_iter_first(it); r == 0 && store_iter_valid(it) && !atomic_load(&f->stop);
         store_iter_next(it)) {
        size_t len;
        const uint8_t *v = store_iter_value(it, &len);
        uint8_t *blob = malloc(len ? len : 1);
        if (!blob) r = errmsg_set(err, "out of memory reading the temporary runs");
        else r = send_group(f, memcpy(blob, v, len), len, err);
    }
    if (r == 0 && store_iter_status(it, err) < 0) r = -1;
    store_iter_close(it);
    return r;
}

static void *read_groups(void *arg)
{
    group_feed *f = arg;
    errmsg err;
    int r = f->lo ? send_straddlers(f, &err) : 0;
    if (r == 0) r = send_range(f, &err);
    if (r <= 0) send_end(f, r < 0 ? &err : NULL);   /* r > 0: the feed is closing */
    return NULL;
}

static int copy_key(uint8_t **dst, size_t *len, const key_sample *k)
{
    if (!k) return 0;
    *len = k->len;
    *dst = malloc(k->len ? k->len : 1);
    if (!*dst) return -1;
    memcpy(*dst, k->key, k->len);
    return 0;
}

group_feed *group_feed_open(rocks_store *st, int part, const key_sample *lo, const key_sample *hi,
                            size_t readahead, hts_tpool *pool, errmsg *err)
{
    group_feed *f = calloc(1, sizeof *f);
    if (!f) {
        errmsg_set(err, "out of memory reading the temporary runs");
        return NULL;
    }
    f->st = st;
    f->part = part;
    f->readahead = readahead;
    pthread_mutex_init(&f->lock, NULL);
    int ok = copy_key(&f->lo, &f->lo_len, lo) == 0 && copy_key(&f->hi, &f->hi_len, hi) == 0
          && (f->last = calloc(1, sizeof *f->last));
    f->pool = pool ? pool : ok ? (f->own_pool = hts_tpool_init(1)) : NULL;
    if (ok && f->pool) f->q = hts_tpool_process_init(f->pool, FEED_AHEAD, 0);
    if (ok && f->q && pthread_create(&f->reader, NULL, read_groups, f) == 0) {
        f->started = 1;
        pthread_setname_np(f->reader, "rocksort-read");
        return f;
    }
    errmsg_set(err, "cannot start a reader of the temporary runs (out of memory or threads?)");
    group_feed_close(f);
    return NULL;
}

/* The record index of the group's first key not below key. */
static size_t lower_bound(const group_records *r, const uint8_t *key, size_t len)
{
    size_t a = 0, b = r->n;
    while (a < b) {
        size_t mid = a + (b - a) / 2, kl;
        const uint8_t *k = group_key(r, mid, &kl);
        if (key_cmp(k, kl, key, len) < 0) a = mid + 1;
        else b = mid;
    }
    return a;
}

/* Takes the next result: a group to hold as pending, or the end. */
static void next_result(group_feed *f)
{
    hts_tpool_result *r = hts_tpool_next_result_wait(f->q);
    feed_job *j = r ? hts_tpool_result_data(r) : NULL;
    hts_tpool_delete_result(r, 0);
    if (j && j->kind == JOB_GROUP && j->decoded == 0) {
        f->pending = j;
        return;
    }
    f->ended = 1;
    if (!j) f->failed = errmsg_set(&f->error, "the thread pool failed");
    else if (j->kind == JOB_FAILED) f->failed = errmsg_copy(&f->error, &j->err);
    else if (j->kind == JOB_GROUP)
        f->failed = errmsg_set(&f->error, "a temporary run is corrupt: a group of records "
                                          "does not decode");
    if (j && j->kind == JOB_GROUP) group_feed_release(f, &j->out->g);
    free_job(j);
}

const uint8_t *group_feed_peek(group_feed *f, size_t *klen)
{
    if (!f->pending && !f->ended) next_result(f);
    return f->pending ? group_key(&f->pending->out->g.rec, 0, klen) : NULL;
}

fed_group *group_feed_take(group_feed *f)
{
    size_t klen;
    if (!group_feed_peek(f, &klen)) return NULL;
    feed_job *j = f->pending;
    fed_group *g = &j->out->g;
    f->pending = NULL;
    free_job(j);
    g->begin = f->lo ? lower_bound(&g->rec, f->lo, f->lo_len) : 0;
    g->end = f->hi ? lower_bound(&g->rec, f->hi, f->hi_len) : g->rec.n;
    if (g->end < g->begin) g->end = g->begin;
    return g;
}

void group_feed_release(group_feed *f, fed_group *g)
{
    pthread_mutex_lock(&f->lock);
    ((feed_slot *)g)->spare = 1;    /* g is a feed_slot's first member */
    pthread_mutex_unlock(&f->lock);
}

int group_feed_status(const group_feed *f, errmsg *err)
{
    return f->failed ? errmsg_copy(err, &f->error) : 0;
}

void group_feed_close(group_feed *f)
{
    if (!f) return;
    atomic_store(&f->stop, 1);
    if (f->q) hts_tpool_process_shutdown(f->q);
    if (f->started) pthread_join(f->reader, NULL);
    free_job(f->pending);
    free_job(f->last);
    /* Drops the jobs still queued or decoding (free_job() on each). */
    if (f->q) hts_tpool_process_destroy(f->q);
    if (f->own_pool) hts_tpool_destroy(f->own_pool);
    for (size_t i = 0; i < f->n_slots; i++) {
        group_records_free(&f->slots[i]->g.rec);
        free(f->slots[i]->scratch.p);
        free(f->slots[i]);
    }
    free(f->slots);
    free(f->lo);
    free(f->hi);
    pthread_mutex_destroy(&f->lock);
    free(f);
}
