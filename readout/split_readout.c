/* readout/split_readout.c -- see readout/split_readout.h. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "readout/split_readout.h"
#include "readout/piece_fault.h"
#include "readout/merge_writer.h"
#include "readout/readout_plan.h"
#include "readout/readout_model.h"
#include "readout/run_passes.h"
#include "codec/record.h"
#include "keys/key_samples.h"
#include "util/fd_budget.h"
#include "util/grow_array.h"
#include "util/thread.h"

/* A piece holds at least this much, and 1 MiB per spilled run (each run's
 * share of a piece is a seek of its own), as readout/readout_plan.c's. */
#define PIECE_MIN_BYTES (4ULL << 20)
#define PIECES_PER_WRITER 8
#define WRITERS_MAX 64

/* The groups the samples show, in key order, with the bytes they stand
 * for (keys borrowed from the samples); the pieces' lower bounds. */
typedef struct {
    key_samples samples;
    key_sample *group;
    size_t n_groups, cap_groups;
    key_sample *lo;         /* piece i's lower bound: lo[i - 1]; piece 0 is open below */
    int n, writers;
    size_t readahead;
} split_plan;

static int by_key(const void *a, const void *b)
{
    const key_sample *x = a, *y = b;
    return key_cmp(x->key, x->len, y->key, y->len);
}

static int gather_groups(const split_request *rq, split_plan *p)
{
    readout_plan_samples(rq->in, &p->samples);
    qsort(p->samples.v, p->samples.n, sizeof *p->samples.v, by_key);
    for (size_t i = 0; i < p->samples.n; i++) {
        const key_sample *x = &p->samples.v[i];
        size_t glen = split_key_group_len(x->key, x->len);
        key_sample *last = p->n_groups ? &p->group[p->n_groups - 1] : NULL;
        if (last && last->len == glen && !memcmp(last->key, x->key, glen)) {
            last->weight += x->weight;
            continue;
        }
        if (grow_array((void **)&p->group, &p->cap_groups, p->n_groups + 1, sizeof *p->group) < 0)
            return -1;
        p->group[p->n_groups++] = (key_sample){ x->key, glen, x->weight };
    }
    return 0;
}

/* Writers: -@ (or --merge-threads), held to the descriptors (each has its
 * output, an index being saved, and its readers' files through RocksDB's
 * table cache) and to what the readers' memory holds. */
static int writers_for(const split_request *rq, const run_readers_shape *shape)
{
    int k = rq->merge_threads ? rq->merge_threads : rq->threads;
    if (k > WRITERS_MAX) k = WRITERS_MAX;
    int spare = fd_budget_available(0);
    while (spare >= 0 && k > 1 && 2 * k + 2 > spare / 2) k--;
    return k > 1 ? run_readers_threads(shape, READERS_MIN_READAHEAD, rq->readers, k) : 1;
}

/* Pieces of at least `least` bytes, cut before a group, never inside one. */
static int cut_pieces(split_plan *p, uint64_t least)
{
    p->lo = malloc((p->n_groups ? p->n_groups : 1) * sizeof *p->lo);
    if (!p->lo) return -1;
    uint64_t held = 0;
    p->n = 1;
    for (size_t i = 0; i < p->n_groups; i++) {
        if (held >= least) {
            p->lo[p->n++ - 1] = (key_sample){ p->group[i].key, p->group[i].len, 0 };
            held = 0;
        }
        held += p->group[i].weight;
    }
    return 0;
}

static int plan(const split_request *rq, split_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n = p->writers = 1;
    run_readers_shape shape = run_passes_readers(rq->in->store);
    int k = rq->threads > 1 || rq->merge_threads > 1 ? writers_for(rq, &shape) : 1;
    if (gather_groups(rq, p) < 0) return -1;
    if (k > 1 && p->n_groups > 1) {
        uint64_t total = 0;
        for (size_t i = 0; i < p->n_groups; i++) total += p->group[i].weight;
        uint64_t least = total / ((uint64_t)k * PIECES_PER_WRITER);
        if (least < PIECE_MIN_BYTES) least = PIECE_MIN_BYTES;
        /* Each piece decodes a group of every run written (store/store.h). */
        uint64_t straddled = rq->in->store ? store_straddled_runs(rq->in->store) : 0;
        if (least < straddled * READOUT_RUN_SHARE) least = straddled * READOUT_RUN_SHARE;
        if (cut_pieces(p, least) < 0) return -1;
    }
    p->writers = p->n < k ? p->n : k;
    uint64_t each = rq->readers / (uint64_t)p->writers;
    if (p->writers > 1) each = each > READOUT_THREAD_BYTES ? each - READOUT_THREAD_BYTES : 0;
    p->readahead = run_readers_fit(&shape, each);
    if (!p->readahead) p->readahead = READERS_MIN_READAHEAD;
    return 0;
}

static void plan_free(split_plan *p)
{
    free(p->group);
    free(p->lo);
    key_samples_free(&p->samples);
}

/* Whether a group the samples put at SPLIT_POOLED_FROM bytes or more. */
static int big_group(const split_plan *p, const uint8_t *key, size_t glen)
{
    key_sample probe = { key, glen, 0 };
    const key_sample *g = bsearch(&probe, p->group, p->n_groups, sizeof *p->group, by_key);
    return g && g->weight >= SPLIT_POOLED_FROM;
}

/* The writers and the pieces they take, in key order. */
typedef struct {
    const split_request *rq;
    const split_plan *p;
    pthread_mutex_t lock;
    int next;               /* the next piece a writer takes */
    _Atomic uint64_t shown;
    _Atomic int stop;
    piece_fault fault;      /* the first piece that failed, and why */
    uint64_t records, digest;
} split_line;

/* The output a writer has open: its group (a copy of the key's bytes). */
typedef struct {
    split_file f;
    int open;
    uint8_t *group;
    size_t glen, cap;
    uint64_t from;          /* the writer's records when it began */
} open_output;

/* --verify: the value read from the record as written is its output's. */
static int route_checked(const split_request *rq, const open_output *o, const uint8_t *v,
                         size_t vlen, errmsg *err)
{
    bam1_t view;
    char num[SPLIT_NUMBER_MAX];
    const char *value, *want;
    size_t want_len;
    if (record_value_view(v, vlen, &view) < 0) return 0;    /* the writer says it is corrupt */
    int n = split_key_value(&rq->sort->split, &view, num, &value);
    if (n >= 0 && rq->sort->split.by_rg && !split_key_ids_has(sort_key_split_ids(rq->sort), value))
        n = -1;
    int other = split_key_group_value(o->group, o->glen, &want, &want_len);
    if (other ? n < 0 : n >= 0 && (size_t)n == want_len && !memcmp(value, want, want_len)) return 0;
    return errmsg_set(err, "verify failed: record '%s' went to the output '%s', which is not its "
                      "%.2s value's", bam_get_qname(&view), o->f.name, rq->sort->split.tag);
}

static int end_output(split_line *l, open_output *o, const merge_writer *w, int status,
                      errmsg *err)
{
    if (!o->open) return status;
    o->open = 0;
    if (status != 0) {
        split_set_drop(&o->f);
        return status;
    }
    return split_set_end(l->rq->set, &o->f, w->records - o->from, err);
}

static int begin_output(split_line *l, open_output *o, merge_writer *w, const uint8_t *key,
                        size_t klen, size_t glen, errmsg *err)
{
    if (grow_array((void **)&o->group, &o->cap, glen, 1) < 0) return errmsg_set(err, "out of memory");
    memcpy(o->group, key, glen);
    o->glen = glen;
    htsThreadPool *pool = big_group(l->p, key, glen) ? l->rq->pool : NULL;
    if (split_set_begin(l->rq->set, key, glen, key + glen, klen - glen, pool, &o->f, err) < 0) {
        split_set_drop(&o->f);
        return -1;
    }
    o->open = 1;
    o->from = w->records;
    w->fp = o->f.fp;
    w->hdr = o->f.hdr;
    w->out_name = o->f.name;
    return 0;
}

/* Writes the merge's records, each group to its output.  0,
 * MERGE_WRITE_STOPPED, or -1 with the cause in err. */
static int write_groups(split_line *l, run_merge *m, merge_writer *w, open_output *o,
                        bam1_t *owned, errmsg *err)
{
    const uint8_t *v;
    size_t vlen, klen;
    int status = 0;
    while (status == 0 && (v = run_merge_next(m, &vlen)) != NULL) {
        const uint8_t *key = run_merge_key(m, &klen);
        size_t glen = split_key_group_len(key, klen);
        if (!o->open || glen != o->glen || memcmp(key, o->group, glen)) {
            if ((status = end_output(l, o, w, 0, err)) != 0) break;
            if ((status = begin_output(l, o, w, key, klen, glen, err)) != 0) break;
        }
        if (l->rq->verify && (status = route_checked(l->rq, o, v, vlen, err)) != 0) break;
        status = merge_writer_put(w, v, vlen, owned, err);
    }
    if (status == 0 && run_merge_failed(m))
        status = errmsg_set(err, "out of memory opening a group of the temporary runs");
    return status;
}

static int write_piece(split_line *l, int i, merge_writer *w, open_output *o, bam1_t *owned,
                       errmsg *err)
{
    const split_plan *p = l->p;
    merge_sources src;
    int status = merge_sources_open(&src, l->rq->in, i ? &p->lo[i - 1] : NULL,
                                    i + 1 < p->n ? &p->lo[i] : NULL, p->readahead, err);
    if (status == 0) status = write_groups(l, src.merge, w, o, owned, err);
    if (status == 0 && merge_sources_status(&src, err) < 0) {
        status = errmsg_prefix(err, "error reading the temporary database");
        if (store_shows_damage(err->msg)) w->corrupt = 1;
    }
    merge_sources_close(&src);
    return end_output(l, o, w, status, err);
}

static int take_piece(split_line *l)
{
    pthread_mutex_lock(&l->lock);
    int i = atomic_load(&l->stop) || l->next >= l->p->n ? -1 : l->next++;
    pthread_mutex_unlock(&l->lock);
    return i;
}

static void piece_failed(split_line *l, int piece, const errmsg *cause, int store_failed)
{
    pthread_mutex_lock(&l->lock);
    piece_fault_keep(&l->fault, piece, cause, store_failed);
    atomic_store(&l->stop, 1);
    pthread_mutex_unlock(&l->lock);
}

static void *writer(void *arg)
{
    split_line *l = arg;
    const split_request *rq = l->rq;
    merge_writer w = { .store_name = rq->store_name, .verify = rq->verify, .prog = rq->prog,
                       .shown = &l->shown, .stop = &l->stop };
    open_output o = { 0 };
    bam1_t *owned = bam_init1();
    errmsg err;
    if (!owned) piece_failed(l, 0, &(errmsg){ "out of memory for the final merge" }, 0);
    for (int i; owned && (i = take_piece(l)) >= 0;) {
        int status = write_piece(l, i, &w, &o, owned, &err);
        if (status == 0) continue;
        if (status != MERGE_WRITE_STOPPED) piece_failed(l, i, &err, w.corrupt);
        break;
    }
    bam_destroy1(owned);
    free(o.group);
    pthread_mutex_lock(&l->lock);
    l->records += w.records;
    l->digest += w.digest;
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

static void *writer_thread(void *arg)
{
    writer(arg);
    thread_cpu_exiting();
    return NULL;
}

/* One writer on this thread, or K on threads of their own. */
static int run_writers(split_line *l, int k, errmsg *err)
{
    if (k == 1) {
        writer(l);
        return 0;
    }
    pthread_t *t = calloc((size_t)k, sizeof *t);
    if (!t) return errmsg_set(err, "out of memory for the final merge");
    int started = 0, ret = 0;
    for (; started < k; started++) {
        if (pthread_create(&t[started], NULL, writer_thread, l) != 0) {
            ret = errmsg_set(err, "cannot start a merge thread for the outputs");
            atomic_store(&l->stop, 1);
            break;
        }
        pthread_setname_np(t[started], THREAD_MERGE);
    }
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
    free(t);
    return ret;
}

int split_readout_run(const split_request *rq, readout_result *res, errmsg *err)
{
    split_plan p;
    split_line l = { .rq = rq, .p = &p, .fault = PIECE_FAULT_NONE };
    memset(res, 0, sizeof *res);
    if (plan(rq, &p) < 0) {
        plan_free(&p);
        return errmsg_set(err, "out of memory for the final merge");
    }
    pthread_mutex_init(&l.lock, NULL);
    int ret = run_writers(&l, p.writers, err);
    if (ret == 0) ret = piece_fault_cause(&l.fault, err);
    *res = (readout_result){ .records = l.records, .digest = l.digest, .ranges = p.n,
                             .threads = p.writers, .store_failed = l.fault.store_failed };
    pthread_mutex_destroy(&l.lock);
    plan_free(&p);
    return ret;
}
