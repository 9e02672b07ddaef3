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
#include <stdarg.h>
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
#include "sort_job.h"
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
#include "sort_plan.h"
#include "sort_load.h"

int temp_compression_parse(const char *name)
{
    static const char *const names[] = {
        [TEMP_COMPRESSION_NONE] = "none", [TEMP_COMPRESSION_LZ4] = "lz4",
        [TEMP_COMPRESSION_SNAPPY] = "snappy", [TEMP_COMPRESSION_ZSTD] = "zstd",
    };
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

void job_fail(const char *fmt, ...)
{
    if (cleanup_interrupted()) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "samtools rocksort: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

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

static int open_output(sort_job *j)
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

static int readout(sort_job *j)
{
    double t0 = now_seconds();
    int ret = 0;
    /* Here, not before reading: -M's tags depend on the records. */
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
    spilled_runs runs = { 0 };
    int no_stream = open_spilled(j, &runs) < 0;
    run_merge *m = no_stream ? NULL : open_merge(j, &runs);
    bam1_t *owned = bam_init1();
    const uint8_t *v;
    size_t vlen, unwritten = 0;
    if (!m || !owned) {
        job_fail("out of memory for the final merge of '%s'", j->o->in_fn);
        ret = -1;
    }
    while (ret == 0 && (v = merge_next(m, &vlen)) != NULL) {
        errno = 0;
        int r = write_value(j, v, vlen, owned);
        if (r == -2) {
            job_fail("corrupt record in the temporary database '%s'", store_path(j->store));
            ret = -1;
            break;
        }
        if (r < 0) {
            job_fail("error writing to '%s': %s", j->o->out_fn, write_error_cause(j));
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
        job_fail("error reading the temporary database: %s", spilled_error(&runs));
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
    unsigned long long in = j->records_in, out = j->records_out;
    if (out != in) {
        job_fail("record count mismatch: %llu read, %llu written", in, out);
        return -1;
    }
    if (!j->o->verify) return 0;
    int same = j->digest_in == j->digest_out;
    fprintf(stderr, "[rocksort] verify: %llu records in, %llu out; checksum in %016llx, out %016llx: %s\n",
            in, out, (unsigned long long)j->digest_in, (unsigned long long)j->digest_out,
            same ? "OK" : "MISMATCH");
    if (!same) {
        job_fail("verify failed: the records written differ from the records read");
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
    job_fail("error writing to '%s': %s", j->o->out_fn, write_error_cause(j));
    return -1;
}

static int finish_output(sort_job *j)
{
    if (check_accounting(j) < 0 || flush_output(j) < 0) return -1;
    char *err = NULL;
    if (output_commit(&j->out, &err) < 0) {
        job_fail("%s", err ? err : "error closing output");
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
    spill_free(&j->q);
    batch_destroy(j->tail);
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
}

int rocksort_run(const rocksort_opts *o)
{
    sort_job j;
    memset(&j, 0, sizeof j);
    j.o = o;
    spill_init(&j.q);
    if (o->threads > 0 && !(j.pool.pool = hts_tpool_init(o->threads))) {
        job_fail("cannot create worker threads");
        cleanup(&j, 1);
        return -1;
    }
    /* htslib logs its own lines for bad input; ours names the file and the
     * cause once.  --verbosity restores its voice. */
    int verbosity = hts_verbose;
    if (!o->htslib_verbosity_set) hts_verbose = 0;
    j.prog = progress_start(o->progress, o->progress_interval);
    int ok = open_input(&j) == 0 && prepare_header(&j) == 0 && open_output(&j) == 0
          && open_store(&j) == 0 && load(&j) == 0;
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
