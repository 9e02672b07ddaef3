/* readout/run_stream.c -- see readout/run_stream.h.
 *
 * The chunks form a ring: the consumer reads chunk `head`, the producer
 * fills the one after the n_filled it has published.  A chunk holds
 * records in batch's packed layout (packed_put/packed_key/...).
 */
#include <stdlib.h>
#include "store/store.h"
#include "codec/packed_record.h"
#include "readout/run_stream.h"
#include "util/thread.h"
#include "util/worker.h"

typedef struct {
    uint8_t *data;
    size_t cap, used;
} chunk;

struct run_stream {
    store_iter *it;
    worker w;           /* the producer; w.stop: the consumer is closing */
    chunk *chunks;
    int n_chunks;
    int head;           /* the chunk the consumer reads */
    int n_filled;       /* published and not yet released, head included */
    int done;           /* the producer has published its last chunk */
    int restart;        /* run_stream_restart(): the producer reads the iterator again */
    int out_of_memory;
    int failed;         /* the iterator failed: error says why */
    errmsg error;
    const uint8_t *rec; /* the consumer's current record, NULL at the end */
};

static int reserve(chunk *c, size_t need)
{
    if (need <= c->cap) return 0;
    uint8_t *d = realloc(c->data, need);
    if (!d) return -1;
    c->data = d;
    c->cap = need;
    return 0;
}

/* Copies records into c until it is full or the iterator ends.  A record
 * that fits no chunk gets a chunk grown to its size, alone. */
static int fill(run_stream *s, chunk *c)
{
    c->used = 0;
    while (store_iter_valid(s->it)) {
        size_t kl, vl;
        const uint8_t *k = store_iter_key(s->it, &kl);
        const uint8_t *v = store_iter_value(s->it, &vl);
        size_t need = packed_record_size(kl, vl);
        if (c->used + need > c->cap) {
            if (c->used > 0) return 0;
            if (reserve(c, need) < 0) return -1;
        }
        packed_put(c->data + c->used, k, kl, v, vl);
        c->used += need;
        store_iter_next(s->it);
    }
    return 0;
}

/* Waits for a free chunk; -1 once the consumer is closing. */
static int next_free_chunk(run_stream *s)
{
    pthread_mutex_lock(&s->w.lock);
    while (s->n_filled == s->n_chunks && !s->w.stop)
        pthread_cond_wait(&s->w.changed, &s->w.lock);
    int i = s->w.stop ? -1 : (s->head + s->n_filled) % s->n_chunks;
    pthread_mutex_unlock(&s->w.lock);
    return i;
}

static void publish(run_stream *s, int filled, int last)
{
    pthread_mutex_lock(&s->w.lock);
    s->n_filled += filled;
    s->done = last;
    pthread_cond_broadcast(&s->w.changed);
    pthread_mutex_unlock(&s->w.lock);
}

/* Copies the iterator's records into the chunks to its end: 0, or -1 once
 * the consumer is closing or the copy failed. */
static int produce_range(run_stream *s)
{
    store_iter_first(s->it);
    for (;;) {
        int i = next_free_chunk(s);
        if (i < 0) return -1;
        chunk *c = &s->chunks[i];
        s->out_of_memory = fill(s, c) < 0;
        int last = s->out_of_memory || !store_iter_valid(s->it);
        if (last && !s->out_of_memory) s->failed = store_iter_status(s->it, &s->error) < 0;
        publish(s, c->used > 0, last);
        if (last) return s->out_of_memory || s->failed ? -1 : 0;
    }
}

/* Waits for run_stream_restart(): 1, or 0 when the consumer is closing. */
static int next_range(run_stream *s)
{
    pthread_mutex_lock(&s->w.lock);
    while (!s->restart && !s->w.stop) pthread_cond_wait(&s->w.changed, &s->w.lock);
    int go = s->restart && !s->w.stop;
    s->restart = 0;
    pthread_mutex_unlock(&s->w.lock);
    return go;
}

static void *produce(void *arg)
{
    run_stream *s = arg;
    while (produce_range(s) == 0 && next_range(s)) {}
    thread_cpu_exiting();
    return NULL;
}

/* Moves the consumer to the next published chunk, or to the end. */
static void take_chunk(run_stream *s)
{
    pthread_mutex_lock(&s->w.lock);
    while (s->n_filled == 0 && !s->done)
        pthread_cond_wait(&s->w.changed, &s->w.lock);
    s->rec = s->n_filled ? s->chunks[s->head].data : NULL;
    pthread_mutex_unlock(&s->w.lock);
}

static void release_chunk(run_stream *s)
{
    pthread_mutex_lock(&s->w.lock);
    s->head = (s->head + 1) % s->n_chunks;
    s->n_filled--;
    pthread_cond_broadcast(&s->w.changed);
    pthread_mutex_unlock(&s->w.lock);
}

static void free_stream(run_stream *s)
{
    if (s->chunks)
        for (int i = 0; i < s->n_chunks; i++) free(s->chunks[i].data);
    free(s->chunks);
    free(s);
}

run_stream *run_stream_open(store_iter *it, size_t chunk_bytes, int n_chunks)
{
    run_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->it = it;
    s->n_chunks = n_chunks < 2 ? 2 : n_chunks;
    s->chunks = calloc((size_t)s->n_chunks, sizeof *s->chunks);
    int ok = s->chunks != NULL;
    for (int i = 0; ok && i < s->n_chunks; i++) ok = reserve(&s->chunks[i], chunk_bytes) == 0;
    if (!ok) {
        free_stream(s);
        return NULL;
    }
    worker_init(&s->w);
    if (worker_start(&s->w, THREAD_READ, produce, s) < 0) {
        worker_free(&s->w);
        free_stream(s);
        return NULL;
    }
    take_chunk(s);
    return s;
}

int run_stream_valid(const run_stream *s) { return s->rec != NULL; }

const uint8_t *run_stream_key(const run_stream *s, size_t *len)
{
    return packed_key(s->rec, len);
}

const uint8_t *run_stream_value(const run_stream *s, size_t *len)
{
    return packed_value(s->rec, len);
}

void run_stream_next(run_stream *s)
{
    const chunk *c = &s->chunks[s->head];
    s->rec = packed_after(s->rec);
    if (s->rec < c->data + c->used) return;
    release_chunk(s);
    take_chunk(s);
}

int run_stream_restart(run_stream *s)
{
    if (s->out_of_memory || s->failed) return -1;
    pthread_mutex_lock(&s->w.lock);
    s->done = 0;
    s->head = s->n_filled = 0;
    s->restart = 1;
    pthread_cond_broadcast(&s->w.changed);
    pthread_mutex_unlock(&s->w.lock);
    take_chunk(s);
    return 0;
}

int run_stream_status(const run_stream *s, errmsg *err)
{
    if (s->out_of_memory) return errmsg_set(err, "out of memory");
    return s->failed ? errmsg_copy(err, &s->error) : 0;
}

void run_stream_close(run_stream *s)
{
    if (!s) return;
    worker_free(&s->w);
    free_stream(s);
}
