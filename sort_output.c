/* sort_output.c -- see sort_output.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/bgzf.h>
#include "sort_output.h"
#include "clock_util.h"
#include "merge_sources.h"
#include "merge_writer.h"
#include "range_readout.h"

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
    samfile_share_pool(j->out.fp, &j->pool);
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

/* @HD's tags are set here, not before reading: -M's depend on the records.
 * Then the index, if asked for, starts with the header. */
static int write_header(sort_job *j, int in_ranges)
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
    const rocksort_opts *o = j->o;
    if (o->index_fn && (in_ranges
            ? output_index_after(&j->out, o->index_fn, o->index_min_shift, o->threads, &err)
            : output_index_begin(&j->out, j->hdr, o->index_fn, o->index_min_shift, &err)) < 0) {
        job_fail("%s", err ? err : "cannot start the index");
        free(err);
        return -1;
    }
    return 0;
}

/* One merge of everything, on this thread. */
static int readout_single(sort_job *j)
{
    merge_sources src;
    _Atomic uint64_t shown = 0;
    merge_writer w = { .fp = j->out.fp, .hdr = j->hdr, .verify = j->o->verify,
                       .drop = &j->out, .prog = j->prog, .shown = &shown };
    key_bound open = { NULL, 0 };
    int ret = -1;
    j->ranges = j->merge_threads = 1;
    if (sources_open(&src, j, open, open, STORE_DIRECT_READAHEAD) < 0) {
        job_fail("out of memory for the final merge of '%s'", j->o->in_fn);
        sources_close(&src);
        return -1;
    }
    int status = merge_write(&w, src.merge);
    j->records_out = w.records;
    j->digest_out = w.digest;
    if (status == MERGE_WRITE_CORRUPT)
        job_fail("corrupt record in the temporary database '%s'", store_path(j->store));
    else if (status != MERGE_WRITE_OK)
        job_fail("error writing to '%s': %s", j->o->out_fn, merge_write_cause(j->out.fp));
    else if (sources_error(&src))
        job_fail("error reading the temporary database: %s", sources_error(&src));
    else
        ret = 0;
    sources_close(&src);
    return ret;
}

int readout(sort_job *j)
{
    double t0 = now_seconds();
    range_plan plan;
    if (ranges_plan(j, &plan) < 0) return -1;
    int ret = write_header(j, plan.n > 1);
    if (ret == 0) ret = plan.n > 1 ? readout_in_ranges(j, &plan) : readout_single(j);
    ranges_free(&plan);
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
    job_fail("error writing to '%s': %s", j->o->out_fn, merge_write_cause(fp));
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
