/* store/store_merge.c -- the store's merges of runs: see store/store_merge.h
 * and store/store_db_internal.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "store/store_db_internal.h"
#include "store/store_merge.h"
#include "store/store_plan.h"
#include "util/clock_util.h"
#include "disk/temp_env.h"

/* Percent by which neighbouring runs may differ and still be merged. */
#define MERGE_SIZE_RATIO 10
/* A size ratio under which any two runs are similar. */
#define ANY_SIZE_RATIO (1 << 20)

/* Waiting for merges: how often to look, and how long none may run
 * before merging is taken to be over. */
#define NAP_MS 20
#define IDLE_NAPS (1000 / NAP_MS)

/* Background merges follow merge_plan_for(), within the open-file budget
 * (merge_plan_files_for).  Similar-size picking keeps merged runs, each many
 * times a fresh one, out of later merges: each byte is rewritten once.
 * Without a size hint compaction stays off, unless the runs would need more
 * open files than the process may have (see store_merge_after_run). */

/* Each database merges its own runs: its share of the size plans them. */
void store_merge_configure(rocks_store *st, store_db *d, const store_options *o, double share)
{
    merge_plan p = { 2, d->files.merge_width, d->files.max_runs, 0 };
    uint64_t runs = store_plan_runs(st, o->size_hint);
    int pointless = o->size_hint > 0 && store_plan_groups_and_passes(st, runs);
    if (pointless) st->merges_left_to_passes = 1;
    d->merges_planned = o->size_hint > 0 && !pointless;
    if (d->merges_planned) {
        st->runs_planned = runs;
        uint64_t own = store_plan_runs(st, (uint64_t)((double)o->size_hint * share));
        p = merge_plan_within(&d->files, own);
    } else {
        rocksdb_options_set_disable_auto_compactions(d->opts, 1);
        p = merge_plan_fit_to_files(&d->files, p);
    }
    d->plan = p;
    /* Merged runs stay in level 0 next to fresh ones. */
    rocksdb_options_set_num_levels(d->opts, 1);
    d->universal = rocksdb_universal_compaction_options_create();
    rocksdb_universal_compaction_options_set_min_merge_width(d->universal, p.min_width);
    rocksdb_universal_compaction_options_set_max_merge_width(d->universal, p.max_width);
    rocksdb_universal_compaction_options_set_size_ratio(d->universal, MERGE_SIZE_RATIO);
    rocksdb_universal_compaction_options_set_stop_style(d->universal,
                                                        rocksdb_similar_size_compaction_stop_style);
    /* Never rewrite everything to bound space: temp data is short-lived. */
    rocksdb_universal_compaction_options_set_max_size_amplification_percent(d->universal,
                                                                            ROCKS_NEVER);
    rocksdb_options_set_compaction_style(d->opts, rocksdb_universal_compaction);
    rocksdb_options_set_universal_compaction_options(d->opts, d->universal);
    rocksdb_options_set_level0_file_num_compaction_trigger(d->opts, p.trigger);
}

/* A per-part count, summed over the parts of d, or of every database when
 * d is NULL. */
static uint64_t int_property(rocks_store *st, const store_db *d, const char *name)
{
    int from = d ? d->first_part : 0, to = d ? d->first_part + d->n_parts : st->n_parts;
    uint64_t n = 0;
    for (int i = from; i < to; i++) n += store_part_property(st, i, name);
    return n;
}

static int db_runs(rocks_store *st, const store_db *d)
{
    /* One level (see store_merge_configure): every run is a level-0 file. */
    return (int)int_property(st, d, "rocksdb.num-files-at-level0");
}

/* The parts of d that hold runs (at least 1). */
static int parts_holding_runs(rocks_store *st, const store_db *d)
{
    int n = 0;
    for (int i = d->first_part; i < d->first_part + d->n_parts; i++)
        n += store_part_property(st, i, "rocksdb.num-files-at-level0") > 0;
    return n > 1 ? n : 1;
}

/* Database-wide: any of its parts gives the count; summed over them all. */
static uint64_t running_merges(rocks_store *st)
{
    uint64_t n = 0;
    for (int i = 0; i < st->n_dbs; i++)
        n += store_part_property(st, st->dbs[i].first_part, "rocksdb.num-running-compactions");
    return n;
}

/* Merges that failed so far in d, or in every database when d is NULL.
 * RocksDB retries a failed merge for as long as its cause lasts (a full
 * disk: until space comes back), and counts it running meanwhile, so a
 * wait for merges also ends once this grows: on a disk the sort itself
 * fills, no space would ever come back. */
static uint64_t failed_merges(rocks_store *st, const store_db *d)
{
    uint64_t n = 0;
    for (int i = 0; i < st->n_dbs; i++)
        if (!d || d == &st->dbs[i])
            n += store_part_property(st, st->dbs[i].first_part, "rocksdb.background-errors");
    return n;
}

/* Options change for every part of d alike.  Returns 0, or -1 if refused. */
static int set_part_options(rocks_store *st, const store_db *d, int count,
                            const char *const *keys, const char *const *vals)
{
    int ret = 0;
    for (int i = d->first_part; i < d->first_part + d->n_parts; i++) {
        char *rerr = NULL;
        rocksdb_set_options_cf(d->db, st->part[i], count, keys, vals, &rerr);
        if (rerr) ret = -1;
        free(rerr);
    }
    return ret;
}

static void set_auto_compaction(rocks_store *st, const store_db *d, int on)
{
    const char *keys[1] = { "disable_auto_compactions" };
    const char *vals[1] = { on ? "false" : "true" };
    set_part_options(st, d, 1, keys, vals);
}

/* Turns background merging on in d: a merge starts once `trigger` runs
 * exist and takes min_width to max_width of them, neighbours in age whose
 * sizes differ by at most size_ratio percent. */
static int start_merging(rocks_store *st, const store_db *d, int trigger, int min_width,
                         int max_width, int size_ratio)
{
    char trig[24], universal[160];
    snprintf(trig, sizeof trig, "%d", trigger);
    snprintf(universal, sizeof universal,
             "{min_merge_width=%d;max_merge_width=%d;size_ratio=%d;}",
             min_width, max_width, size_ratio);
    const char *keys[] = { "level0_file_num_compaction_trigger", "compaction_options_universal",
                           "disable_auto_compactions" };
    const char *vals[] = { trig, universal, "false" };
    return set_part_options(st, d, 3, keys, vals);
}

/* Each database plans for its share of the runs, and merges only past
 * STORE_MERGE_MIN_RUNS of its own. */
int store_merge_plan(rocks_store *st, uint64_t size_estimate, uint64_t run_bytes)
{
    uint64_t total = 0;
    int fewest = 0;
    if (run_bytes) st->run_bytes = run_bytes;
    st->runs_planned = store_plan_runs(st, size_estimate);
    if (store_plan_groups_and_passes(st, st->runs_planned)) {
        st->merges_left_to_passes = 1;
        return 0;
    }
    for (int i = 0; i < st->n_dbs; i++) total += st->dbs[i].weight;
    for (int i = 0; i < st->n_dbs; i++) {
        store_db *d = &st->dbs[i];
        double share = total ? (double)d->weight / (double)total : 1;
        uint64_t t = store_plan_runs(st, (uint64_t)((double)size_estimate * share));
        if (t <= STORE_MERGE_MIN_RUNS) continue;
        merge_plan p = merge_plan_within(&d->files, t);
        if (start_merging(st, d, p.trigger, p.min_width, p.max_width, MERGE_SIZE_RATIO) < 0)
            return -1;
        d->plan = p;
        d->merges_planned = 1;
        if (!fewest || p.min_width < fewest) fewest = p.min_width;
    }
    return fewest;
}

/* Merges runs of similar size (a merged run is not taken again with fresh
 * ones), as many at once as a merge may keep open, while more than `keep`
 * runs are left in d.  Each part merges its own runs, so each keeps its
 * share.  When no runs are similar, RocksDB merges the newest once a part
 * holds more runs than the trigger, down to the trigger. */
static int start_merging_to_fit(rocks_store *st, const store_db *d, int keep)
{
    int parts = parts_holding_runs(st, d);
    int per_part = keep / parts > 2 ? keep / parts : 2;
    return start_merging(st, d, per_part, 2, d->files.merge_width, MERGE_SIZE_RATIO);
}

/* The sizes of the runs in d's first part, newest first (as RocksDB lists
 * a level's files), at most max of them; returns how many. */
static int first_part_sizes(const store_db *d, uint64_t *sizes, int max)
{
    const rocksdb_livefiles_t *files = rocksdb_livefiles(d->db);
    int n = 0;
    for (int i = 0; files && i < rocksdb_livefiles_count(files) && n < max; i++)
        if (!strcmp(rocksdb_livefiles_column_family_name(files, i), store_part_names[0]))
            sizes[n++] = rocksdb_livefiles_size(files, i);
    if (files) rocksdb_livefiles_destroy(files);
    return n;
}

static void nap_ms(int ms)
{
    struct timespec t = { 0, ms * 1000L * 1000L };
    nanosleep(&t, NULL);
}

static void nap(void) { nap_ms(NAP_MS); }

static int part_runs(rocks_store *st, const store_db *d)
{
    return (int)store_part_property(st, d->first_part, "rocksdb.num-files-at-level0");
}

static uint64_t part_merges(rocks_store *st, const store_db *d)
{
    return store_part_property(st, d->first_part, "rocksdb.num-running-compactions");
}

/* The first part's trigger (the others hold no runs that tiers merge):
 * each change writes an OPTIONS file. */
static void set_tier_trigger(rocks_store *st, const store_db *d, int trigger)
{
    char value[24], *rerr = NULL;
    snprintf(value, sizeof value, "%d", trigger);
    const char *keys[1] = { "level0_file_num_compaction_trigger" }, *vals[1] = { value };
    rocksdb_set_options_cf(d->db, st->part[d->first_part], 1, keys, vals, &rerr);
    free(rerr);
}

/* Lets RocksDB merge `width` runs of one size in a row (there are such
 * runs: merge_plan_chain_start()), and waits until it has: the trigger is the
 * runs held meanwhile, so that it merges no other runs.  A merge that
 * never comes (RocksDB stopped on an error) ends the wait once none has
 * run for a second, and one that failed at once (failed_merges()); the
 * next run's write then meets the cause, or the tiers go on. */
static void merge_one_tier(rocks_store *st, store_db *d, int runs)
{
    uint64_t failed = failed_merges(st, d);
    set_tier_trigger(st, d, runs);
    for (int idle = 0; part_runs(st, d) >= runs && idle < 1000; idle++) {
        nap_ms(1);
        if (failed_merges(st, d) != failed) break;
        if (part_merges(st, d)) idle = 0;
    }
    set_tier_trigger(st, d, ROCKS_NEVER);
}

/* Tiers: merges of `width` runs of one size, in d's first part (where
 * every run goes once merges are planned), each as soon as its runs are
 * there, and the run after it waits for it.  Left to itself, RocksDB
 * merged when its thread was free, by then the newest `width` runs of a
 * longer row; the older ones, left between merged runs, were never in a
 * row of `width` again, and the readout's catch-up rewrote up to 3.9
 * times the runs' bytes (merges fell behind under load).  Waiting keeps
 * the tiers whole whatever the load: the bytes rewritten depend on the
 * runs alone. */
static void follow_tiers(rocks_store *st, store_db *d)
{
    for (;;) {
        int runs = part_runs(st, d), found = -1;
        uint64_t *sizes = malloc((size_t)runs * sizeof *sizes);
        if (sizes)
            found = merge_plan_chain_start(sizes, first_part_sizes(d, sizes, runs),
                                           d->plan.max_width, MERGE_SIZE_RATIO);
        free(sizes);
        if (found < 0) return;
        merge_one_tier(st, d, runs);
        if (part_runs(st, d) >= runs) return;    /* it did not come */
    }
}

/* The planned background merges stop (those running end), and passes
 * take their place at the readout. */
static void leave_merges_to_passes(rocks_store *st)
{
    for (int i = 0; i < st->n_dbs; i++) {
        store_db *d = &st->dbs[i];
        if (!d->merges_planned || d->plan.tiered) continue;
        set_auto_compaction(st, d, 0);
        d->merges_planned = 0;
        d->merges_stopped = 1;
    }
    st->merges_left_to_passes = 1;
    st->merges_stopped_after = st->runs;
}

/* After each run: planned merges stop where long records made the groups
 * too large for them; tiers follow the run.  Without a plan, once d holds
 * more runs than half of what the readout could keep open, tiers start,
 * and every later run goes to the first part with them. */
void store_merge_after_run(rocks_store *st, store_db *d)
{
    if (d->merges_planned && !d->plan.tiered && store_plan_outgrown(st))
        leave_merges_to_passes(st);
    if (!d->plan.tiered && (d->compaction_forced || d->merges_planned ||
                            db_runs(st, d) < d->files.max_runs / 2))
        return;
    if (!d->plan.tiered) {
        merge_plan p = merge_plan_tiers(&d->files);
        d->compaction_forced = 1;
        if (start_merging(st, d, p.trigger, p.min_width, p.max_width, MERGE_SIZE_RATIO) < 0)
            return;
        d->plan = p;
    }
    follow_tiers(st, d);
}

static void wait_for_running_merges(rocks_store *st)
{
    while (running_merges(st) > 0) nap();
}

/* Whether a database marked in `on` holds more than its target. */
static int any_above(rocks_store *st, const int *target, const int *on)
{
    for (int i = 0; i < st->n_dbs; i++)
        if (on[i] && db_runs(st, &st->dbs[i]) > target[i]) return 1;
    return 0;
}

/* Lets the merges started in the databases marked in `on` run until each
 * holds at most its target, until none has run for a second, or until one
 * fails (failed_merges()); then stops merging.  The databases merge at
 * once, each on its own disk.  Returns the runs removed. */
static int merge_until(rocks_store *st, const int *target, const int *on)
{
    int before[STORE_MAX_DIRS], removed = 0;
    uint64_t failed = failed_merges(st, NULL);
    for (int i = 0; i < st->n_dbs; i++) before[i] = db_runs(st, &st->dbs[i]);
    for (int idle = 0; any_above(st, target, on) && idle < IDLE_NAPS; idle++) {
        nap();
        if (failed_merges(st, NULL) != failed) break;
        if (running_merges(st) > 0) idle = 0;
    }
    for (int i = 0; i < st->n_dbs; i++)
        if (on[i]) set_auto_compaction(st, &st->dbs[i], 0);
    wait_for_running_merges(st);
    for (int i = 0; i < st->n_dbs; i++) {
        int gone = before[i] - db_runs(st, &st->dbs[i]);
        if (gone > 0) st->catch_up_runs += gone + 1;
        if (gone > 0) removed += gone;
    }
    return removed;
}

/* The most runs the readout may merge from d: those its open-file share
 * lets it keep open, and with background merges planned, 2*sqrt(T) of the
 * T runs written to it (when above STORE_MERGE_MIN_RUNS). */
static int readout_runs(const store_db *d)
{
    int target = d->files.max_runs;
    if (d->merges_planned && d->runs > STORE_MERGE_MIN_RUNS) {
        int budget = (int)floor(2.0 * sqrt((double)d->runs));
        if (budget < target) target = budget;
    }
    return target;
}

/* A start_*() below starts one merge in d towards target, and sets *after
 * to the runs it leaves; it returns whether it started one. */
typedef int (*merge_start)(rocks_store *st, const store_db *d, int target, int *after);

/* In tiers, the merges of `width` similar runs in a row go on after the
 * load while there are such runs (merges fell behind a fast load): each
 * rewrites its runs once, where merging the newest runs would rewrite the
 * growing output again every time. */
static int start_tier_merge(rocks_store *st, const store_db *d, int target, int *after)
{
    int n = db_runs(st, d), w = d->plan.max_width;
    if (!d->plan.tiered || n <= target || parts_holding_runs(st, d) > 1) return 0;
    uint64_t *sizes = malloc((size_t)n * sizeof *sizes);
    int found = sizes ? merge_plan_chain_start(sizes, first_part_sizes(d, sizes, n), w,
                                               MERGE_SIZE_RATIO) : -1;
    free(sizes);
    if (found < 0) return 0;
    *after = n - w + 1;
    return start_merging(st, d, n, w, w, MERGE_SIZE_RATIO) == 0;
}

/* One merge of d's newest runs: n - target + 1 of them if one merge may
 * take them all, else (in tiers, where the newest are the smallest) as
 * many as a merge may take. */
static int start_newest_merge(rocks_store *st, const store_db *d, int target, int *after)
{
    int n = db_runs(st, d), width = n - target + 1;
    int room = d->plan.tiered ? d->plan.max_width : d->files.merge_width;
    if (n <= target || parts_holding_runs(st, d) > 1) return 0;
    if (width > room && !d->plan.tiered) return 0;
    if (width > room) width = room;
    *after = n - width + 1;
    return start_merging(st, d, n, width, width, ANY_SIZE_RATIO) == 0;
}

/* Merges, one per database at a time, while `start` finds one to start. */
static void merge_in_rounds(rocks_store *st, merge_start start, const int *target)
{
    int after[STORE_MAX_DIRS], on[STORE_MAX_DIRS], any;
    do {
        any = 0;
        for (int i = 0; i < st->n_dbs; i++) {
            after[i] = target[i];
            any |= on[i] = start(st, &st->dbs[i], target[i], &after[i]);
        }
    } while (any && merge_until(st, after, on) > 0);
}

/* Background merges fall behind when input arrives faster than one thread
 * can rewrite it (a file on busy cores), and without a plan they merge
 * only what the open-file limit demands.  Each database merges down to
 * readout_runs(): in tiers, first the tiers' own merges; then the newest
 * (smallest) runs, in one merge when a merge may hold them all open at
 * once (in tiers, in as many as it takes); else in merges of similar
 * runs, which rewrite each byte a few times rather than once per merge.
 * (In tiers, those took two of the largest runs: a third of the bytes
 * rewritten once more.) */
static void merge_down_to_budget(rocks_store *st)
{
    int target[STORE_MAX_DIRS], on[STORE_MAX_DIRS], any;
    for (int i = 0; i < st->n_dbs; i++) target[i] = readout_runs(&st->dbs[i]);
    merge_in_rounds(st, start_tier_merge, target);
    merge_in_rounds(st, start_newest_merge, target);
    for (;;) {
        any = 0;
        for (int i = 0; i < st->n_dbs; i++) {
            store_db *d = &st->dbs[i];
            on[i] = db_runs(st, d) > target[i] && start_merging_to_fit(st, d, target[i]) == 0;
            any |= on[i];
        }
        if (!any || merge_until(st, target, on) <= 0) return;
    }
}

double store_merge_settle(rocks_store *st)
{
    double t0 = now_seconds();
    for (int i = 0; i < st->n_dbs; i++) set_auto_compaction(st, &st->dbs[i], 0);
    wait_for_running_merges(st);
    merge_down_to_budget(st);
    return now_seconds() - t0;
}

store_merge_report store_merge_summary(const rocks_store *st)
{
    store_merge_report r = { STORE_MERGES_NONE, 0, 0, 0, st && st->merges_left_to_passes,
                             st ? st->merges_stopped_after : 0 };
    for (int i = 0; st && i < st->n_dbs; i++) {
        const store_db *d = &st->dbs[i];
        store_merge_kind kind = d->plan.tiered ? STORE_MERGES_TIERS
                              : d->merges_planned ? STORE_MERGES_ONCE : STORE_MERGES_NONE;
        r.bytes += temp_env_merged_bytes_written(d->bytes_counter);
        if (kind < r.kind) continue;
        if (kind > r.kind || d->plan.max_width < r.width) {
            r.width = d->plan.max_width;
            r.readout_runs = d->files.max_runs;
        }
        r.kind = kind;
    }
    return r;
}

int store_merge_width(uint64_t size, uint64_t run_bytes, int hinted)
{
    uint64_t t = run_bytes ? (size + run_bytes - 1) / run_bytes : 1;
    if (!hinted && t <= STORE_MERGE_MIN_RUNS) return 0;
    return merge_plan_for(t).trigger;
}
