/* sort_pipeline.c -- see sort_pipeline.h.
 *
 * Two batches alternate: the main thread decodes records into one while a
 * spill thread sorts the other and bulk-loads it into RocksDB as one run.
 * When the whole input is expected to fit in the memory budget, the spill
 * thread keeps the sorted batches in memory instead, and nothing is written
 * to temp.  Then one merge reads the runs and the batches in key order into
 * the output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <htslib/bgzf.h>
#include <htslib/cram.h>
#include <htslib/hfile.h>
#include <htslib/thread_pool.h>
#include "sort_pipeline.h"
#include "clock_util.h"
#include "sort_batch.h"
#include "rocks_store.h"
#include "record_codec.h"
#include "run_merge.h"
#include "store_stream.h"
#include "output_file.h"
#include "cleanup.h"
#include "progress.h"
#include "input_check.h"
#include "fd_budget.h"
#include "temp_space.h"

#define ROCKSORT_VERSION_PG "rocksort-" ROCKSORT_VERSION

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sort_batch *full;       /* waiting for the spill thread */
    sort_batch *empty;      /* spilled, ready to refill */
    int finished;           /* no more batches will come */
    char *error;            /* first spill error */
    /* Sorted batches kept in memory, not spilled: as packed copies when the
     * budget has room for them beside the two batch arenas, else as the
     * arenas themselves.  One of the two arrays is used; max_held 0: spill
     * every batch. */
    packed_run **packed;
    sort_batch **kept;
    int n_held, max_held;
    int hold_abandoned;     /* the input outgrew the batches planned to hold */
    size_t batch_cap;
    rocks_store *store;
    progress *prog;
    double sort_seconds, write_seconds, hold_seconds;
    double wait_seconds;    /* the loader, waiting for a spilled batch */
} spill_queue;

typedef struct {
    const rocksort_opts *o;
    samFile *in;
    sam_hdr_t *hdr;
    htsThreadPool pool;
    output_file out;
    rocks_store *store;
    spill_queue q;
    pthread_t spiller;
    int spiller_started;
    uint64_t records_in, records_out, bytes_in;
    uint64_t digest_in, digest_out;     /* --verify sums */
    int n_refs;                 /* references a record may name, see open_input() */
    sort_batch *tail;           /* the last, unspilled batch, sorted */
    double t_load, t_settle, t_readout;
    progress *prog;
    uint64_t in_file_size;      /* 0: not a regular file */
    uint64_t size_estimate;     /* without -s: from the input file, 0 if none */
    int merge_width;            /* the fewest runs a background merge takes */
    int size_planned;
    sort_spec sort;             /* o->sort, prepared with the input header */
    temp_plan space;            /* the runs' format, chosen before reading */
} sort_job;

static void fail(const char *fmt, const char *a, const char *b)
{
    if (cleanup_interrupted()) return;
    fprintf(stderr, "samtools rocksort: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

/* ---- the spill thread ---- */

static char *write_run(rocks_store *st, sort_batch *sb)
{
    char *err = NULL;
    if (store_run_begin(st, &err) < 0) return err;
    size_t n = batch_count(sb);
    for (size_t i = 0; i < n; i++) {
        size_t kl, vl;
        /* Sorted order visits the arena at random: fetch ahead. */
        batch_prefetch(sb, i + BATCH_PREFETCH_DISTANCE);
        const uint8_t *k = batch_key(sb, i, &kl);
        const uint8_t *v = batch_value(sb, i, &vl);
        if (store_run_put(st, k, kl, v, vl, &err) < 0) return err;
    }
    store_run_end(st, &err);
    return err;
}

/* A held run spilled after all: it is in key order already. */
static char *write_packed(rocks_store *st, const packed_run *pr)
{
    char *err = NULL;
    if (store_run_begin(st, &err) < 0) return err;
    for (const uint8_t *r = packed_first(pr); r; r = packed_next(pr, r)) {
        size_t kl, vl;
        const uint8_t *k = packed_key(r, &kl), *v = packed_value(r, &vl);
        if (store_run_put(st, k, kl, v, vl, &err) < 0) return err;
    }
    store_run_end(st, &err);
    return err;
}

/* Keeps a sorted batch in memory if the plan allows, and returns the batch
 * the loader fills next; NULL: sb must be spilled.  A packed copy, read in
 * order at the end, is cheaper to merge than the arena in sort order, and
 * the arena goes back to the loader, so holding touches each byte of new
 * memory once.  A small budget keeps the arena itself instead. */
static sort_batch *try_hold(spill_queue *q, sort_batch *sb)
{
    if (q->n_held >= q->max_held) return NULL;
    if (q->packed) {
        packed_run *pr = batch_pack(sb);
        if (!pr) return NULL;
        q->packed[q->n_held++] = pr;
        return sb;
    }
    sort_batch *fresh = batch_create(q->batch_cap);
    if (!fresh) return NULL;
    q->kept[q->n_held++] = sb;
    return fresh;
}

static void drop_held(spill_queue *q)
{
    for (int i = 0; i < q->n_held; i++) {
        if (q->packed) packed_destroy(q->packed[i]);
        else batch_destroy(q->kept[i]);
    }
    q->n_held = 0;
}

/* The input outgrew the estimate: held batches become runs like the rest. */
static char *spill_held(spill_queue *q)
{
    char *err = NULL;
    if (q->max_held) q->hold_abandoned = 1;
    for (int i = 0; i < q->n_held && !err; i++)
        err = q->packed ? write_packed(q->store, q->packed[i]) : write_run(q->store, q->kept[i]);
    drop_held(q);
    q->max_held = 0;
    return err;
}

/* Sorts a full batch, then holds or spills it; returns the empty batch the
 * loader gets back, and sets *err on a write error. */
static sort_batch *settle_batch(spill_queue *q, sort_batch *sb, char **err)
{
    double t0 = now_seconds();
    batch_sort(sb);
    double t1 = now_seconds();
    sort_batch *back = q->error ? NULL : try_hold(q, sb);
    int held = back != NULL;
    if (!back) {
        if (!q->error) *err = spill_held(q);
        if (!q->error && !*err) *err = write_run(q->store, sb);
        back = sb;
    }
    if (back == sb) batch_clear(sb);
    double t2 = now_seconds();
    progress_set_temp(q->prog, store_bytes_written(q->store));
    pthread_mutex_lock(&q->mu);
    q->sort_seconds += t1 - t0;
    *(held ? &q->hold_seconds : &q->write_seconds) += t2 - t1;
    pthread_mutex_unlock(&q->mu);
    return back;
}

static void *spill_main(void *arg)
{
    spill_queue *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->full && !q->finished) pthread_cond_wait(&q->cv, &q->mu);
        sort_batch *sb = q->full;
        if (!sb) break;
        q->full = NULL;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);

        char *err = NULL;
        sort_batch *back = settle_batch(q, sb, &err);

        pthread_mutex_lock(&q->mu);
        if (err && !q->error) q->error = err;
        else free(err);
        /* A batch spilled fast (after an error nothing is written) can come
         * back before the loader took the previous one: never overwrite it. */
        while (q->empty && !q->finished) pthread_cond_wait(&q->cv, &q->mu);
        if (q->empty) batch_destroy(back);
        else q->empty = back;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Hands a full batch over and returns the other one once it is spilled. */
static sort_batch *swap_batches(spill_queue *q, sort_batch *full)
{
    double t0 = now_seconds();
    pthread_mutex_lock(&q->mu);
    while (q->full) pthread_cond_wait(&q->cv, &q->mu);
    q->full = full;
    pthread_cond_broadcast(&q->cv);
    while (!q->empty) pthread_cond_wait(&q->cv, &q->mu);
    sort_batch *next = q->empty;
    q->empty = NULL;
    pthread_cond_broadcast(&q->cv);     /* a spilled batch may wait for room */
    int failed = q->error != NULL;
    q->wait_seconds += now_seconds() - t0;
    pthread_mutex_unlock(&q->mu);
    if (failed) {
        batch_destroy(next);
        return NULL;
    }
    return next;
}

static void stop_spiller(sort_job *j)
{
    if (!j->spiller_started) return;
    pthread_mutex_lock(&j->q.mu);
    j->q.finished = 1;
    pthread_cond_broadcast(&j->q.cv);
    pthread_mutex_unlock(&j->q.mu);
    pthread_join(j->spiller, NULL);
    j->spiller_started = 0;
}

/* ---- phases ---- */

static int open_input(sort_job *j)
{
    const rocksort_opts *o = j->o;
    j->in = hts_open_format(o->in_fn, "r", o->in_format);
    if (!j->in) {
        fail("cannot open '%s': %s", o->in_fn, strerror(errno));
        return -1;
    }
    if (j->in->format.category != sequence_data) {
        fail("'%s' is not a SAM, BAM or CRAM file%s", o->in_fn, "");
        return -1;
    }
    if (j->pool.pool) hts_set_thread_pool(j->in, &j->pool);
    if (o->reference && hts_set_fai_filename(j->in, o->reference) < 0) {
        fail("cannot load reference '%s' for '%s'", o->reference, o->in_fn);
        return -1;
    }
    if (o->in_opts && hts_opt_apply(j->in, o->in_opts) < 0) {
        fail("bad --input-fmt-option for '%s'%s", o->in_fn, "");
        return -1;
    }
    j->hdr = sam_hdr_read(j->in);
    if (!j->hdr) {
        fail("failed to read the header of '%s'%s", o->in_fn, "");
        return -1;
    }
    /* The references htslib's BAM reader checks records against; adding
     * @PG parses the text header, which may list more (refs_beyond_header). */
    j->n_refs = sam_hdr_nref(j->hdr);
    struct stat st;
    if (strcmp(o->in_fn, "-") && stat(o->in_fn, &st) == 0 && S_ISREG(st.st_mode))
        j->in_file_size = (uint64_t)st.st_size;
    char why[1024];
    if (input_check_start(j->in, o->in_fn, j->in_file_size, why, sizeof why) < 0) {
        fail("%s%s", why, "");
        return -1;
    }
    return 0;
}

static int prepare_header(sort_job *j)
{
    char why[512];
    j->sort = j->o->sort;
    if (sort_spec_prepare(&j->sort, j->hdr, why, sizeof why) < 0) {
        fail("%s (sorting '%s')", why, j->o->in_fn);
        return -1;
    }
    if (j->o->pg_cmdline &&
        sam_hdr_add_pg(j->hdr, "samtools", "VN", ROCKSORT_VERSION_PG,
                       "CL", j->o->pg_cmdline, NULL) < 0) {
        fail("failed to add a @PG line for '%s'%s", j->o->in_fn, "");
        return -1;
    }
    /* The output header is this one: a record must fit it too. */
    if (sam_hdr_nref(j->hdr) < j->n_refs) j->n_refs = sam_hdr_nref(j->hdr);
    return 0;
}

/* BAM stores reference lengths in 32 bits; fail before hours of sorting. */
static int check_bam_can_hold_references(const sort_job *j)
{
    if (!strchr(j->o->out_mode, 'b')) return 0;
    for (int tid = 0; tid < sam_hdr_nref(j->hdr); tid++)
        if (sam_hdr_tid2len(j->hdr, tid) > INT32_MAX) {
            fail("BAM output '%s' cannot hold reference '%s' (longer than 2^31-1): "
                 "write SAM or CRAM", j->o->out_fn, sam_hdr_tid2name(j->hdr, tid));
            return -1;
        }
    return 0;
}

/* SAM output gets threads for its compression only.  htslib 1.24's
 * threaded SAM writer hangs when a write fails (disk full, closed pipe):
 * its writer thread waits for a lock that sam_write1() holds while it
 * waits for that thread to make room in the queue. */
static void share_pool_with_output(sort_job *j)
{
    samFile *fp = j->out.fp;
    if (!j->pool.pool) return;
    int text = fp->format.format == sam || fp->format.format == text_format;
    if (!text) hts_set_thread_pool(fp, &j->pool);
    else if (fp->format.compression == bgzf)
        bgzf_thread_pool(fp->fp.bgzf, j->pool.pool, j->pool.qsize);
}

static int open_output(sort_job *j)
{
    const rocksort_opts *o = j->o;
    char *err = NULL;
    if (check_bam_can_hold_references(j) < 0) return -1;
    if (output_open(&j->out, o->out_fn, o->out_mode, &err) < 0) {
        fail("%s%s", err ? err : "cannot open output", "");
        free(err);
        return -1;
    }
    share_pool_with_output(j);
    if (o->reference && hts_set_fai_filename(j->out.fp, o->reference) < 0) {
        fail("cannot load reference '%s' for '%s'", o->reference, o->out_fn);
        return -1;
    }
    if (o->out_opts && hts_opt_apply(j->out.fp, o->out_opts) < 0) {
        fail("bad --output-fmt-option for '%s'%s", o->out_fn, "");
        return -1;
    }
    return 0;
}

static size_t total_memory(const rocksort_opts *o)
{
    return o->mem_per_thread * (size_t)(o->threads > 1 ? o->threads : 1);
}

/* Two batches are resident while loading (one filling, one spilling), and
 * the readout needs room for its buffers: a third of the budget each.
 * Past 512 MiB a batch only costs more (the kernel's zeroing of pages
 * touched for the first time slowed in-memory loads with larger batches
 * down) and gains nothing at readout. */
#define MAX_BATCH_BYTES (512ULL << 20)

static size_t batch_bytes_for(const rocksort_opts *o)
{
    size_t b = total_memory(o) / 3;
    return b < MAX_BATCH_BYTES ? b : MAX_BATCH_BYTES;
}

/* Descriptors opened after the store: the index (at the commit), a CRAM
 * reference and its .fai for the input and for the output (htslib opens
 * them once it needs a sequence), and /dev/null if a failed run on stdout
 * has to divert the BGZF EOF block there. */
#define FD_RESERVE_LATER 6

/* Threads that read the spilled runs at the readout (when nothing merges
 * them in the background), each its own share of the runs: two keep the
 * -u readout from waiting on one reader; see open_spilled(). */
#define READOUT_STREAMS 2

static int open_store(sort_job *j)
{
    const rocksort_opts *o = j->o;
    store_options so = {
        .compression = o->temp_compression,
        .size_hint = o->size_hint,
        .run_bytes = batch_bytes_for(o),
        .max_open_files = fd_budget_available(FD_RESERVE_LATER),
        .background_threads = o->threads > 1 ? o->threads : 1,
        .parts = READOUT_STREAMS,
    };
    temp_space_store_options(&j->space, &so);
    const char *prefix = temp_prefix(o->tmp_prefix);
    char *err = NULL;
    j->store = store_open(prefix, &so, &err);
    if (!j->store) {
        fail("%s%s", err ? err : "cannot create the temporary database", "");
        free(err);
        return -1;
    }
    j->q.store = j->store;
    return 0;
}

/* Before reading: the runs' format, and a refusal if they cannot fit. */
static int plan_temp_space(sort_job *j)
{
    const rocksort_opts *o = j->o;
    temp_request rq = {
        .mode = (temp_mode)o->temp_compression, .in_fn = o->in_fn,
        .tmp_prefix = o->tmp_prefix, .size_hint = o->size_hint,
        .memory = total_memory(o), .run_bytes = batch_bytes_for(o),
        .threads = o->threads > 1 ? o->threads : 1,
    };
    char *err = NULL;
    if (temp_space_plan(&rq, &j->space, &err) == 0) return 0;
    fail("%s%s", err ? err : "not enough space for temporary data", "");
    free(err);
    return -1;
}

static int start_spiller(sort_job *j)
{
    j->q.batch_cap = batch_bytes_for(j->o);
    j->q.empty = batch_create(j->q.batch_cap);
    if (!j->q.empty) {
        char bytes[32];
        snprintf(bytes, sizeof bytes, "%zu", j->q.batch_cap);
        fail("out of memory for a %s-byte sort batch%s (lower -m)", bytes, "");
        return -1;
    }
    if (pthread_create(&j->spiller, NULL, spill_main, &j->q) != 0) {
        fail("cannot start the %s thread%s", "spill", "");
        return -1;
    }
    j->spiller_started = 1;
    pthread_setname_np(j->spiller, "rocksort-spill");
    return 0;
}

static int spill_error(sort_job *j)
{
    fail("writing temporary data under '%s' failed: %s", store_path(j->store),
         j->q.error ? j->q.error : "unknown error");
    return -1;
}

/* Counters reach the progress thread every this many records, plus one. */
#define PROGRESS_EVERY 4095

/* Bytes of a regular input file consumed so far; -1 if unknown (CRAM). */
static int64_t input_offset(const sort_job *j)
{
    if (!j->in_file_size) return -1;
    if (j->in->format.compression == bgzf) return bgzf_tell(j->in->fp.bgzf) >> 16;
    if (j->in->format.format == sam && j->in->format.compression == no_compression)
        return htell(j->in->fp.hfile);
    return -1;
}

static int input_permille(const sort_job *j)
{
    int64_t at = input_offset(j);
    if (at < 0) return -1;
    uint64_t pm = (uint64_t)at * 1000 / j->in_file_size;
    return pm > 1000 ? 1000 : (int)pm;
}

/* Slack on the batch count expected from the input file's size, for
 * records further on that expand more than the first batch's did. */
#define HOLD_SLACK 1.1

/* If every batch of the input is expected to fit in the memory budget,
 * the spill thread keeps them (the loader's batch is the last one, the
 * tail); writing runs would only cost time.  Packed copies need room
 * beside the two batch arenas; a budget too small for that keeps the
 * arenas themselves.  If the input still outgrows the budget, the held
 * batches are spilled then. */
static void plan_holding(sort_job *j, double input_batches)
{
    spill_queue *q = &j->q;
    int fit = (int)(total_memory(j->o) / q->batch_cap);
    double need = input_batches * HOLD_SLACK;
    if (fit < 2 || need > fit) return;
    if (need + 1 <= fit && (q->packed = calloc((size_t)fit - 2, sizeof *q->packed)))
        q->max_held = fit - 2;
    else if ((q->kept = calloc((size_t)fit - 1, sizeof *q->kept)))
        q->max_held = fit - 1;
}

/* Size the background merging and in-memory holding from the input file:
 * its size times the expansion seen over the first batch (BAM expands
 * about 2.5x, but aux tags and read lengths move that).  Done once, when
 * the first batch is full, before the spill thread gets it.  -s overrides
 * the estimate for merging. */
static void plan_from_input(sort_job *j)
{
    j->size_planned = 1;
    int64_t at = input_offset(j);
    if (at <= 0) return;
    plan_holding(j, (double)j->in_file_size / (double)at);
    if (j->o->size_hint) return;
    double expansion = (double)j->bytes_in / (double)at;
    j->size_estimate = (uint64_t)(expansion * (double)j->in_file_size);
    j->merge_width = store_plan_merges(j->store, j->size_estimate);
}

static void report_reading(const sort_job *j)
{
    if (j->prog) progress_set_read(j->prog, j->records_in, j->bytes_in, input_permille(j));
}

static int reference_given(const rocksort_opts *o)
{
    if (o->reference) return 1;
    for (const hts_opt *p = o->in_opts; p; p = p->next)
        if (p->opt == CRAM_OPT_REFERENCE) return 1;
    return 0;
}

/* A record naming a reference the header lacks would make a BAM that no
 * tool can index or read by region.  htslib's BAM reader refuses most such
 * records itself; this check holds whatever the htslib and the format. */
static int refs_beyond_header(const sort_job *j, const bam1_t *b)
{
    const bam1_core_t *c = &b->core;
    return c->tid < -1 || c->tid >= j->n_refs || c->mtid < -1 || c->mtid >= j->n_refs;
}

static void report_refs_beyond(const sort_job *j, const bam1_t *b)
{
    int mate = b->core.tid >= -1 && b->core.tid < j->n_refs;
    char what[640];
    snprintf(what, sizeof what, "record '%s' has %sreference id %d, but the header has "
             "%d reference%s", bam_get_qname(b), mate ? "mate " : "",
             mate ? b->core.mtid : b->core.tid, j->n_refs, j->n_refs == 1 ? "" : "s");
    fail("'%s': %s", j->o->in_fn, what);
}

/* A CRAM slice fails to decode most often because its reference was not
 * found (moved FASTA, empty REF_PATH); htslib's own message says so, but it
 * is silenced, so say it here.  htslib's BAM reader returns -3 for a
 * record whose reference ids lie beyond the header (and for a cut one). */
static void report_read_error(const sort_job *j, const bam1_t *b, int r)
{
    char after[48];
    snprintf(after, sizeof after, "after %llu records", (unsigned long long)j->records_in);
    if (r == -3 && refs_beyond_header(j, b))
        report_refs_beyond(j, b);
    else if (j->in->format.format == cram && !reference_given(j->o))
        fail("cannot decode CRAM '%s' (%s): reference sequence not found, or corrupt "
             "data; give --reference FILE or set REF_PATH", j->o->in_fn, after);
    else
        fail("'%s' is truncated or corrupt (%s)", j->o->in_fn, after);
}

/* Adds one record to the batch being filled, handing full batches to the
 * spill thread.  Returns 0, or -1 once the error is reported. */
static int take_record(sort_job *j, sort_batch **cur, bam1_t *b)
{
    int added;
    if (refs_beyond_header(j, b)) {
        report_refs_beyond(j, b);
        return -1;
    }
    while ((added = batch_add(*cur, &j->sort, b, j->records_in)) == 0) {
        if (!j->size_planned) plan_from_input(j);
        *cur = swap_batches(&j->q, *cur);
        if (!*cur) return spill_error(j);
    }
    if (added == -2) {
        char what[640];
        snprintf(what, sizeof what, "read '%s' %s", bam_get_qname(b),
                 sort_key_error(&j->sort, b));
        fail("'%s': %s", j->o->in_fn, what);
        return -1;
    }
    if (added < 0) {
        fail("out of memory reading '%s'%s", j->o->in_fn, "");
        return -1;
    }
    j->records_in++;
    j->bytes_in += (uint64_t)b->l_data + 36;
    if (j->o->verify) j->digest_in += record_digest(b);
    if ((j->records_in & PROGRESS_EVERY) == 0) report_reading(j);
    return 0;
}

/* sam_read1()'s last result r: an error, or an end of file that must also
 * be the input's real end (input_check.h). */
static int check_read_end(const sort_job *j, const bam1_t *b, int r)
{
    char why[1024];
    if (r < -1) {
        report_read_error(j, b, r);
        return -1;
    }
    if (input_check_end(j->in, j->o->in_fn, j->in_file_size, why, sizeof why) < 0) {
        fail("%s%s", why, "");
        return -1;
    }
    return 0;
}

static int load(sort_job *j)
{
    double t0 = now_seconds();
    sort_batch *cur = batch_create(batch_bytes_for(j->o));
    bam1_t *b = bam_init1();
    int ret = 0, r;
    if (!cur || !b) {
        fail("out of memory reading '%s'%s", j->o->in_fn, "");
        ret = -1;
        goto done;
    }
    while ((r = sam_read1(j->in, j->hdr, b)) >= 0)
        if (take_record(j, &cur, b) < 0) { ret = -1; goto done; }
    report_reading(j);
    if (check_read_end(j, b, r) < 0) { ret = -1; goto done; }
    /* The last batch never goes to disk: the readout merges it from memory
     * (an input that fits in one batch is sorted without temp I/O). */
    batch_sort(cur);
    j->tail = cur;
    cur = NULL;
    stop_spiller(j);
    batch_destroy(j->q.empty);   /* the idle batch: give its memory back */
    j->q.empty = NULL;
    if (j->q.error) ret = spill_error(j);
done:
    batch_destroy(cur);
    bam_destroy1(b);
    j->t_load = now_seconds() - t0;
    return ret;
}

/* BAM output copies record bytes as they are, so it can take a view of the
 * stored value; other formats parse the CIGAR, which must be aligned. */
static int write_value(sort_job *j, const uint8_t *v, size_t vlen, bam1_t *owned)
{
    bam1_t view, *b = &view;
    int zero_copy = j->out.fp->format.format == bam;
    if (record_value_view(v, vlen, &view) < 0) return -2;
    if (!zero_copy || view.core.n_cigar > 0xffff) {
        if (record_value_unpack(v, vlen, owned) < 0) return -2;
        b = owned;
    }
    if (j->o->verify) j->digest_out += record_digest(b);
    return sam_write1(j->out.fp, j->hdr, b) < 0 ? -1 : 0;
}

/* The file htslib writes the output through. */
static hFILE *output_hfile(const samFile *fp)
{
    if (fp->format.format == cram) return cram_fd_get_fp(fp->fp.cram);
    if (fp->format.format == bam || fp->format.compression != no_compression)
        return fp->fp.bgzf->fp;
    return fp->fp.hfile;
}

/* Why a record could not be written.  Compression threads do the writing,
 * so errno here is seldom theirs; the output's hFILE keeps the cause.
 * Without one, htslib refused the record itself. */
static const char *write_error_cause(const sort_job *j)
{
    int e = herrno(output_hfile(j->out.fp));
    if (!e) e = errno;
    return e ? strerror(e) : "htslib could not encode the record (e.g. a position BAM cannot hold)";
}

typedef struct {
    int n;
    rocksdb_iterator_t *it[STORE_MAX_PARTS];
    store_stream *stream[STORE_MAX_PARTS];
} spilled_runs;

/* The spilled runs, the batches held in memory and the tail, by key. */
static run_merge *open_merge(sort_job *j, const spilled_runs *runs)
{
    int n_kept = j->q.kept ? j->q.n_held : 0;
    sort_batch **batches = malloc((size_t)(n_kept + 1) * sizeof *batches);
    if (!batches) return NULL;
    for (int i = 0; i < n_kept; i++) batches[i] = j->q.kept[i];
    batches[n_kept] = j->tail;
    run_merge *m = merge_open(runs->stream, runs->n, batches, n_kept + 1, j->q.packed,
                              j->q.packed ? j->q.n_held : 0);
    free(batches);
    return m;
}

/* The runs are read ahead on their own thread (store_stream.h) in 1 MiB
 * chunks: with 2 MiB direct reads per run, four chunks cover a read's wait
 * with room to spare at the rate the merge takes records. */
#define STREAM_CHUNK_BYTES (1u << 20)
#define STREAM_CHUNKS 4

/* Each part of the store is read by a stream of its own: one iterator
 * over all runs kept a single thread busy with RocksDB's merge and its
 * synchronous reads for the whole -u readout. */
static int open_spilled(sort_job *j, spilled_runs *r)
{
    int parts = store_parts(j->store);
    for (r->n = 0; r->n < parts; r->n++) {
        r->it[r->n] = store_iter(j->store, r->n, STORE_DIRECT_READAHEAD);
        r->stream[r->n] = stream_open(r->it[r->n], STREAM_CHUNK_BYTES, STREAM_CHUNKS);
        if (!r->stream[r->n]) {
            rocksdb_iter_destroy(r->it[r->n]);
            return -1;
        }
    }
    return 0;
}

static const char *spilled_error(const spilled_runs *r)
{
    for (int i = 0; i < r->n; i++)
        if (stream_error(r->stream[i])) return stream_error(r->stream[i]);
    return NULL;
}

static void close_spilled(spilled_runs *r)
{
    for (int i = 0; i < r->n; i++) {
        stream_close(r->stream[i]);
        rocksdb_iter_destroy(r->it[i]);
    }
    r->n = 0;
}

/* Record bytes between output_drop_written() calls: the output's page
 * cache stays around this size. */
#define DROP_WRITTEN_EVERY (64u << 20)

static int readout(sort_job *j)
{
    double t0 = now_seconds();
    int ret = 0;
    /* Here, not before reading: -M's tags depend on the records. */
    if (sort_order_set_hd_tags(j->hdr, &j->sort) < 0) {
        fail("failed to update the @HD line of '%s'%s", j->o->in_fn, "");
        return -1;
    }
    if (sam_hdr_write(j->out.fp, j->hdr) < 0) {
        fail("cannot write the header to '%s'%s", j->o->out_fn, "");
        return -1;
    }
    char *err = NULL;
    if (j->o->index_fn && output_index_begin(&j->out, j->hdr, j->o->index_fn,
                                             j->o->index_min_shift, &err) < 0) {
        fail("%s%s", err ? err : "cannot start the index", "");
        free(err);
        return -1;
    }
    spilled_runs runs = { 0 };
    int no_stream = open_spilled(j, &runs) < 0;
    run_merge *m = no_stream ? NULL : open_merge(j, &runs);
    bam1_t *owned = bam_init1();
    const uint8_t *v;
    size_t vlen, unwritten = 0;
    if (!m || !owned) {
        fail("out of memory for the final merge of '%s'%s", j->o->in_fn, "");
        ret = -1;
    }
    while (ret == 0 && (v = merge_next(m, &vlen)) != NULL) {
        errno = 0;
        int r = write_value(j, v, vlen, owned);
        if (r == -2) {
            fail("corrupt record in the temporary database '%s'%s", store_path(j->store), "");
            ret = -1;
            break;
        }
        if (r < 0) {
            fail("error writing to '%s': %s", j->o->out_fn, write_error_cause(j));
            ret = -1;
            break;
        }
        if ((++j->records_out & PROGRESS_EVERY) == 0)
            progress_set_written(j->prog, j->records_out);
        if ((unwritten += vlen) >= DROP_WRITTEN_EVERY) {
            output_drop_written(&j->out);
            unwritten = 0;
        }
    }
    if (ret == 0 && spilled_error(&runs)) {
        fail("error reading the temporary database: %s%s", spilled_error(&runs), "");
        ret = -1;
    }
    merge_close(m);
    close_spilled(&runs);
    bam_destroy1(owned);
    j->t_readout = now_seconds() - t0;
    return ret;
}

/* Records in and out must match in number and, with --verify, in content. */
static int check_accounting(const sort_job *j)
{
    char in[64], out[64];
    snprintf(in, sizeof in, "%llu", (unsigned long long)j->records_in);
    snprintf(out, sizeof out, "%llu", (unsigned long long)j->records_out);
    if (j->records_out != j->records_in) {
        fail("record count mismatch: %s read, %s written", in, out);
        return -1;
    }
    if (!j->o->verify) return 0;
    int same = j->digest_in == j->digest_out;
    fprintf(stderr, "[rocksort] verify: %s records in, %s out; checksum in %016llx, out %016llx: %s\n",
            in, out, (unsigned long long)j->digest_in, (unsigned long long)j->digest_out,
            same ? "OK" : "MISMATCH");
    if (!same) {
        fail("verify failed: the records written differ from the records read%s%s", "", "");
        return -1;
    }
    return 0;
}

/* Writes out the blocks htslib's threads still hold, so that a failure
 * (a full disk) shows while its cause can be read: sam_close() reports it
 * after freeing the hFILE that keeps the errno. */
static int flush_output(sort_job *j)
{
    samFile *fp = j->out.fp;
    errno = 0;
    if (fp->format.compression != bgzf || bgzf_flush(fp->fp.bgzf) == 0) return 0;
    fail("error writing to '%s': %s", j->o->out_fn, write_error_cause(j));
    return -1;
}

static int finish_output(sort_job *j)
{
    if (check_accounting(j) < 0 || flush_output(j) < 0) return -1;
    char *err = NULL;
    if (output_commit(&j->out, &err) < 0) {
        fail("%s%s", err ? err : "error closing output", "");
        free(err);
        return -1;
    }
    return 0;
}

static void report_sizing(const sort_job *j)
{
    if (j->o->size_hint)
        fprintf(stderr, "[rocksort] size: %.1f MB given by -s\n", j->o->size_hint / 1e6);
    else if (j->size_estimate && j->merge_width > 0)
        fprintf(stderr, "[rocksort] size: %.1f MB estimated from the input file; "
                "at least %d runs per background merge\n", j->size_estimate / 1e6, j->merge_width);
    else if (j->size_estimate)
        fprintf(stderr, "[rocksort] size: %.1f MB estimated from the input file; "
                "too few runs to merge in the background\n", j->size_estimate / 1e6);
    else
        fprintf(stderr, "[rocksort] size: unknown (no -s, %s)\n",
                j->size_planned ? "input not a regular BAM/SAM file" : "fits in one batch");
}

static const char *memory_use(const sort_job *j)
{
    if (j->q.hold_abandoned) return "planned to hold every batch, but the input outgrew "
                                    "the memory budget: spilled";
    if (j->q.n_held) return j->q.packed ? "every batch held in memory (copied in key order), nothing spilled"
                                        : "every batch held in memory (in place), nothing spilled";
    if (!store_runs_ingested(j->store)) return "one batch, nothing spilled";
    return "spilled (the input is larger than the memory budget, or of unknown size)";
}

static void report(const sort_job *j)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    report_sizing(j);
    temp_space_report(&j->space, stderr);
    fprintf(stderr, "[rocksort] memory: %s\n", memory_use(j));
    if (store_runs_ingested(j->store))
        fprintf(stderr, "[rocksort] temp reads: %s; %d reader thread%s\n", store_direct_io(j->store)
                ? "direct I/O (runs bypass the page cache)"
                : "through the page cache (the temp file system refused direct I/O)",
                store_parts(j->store), store_parts(j->store) == 1 ? "" : "s");
    fprintf(stderr,
            "[rocksort] records: %llu in, %llu out; %.1f MB decoded\n"
            "[rocksort] phase load: %.2f s (sort %.2f s, write runs %.2f s, copy held %.2f s; reader waited %.2f s)\n"
            "[rocksort] phase compaction wait: %.2f s (%d runs merged after the load)\n"
            "[rocksort] phase readout: %.2f s\n"
            "[rocksort] runs: %llu written, %d merged at readout (+%d in memory); temp bytes written: %llu\n"
            "[rocksort] peak RSS: %.1f MB\n",
            (unsigned long long)j->records_in, (unsigned long long)j->records_out,
            j->bytes_in / 1e6, j->t_load, j->q.sort_seconds, j->q.write_seconds, j->q.hold_seconds,
            j->q.wait_seconds,
            j->t_settle, j->store ? store_catch_up_runs(j->store) : 0, j->t_readout,
            (unsigned long long)store_runs_ingested(j->store),
            j->store ? store_sorted_runs(j->store) : 0, j->q.n_held + 1,
            (unsigned long long)store_bytes_written(j->store), ru.ru_maxrss / 1024.0);
}

static void cleanup(sort_job *j, int failed)
{
    stop_spiller(j);
    free(j->q.error);
    batch_destroy(j->q.empty);
    batch_destroy(j->q.full);
    batch_destroy(j->tail);
    drop_held(&j->q);
    free(j->q.packed);
    free(j->q.kept);
    if (failed && (j->out.fp || j->out.tmp_path)) output_abort(&j->out);
    if (j->store) {
        if (j->o->keep_db && !failed)
            fprintf(stderr, "[rocksort] kept the temporary database: %s\n", store_path(j->store));
        store_close(j->store, j->o->keep_db && !failed);
    }
    sort_spec_free(&j->sort);
    if (j->hdr) sam_hdr_destroy(j->hdr);
    if (j->in) sam_close(j->in);
    if (j->pool.pool) hts_tpool_destroy(j->pool.pool);
    pthread_mutex_destroy(&j->q.mu);
    pthread_cond_destroy(&j->q.cv);
}

int rocksort_run(const rocksort_opts *o)
{
    sort_job j;
    memset(&j, 0, sizeof j);
    j.o = o;
    pthread_mutex_init(&j.q.mu, NULL);
    pthread_cond_init(&j.q.cv, NULL);
    if (o->threads > 0 && !(j.pool.pool = hts_tpool_init(o->threads))) {
        fail("cannot create %s threads%s", "worker", "");
        cleanup(&j, 1);
        return -1;
    }
    /* htslib logs its own lines for bad input; ours names the file and the
     * cause once.  --verbosity restores its voice. */
    int verbosity = hts_verbose;
    if (!o->htslib_verbosity_set) hts_verbose = 0;
    j.prog = j.q.prog = progress_start(o->progress, o->progress_interval);
    int ok = plan_temp_space(&j) == 0 && open_input(&j) == 0 && prepare_header(&j) == 0
          && open_output(&j) == 0 && open_store(&j) == 0 && start_spiller(&j) == 0 && load(&j) == 0;
    if (ok) {
        progress_set_phase(j.prog, PHASE_SETTLE);
        j.t_settle = store_settle(j.store);
        progress_set_phase(j.prog, PHASE_READOUT);
        ok = readout(&j) == 0 && finish_output(&j) == 0;
    }
    progress_stop(j.prog, ok);
    if (o->verbose && j.store) report(&j);
    cleanup(&j, !ok);
    hts_verbose = verbosity;
    return ok ? 0 : -1;
}
