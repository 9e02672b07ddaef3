/* store/merge_plan.c -- see store/merge_plan.h. */
#include <math.h>
#include "store/merge_plan.h"

/* RocksDB keeps this many of its max_open_files for files other than runs. */
#define ROCKS_NON_TABLE_FILES 10
/* The smallest table cache RocksDB takes: it raises max_open_files to 20. */
#define ROCKS_MIN_TABLE_CACHE 10
/* A merge of fewer runs is not worth a thread of its own. */
#define MIN_USEFUL_WIDTH 4
/* Runs a database may keep open at the least, however low `ulimit -n`. */
#define MIN_RUNS_PER_DB 8
/* Descriptor counts when `ulimit -n` sets no limit: more than any sort
 * opens, yet small enough for RocksDB's table cache to take as a size. */
#define FILES_UNLIMITED (1 << 20)

int merge_plan_files_pinned_by_cache(int table_cache)
{
    return (table_cache - ROCKS_NON_TABLE_FILES) / 4;
}

/* RocksDB's table cache keeps unused runs open up to its capacity, and
 * beyond it the runs in use: a merge's inputs, the readout's runs, and the
 * runs whose readers it pins to their metadata for as long as they live
 * (VersionBuilder::LoadTableHandlers pins each run added while the cache
 * is under a quarter full).  A run that no merge takes stays pinned beside
 * every later merge's inputs, so the plan counts both: the merges' inputs
 * and outputs plus a quarter of the cache fit in the runs' descriptors.
 * The cache holds a quarter of them (at least RocksDB's least), so that
 * few are pinned and the merges stay wide. */
files_plan merge_plan_files_for(int max_open_files, int threads)
{
    files_plan f = { .max_runs = FILES_UNLIMITED, .merge_width = FILES_UNLIMITED,
                     .files_width = FILES_UNLIMITED, .memory_width = FILES_UNLIMITED,
                     .merge_threads = threads > 0 ? threads : 1,
                     .table_cache = FILES_UNLIMITED };
    if (max_open_files < 0) return f;
    int runs = max_open_files - STORE_OWN_FILES;
    if (runs < 3) runs = 3;     /* too few for any sort that spills: RocksDB will say so */
    int cache = runs / 4 > ROCKS_MIN_TABLE_CACHE ? runs / 4 : ROCKS_MIN_TABLE_CACHE;
    f.table_cache = cache + ROCKS_NON_TABLE_FILES;
    int unpinned = runs - merge_plan_files_pinned_by_cache(f.table_cache);
    if (unpinned < 3) unpinned = 3;
    int useful = unpinned / (MIN_USEFUL_WIDTH + 1);
    if (useful < f.merge_threads) f.merge_threads = useful > 1 ? useful : 1;
    f.merge_width = f.files_width = (unpinned - f.merge_threads) / f.merge_threads;
    f.max_runs = runs;
    return f;
}

void merge_plan_files_fit_memory(files_plan *f, uint64_t memory, uint64_t per_run)
{
    uint64_t width = per_run ? memory / per_run : (uint64_t)f->merge_width;
    if (width < 2) width = 2;
    if (width < (uint64_t)f->memory_width) f->memory_width = (int)width;
    if (width < (uint64_t)f->merge_width) f->merge_width = (int)width;
}

int merge_plan_files_min_per_db(void) { return STORE_OWN_FILES + MIN_RUNS_PER_DB; }

int merge_plan_files_share(int max_open_files, int n, double share)
{
    if (max_open_files < 0 || n <= 1) return max_open_files;
    int floor_each = merge_plan_files_min_per_db();
    if (max_open_files < n * floor_each) return max_open_files / n;
    return floor_each + (int)((double)(max_open_files - n * floor_each) * share);
}

merge_plan merge_plan_for(uint64_t t)
{
    int k = (int)ceil(sqrt((double)t));
    if (k < 2) k = 2;
    int budget = k + (int)((t + (uint64_t)k - 1) / (uint64_t)k);
    merge_plan p = { k, budget, budget, 0 };
    return p;
}

merge_plan merge_plan_fit_to_files(const files_plan *f, merge_plan p)
{
    if (p.max_width > f->merge_width) p.max_width = f->merge_width;
    if (p.min_width > p.max_width) p.min_width = p.max_width;
    if (p.trigger > f->max_runs) p.trigger = f->max_runs;
    if (p.min_width < 2) p.min_width = 2;
    if (p.max_width < 2) p.max_width = 2;
    if (p.trigger < 2) p.trigger = 2;
    return p;
}

merge_plan merge_plan_within(const files_plan *f, uint64_t t)
{
    merge_plan p = merge_plan_for(t);
    /* Memory narrows the one-rewrite plan's merges; only the descriptors
     * call for tiers, which would merge wider than the memory holds. */
    if (p.trigger <= f->max_runs && p.min_width <= f->files_width) return merge_plan_fit_to_files(f, p);
    return merge_plan_tiers(f);
}

/* Tiers merge one at a time (store/store_merge.c starts each), so that one
 * merge takes the descriptors of every merge slot.  The trigger is never
 * reached but while a merge is let start. */
merge_plan merge_plan_tiers(const files_plan *f)
{
    int w = f->merge_threads * (f->files_width + 1) - 1;
    if (w > f->memory_width) w = f->memory_width;
    if (w < 2) w = 2;
    merge_plan tiers = { w, w, 1 << 30, 1 };
    return tiers;
}

static int similar(uint64_t a, uint64_t b, int ratio)
{
    return (double)b <= (double)a * (100 + ratio) / 100 &&
           (double)a <= (double)b * (100 + ratio) / 100;
}

int merge_plan_chain_length(const uint64_t *sizes, int n, int ratio)
{
    int len = n > 0;
    while (len < n && similar(sizes[len - 1], sizes[len], ratio)) len++;
    return len;
}

int merge_plan_chain_start(const uint64_t *sizes, int n, int width, int ratio)
{
    for (int start = 0, len; start + width <= n; start += len) {
        len = merge_plan_chain_length(sizes + start, n - start, ratio);
        if (len >= width) return start;
    }
    return -1;
}
