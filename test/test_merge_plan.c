/* test_merge_plan.c -- the open-file budget's split and the merges' plans.
 *
 * merge_plan_files_for() over budgets from a few descriptors to thousands and
 * 1-32 threads: the merges' inputs and outputs plus the runs RocksDB's
 * table cache pins stay within the runs' descriptors (fault_nofile_64_*
 * met "Too many open files" when the pins were left out).
 * merge_plan_within(): the one-rewrite plan where it fits, tiers where it
 * does not.  merge_plan_chain_start(): rows of runs of one size, as RocksDB's
 * similar-size rule sees them.  Prints `N passed, M failed` last.
 */
#include <stdio.h>
#include "store/merge_plan.h"
#include "unit_report.h"

/* RocksDB's reserve of max_open_files for other files than runs. */
#define NON_TABLE 10

static const char *budget_holds(int budget, int threads)
{
    static char why[200];
    files_plan f = merge_plan_files_for(budget, threads);
    int runs = budget - STORE_OWN_FILES, cache = f.table_cache - NON_TABLE;
    int open = f.merge_threads * (f.merge_width + 1) + merge_plan_files_pinned_by_cache(f.table_cache);
    if (open > runs || cache > runs || f.max_runs > runs) {
        snprintf(why, sizeof why, "budget %d, %d threads: %d merges of %d, %d pinned, cache %d, "
                 "readout %d; %d descriptors for runs", budget, threads, f.merge_threads,
                 f.merge_width, merge_plan_files_pinned_by_cache(f.table_cache), cache, f.max_runs, runs);
        return why;
    }
    if (cache < 10 || f.merge_width < 2) {
        snprintf(why, sizeof why, "budget %d: cache %d (RocksDB's least is 10), merges of %d",
                 budget, cache, f.merge_width);
        return why;
    }
    return NULL;
}

static void test_budget_holds_pinned_runs(void)
{
    const char *problem = NULL;
    for (int budget = 24; budget <= 5000 && !problem; budget += budget < 200 ? 1 : 97)
        for (int threads = 1; threads <= 32 && !problem; threads *= 2)
            problem = budget_holds(budget, threads);
    report("budget_holds_pinned_runs", problem);
}

static void test_budget_of_64_keeps_wide_merges(void)
{
    /* ulimit -n 64 leaves the store some 52: the one-rewrite plan of 400
     * runs (merges of 20, started at 40 runs) must fit in it untiered. */
    files_plan f = merge_plan_files_for(52, 1);
    merge_plan once = merge_plan_for(400), fitted = merge_plan_within(&f, 400);
    report("budget_of_64_keeps_wide_merges",
           !fitted.tiered && fitted.min_width == once.min_width && fitted.trigger == once.trigger
               ? NULL : "the one-rewrite plan of 400 runs does not fit 52 descriptors");
}

static void test_plan_once_where_it_fits(void)
{
    files_plan wide = merge_plan_files_for(-1, 4), tight = merge_plan_files_for(26, 4);
    merge_plan once = merge_plan_within(&wide, 400), tiers = merge_plan_within(&tight, 400);
    const char *problem = NULL;
    if (once.tiered || once.min_width != 20 || once.trigger != 40)
        problem = "no limit: not the 2*sqrt(T) plan";
    else if (!tiers.tiered || tiers.min_width != tiers.max_width || tight.merge_threads < 2 ||
             tiers.max_width != tight.merge_threads * (tight.merge_width + 1) - 1)
        problem = "15 runs' descriptors for 400 runs at -@ 4: not tiers as wide as all "
                  "the merges' room (one merge at a time)";
    report("plan_once_where_it_fits", problem);
}

/* Memory narrows merges; only descriptors call for tiers, and tiers (one
 * merge at a time) never take more runs than the merges' memory holds
 * readers of.  The merge of the two branches chose tiers 71 runs wide for
 * 8 MB of merge memory at -@ 8 -m 1M with no ulimit -n at all. */
static void test_memory_never_widens_merges(void)
{
    files_plan loose = merge_plan_files_for(-1, 8), tight = merge_plan_files_for(40, 8);
    merge_plan_files_fit_memory(&loose, 8u << 20, 1u << 20);
    merge_plan_files_fit_memory(&tight, 4u << 20, 1u << 20);
    merge_plan narrowed = merge_plan_within(&loose, 190), tiers = merge_plan_within(&tight, 400);
    const char *problem = NULL;
    if (narrowed.tiered || narrowed.max_width > 8)
        problem = "no ulimit -n, memory for 8 runs: tiers, or merges wider than 8";
    else if (!tiers.tiered || tiers.max_width > 4)
        problem = "ulimit -n 40, memory for 4 runs: no tiers, or tiers wider than 4";
    report("memory_never_widens_merges", problem);
}

/* RocksDB's similar-size rule: each run within 10% of the one before. */
static void test_chains_of_one_size(void)
{
    const uint64_t sizes[] = { 100, 105, 98, 1200, 1250, 1190, 1210, 99, 100, 101, 100 };
    int n = (int)(sizeof sizes / sizeof *sizes);
    const char *problem = NULL;
    if (merge_plan_chain_length(sizes, n, 10) != 3 || merge_plan_chain_length(sizes + 3, n - 3, 10) != 4)
        problem = "rows of one size measured wrong";
    else if (merge_plan_chain_start(sizes, n, 3, 10) != 0 || merge_plan_chain_start(sizes, n, 4, 10) != 3 ||
             merge_plan_chain_start(sizes, n, 5, 10) != -1 || merge_plan_chain_start(sizes, 0, 2, 10) != -1)
        problem = "the first row of at least width runs found wrong";
    else if (merge_plan_chain_length(sizes, 2, 4) != 1)
        problem = "105 after 100 is more than 4% apart";
    report("chains_of_one_size", problem);
}

int main(void)
{
    test_budget_holds_pinned_runs();
    test_budget_of_64_keeps_wide_merges();
    test_plan_once_where_it_fits();
    test_memory_never_widens_merges();
    test_chains_of_one_size();
    return report_summary();
}
