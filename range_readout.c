/* range_readout.c -- see range_readout.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <htslib/bgzf.h>
#include <htslib/hfile.h>
#include "range_readout.h"
#include "clock_util.h"
#include "fd_budget.h"
#include "merge_sources.h"
#include "merge_writer.h"
#include "output_parts.h"
#include "readout_model.h"

/* A readout smaller than this per thread is not worth a thread (auto
 * rule only). */
#define RANGE_MIN_BYTES (32ULL << 20)
#define RANGES_MAX 64

/* The pieces the readout cuts the key space into.  Each run's share of a
 * piece is read with a seek of its own, so a piece holds at least
 * PIECE_RUN_SHARE per run; the pieces in flight (threads + 2, in memory)
 * stay within a quarter of the sort's memory.  When those two cannot both
 * hold, the automatic rule keeps one stream. */
#define PIECE_MIN_BYTES (4ULL << 20)
#define PIECE_MAX_BYTES (64ULL << 20)
#define PIECE_RUN_SHARE (1ULL << 20)
#define PIECES_MAX 65536

/* The output's deflate level: from the mode ("wb6"), an output option, or
 * htslib's default; uncompressed SAM counts as 0. */
static int output_level(const rocksort_opts *o)
{
    const char *digit = strpbrk(o->out_mode, "0123456789");
    int level = digit ? *digit - '0' : -1;
    for (const hts_opt *x = o->out_opts; x; x = x->next)
        if (x->opt == HTS_OPT_COMPRESSION_LEVEL) level = x->val.i;
    if (level < 0) level = strpbrk(o->out_mode + 1, "bcz") ? 6 : 0;
    return level;
}

static int width_for(const rocksort_opts *o, int regular_output, uint64_t bytes)
{
    if (strchr(o->out_mode + 1, 'c')) return 1;
    if (o->index_fn && !regular_output) return 1;
    if (o->merge_threads > 0) return o->merge_threads < RANGES_MAX ? o->merge_threads : RANGES_MAX;
    return readout_ranges_for(o->threads, output_level(o), bytes, RANGE_MIN_BYTES, RANGES_MAX);
}

int readout_width(const sort_job *j)
{
    return width_for(j->o, j->out.final_path != NULL, j->bytes_in);
}

/* Samples of a sorted batch: an entry every ~STORE_SAMPLE_BYTES. */
static void sample_batch(key_samples *s, const sort_batch *sb)
{
    size_t n = batch_count(sb), len;
    if (!n) return;
    size_t step = n / (batch_bytes(sb) / STORE_SAMPLE_BYTES + 1) + 1;
    uint64_t weight = (uint64_t)((double)batch_bytes(sb) * (double)step / (double)n);
    for (size_t i = 0; i < n; i += step) {
        const uint8_t *k = batch_key(sb, i, &len);
        key_samples_add(s, k, len, weight);
    }
}

/* Samples of a packed run: its marks, each weighing the bytes to the next. */
static void sample_packed(key_samples *s, const packed_run *pr)
{
    size_t n = packed_marks(pr), len;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *rec = packed_mark(pr, i);
        const uint8_t *next = i + 1 < n ? packed_mark(pr, i + 1) : NULL;
        uint64_t weight = next ? (uint64_t)(next - rec) : STORE_SAMPLE_BYTES / 4;
        const uint8_t *k = packed_key(rec, &len);
        key_samples_add(s, k, len, weight);
    }
}

static void gather_samples(sort_job *j, key_samples *s)
{
    for (size_t i = 0; i < store_samples(j->store); i++) {
        const store_sample *x = store_sample_at(j->store, i);
        key_samples_add(s, x->key, x->len, x->weight);
    }
    for (int i = 0; j->q.kept && i < j->q.n_held; i++) sample_batch(s, j->q.kept[i]);
    for (int i = 0; j->q.packed && i < j->q.n_held; i++) sample_packed(s, j->q.packed[i]);
    sample_batch(s, j->tail);
}

/* The bytes of records in one piece (see PIECE_MIN_BYTES); 0 when the
 * runs are too many for pieces that fit in memory. */
static uint64_t piece_bytes(const sort_job *j, int threads)
{
    const rocksort_opts *o = j->o;
    uint64_t memory = (uint64_t)o->mem_per_thread * (uint64_t)(o->threads > 1 ? o->threads : 1);
    uint64_t fits = memory / 4 / (uint64_t)(threads + 2);
    uint64_t runs = j->store ? (uint64_t)store_sorted_runs(j->store) : 0;
    uint64_t piece = runs * PIECE_RUN_SHARE;
    if (piece < PIECE_MIN_BYTES) piece = PIECE_MIN_BYTES;
    if (fits > PIECE_MAX_BYTES) fits = PIECE_MAX_BYTES;
    if (piece <= fits) return piece;
    if (!o->merge_threads) return 0;
    return fits < PIECE_MIN_BYTES ? PIECE_MIN_BYTES : fits;
}

static int pieces_for(const sort_job *j, uint64_t piece, int threads)
{
    uint64_t n = (j->bytes_in + piece - 1) / piece;
    if (n < (uint64_t)threads) n = (uint64_t)threads;
    return n > PIECES_MAX ? PIECES_MAX : (int)n;
}

/* The in-memory files the pieces pass through; none: one stream. */
static int open_slots(range_plan *p)
{
    p->n_slots = p->threads + 2;
    p->slot_fd = malloc((size_t)p->n_slots * sizeof *p->slot_fd);
    if (!p->slot_fd) return -1;
    for (int i = 0; i < p->n_slots; i++) p->slot_fd[i] = -1;
    for (int i = 0; i < p->n_slots; i++)
        if ((p->slot_fd[i] = part_slot_create()) < 0) return -1;
    return 0;
}

/* Each merge thread holds a slot and its writer's descriptor, with two
 * slots more: the readout takes at most half of the descriptors still free
 * under `ulimit -n`, leaving the rest to RocksDB's tables. */
static int within_descriptors(int k)
{
    int spare = fd_budget_available(0);
    while (spare >= 0 && k > 1 && 2 * k + 2 > spare / 2) k--;
    return k;
}

int ranges_plan(sort_job *j, range_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n = p->threads = 1;
    int k = within_descriptors(readout_width(j));
    /* A piece of compact runs would have to read every group before its
     * start (group_iter.h): one stream reads each group once. */
    if (j->store && store_grouped(j->store) && store_runs_ingested(j->store)) k = 1;
    uint64_t piece = k < 2 ? 0 : piece_bytes(j, k);
    if (!piece) return 0;
    int want = pieces_for(j, piece, k);
    p->splits = malloc((size_t)(want - 1) * sizeof *p->splits);
    if (!p->splits) {
        job_fail("out of memory for the final merge of '%s'", j->o->in_fn);
        return -1;
    }
    gather_samples(j, &p->samples);
    p->n = 1 + key_ranges_choose(&p->samples, want, p->splits);
    p->threads = p->n < k ? p->n : k;
    if (p->n > 1 && open_slots(p) < 0) {    /* no memfd here: one stream after all */
        ranges_free(p);
        p->n = p->threads = 1;
    }
    return 0;
}

void ranges_free(range_plan *p)
{
    for (int i = 0; p->slot_fd && i < p->n_slots; i++)
        if (p->slot_fd[i] >= 0) close(p->slot_fd[i]);
    free(p->slot_fd);
    free(p->splits);
    key_samples_free(&p->samples);
    memset(p, 0, sizeof *p);
}

/* The pieces in flight.  Workers take the next piece in key order, but
 * never more than n_slots ahead of the writer; piece i passes through slot
 * i % n_slots.  The writer (the caller's thread) appends each finished
 * piece to the output in order. */
typedef struct {
    sort_job *j;
    const range_plan *p;
    int bgzf_output;        /* pieces end with an EOF marker, left out when appended */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int next;               /* the next piece a worker takes */
    int appended;           /* pieces on the output */
    int *done;              /* per slot: 1 + the piece it holds, finished; 0 */
    off_t *length;          /* per slot: that piece's bytes */
    _Atomic uint64_t shown;
    _Atomic int stop;
    int failed_piece;       /* the first piece that failed (INT_MAX: none) */
    int status;             /* MERGE_WRITE_* of that piece, or PIECE_SOURCE_FAILED */
    char cause[200];
    uint64_t records, digest, bytes;
    double writer_waited;
} piece_line;

#define PIECE_SOURCE_FAILED (-10)

static key_bound bound_at(const range_plan *p, int i)
{
    if (i < 0 || i >= p->n - 1) return (key_bound){ NULL, 0 };
    return (key_bound){ p->splits[i].key, p->splits[i].len };
}

/* Each run's reader fetches about its share of a piece at a time: more
 * would be read twice, by the next piece's reader too. */
static size_t piece_readahead(const sort_job *j, const range_plan *p)
{
    uint64_t runs = j->store ? (uint64_t)store_sorted_runs(j->store) : 0;
    uint64_t share = j->bytes_in / (uint64_t)p->n / (runs ? runs : 1);
    if (share < (256u << 10)) share = 256u << 10;
    return share > STORE_DIRECT_READAHEAD ? STORE_DIRECT_READAHEAD : (size_t)share;
}

/* Records the first failure in piece order; the others follow from it. */
static void piece_failed(piece_line *l, int piece, int status, const char *cause)
{
    pthread_mutex_lock(&l->lock);
    if (piece < l->failed_piece) {
        l->failed_piece = piece;
        l->status = status;
        snprintf(l->cause, sizeof l->cause, "%s", cause ? cause : "");
    }
    atomic_store(&l->stop, 1);
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->lock);
}

/* A piece's writer: the output's format, level and options, into the slot
 * from its start.  It compresses on the worker's own thread: the pieces
 * are the parallelism, and htslib's threaded BGZF waits in 10 ms sleeps
 * for its queue to drain at every flush and close (bgzf.c,
 * mt_flush_queue()), which a readout of many pieces would pay per piece. */
static samFile *open_piece(piece_line *l, int fd)
{
    const rocksort_opts *o = l->j->o;
    int copy = part_slot_rewind(fd) == 0 ? dup(fd) : -1;
    hFILE *hf = copy >= 0 ? hdopen(copy, "w") : NULL;
    samFile *fp = hf ? hts_hopen(hf, o->out_fn, o->out_mode) : NULL;
    if (!fp) {
        if (hf) hclose_abruptly(hf);
        else if (copy >= 0) close(copy);
        return NULL;
    }
    if (o->out_opts && hts_opt_apply(fp, o->out_opts) < 0) {
        sam_close(fp);
        return NULL;
    }
    return fp;
}

/* A piece's blocks reach the slot before it counts as done. */
static int close_piece(samFile *fp, char *cause, size_t size)
{
    int is_bgzf = fp->format.compression == bgzf;
    errno = 0;
    int ret = is_bgzf ? bgzf_flush(fp->fp.bgzf) : hflush(fp->fp.hfile);
    if (ret < 0) snprintf(cause, size, "%s", merge_write_cause(fp));
    if (sam_close(fp) < 0 && ret == 0) {
        snprintf(cause, size, "%s", strerror(errno ? errno : EIO));
        ret = -1;
    }
    return ret;
}

/* Merges piece i into its slot; returns MERGE_WRITE_* or PIECE_SOURCE_FAILED. */
static int write_piece(piece_line *l, int i, merge_writer *w, char *cause, size_t size)
{
    const range_plan *p = l->p;
    int fd = p->slot_fd[i % p->n_slots];
    merge_sources src;
    w->fp = open_piece(l, fd);
    if (!w->fp) {
        snprintf(cause, size, "cannot open an in-memory part: %s", strerror(errno ? errno : ENOMEM));
        return MERGE_WRITE_FAILED;
    }
    int status = sources_open(&src, l->j, bound_at(p, i - 1), bound_at(p, i),
                              piece_readahead(l->j, p)) < 0 ? PIECE_SOURCE_FAILED : 0;
    if (status == 0) status = merge_write(w, src.merge);
    if (status == PIECE_SOURCE_FAILED) snprintf(cause, size, "out of memory");
    else if (status == MERGE_WRITE_OK && sources_error(&src)) {
        snprintf(cause, size, "%s", sources_error(&src));
        status = PIECE_SOURCE_FAILED;
    } else if (status == MERGE_WRITE_FAILED)
        snprintf(cause, size, "%s", merge_write_cause(w->fp));
    sources_close(&src);
    if (close_piece(w->fp, cause, size) < 0 && status == MERGE_WRITE_OK)
        status = MERGE_WRITE_FAILED;
    w->fp = NULL;
    return status;
}

/* The next piece this worker may take, or -1 when there is none or the
 * readout stops. */
static int take_piece(piece_line *l)
{
    pthread_mutex_lock(&l->lock);
    while (!atomic_load(&l->stop) && l->next < l->p->n && l->next >= l->appended + l->p->n_slots)
        pthread_cond_wait(&l->changed, &l->lock);
    int i = atomic_load(&l->stop) || l->next >= l->p->n ? -1 : l->next++;
    pthread_mutex_unlock(&l->lock);
    return i;
}

static void *piece_worker(void *arg)
{
    piece_line *l = arg;
    merge_writer w = { .hdr = l->j->hdr, .verify = l->j->o->verify, .prog = l->j->prog,
                       .shown = &l->shown, .stop = &l->stop };
    char cause[200];
    for (int i; (i = take_piece(l)) >= 0;) {
        cause[0] = '\0';
        int status = write_piece(l, i, &w, cause, sizeof cause);
        int slot = i % l->p->n_slots;
        off_t len = 0;
        char *err = NULL;
        if (status == MERGE_WRITE_OK
            && part_slot_length(l->p->slot_fd[slot], l->bgzf_output, &len, &err) < 0) {
            snprintf(cause, sizeof cause, "%s", err ? err : "out of memory");
            status = MERGE_WRITE_FAILED;
        }
        free(err);
        if (status != MERGE_WRITE_OK) {
            if (status != MERGE_WRITE_STOPPED) piece_failed(l, i, status, cause);
            break;
        }
        pthread_mutex_lock(&l->lock);
        l->length[slot] = len;
        l->done[slot] = i + 1;
        pthread_cond_broadcast(&l->changed);
        pthread_mutex_unlock(&l->lock);
    }
    pthread_mutex_lock(&l->lock);
    l->records += w.records;
    l->digest += w.digest;
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* Waits for piece i; returns its slot, or -1 once the readout stops. */
static int await_piece(piece_line *l, int i)
{
    int slot = i % l->p->n_slots;
    double t0 = now_seconds();
    pthread_mutex_lock(&l->lock);
    while (!atomic_load(&l->stop) && l->done[slot] != i + 1)
        pthread_cond_wait(&l->changed, &l->lock);
    if (l->done[slot] != i + 1) slot = -1;
    pthread_mutex_unlock(&l->lock);
    l->writer_waited += now_seconds() - t0;
    return slot;
}

/* The output's bytes so far leave htslib; then the pieces follow, in
 * order, as they finish. */
static int append_pieces(piece_line *l)
{
    sort_job *j = l->j;
    samFile *fp = j->out.fp;
    errno = 0;
    if ((l->bgzf_output && bgzf_flush(fp->fp.bgzf) < 0)
        || hflush(samfile_hfile(fp)) < 0) {
        job_fail("error writing to '%s': %s", j->o->out_fn, merge_write_cause(fp));
        return -1;
    }
    for (int i = 0; i < l->p->n; i++) {
        int slot = await_piece(l, i);
        if (slot < 0) return 0;     /* a worker failed: reported after the join */
        char *err = NULL;
        if (part_append(&j->out, l->p->slot_fd[slot], l->length[slot], &err) < 0) {
            job_fail("%s", err ? err : "out of memory");
            free(err);
            return -1;
        }
        l->bytes += (uint64_t)l->length[slot];
        output_drop_written(&j->out);
        pthread_mutex_lock(&l->lock);
        l->appended = i + 1;
        pthread_cond_broadcast(&l->changed);
        pthread_mutex_unlock(&l->lock);
    }
    return 0;
}

/* The first failing piece's cause, as one line. */
static int report_pieces(sort_job *j, const piece_line *l)
{
    if (l->failed_piece == INT_MAX) return 0;
    if (l->status == MERGE_WRITE_CORRUPT)
        job_fail("corrupt record in the temporary database '%s'", store_path(j->store));
    else if (l->status == PIECE_SOURCE_FAILED)
        job_fail("error reading the temporary database: %s", l->cause);
    else
        job_fail("error writing to '%s': %s", j->o->out_fn, l->cause);
    return -1;
}

static int line_init(piece_line *l, sort_job *j, const range_plan *p)
{
    memset(l, 0, sizeof *l);
    l->j = j;
    l->p = p;
    l->failed_piece = INT_MAX;
    l->bgzf_output = j->out.fp->format.compression == bgzf;
    l->done = calloc((size_t)p->n_slots, sizeof *l->done);
    l->length = calloc((size_t)p->n_slots, sizeof *l->length);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->changed, NULL);
    return l->done && l->length ? 0 : -1;
}

static void line_free(piece_line *l)
{
    free(l->done);
    free(l->length);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->changed);
}

static void stop_line(piece_line *l)
{
    pthread_mutex_lock(&l->lock);
    atomic_store(&l->stop, 1);
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->lock);
}

int readout_in_ranges(sort_job *j, const range_plan *p)
{
    piece_line l;
    pthread_t *worker = calloc((size_t)p->threads, sizeof *worker);
    int ret = line_init(&l, j, p) == 0 && worker ? 0 : -1, started = 0;
    if (ret < 0) job_fail("out of memory for the final merge of '%s'", j->o->in_fn);
    for (; ret == 0 && started < p->threads; started++)
        if (pthread_create(&worker[started], NULL, piece_worker, &l) != 0) {
            job_fail("cannot start a merge thread for '%s'", j->o->out_fn);
            ret = -1;
            break;
        }
    if (ret == 0) ret = append_pieces(&l);
    if (ret < 0) stop_line(&l);
    for (int t = 0; t < started; t++) pthread_join(worker[t], NULL);
    if (ret == 0) ret = report_pieces(j, &l);
    j->records_out = l.records;
    j->digest_out = l.digest;
    j->ranges = p->n;
    j->merge_threads = p->threads;
    j->bytes_through_memory = l.bytes;
    j->t_writer_waited = l.writer_waited;
    line_free(&l);
    free(worker);
    return ret;
}
