/* sort_output.c -- see sort_output.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/bgzf.h>
#include <htslib/cram.h>
#include <htslib/hfile.h>
#include "sort_output.h"
#include "clock_util.h"
#include "record_codec.h"
#include "run_merge.h"
#include "store_stream.h"

/* BAM stores reference lengths in 32 bits; fail before hours of sorting. */
static int check_bam_can_hold_references(const sort_job *j)
{
    if (!strchr(j->o->out_mode, 'b')) return 0;
    for (int tid = 0; tid < sam_hdr_nref(j->hdr); tid++)
        if (sam_hdr_tid2len(j->hdr, tid) > INT32_MAX) {
            job_fail("BAM output '%s' cannot hold reference '%s' (longer than 2^31-1): "
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

int open_output(sort_job *j)
{
    const rocksort_opts *o = j->o;
    char *err = NULL;
    if (check_bam_can_hold_references(j) < 0) return -1;
    if (output_open(&j->out, o->out_fn, o->out_mode, &err) < 0) {
        job_fail("%s", err ? err : "cannot open output");
        free(err);
        return -1;
    }
    share_pool_with_output(j);
    if (o->reference && hts_set_fai_filename(j->out.fp, o->reference) < 0) {
        job_fail("cannot load reference '%s' for '%s'", o->reference, o->out_fn);
        return -1;
    }
    if (o->out_opts && hts_opt_apply(j->out.fp, o->out_opts) < 0) {
        job_fail("bad --output-fmt-option for '%s'", o->out_fn);
        return -1;
    }
    return 0;
}

/* CIGAR operations that BAM's 16-bit count holds.  htslib writes a longer
 * CIGAR as a CG tag, reading it as 32-bit words, which must be aligned. */
#define BAM_CIGAR_OPS_MAX 0xffff

/* BAM output copies record bytes as they are, so it can take a view of the
 * stored value; other formats parse the CIGAR, which must be aligned. */
static int write_value(sort_job *j, const uint8_t *v, size_t vlen, bam1_t *owned)
{
    bam1_t view, *b = &view;
    int zero_copy = j->out.fp->format.format == bam;
    if (record_value_view(v, vlen, &view) < 0) return -2;
    if (!zero_copy || view.core.n_cigar > BAM_CIGAR_OPS_MAX) {
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
    store_iter *it[STORE_MAX_PARTS];
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
        r->it[r->n] = store_iter_open(j->store, r->n, STORE_DIRECT_READAHEAD);
        r->stream[r->n] = r->it[r->n] ? stream_open(r->it[r->n], STREAM_CHUNK_BYTES, STREAM_CHUNKS)
                                      : NULL;
        if (!r->stream[r->n]) {
            store_iter_close(r->it[r->n]);
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
        store_iter_close(r->it[i]);
    }
    r->n = 0;
}

/* Record bytes between output_drop_written() calls: the output's page
 * cache stays around this size. */
#define DROP_WRITTEN_EVERY (64u << 20)

/* @HD's tags are set here, not before reading: -M's depend on the records.
 * Then the index, if asked for, starts with the header. */
static int write_header(sort_job *j)
{
    if (sort_order_set_hd_tags(j->hdr, &j->sort) < 0) {
        job_fail("failed to update the @HD line of '%s'", j->o->in_fn);
        return -1;
    }
    if (sam_hdr_write(j->out.fp, j->hdr) < 0) {
        job_fail("cannot write the header to '%s'", j->o->out_fn);
        return -1;
    }
    char *err = NULL;
    if (j->o->index_fn && output_index_begin(&j->out, j->hdr, j->o->index_fn,
                                             j->o->index_min_shift, &err) < 0) {
        job_fail("%s", err ? err : "cannot start the index");
        free(err);
        return -1;
    }
    return 0;
}

/* Writes every value the merge returns, in its order. */
static int write_merged(sort_job *j, run_merge *m, bam1_t *owned)
{
    const uint8_t *v;
    size_t vlen, unwritten = 0;
    while ((v = merge_next(m, &vlen)) != NULL) {
        errno = 0;
        int r = write_value(j, v, vlen, owned);
        if (r == -2) {
            job_fail("corrupt record in the temporary database '%s'", store_path(j->store));
            return -1;
        }
        if (r < 0) {
            job_fail("error writing to '%s': %s", j->o->out_fn, write_error_cause(j));
            return -1;
        }
        if ((++j->records_out & PROGRESS_EVERY) == 0)
            progress_set_written(j->prog, j->records_out);
        if ((unwritten += vlen) >= DROP_WRITTEN_EVERY) {
            output_drop_written(&j->out);
            unwritten = 0;
        }
    }
    return 0;
}

int readout(sort_job *j)
{
    double t0 = now_seconds();
    if (write_header(j) < 0) return -1;
    spilled_runs runs = { 0 };
    int no_stream = open_spilled(j, &runs) < 0;
    run_merge *m = no_stream ? NULL : open_merge(j, &runs);
    bam1_t *owned = bam_init1();
    int ret = 0;
    if (!m || !owned) {
        job_fail("out of memory for the final merge of '%s'", j->o->in_fn);
        ret = -1;
    } else {
        ret = write_merged(j, m, owned);
    }
    if (ret == 0 && spilled_error(&runs)) {
        job_fail("error reading the temporary database: %s", spilled_error(&runs));
        ret = -1;
    }
    merge_close(m);
    close_spilled(&runs);
    bam_destroy1(owned);
    j->t_readout = now_seconds() - t0;
    return ret;
}

/* Writes out the blocks htslib's threads still hold, so that a failure
 * (a full disk) shows while its cause can be read: sam_close() reports it
 * after freeing the hFILE that keeps the errno. */
static int flush_output(sort_job *j)
{
    samFile *fp = j->out.fp;
    errno = 0;
    if (fp->format.compression != bgzf || bgzf_flush(fp->fp.bgzf) == 0) return 0;
    job_fail("error writing to '%s': %s", j->o->out_fn, write_error_cause(j));
    return -1;
}

int commit_output(sort_job *j)
{
    if (flush_output(j) < 0) return -1;
    char *err = NULL;
    if (output_commit(&j->out, &err) < 0) {
        job_fail("%s", err ? err : "error closing output");
        free(err);
        return -1;
    }
    return 0;
}
