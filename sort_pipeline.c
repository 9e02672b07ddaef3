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
#include "sort_output.h"

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
        ok = readout(&j) == 0 && check_accounting(&j) == 0 && commit_output(&j) == 0;
    }
    progress_stop(j.prog, ok);
    if (o->verbose && j.store) report(&j);
    cleanup(&j, !ok);
    hts_verbose = verbosity;
    return ok ? 0 : -1;
}
