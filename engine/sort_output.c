/* engine/sort_output.c -- see engine/sort_output.h. */
#include <errno.h>
#include <string.h>
#include <htslib/bgzf.h>
#include "engine/sort_output.h"
#include "util/clock_util.h"
#include "readout/merge_sources.h"
#include "readout/merge_writer.h"
#include "readout/range_readout.h"
#include "readout/run_passes.h"
#include "store/store.h"
#include "engine/sort_plan.h"
#include "util/thread.h"
#include "engine/resume_fate.h"
#include "engine/sort_split.h"

/* BAM stores reference lengths and positions in 32 bits, and CRAM 3 its
 * positions (htslib writes a CRAM it cannot read back).  samtools 1.24
 * refuses both when a reference is longer than 2^31-1, whatever the
 * records hold; so do we, before hours of sorting. */
static int check_output_can_hold_references(const sort_job *j)
{
    const char *binary = strpbrk(j->o->out_mode + 1, "bc");
    if (!binary) return 0;
    for (int tid = 0; tid < sam_hdr_nref(j->hdr); tid++)
        if (sam_hdr_tid2len(j->hdr, tid) > INT32_MAX) {
            sort_job_fail("%s output '%s' cannot hold reference '%s' (longer than 2^31-1): "
                          "write SAM", *binary == 'b' ? "BAM" : "CRAM", j->o->out_fn,
                          sam_hdr_tid2name(j->hdr, tid));
            return -1;
        }
    return 0;
}

int sort_output_open(sort_job *j)
{
    const rocksort_opts *o = j->o;
    errmsg err;
    if (check_output_can_hold_references(j) < 0) return -1;
    if (o->sort.split.on) return sort_split_open(j);
    if (output_file_open(&j->out, o->out_fn, o->out_mode, &err) < 0) return sort_job_fail("%s", err.msg);
    if (o->reference && hts_set_fai_filename(j->out.fp, o->reference) < 0)
        return sort_job_fail("cannot load reference '%s' for '%s'", o->reference, o->out_fn);
    if (o->out_opts && hts_opt_apply(j->out.fp, o->out_opts) < 0)
        return sort_job_fail("bad --output-fmt-option for '%s'", o->out_fn);
    /* Reserved now, the index's hidden name can be journaled (engine/sort_resume.h). */
    if (o->index_fn && output_file_index_reserve(&j->out, o->index_fn, &err) < 0)
        return sort_job_fail("%s", err.msg);
    return 0;
}

/* A small output is compressed on this thread: htslib's threaded BGZF
 * waits for its last blocks in 10 ms sleeps (mt_flush_queue()), at the
 * flush and again at the close, which costs more than compressing this
 * much alone.  Decided at the readout, when the records' size is known and
 * before anything is written. */
#define OUTPUT_THREADED_FROM (512u << 10)

static void share_pool_if_worth_it(sort_job *j)
{
    if (j->bytes_in < OUTPUT_THREADED_FROM) return;
    thread_name_scope named;
    thread_name_push(&named, THREAD_OUTPUT);  /* BGZF's writer thread takes the name */
    merge_writer_share_pool(j->out.fp, &j->pool);
    thread_name_pop(&named);
}

/* @HD's tags are set here, not before reading: -M's depend on the records.
 * Then the index, if asked for, starts with the header. */
static int write_header(sort_job *j, int in_ranges)
{
    const rocksort_opts *o = j->o;
    errmsg err;
    if (sort_key_set_hd_tags(j->hdr, &j->sort) < 0)
        return sort_job_fail("failed to update the @HD line of '%s'", j->in_fn);
    if (sam_hdr_write(j->out.fp, j->hdr) < 0)
        return sort_job_fail("cannot write the header to '%s'", o->out_fn);
    if (o->index_fn && (in_ranges
            ? output_file_index_after(&j->out, o->index_fn, o->index_min_shift, o->threads, &err)
            : output_file_index_begin(&j->out, j->hdr, o->index_fn, o->index_min_shift, &err)) < 0)
        return sort_job_fail("%s", err.msg);
    return 0;
}

/* What a merge pass's writer holds (readout/run_passes.h): the SST being written,
 * and compact runs' groups being encoded. */
#define PASS_WRITER_BYTES (6ULL << 20)

/* One merge of everything, on this thread. */
static int readout_single(sort_job *j, const readout_request *rq, size_t readahead)
{
    merge_sources src;
    _Atomic uint64_t shown = 0;
    merge_writer w = { .fp = j->out.fp, .out_name = j->o->out_fn, .store_name = store_path(j->store),
                       .hdr = j->hdr, .verify = j->o->verify, .drop = &j->out, .prog = j->prog,
                       .shown = &shown };
    errmsg err;
    j->result.ranges = j->result.threads = 1;
    if (merge_sources_open(&src, rq->in, NULL, NULL, readahead, &err) < 0) {
        merge_sources_close(&src);
        return sort_job_fail("%s of '%s'", err.msg, j->in_fn);
    }
    int ret = merge_writer_write(&w, src.merge, &err);
    j->result.records = w.records;
    j->result.digest = w.digest;
    j->result.store_failed = w.corrupt;
    if (ret == 0 && merge_sources_status(&src, &err) < 0) {
        ret = errmsg_prefix(&err, "error reading the temporary database");
        j->result.store_failed = store_shows_damage(err.msg);
    }
    merge_sources_close(&src);
    return ret == 0 ? 0 : sort_job_fail("%s", err.msg);
}

int sort_output_readout(sort_job *j)
{
    const rocksort_opts *o = j->o;
    double t0 = now_seconds();
    readout_input in = { .store = j->store, .kept = j->q.kept, .packed = j->q.packed,
                         .n_held = j->q.n_held, .tail = j->tail };
    readout_request rq = {
        .in = &in, .out = &j->out, .hdr = j->hdr, .out_mode = o->out_mode,
        .out_opts = o->out_opts, .verify = o->verify, .threads = o->threads,
        .merge_threads = o->merge_threads, .indexed = o->index_fn != NULL,
        .memory = sort_plan_total_memory(o), .readers = sort_plan_readers_memory(o),
        .bytes = j->bytes_in, .prog = j->prog,
    };
    range_plan plan;
    errmsg err;
    if (run_passes_merge(j->store, rq.readers, PASS_WRITER_BYTES, &err) < 0)
        return sort_job_fail("%s: %s", store_path(j->store), err.msg);
    run_readers_release_freed();
    if (j->split) {
        int split = sort_split_readout(j, &in);
        j->t_readout = now_seconds() - t0;
        return split;
    }
    if (readout_plan_ranges(&rq, &plan, &err) < 0) return sort_job_fail("%s of '%s'", err.msg, j->in_fn);
    run_readers_shape shape = run_passes_readers(j->store);
    j->readers = (readout_readers){ shape.runs,
                                    run_readers_bytes(&shape, plan.readahead) * (uint64_t)plan.threads,
                                    rq.readers, plan.readahead };
    share_pool_if_worth_it(j);
    int ret = write_header(j, plan.n > 1);
    if (ret == 0 && plan.n > 1) {
        ret = range_readout_run(&rq, &plan, &j->result, &err);
        if (ret < 0) sort_job_fail("%s", err.msg);
    } else if (ret == 0) {
        ret = readout_single(j, &rq, plan.readahead);
    }
    readout_plan_free(&plan);
    j->t_readout = now_seconds() - t0;
    if (ret < 0 && j->result.store_failed) resume_fate_state_wrong(j, "a stored run does not read back");
    return ret;
}

/* Writes out the blocks htslib's threads still hold, so that a failure
 * (a full disk) shows while its cause can be read: sam_close() reports it
 * after freeing the hFILE that keeps the errno. */
static int flush_output(sort_job *j)
{
    samFile *fp = j->out.fp;
    errmsg err;
    errno = 0;
    if (fp->format.compression != bgzf || bgzf_flush(fp->fp.bgzf) == 0) return 0;
    merge_writer_write_error(fp, j->o->out_fn, &err);
    return sort_job_fail("%s", err.msg);
}

int sort_output_commit(sort_job *j)
{
    errmsg err;
    if (j->split) return sort_split_commit(j);
    if (flush_output(j) < 0) return -1;
    return output_file_commit(&j->out, &err) == 0 ? 0 : sort_job_fail("%s", err.msg);
}
