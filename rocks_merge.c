/* rocks_merge.c -- the store's merges of runs: see rocks_store.h
 * (store_plan_merges, store_settle) and rocks_store_internal.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "rocks_store_internal.h"
#include "clock_util.h"

/* Percent by which neighbouring runs may differ and still be merged. */
#define MERGE_SIZE_RATIO 10
/* A size ratio under which any two runs are similar. */
#define ANY_SIZE_RATIO (1 << 20)

/* Waiting for merges: how often to look, and how long none may run
 * before merging is taken to be over. */
#define NAP_MS 20
#define IDLE_NAPS (1000 / NAP_MS)

/* Background merges follow merge_plan_for(), within the open-file budget
 * (files_plan_for).  Similar-size picking keeps merged runs, each many
 * times a fresh one, out of later merges: each byte is rewritten once.
 * Without a size hint compaction stays off, unless the runs would need more
 * open files than the process may have (see merges_after_run). */
static uint64_t runs_for(const rocks_store *st, uint64_t size)
{
    return st->run_bytes ? (size + st->run_bytes - 1) / st->run_bytes : 1;
}

void merges_configure(rocks_store *st, const store_options *o)
{
    merge_plan p = { 2, st->files.merge_width, st->files.max_runs };
    st->run_bytes = o->run_bytes;
    st->merges_planned = o->size_hint > 0;
    if (o->size_hint > 0) p = merge_plan_for(runs_for(st, o->size_hint));
    else rocksdb_options_set_disable_auto_compactions(st->opts, 1);
    p = fit_to_files(&st->files, p);
    /* Merged runs stay in level 0 next to fresh ones. */
    rocksdb_options_set_num_levels(st->opts, 1);
    st->universal = rocksdb_universal_compaction_options_create();
    rocksdb_universal_compaction_options_set_min_merge_width(st->universal, p.min_width);
    rocksdb_universal_compaction_options_set_max_merge_width(st->universal, p.max_width);
    rocksdb_universal_compaction_options_set_size_ratio(st->universal, MERGE_SIZE_RATIO);
    rocksdb_universal_compaction_options_set_stop_style(st->universal,
                                                        rocksdb_similar_size_compaction_stop_style);
    /* Never rewrite everything to bound space: temp data is short-lived. */
    rocksdb_universal_compaction_options_set_max_size_amplification_percent(st->universal, ROCKS_NEVER);
    rocksdb_options_set_compaction_style(st->opts, rocksdb_universal_compaction);
    rocksdb_options_set_universal_compaction_options(st->opts, st->universal);
    rocksdb_options_set_level0_file_num_compaction_trigger(st->opts, p.trigger);
}

static uint64_t part_property(rocks_store *st, int part, const char *name)
{
    char *v = rocksdb_property_value_cf(st->db, st->part[part], name);
    uint64_t n = v ? strtoull(v, NULL, 10) : 0;
    free(v);
    return n;
}

/* A per-part count, summed over the parts. */
static uint64_t int_property(rocks_store *st, const char *name)
{
    uint64_t n = 0;
    for (int i = 0; i < st->n_parts; i++) n += part_property(st, i, name);
    return n;
}

/* Database-wide: any part's handle gives the same count. */
static uint64_t running_merges(rocks_store *st)
{
    return part_property(st, 0, "rocksdb.num-running-compactions");
}

/* Options change for every part alike.  Returns 0, or -1 if refused. */
static int set_part_options(rocks_store *st, int count, const char *const *keys,
                            const char *const *vals)
{
    int ret = 0;
    for (int i = 0; i < st->n_parts; i++) {
        char *rerr = NULL;
        rocksdb_set_options_cf(st->db, st->part[i], count, keys, vals, &rerr);
        if (rerr) ret = -1;
        free(rerr);
    }
    return ret;
}

static void set_auto_compaction(rocks_store *st, int on)
{
    const char *keys[1] = { "disable_auto_compactions" };
    const char *vals[1] = { on ? "false" : "true" };
    set_part_options(st, 1, keys, vals);
}

/* Turns background merging on: a merge starts once `trigger` runs exist and
 * takes min_width to max_width of them, neighbours in age whose sizes
 * differ by at most size_ratio percent. */
static int start_merging(rocks_store *st, int trigger, int min_width, int max_width,
                         int size_ratio)
{
    char trig[24], universal[160];
    snprintf(trig, sizeof trig, "%d", trigger);
    snprintf(universal, sizeof universal,
             "{min_merge_width=%d;max_merge_width=%d;size_ratio=%d;}",
             min_width, max_width, size_ratio);
    const char *keys[] = { "level0_file_num_compaction_trigger", "compaction_options_universal",
                           "disable_auto_compactions" };
    const char *vals[] = { trig, universal, "false" };
    return set_part_options(st, 3, keys, vals);
}

int store_plan_merges(rocks_store *st, uint64_t size_estimate)
{
    uint64_t t = runs_for(st, size_estimate);
    if (t <= STORE_MERGE_MIN_RUNS) return 0;
    merge_plan p = fit_to_files(&st->files, merge_plan_for(t));
    if (start_merging(st, p.trigger, p.min_width, p.max_width, MERGE_SIZE_RATIO) < 0) return -1;
    st->merges_planned = 1;
    return p.min_width;
}

/* Merges runs of similar size (a merged run is not taken again with fresh
 * ones), as many at once as a merge may keep open, while more than `keep`
 * runs are left.  Each part merges its own runs, so each keeps its share.
 * When no runs are similar, RocksDB merges the newest once a part holds
 * more runs than the trigger, down to the trigger. */
static int start_merging_to_fit(rocks_store *st, int keep)
{
    int parts = st->parts_used > 1 ? st->parts_used : 1;
    int per_part = keep / parts > 2 ? keep / parts : 2;
    return start_merging(st, per_part, 2, st->files.merge_width, MERGE_SIZE_RATIO);
}

/* Too many runs for the open-file limit and no merges planned: start them. */
void merges_after_run(rocks_store *st)
{
    if (st->compaction_forced || st->merges_planned) return;
    if (int_property(st, "rocksdb.num-files-at-level0") < (uint64_t)st->files.max_runs / 2) return;
    st->compaction_forced = 1;
    start_merging_to_fit(st, st->files.max_runs / 2);
}

static void nap(void)
{
    struct timespec t = { 0, NAP_MS * 1000 * 1000 };
    nanosleep(&t, NULL);
}

static void wait_for_running_merges(rocks_store *st)
{
    while (running_merges(st) > 0) nap();
}

/* Lets the merges set up by start that run until at most target runs are
 * left, or until none has run for a second; then stops merging.  Returns
 * the runs it removed, or -1 if RocksDB refused the options. */
static int merge_until(rocks_store *st, int target, int start)
{
    int before = store_sorted_runs(st);
    if (start < 0) return -1;
    for (int idle = 0; store_sorted_runs(st) > target && idle < IDLE_NAPS; idle++) {
        nap();
        if (running_merges(st) > 0) idle = 0;
    }
    set_auto_compaction(st, 0);
    wait_for_running_merges(st);
    int removed = before - store_sorted_runs(st);
    if (removed > 0) st->catch_up_runs += removed + 1;
    return removed;
}

/* The most runs the readout may merge: those the open-file budget lets it
 * keep open, and with background merges planned, 2*sqrt(T) of the T runs
 * written (when above STORE_MERGE_MIN_RUNS). */
static int readout_runs(const rocks_store *st)
{
    int target = st->files.max_runs;
    if (st->merges_planned && st->runs > STORE_MERGE_MIN_RUNS) {
        int budget = (int)floor(2.0 * sqrt((double)st->runs));
        if (budget < target) target = budget;
    }
    return target;
}

/* Background merges fall behind when input arrives faster than one thread
 * can rewrite it (a file on busy cores), and without a plan they merge
 * only what the open-file limit demands.  Merge down to readout_runs():
 * the newest (smallest) runs in one merge when a merge may hold them all
 * open at once, else in merges of similar runs, which rewrite each byte a
 * few times rather than once per merge. */
static void merge_down_to_budget(rocks_store *st)
{
    int target = readout_runs(st), n = store_sorted_runs(st);
    if (n <= target) return;
    int width = n - target + 1;
    if (st->parts_used <= 1 && width <= st->files.merge_width)
        merge_until(st, target, start_merging(st, target + 1, width, width, ANY_SIZE_RATIO));
    while (store_sorted_runs(st) > target)
        if (merge_until(st, target, start_merging_to_fit(st, target)) <= 0) return;
}

double store_settle(rocks_store *st)
{
    double t0 = now_seconds();
    set_auto_compaction(st, 0);
    wait_for_running_merges(st);
    merge_down_to_budget(st);
    return now_seconds() - t0;
}

int store_sorted_runs(rocks_store *st)
{
    /* One level (see merges_configure): every run is a level-0 file. */
    return (int)int_property(st, "rocksdb.num-files-at-level0");
}

int store_catch_up_runs(const rocks_store *st) { return st->catch_up_runs; }

int store_merge_width(uint64_t size, uint64_t run_bytes, int hinted)
{
    uint64_t t = run_bytes ? (size + run_bytes - 1) / run_bytes : 1;
    if (!hinted && t <= STORE_MERGE_MIN_RUNS) return 0;
    return merge_plan_for(t).trigger;
}
