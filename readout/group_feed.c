/* readout/group_feed.c -- see readout/group_feed.h.
 *
 * The reader thread decodes each group straight from RocksDB's value into
 * a slot and publishes the slots in order through a small ring; the merge
 * takes them from its head.  The end of the feed, or its failure, is
 * published the same way.  Slots are kept in a list of all the feed ever
 * made, so that closing frees them whoever holds them; released ones are
 * reused.  A feed serves one key range after another (group_feed_restart()):
 * its thread, its slots and its iterator's buffers stay, so a readout in
 * many pieces starts a thread per merge thread and part, not per piece, and
 * does not free and allocate its buffers again at every piece.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "readout/group_feed.h"
#include "util/grow_array.h"
#include "util/thread.h"
#include "util/worker.h"

typedef struct {
    fed_group g;
    int spare;              /* released, free for the next group */
} feed_slot;

struct group_feed {
    rocks_store *st;
    int part;
    size_t readahead;
    uint8_t *lo, *hi;       /* NULL: open */
    size_t lo_len, hi_len;
    store_iter *it;         /* group_feed_open_iter()'s, read whole; else NULL */
    store_iter *range_it;   /* else the iterator over the range, kept from range to range */
    int ahead;              /* groups decoded ahead, 1..GROUP_FEED_AHEAD */
    group_scratch scratch;  /* the columns of the group being decoded: one at a time */
    worker w;               /* the reader; w.lock guards everything below, w.stop: closing */
    feed_slot *ring[GROUP_FEED_AHEAD];  /* decoded, in order, not yet taken */
    int head, n_ready;
    int ended, failed;
    int restart;            /* a new range is set: the thread reads it */
    errmsg error;
    feed_slot **slots;
    size_t n_slots, slots_cap;
};

/* A released slot, or a new one; NULL when out of memory.  Under the lock. */
static feed_slot *get_slot(group_feed *f)
{
    for (size_t i = 0; i < f->n_slots; i++)
        if (f->slots[i]->spare) {
            f->slots[i]->spare = 0;
            return f->slots[i];
        }
    if (grow_array((void **)&f->slots, &f->slots_cap, f->n_slots + 1, sizeof *f->slots) < 0)
        return NULL;
    feed_slot *s = calloc(1, sizeof *s);
    if (s) f->slots[f->n_slots++] = s;
    return s;
}

/* Waits for room in the ring and a slot; NULL once the feed is closing. */
static feed_slot *next_slot(group_feed *f, errmsg *err)
{
    pthread_mutex_lock(&f->w.lock);
    while (f->n_ready == f->ahead && !f->w.stop) pthread_cond_wait(&f->w.changed, &f->w.lock);
    feed_slot *s = f->w.stop ? NULL : get_slot(f);
    if (!s && !f->w.stop) errmsg_set(err, "out of memory reading the temporary runs");
    pthread_mutex_unlock(&f->w.lock);
    return s;
}

static void publish(group_feed *f, feed_slot *s)
{
    pthread_mutex_lock(&f->w.lock);
    f->ring[(f->head + f->n_ready++) % f->ahead] = s;
    pthread_cond_broadcast(&f->w.changed);
    pthread_mutex_unlock(&f->w.lock);
}

/* Decodes one group into a slot and publishes it: 0, 1 once the feed is
 * closing, or -1 with the cause in err. */
static int send_group(group_feed *f, const uint8_t *blob, size_t len, errmsg *err)
{
    feed_slot *s = next_slot(f, err);
    if (!s) return f->w.stop ? 1 : -1;
    int r = group_codec_decode(blob, len, &s->g.rec, &f->scratch);
    if (r < 0 || !s->g.rec.n) {
        group_feed_release(f, &s->g);
        /* Memory running out is no sign of a damaged run: a resumable sort
         * keeps its state for it (store_shows_damage()). */
        if (r == GROUP_DECODE_NO_MEMORY)
            return errmsg_set(err, "out of memory decoding a group of records from the temporary runs");
        return errmsg_set(err, STORE_RUN_CORRUPT ": a group of records does not decode");
    }
    publish(f, s);
    return 0;
}

static void finish(group_feed *f, const errmsg *failure)
{
    pthread_mutex_lock(&f->w.lock);
    f->ended = 1;
    if (failure) {
        errmsg_copy(&f->error, failure);
        f->failed = 1;
    }
    pthread_cond_broadcast(&f->w.changed);
    pthread_mutex_unlock(&f->w.lock);
}

static int is_stopping(group_feed *f)
{
    pthread_mutex_lock(&f->w.lock);
    int stop = f->w.stop;
    pthread_mutex_unlock(&f->w.lock);
    return stop;
}

/* In each run, the group that begins below lo and holds records from lo
 * on: RocksDB's iterator, bounded below by lo, passes over it. */
static int send_straddlers(group_feed *f, errmsg *err)
{
    size_t cap = store_iter_indexed_runs(f->st);
    key_sample *keys = malloc((cap ? cap : 1) * sizeof *keys);
    if (!keys) return errmsg_set(err, "out of memory reading the temporary runs");
    size_t n = store_iter_straddlers(f->st, f->part, f->lo, f->lo_len, keys);
    int r = 0;
    for (size_t i = 0; i < n && r == 0 && !is_stopping(f); i++) {
        uint8_t *blob;
        size_t len;
        r = store_iter_get(f->st, f->part, keys[i].key, keys[i].len, f->readahead, &blob, &len, err);
        if (r == 0) {
            r = send_group(f, blob, len, err);
            free(blob);
        }
    }
    free(keys);
    return r;
}

/* The iterator over the feed's range: the pass's, or the range's, made
 * once and moved to each new range. */
static store_iter *range_iterator(group_feed *f)
{
    if (f->it) return f->it;
    if (!f->range_it)
        return f->range_it = store_iter_open_range(f->st, f->part, f->readahead, f->lo, f->lo_len,
                                                   f->hi, f->hi_len);
    return store_iter_retarget(f->range_it, f->lo, f->lo_len, f->hi, f->hi_len) == 0
         ? f->range_it : NULL;
}

/* The groups whose first keys lie in [lo, hi), decoded where RocksDB
 * holds them. */
static int send_range(group_feed *f, errmsg *err)
{
    store_iter *it = range_iterator(f);
    if (!it) return errmsg_set(err, "out of memory reading the temporary runs");
    int r = 0;
    for (store_iter_first(it); r == 0 && store_iter_valid(it); store_iter_next(it)) {
        size_t len;
        const uint8_t *v = store_iter_value(it, &len);
        r = send_group(f, v, len, err);
    }
    if (r == 0 && store_iter_status(it, err) < 0) r = -1;
    return r;
}

/* Waits for the next range: 1 once one is set, 0 when the feed closes. */
static int next_range(group_feed *f)
{
    pthread_mutex_lock(&f->w.lock);
    while (!f->restart && !f->w.stop) pthread_cond_wait(&f->w.changed, &f->w.lock);
    int go = f->restart && !f->w.stop;
    f->restart = 0;
    pthread_mutex_unlock(&f->w.lock);
    return go;
}

static void *read_groups(void *arg)
{
    group_feed *f = arg;
    int r;
    do {
        errmsg err;
        r = f->lo ? send_straddlers(f, &err) : 0;
        if (r == 0) r = send_range(f, &err);
        finish(f, r < 0 ? &err : NULL);
    } while (r == 0 && !f->it && next_range(f));
    thread_cpu_exiting();
    return NULL;
}

static int copy_key(uint8_t **dst, size_t *len, const key_sample *k)
{
    if (!k) return 0;
    *len = k->len;
    return (*dst = key_dup(k->key, k->len)) ? 0 : -1;
}

static group_feed *feed_new(int ahead, errmsg *err)
{
    group_feed *f = calloc(1, sizeof *f);
    if (!f) {
        errmsg_set(err, "out of memory reading the temporary runs");
        return NULL;
    }
    f->ahead = ahead < 1 ? 1 : ahead > GROUP_FEED_AHEAD ? GROUP_FEED_AHEAD : ahead;
    worker_init(&f->w);
    return f;
}

static group_feed *feed_start(group_feed *f, errmsg *err)
{
    if (worker_start(&f->w, THREAD_READ, read_groups, f) == 0) return f;
    errmsg_set(err, "cannot start a reader of the temporary runs (out of memory or threads?)");
    group_feed_close(f);
    return NULL;
}

group_feed *group_feed_open(rocks_store *st, int part, const key_sample *lo, const key_sample *hi,
                            size_t readahead, errmsg *err)
{
    group_feed *f = feed_new(GROUP_FEED_AHEAD, err);
    if (!f) return NULL;
    f->st = st;
    f->part = part;
    f->readahead = readahead;
    if (copy_key(&f->lo, &f->lo_len, lo) == 0 && copy_key(&f->hi, &f->hi_len, hi) == 0)
        return feed_start(f, err);
    errmsg_set(err, "out of memory reading the temporary runs");
    group_feed_close(f);
    return NULL;
}

int group_feed_restart(group_feed *f, const key_sample *lo, const key_sample *hi, errmsg *err)
{
    uint8_t *new_lo = NULL, *new_hi = NULL;
    size_t lo_len = 0, hi_len = 0;
    if (copy_key(&new_lo, &lo_len, lo) < 0 || copy_key(&new_hi, &hi_len, hi) < 0) {
        free(new_lo);
        return errmsg_set(err, "out of memory reading the temporary runs");
    }
    pthread_mutex_lock(&f->w.lock);
    while (!f->ended) pthread_cond_wait(&f->w.changed, &f->w.lock);
    if (f->failed) {    /* its thread has ended: the failure stands */
        pthread_mutex_unlock(&f->w.lock);
        free(new_lo);
        free(new_hi);
        return errmsg_copy(err, &f->error);
    }
    free(f->lo);
    free(f->hi);
    f->lo = new_lo, f->lo_len = lo_len;
    f->hi = new_hi, f->hi_len = hi_len;
    f->ended = 0;
    f->head = f->n_ready = 0;
    f->restart = 1;
    pthread_cond_broadcast(&f->w.changed);
    pthread_mutex_unlock(&f->w.lock);
    return 0;
}

group_feed *group_feed_open_iter(store_iter *it, int ahead, errmsg *err)
{
    group_feed *f = feed_new(ahead, err);
    if (!f) {
        store_iter_close(it);
        return NULL;
    }
    f->it = it;
    return feed_start(f, err);
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

/* The ring's head, waiting for it; NULL at the end. */
static feed_slot *head(group_feed *f)
{
    pthread_mutex_lock(&f->w.lock);
    while (!f->n_ready && !f->ended) pthread_cond_wait(&f->w.changed, &f->w.lock);
    feed_slot *s = f->n_ready ? f->ring[f->head] : NULL;
    pthread_mutex_unlock(&f->w.lock);
    return s;
}

const uint8_t *group_feed_peek(group_feed *f, size_t *klen)
{
    feed_slot *s = head(f);
    return s ? group_key(&s->g.rec, 0, klen) : NULL;
}

fed_group *group_feed_take(group_feed *f)
{
    feed_slot *s = head(f);
    if (!s) return NULL;
    pthread_mutex_lock(&f->w.lock);
    f->head = (f->head + 1) % f->ahead;
    f->n_ready--;
    pthread_cond_broadcast(&f->w.changed);
    pthread_mutex_unlock(&f->w.lock);
    fed_group *g = &s->g;
    g->begin = f->lo ? lower_bound(&g->rec, f->lo, f->lo_len) : 0;
    g->end = f->hi ? lower_bound(&g->rec, f->hi, f->hi_len) : g->rec.n;
    if (g->end < g->begin) g->end = g->begin;
    return g;
}

void group_feed_release(group_feed *f, fed_group *g)
{
    pthread_mutex_lock(&f->w.lock);
    ((feed_slot *)g)->spare = 1;    /* g is a feed_slot's first member */
    pthread_mutex_unlock(&f->w.lock);
}

int group_feed_status(const group_feed *f, errmsg *err)
{
    return f->failed ? errmsg_copy(err, &f->error) : 0;
}

void group_feed_close(group_feed *f)
{
    if (!f) return;
    worker_stop(&f->w);
    for (size_t i = 0; i < f->n_slots; i++) {
        group_codec_records_free(&f->slots[i]->g.rec);
        free(f->slots[i]);
    }
    free(f->slots);
    group_codec_scratch_free(&f->scratch);
    store_iter_close(f->it);
    store_iter_close(f->range_it);
    free(f->lo);
    free(f->hi);
    worker_free(&f->w);
    free(f);
}
