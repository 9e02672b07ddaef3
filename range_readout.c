/* range_readout.c -- see range_readout.h. */
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/bgzf.h>
#include <htslib/hfile.h>
#include "range_readout.h"
#include "clock_util.h"
#include "merge_sources.h"
#include "merge_writer.h"
#include "output_parts.h"
#include "output_target.h"
#include "readout_model.h"
#include "cleanup.h"
#include "temp_space.h"

/* A range smaller than this is not worth a thread (auto rule only). */
#define RANGE_MIN_BYTES (32ULL << 20)
#define RANGES_MAX 32

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

/* Compressed output is taken as at most half the records' size. */
double readout_parts_share(const rocksort_opts *o)
{
    char *path = NULL, *err = NULL;
    int kind = output_target(o->out_fn, &path, &err);
    free(path);
    free(err);
    if (kind == TARGET_RENAME) return 0;
    int k = width_for(o, 0, UINT64_MAX);
    return (k - 1.0) / k * (output_level(o) == 0 ? 1.0 : 0.5);
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

int ranges_plan(sort_job *j, range_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n = 1;
    int k = readout_width(j);
    if (k < 2) return 0;
    p->splits = malloc((size_t)(k - 1) * sizeof *p->splits);
    if (!p->splits) {
        job_fail("out of memory for the final merge of '%s'", j->o->in_fn);
        return -1;
    }
    gather_samples(j, &p->samples);
    p->n = 1 + key_ranges_choose(&p->samples, k, p->splits);
    return 0;
}

void ranges_free(range_plan *p)
{
    free(p->splits);
    key_samples_free(&p->samples);
    memset(p, 0, sizeof *p);
}

/* One range: its sources, where it writes, and how it ended. */
typedef struct {
    sort_job *j;
    merge_sources src;
    merge_writer w;
    char *part;             /* NULL for range 0, which writes into the output */
    int status;             /* MERGE_WRITE_* */
    char cause[160];        /* why a write failed, taken on the range's thread */
    pthread_t thread;
    int started;
} range_task;

/* Each run's reader fetches less at a time when K ranges read every run:
 * the readout's buffers stay about the same size in all. */
static size_t range_readahead(int ranges)
{
    size_t r = STORE_DIRECT_READAHEAD / (size_t)ranges;
    return r < (256u << 10) ? (256u << 10) : r;
}

static key_bound bound_at(const range_plan *p, int i)
{
    if (i < 0 || i >= p->n - 1) return (key_bound){ NULL, 0 };
    return (key_bound){ p->splits[i].key, p->splits[i].len };
}

/* A part's blocks go out on the range's thread before it ends: a full disk
 * shows there, with its cause. */
static int close_part(range_task *t)
{
    samFile *fp = t->w.fp;
    int is_bgzf = fp->format.compression == bgzf;
    errno = 0;
    int ret = is_bgzf ? bgzf_flush(fp->fp.bgzf) : hflush(fp->fp.hfile);
    if (ret < 0) snprintf(t->cause, sizeof t->cause, "%s", merge_write_cause(fp));
    if (sam_close(fp) < 0 && ret == 0) {
        snprintf(t->cause, sizeof t->cause, "%s", strerror(errno ? errno : EIO));
        ret = -1;
    }
    t->w.fp = NULL;
    return ret;
}

static void *range_main(void *arg)
{
    range_task *t = arg;
    t->status = merge_write(&t->w, t->src.merge);
    if (t->status == MERGE_WRITE_FAILED)
        snprintf(t->cause, sizeof t->cause, "%s", merge_write_cause(t->w.fp));
    if (t->part && t->w.fp && close_part(t) < 0 && t->status == MERGE_WRITE_OK)
        t->status = MERGE_WRITE_FAILED;
    if (t->status != MERGE_WRITE_OK) atomic_store(t->w.stop, 1);
    return NULL;
}

/* A part's file, opened with the output's format, level and options. */
static int open_part(range_task *t, int r)
{
    sort_job *j = t->j;
    char *err = NULL;
    cleanup_hold_signals();
    t->part = part_create(&j->out, temp_prefix(j->o->tmp_prefix), r, &err);
    t->w.fp = t->part ? hts_open(t->part, j->o->out_mode) : NULL;
    cleanup_release_signals();
    if (!t->w.fp) {
        if (err) job_fail("%s", err);
        else if (!t->part) job_fail("out of memory");
        else job_fail("cannot open part of the output '%s': %s", t->part, strerror(errno));
        free(err);
        return -1;
    }
    samfile_share_pool(t->w.fp, &j->pool);
    if (j->o->out_opts && hts_opt_apply(t->w.fp, j->o->out_opts) < 0) {
        job_fail("bad --output-fmt-option for '%s'", j->o->out_fn);
        return -1;
    }
    return 0;
}

static int open_range(range_task *t, sort_job *j, const range_plan *p, int r,
                      _Atomic uint64_t *shown, _Atomic int *stop)
{
    t->j = j;
    t->w = (merge_writer){ .fp = r ? NULL : j->out.fp, .hdr = j->hdr, .verify = j->o->verify,
                           .drop = r ? NULL : &j->out, .prog = j->prog, .shown = shown,
                           .stop = stop };
    if (r && open_part(t, r) < 0) return -1;
    if (sources_open(&t->src, j, bound_at(p, r - 1), bound_at(p, r), range_readahead(p->n)) < 0) {
        job_fail("out of memory for the final merge of '%s'", j->o->in_fn);
        return -1;
    }
    return 0;
}

/* The first failure, in range order, as one line. */
static int report_ranges(sort_job *j, range_task *t, int n)
{
    for (int r = 0; r < n; r++) {
        if (t[r].status == MERGE_WRITE_CORRUPT) {
            job_fail("corrupt record in the temporary database '%s'", store_path(j->store));
            return -1;
        }
        if (t[r].status == MERGE_WRITE_FAILED) {
            if (!t[r].part || j->out.final_path)
                job_fail("error writing to '%s': %s", j->o->out_fn, t[r].cause);
            else
                job_fail("error writing to '%s' (a part of '%s'): %s", t[r].part, j->o->out_fn,
                         t[r].cause);
            return -1;
        }
        if (sources_error(&t[r].src)) {
            job_fail("error reading the temporary database: %s", sources_error(&t[r].src));
            return -1;
        }
    }
    return 0;
}

/* The output's bytes so far leave htslib, then each part follows. */
static int join_parts(sort_job *j, range_task *t, int n)
{
    samFile *fp = j->out.fp;
    int is_bgzf = fp->format.compression == bgzf;
    double t0 = now_seconds();
    errno = 0;
    if ((is_bgzf && bgzf_flush(fp->fp.bgzf) < 0) || hflush(samfile_hfile(fp)) < 0) {
        job_fail("error writing to '%s': %s", j->o->out_fn, merge_write_cause(fp));
        return -1;
    }
    for (int r = 1; r < n; r++) {
        char *err = NULL;
        uint64_t bytes = 0;
        int ret = part_append(&j->out, t[r].part, is_bgzf, &bytes, &err);
        j->bytes_joined += bytes;
        part_remove(t[r].part);
        t[r].part = NULL;
        if (ret < 0) {
            job_fail("%s", err ? err : "out of memory");
            free(err);
            return -1;
        }
        output_drop_written(&j->out);
    }
    j->t_join = now_seconds() - t0;
    return 0;
}

static void close_ranges(range_task *t, int n)
{
    for (int r = 0; r < n; r++) {
        if (t[r].started) pthread_join(t[r].thread, NULL);
        sources_close(&t[r].src);
        if (t[r].part && t[r].w.fp) sam_close(t[r].w.fp);
        part_remove(t[r].part);
    }
    free(t);
}

int readout_in_ranges(sort_job *j, const range_plan *p)
{
    range_task *t = calloc((size_t)p->n, sizeof *t);
    _Atomic uint64_t shown = 0;
    _Atomic int stop = 0;
    int ret = t ? 0 : -1, n = 0;
    if (!t) job_fail("out of memory for the final merge of '%s'", j->o->in_fn);
    for (; ret == 0 && n < p->n; n++)
        ret = open_range(&t[n], j, p, n, &shown, &stop);
    for (int r = 0; ret == 0 && r < n; r++) {
        t[r].started = pthread_create(&t[r].thread, NULL, range_main, &t[r]) == 0;
        if (!t[r].started) {
            job_fail("cannot start a merge thread for '%s'", j->o->out_fn);
            atomic_store(&stop, 1);
            ret = -1;
        }
    }
    for (int r = 0; r < n; r++)
        if (t[r].started) pthread_join(t[r].thread, NULL), t[r].started = 0;
    for (int r = 0; ret == 0 && r < n; r++) {
        j->records_out += t[r].w.records;
        j->digest_out += t[r].w.digest;
    }
    if (ret == 0) ret = report_ranges(j, t, n);
    if (ret == 0) ret = join_parts(j, t, n);
    j->ranges = p->n;
    if (t) close_ranges(t, n);
    return ret;
}
