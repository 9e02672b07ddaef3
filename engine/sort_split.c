/* engine/sort_split.c -- see engine/sort_split.h. */
#include <stdio.h>
#include "engine/sort_split.h"
#include "engine/sort_plan.h"
#include "engine/resume_fate.h"
#include "output/split_commit.h"
#include "readout/split_readout.h"

int sort_split_open(sort_job *j)
{
    const rocksort_opts *o = j->o;
    split_setup s = { .format = o->out_fn, .index_format = o->index_fn,
                      .index_min_shift = o->index_min_shift, .other = o->split_other,
                      .in_fn = o->in_fns[0], .mode = o->out_mode, .opts = o->out_opts,
                      .reference = o->reference, .spec = &o->sort.split };
    errmsg err;
    if (!(j->split = split_set_open(&s, j->hdr, &err))) return sort_job_fail("%s", err.msg);
    return 0;
}

/* @HD's tags are set now, as for one output: -M's depend on the records. */
int sort_split_readout(sort_job *j, const readout_input *in)
{
    const rocksort_opts *o = j->o;
    errmsg err;
    if (sort_key_set_hd_tags(j->hdr, &j->sort) < 0)
        return sort_job_fail("failed to update the @HD line of '%s'", j->in_fn);
    if (split_set_header(j->split, j->hdr, &err) < 0) return sort_job_fail("%s", err.msg);
    split_request rq = { .in = in, .set = j->split, .sort = &j->sort, .verify = o->verify,
                         .threads = o->threads, .merge_threads = o->merge_threads,
                         .pool = j->pool.pool ? &j->pool : NULL,
                         .readers = sort_plan_readers_memory(o),
                         .store_name = j->store ? store_path(j->store) : NULL, .prog = j->prog };
    if (split_readout_run(&rq, &j->result, &err) < 0) {
        if (j->result.store_failed) resume_fate_state_wrong(j, "a stored run does not read back");
        return sort_job_fail("%s", err.msg);
    }
    return split_set_fill(j->split, &err) < 0 ? sort_job_fail("%s", err.msg) : 0;
}

int sort_split_commit(sort_job *j)
{
    errmsg err;
    return split_commit_run(j->split, &err) < 0 ? sort_job_fail("%s", err.msg) : 0;
}

void sort_split_report(const sort_job *j)
{
    size_t n = j->split ? split_set_outputs(j->split) : 0;
    if (!j->split) return;
    fprintf(stderr, "[rocksort] split by %.2s: %zu output%s\n", j->o->sort.split.tag, n,
            n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
        uint64_t records;
        const char *name = split_set_output(j->split, i, &records);
        if (name)
            fprintf(stderr, "[rocksort] split: %llu record%s in '%s'\n", (unsigned long long)records,
                    records == 1 ? "" : "s", name);
    }
}

void sort_split_free(sort_job *j)
{
    split_set_free(j->split);
    j->split = NULL;
}
