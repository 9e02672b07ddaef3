/* engine/sort_pipeline.c -- see engine/sort_pipeline.h.
 *
 * The pipeline, each phase in a file of its own:
 *   open     the inputs and their headers (engine/sort_inputs.c), the output
 *            (engine/sort_output.c), the temporary store (engine/sort_plan.c);
 *   load     records into batches, input after input; the spill thread (load/spill.c) sorts
 *            each full one and writes it as a run, or holds it in memory
 *            when the whole input is expected to fit (engine/sort_load.c);
 *   readout  the runs, the held batches and the last batch merged in key
 *            order into the output (engine/sort_output.c);
 *   finish   the records counted (engine/sort_report.c), the output committed.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <htslib/thread_pool.h>
#include "engine/sort_pipeline.h"
#include "engine/sort_job.h"
#include "engine/sort_plan.h"
#include "engine/sort_input.h"
#include "engine/sort_inputs.h"
#include "engine/sort_load.h"
#include "engine/sort_output.h"
#include "engine/sort_report.h"
#include "engine/sort_resume.h"
#include "engine/sort_split.h"
#include "engine/resume_fate.h"
#include "engine/resume_recheck.h"
#include "store/store_run.h"
#include "util/cleanup.h"
#include "util/heap_trim.h"
#include "util/thread.h"

static int open_all(sort_job *j)
{
    if (sort_plan_temp_space(j) < 0) return -1;
    if (j->resume.on) return sort_resume_open(j);
    if (sort_inputs_open(j, 0) < 0 || sort_output_open(j) < 0) return -1;
    return sort_plan_open_store(j);
}

/* A resumed sort whose state holds the whole input reads none: the runs
 * are all in the store, and the last batch is an empty one. */
static int load_input(sort_job *j)
{
    if (!j->resume.input_stored) return sort_load_input(j);
    if (!(j->tail = batch_create(1))) return sort_job_fail("out of memory");
    return 0;
}

/* With -k, the database of a sort that succeeded stays.  (--resume's
 * state follows its own rule: engine/resume_fate.h.) */
static int keep_store(const sort_job *j, int failed)
{
    for (int i = 0; j->o->keep_db && !failed && i < store_dirs(j->store); i++) {
        const char *path = store_dir_at(j->store, i).path;
        char now[PATH_MAX];
        fprintf(stderr, "[rocksort] kept the temporary database: %s\n",
                cleanup_registered_moved(path, now, sizeof now) ? now : path);
    }
    return j->o->keep_db && !failed;
}

/* Merges still running in the background end first (store_merge_settle()). */
static int settle_and_readout(sort_job *j)
{
    progress_set_phase(j->prog, PHASE_SETTLE);
    sort_report_mark(j, MARK_SETTLE);
    j->t_settle = store_merge_settle(j->store);
    store_run_trim(j->store);
    progress_set_phase(j->prog, PHASE_READOUT);
    sort_report_mark(j, MARK_READOUT);
    int ret = sort_output_readout(j);
    sort_report_mark(j, MARK_END);
    return ret;
}

/* The input is closed once read: its reader's blocks in flight (htslib
 * keeps two per -@ thread) would otherwise stay through the readout. */
static int load_phase(sort_job *j)
{
    sort_report_mark(j, MARK_LOAD);
    int ret = load_input(j);
    if (ret == 0) sort_input_close(j);
    return ret;
}

static int finish(sort_job *j)
{
    if (sort_report_check_accounting(j) < 0) {
        resume_fate_state_wrong(j, "its records do not add up to those read");
        return -1;
    }
    return sort_output_commit(j);
}

static void cleanup(sort_job *j, int failed)
{
    spill_free(&j->q);
    batch_destroy(j->tail);
    if (failed && (j->out.fp || j->out.tmp_path)) output_file_abort(&j->out);
    if (j->resume.on) resume_fate_close(j, failed);
    else if (j->store) store_close(j->store, keep_store(j, failed));
    /* After the store: emptying --split's hidden directory takes descriptors,
     * and a sort that failed for want of them (EMFILE) has none until
     * RocksDB lets go of its files. */
    sort_split_free(j);
    if (j->first) bam_destroy1(j->first);
    free(j->resume.header_text);
    free(j->resume.identity);
    free(j->resume.no_input);
    free(j->resume.dir_shown);
    free(j->resume.stale);
    resume_recheck_close(j);
    sort_key_spec_free(&j->sort);
    sort_inputs_close(j);
    if (j->hdr) sam_hdr_destroy(j->hdr);
    if (j->pool.pool) hts_tpool_destroy(j->pool.pool);
    sort_report_marks_free(j);
}

/* Seconds between trims: often enough that the arenas' slack never builds
 * up to much (bench/RESULTS.md, 2026-11-29), seldom enough to cost nothing. */
#define HEAP_TRIM_PERIOD 0.5

int sort_pipeline_run(const rocksort_opts *o)
{
    sort_job j;
    memset(&j, 0, sizeof j);
    j.o = o;
    j.in_fn = o->in_fns[0];
    j.resume.on = o->resume_dir != NULL;
    j.resume.prefix_fd = -1;
    heap_trimmer *trim = sort_plan_allocator(o) ? heap_trim_start(HEAP_TRIM_PERIOD) : NULL;
    spill_init(&j.q);
    thread_name_scope named;
    thread_name_push(&named, THREAD_POOL);    /* htslib's workers take the name */
    if (o->threads > 0) j.pool.pool = hts_tpool_init(o->threads);
    thread_name_pop(&named);
    if (o->threads > 0 && !j.pool.pool) {
        sort_job_fail("cannot create worker threads");
        cleanup(&j, 1);
        heap_trim_stop(trim);
        return -1;
    }
    /* htslib logs its own lines for bad input; ours names the file and the
     * cause once.  --verbosity restores its voice. */
    int verbosity = hts_verbose;
    if (!o->htslib_verbosity_set) hts_verbose = 0;
    j.prog = progress_start(o->progress, o->progress_interval);
    int ok = open_all(&j) == 0 && load_phase(&j) == 0 && settle_and_readout(&j) == 0
          && finish(&j) == 0;
    if (!ok) cleanup_await_signal();
    progress_stop(j.prog, ok);
    if (o->verbose && j.store) sort_report_verbose(&j);
    cleanup(&j, !ok);
    heap_trim_stop(trim);
    hts_verbose = verbosity;
    return ok ? 0 : -1;
}
