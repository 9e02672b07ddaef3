/* engine/sort_report.c -- see engine/sort_report.h. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "engine/sort_report.h"
#include "engine/resume_fate.h"
#include "engine/sort_inputs.h"
#include "engine/sort_plan.h"
#include "engine/sort_split.h"

/* Records in and out must match in number and, with --verify, in content. */
int sort_report_check_accounting(const sort_job *j)
{
    unsigned long long in = j->records_in, out = j->result.records;
    if (out != in) return sort_job_fail("record count mismatch: %llu read, %llu written", in, out);
    if (!j->o->verify) return 0;
    int same = j->digest_in == j->result.digest;
    fprintf(stderr, "[rocksort] verify: %llu records in, %llu out; checksum in %016llx, out %016llx: %s\n",
            in, out, (unsigned long long)j->digest_in, (unsigned long long)j->result.digest,
            same ? "OK" : "MISMATCH");
    return same ? 0 : sort_job_fail("verify failed: the records written differ from the records read");
}

static void report_sizing(const sort_job *j)
{
    if (j->o->size_hint)
        fprintf(stderr, "[rocksort] size: %.1f MB given by -s\n", j->o->size_hint / 1e6);
    else if (j->size_estimate && j->merge_width > 0)
        fprintf(stderr, "[rocksort] size: %.1f MB estimated from the input file%s; "
                "at least %d runs per background merge\n", j->size_estimate / 1e6,
                j->o->n_in > 1 ? "s" : "", j->merge_width);
    else if (j->size_estimate)
        fprintf(stderr, "[rocksort] size: %.1f MB estimated from the input file%s; no background "
                "merges (too few runs, or runs in groups to be merged in passes instead)\n",
                j->size_estimate / 1e6, j->o->n_in > 1 ? "s" : "");
    else
        fprintf(stderr, "[rocksort] size: unknown (no -s, %s)\n",
                j->size_planned ? "input not a regular BAM/SAM file" : "fits in one batch");
}

/* Of several inputs, the records each gave, in one line. */
static void report_inputs(const sort_job *j)
{
    if (j->o->n_in < 2 || !j->inputs) return;
    fprintf(stderr, "[rocksort] inputs: %d; records from each:", j->o->n_in);
    for (int i = 0; i < j->o->n_in; i++) {
        const char *sep = i + 1 < j->o->n_in ? "," : "\n";
        if (j->inputs[i].taken_back)
            fprintf(stderr, " '%s' stored by an earlier run%s", j->o->in_fns[i], sep);
        else
            fprintf(stderr, " '%s' %llu%s", j->o->in_fns[i],
                    (unsigned long long)sort_inputs_records(j, i), sep);
    }
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

/* The budget, and what the threads hold of their own before the batches
 * and readers share the rest: at -l 8 and 9 their compressors can take
 * more than a small budget holds (engine/sort_plan.h). */
static void report_budget(const sort_job *j)
{
    const rocksort_opts *o = j->o;
    double total = sort_plan_total_memory(o) / 1e6;
    fprintf(stderr, "[rocksort] memory budget: %.1f MB; the threads' own buffers %.1f MB",
            total, sort_plan_own_memory(o) / 1e6);
    if (!sort_plan_own_memory_fits(o))
        fprintf(stderr, ", more than the %.1f MB the budget holds for them: the peak can "
                "exceed the bound by the difference", 0.75 * total);
    fputc('\n', stderr);
}

void sort_report_mark(sort_job *j, int mark)
{
    if (!j->o->verbose) return;
    if (mark == MARK_LOAD) thread_cpu_enable();
    thread_times_free(&j->at[mark]);
    thread_times_take(&j->at[mark]);    /* out of memory: no figures for that phase */
}

void sort_report_marks_free(sort_job *j)
{
    for (int i = 0; i < JOB_MARKS; i++) thread_times_free(&j->at[i]);
}

/* The main thread's role in each phase: it reads the input, then waits
 * for merges, then merges the output itself or appends the pieces that
 * merge threads made. */
static const char *main_role(const sort_job *j, int mark)
{
    if (mark == MARK_LOAD) return "loader";
    if (mark == MARK_SETTLE) return "main";
    return j->result.threads > 1 ? "writer" : "merge";
}

/* One phase's threads: the longest single thread against the phase's CPU,
 * then every role's threads and CPU. */
static void report_phase_threads(const sort_job *j, int mark, const char *phase)
{
    phase_times p;
    if (!j->at[mark].n || !j->at[mark + 1].n ||
        thread_phase_times(&j->at[mark], &j->at[mark + 1], &p) < 0)
        return;
    for (int i = 0; i < p.n_roles; i++)
        if (strcmp(p.roles[i].role, "main") == 0)
            snprintf(p.roles[i].role, sizeof p.roles[i].role, "%s", main_role(j, mark));
    if (strcmp(p.longest_role, "main") == 0)
        snprintf(p.longest_role, sizeof p.longest_role, "%s", main_role(j, mark));
    fprintf(stderr, "[rocksort] threads in phase %s: the longest single thread: %.2f s (%s) of "
            "%.2f CPU-s\n[rocksort] threads in phase %s:", phase, p.longest, p.longest_role,
            p.cpu, phase);
    for (int i = 0; i < p.n_roles; i++) {
        const role_time *r = &p.roles[i];
        if (r->threads == 1) fprintf(stderr, " %s %.2f s;", r->role, r->cpu);
        else fprintf(stderr, " %s %d threads %.2f s (busiest %.2f s);", r->role, r->threads,
                     r->cpu, r->busiest);
    }
    fprintf(stderr, " unattributed %.2f s\n", p.unattributed);
    thread_phase_times_free(&p);
}

static void report_threads(const sort_job *j)
{
    report_phase_threads(j, MARK_LOAD, "load");
    report_phase_threads(j, MARK_SETTLE, "compaction wait");
    report_phase_threads(j, MARK_READOUT, "readout");
}

/* Where the runs went: each directory's runs and the bytes written there. */
static void report_dirs(const sort_job *j)
{
    for (int i = 0; j->store && i < store_dirs(j->store); i++) {
        store_dir_report d = store_dir_at(j->store, i);
        fprintf(stderr, "[rocksort] temp dir '%s': %llu runs; %llu bytes written (runs, merges "
                "and RocksDB's own files)\n", d.path, (unsigned long long)d.runs,
                (unsigned long long)d.bytes_written);
    }
}

/* What the readers of the spilled runs held, and the merge passes that
 * made them fit.  A pass whose memory fits one run's readers rewrites each
 * run alone, into one with a single group open: that merges nothing, and
 * "6 runs merged into 6" said it did. */
static void report_readers(const sort_job *j)
{
    if (!j->readers.runs) return;
    unsigned long long in = store_pass_runs_replaced(j->store),
                       out = store_pass_runs_written(j->store);
    fprintf(stderr, "[rocksort] readout memory: readers of %llu runs hold %.1f MB of the %.1f MB "
            "they may, at %zu KiB readahead; ", (unsigned long long)j->readers.runs,
            j->readers.bytes / 1e6, j->readers.allowed / 1e6, j->readers.readahead >> 10);
    /* Smaller groups than the default say that the runs were many for the memory. */
    if (store_grouped(j->store))
        fprintf(stderr, "groups of %zu KiB; ", store_group_bytes(j->store) >> 10);
    if (!in)
        fprintf(stderr, "no merge passes\n");
    else if (in == out)
        fprintf(stderr, "merge passes: %llu runs rewritten one at a time before the readout%s\n",
                in, store_grouped(j->store) ? ", each to hold one group open" : "");
    else
        fprintf(stderr, "merge passes: %llu runs merged into %llu before the readout\n", in, out);
}

/* What the background merges rewrote, against the runs' own bytes, and
 * why they merged that way. */
static void report_merges(const sort_job *j)
{
    store_merge_report m = store_merge_summary(j->store);
    uint64_t runs = store_bytes_written(j->store);
    if (!j->store || !runs) return;
    fprintf(stderr, "[rocksort] background merges: %.1f MB written, %.2f times the runs' %.1f MB",
            m.bytes / 1e6, (double)m.bytes / (double)runs, runs / 1e6);
    /* A plan explains merges that ran, not a plan that never had to. */
    if (m.stopped_after && m.kind != STORE_MERGES_TIERS)
        fprintf(stderr, ": planned, then stopped after %llu runs, as groups of long records "
                "outgrew the plan; merge passes rewrite the runs before the readout instead\n",
                (unsigned long long)m.stopped_after);
    else if (!m.bytes && m.kind != STORE_MERGES_NONE)
        fprintf(stderr, ": none ran (too few runs to start one)\n");
    else if (m.kind == STORE_MERGES_TIERS)
        fprintf(stderr, ": ulimit -n leaves room for %d runs at the readout and %d in one "
                "merge, too few to merge each run once, so runs of one size merge in tiers and "
                "each byte is rewritten once per tier\n", m.readout_runs, m.width);
    else if (m.kind == STORE_MERGES_ONCE)
        fprintf(stderr, ": each run merged at most once, leaving about 2*sqrt(runs) for the "
                "readout\n");
    else
        fprintf(stderr, ": %s\n", m.bytes ? "only to keep the readout within ulimit -n"
                                  : m.left_to_passes ? "none planned: the grouped runs' readers, "
                                    "even merged, would not fit the readout's memory, so "
                                    "merge passes rewrite the runs before it instead"
                                  : "none planned (too few runs, or no size known)");
}

void sort_report_verbose(const sort_job *j)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    report_sizing(j);
    report_inputs(j);
    resume_fate_report(j);
    temp_space_report(&j->space, stderr);
    report_dirs(j);
    report_budget(j);
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
            "[rocksort] readout: %d merge thread%s over %d piece%s; %.1f MB through memory, writer waited %.2f s\n"
            "[rocksort] runs: %llu written, %d merged at readout (+%d in memory); temp bytes written: %llu\n"
            "[rocksort] peak RSS: %.1f MB\n",
            (unsigned long long)j->records_in, (unsigned long long)j->result.records,
            j->bytes_in / 1e6, j->t_load, j->q.sort_seconds, j->q.write_seconds, j->q.hold_seconds,
            j->q.wait_seconds,
            j->t_settle, j->store ? store_catch_up_runs(j->store) : 0, j->t_readout,
            j->result.threads, j->result.threads == 1 ? "" : "s", j->result.ranges, j->result.ranges == 1 ? "" : "s",
            j->result.bytes_through_memory / 1e6, j->result.writer_waited,
            (unsigned long long)store_runs_ingested(j->store),
            j->store ? store_sorted_runs(j->store) : 0, j->q.n_held + 1,
            (unsigned long long)store_bytes_written(j->store), ru.ru_maxrss * 1024.0 / 1e6);
    report_readers(j);
    report_merges(j);
    report_threads(j);
    sort_split_report(j);
}
