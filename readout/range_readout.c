/* readout/range_readout.c -- see readout/range_readout.h. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <htslib/bgzf.h>
#include <htslib/hfile.h>
#include "readout/range_readout.h"
#include "readout/piece_fault.h"
#include "util/clock_util.h"
#include "readout/merge_writer.h"
#include "output/output_parts.h"
#include "util/thread.h"

/* The pieces in flight.  Workers take the next piece in key order, but
 * never more than n_slots ahead of the writer; piece i passes through slot
 * i % n_slots.  The writer (the caller's thread) appends each finished
 * piece to the output in order. */
typedef struct {
    const readout_request *rq;
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
    piece_fault fault;      /* the first piece that failed, and why */
    uint64_t records, digest, bytes;
    double writer_waited;
} piece_line;

/* Piece i's bounds: NULL where the key space is open. */
static const key_sample *bound_at(const range_plan *p, int i)
{
    return i < 0 || i >= p->n - 1 ? NULL : &p->splits[i];
}

/* Records the first failure in piece order; the others follow from it. */
static void piece_failed(piece_line *l, int piece, const errmsg *cause, int store_failed)
{
    pthread_mutex_lock(&l->lock);
    piece_fault_keep(&l->fault, piece, cause, store_failed);
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
    const readout_request *rq = l->rq;
    int copy = output_parts_slot_rewind(fd) == 0 ? dup(fd) : -1;
    hFILE *hf = copy >= 0 ? hdopen(copy, "w") : NULL;
    samFile *fp = hf ? hts_hopen(hf, rq->out->name, rq->out_mode) : NULL;
    if (!fp) {
        if (hf) hclose_abruptly(hf);
        else if (copy >= 0) close(copy);
        return NULL;
    }
    if (rq->out_opts && hts_opt_apply(fp, rq->out_opts) < 0) {
        sam_close(fp);
        return NULL;
    }
    return fp;
}

/* A piece's blocks reach the slot before it counts as done. */
static int close_piece(samFile *fp, const char *name, errmsg *err)
{
    int is_bgzf = fp->format.compression == bgzf;
    errno = 0;
    int ret = is_bgzf ? bgzf_flush(fp->fp.bgzf) : hflush(fp->fp.hfile);
    if (ret < 0) merge_writer_write_error(fp, name, err);
    if (sam_close(fp) < 0 && ret == 0)
        ret = errmsg_set(err, "error writing to '%s': %s", name, strerror(errno ? errno : EIO));
    return ret;
}

/* Merges piece i into its slot, with src's readers: opened for the
 * worker's first piece, moved to each next one (their threads and buffers
 * kept), and closed when a piece fails.  Returns 0, MERGE_WRITE_STOPPED,
 * or -1 with the cause in err. */
static int write_piece(piece_line *l, int i, merge_writer *w, merge_sources *src, int *opened,
                       errmsg *err)
{
    const range_plan *p = l->p;
    const char *name = l->rq->out->name;
    int fd = p->slot_fd[i % p->n_slots];
    w->fp = open_piece(l, fd);
    if (!w->fp)
        return errmsg_set(err, "error writing to '%s': cannot open an in-memory part: %s", name,
                          strerror(errno ? errno : ENOMEM));
    const key_sample *lo = bound_at(p, i - 1), *hi = bound_at(p, i);
    int status = *opened ? merge_sources_move(src, l->rq->in, lo, hi, err)
                         : merge_sources_open(src, l->rq->in, lo, hi, p->readahead, err);
    *opened = 1;
    if (status == 0) status = merge_writer_write(w, src->merge, err);
    if (status == 0 && merge_sources_status(src, err) < 0) {
        status = errmsg_prefix(err, "error reading the temporary database");
        if (store_shows_damage(err->msg)) w->corrupt = 1;
    }
    if (status != 0) {
        merge_sources_close(src);
        *opened = 0;
    }
    errmsg close_err;
    if (close_piece(w->fp, name, &close_err) < 0 && status == 0) status = errmsg_copy(err, &close_err);
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
    const readout_request *rq = l->rq;
    merge_writer w = { .out_name = rq->out->name, .store_name = rq->in->store ?
                       store_path(rq->in->store) : NULL, .hdr = rq->hdr, .verify = rq->verify,
                       .prog = rq->prog, .shown = &l->shown, .stop = &l->stop };
    errmsg err;
    merge_sources src;
    int opened = 0;
    for (int i; (i = take_piece(l)) >= 0;) {
        int status = write_piece(l, i, &w, &src, &opened, &err);
        int slot = i % l->p->n_slots;
        off_t len = 0;
        if (status == 0 && output_parts_slot_length(l->p->slot_fd[slot], l->bgzf_output, &len, &err) < 0)
            status = errmsg_prefix(&err, "error writing to '%s'", rq->out->name);
        if (status != 0) {
            if (status != MERGE_WRITE_STOPPED) piece_failed(l, i, &err, w.corrupt);
            break;
        }
        pthread_mutex_lock(&l->lock);
        l->length[slot] = len;
        l->done[slot] = i + 1;
        pthread_cond_broadcast(&l->changed);
        pthread_mutex_unlock(&l->lock);
    }
    if (opened) merge_sources_close(&src);
    pthread_mutex_lock(&l->lock);
    l->records += w.records;
    l->digest += w.digest;
    pthread_mutex_unlock(&l->lock);
    thread_cpu_exiting();
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
static int append_pieces(piece_line *l, errmsg *err)
{
    output_file *out = l->rq->out;
    samFile *fp = out->fp;
    errno = 0;
    if ((l->bgzf_output && bgzf_flush(fp->fp.bgzf) < 0) || hflush(merge_writer_hfile(fp)) < 0)
        return merge_writer_write_error(fp, out->name, err);
    for (int i = 0; i < l->p->n; i++) {
        int slot = await_piece(l, i);
        if (slot < 0) return 0;     /* a worker failed: reported after the join */
        if (output_parts_append(out, l->p->slot_fd[slot], l->length[slot], err) < 0) return -1;
        l->bytes += (uint64_t)l->length[slot];
        output_file_drop_written(out);
        pthread_mutex_lock(&l->lock);
        l->appended = i + 1;
        pthread_cond_broadcast(&l->changed);
        pthread_mutex_unlock(&l->lock);
    }
    return 0;
}

static int line_init(piece_line *l, const readout_request *rq, const range_plan *p)
{
    memset(l, 0, sizeof *l);
    l->rq = rq;
    l->p = p;
    l->fault = PIECE_FAULT_NONE;
    l->bgzf_output = rq->out->fp->format.compression == bgzf;
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

int range_readout_run(const readout_request *rq, const range_plan *p, readout_result *res,
                      errmsg *err)
{
    piece_line l;
    pthread_t *worker = calloc((size_t)p->threads, sizeof *worker);
    int ret = line_init(&l, rq, p) == 0 && worker ? 0
            : errmsg_set(err, "out of memory for the final merge");
    int started = 0;
    for (; ret == 0 && started < p->threads; started++)
        if (pthread_create(&worker[started], NULL, piece_worker, &l) != 0) {
            ret = errmsg_set(err, "cannot start a merge thread for '%s'", rq->out->name);
            break;
        } else {
            pthread_setname_np(worker[started], THREAD_MERGE);
        }
    if (ret == 0) ret = append_pieces(&l, err);
    if (ret < 0) stop_line(&l);
    for (int t = 0; t < started; t++) pthread_join(worker[t], NULL);
    /* The first failing piece's cause: the others follow from it. */
    if (ret == 0) ret = piece_fault_cause(&l.fault, err);
    *res = (readout_result){ .records = l.records, .digest = l.digest, .ranges = p->n,
                             .threads = p->threads, .bytes_through_memory = l.bytes,
                             .writer_waited = l.writer_waited, .store_failed = l.fault.store_failed };
    line_free(&l);
    free(worker);
    return ret;
}
