/* test_readout_model.c -- how many threads the readout merges with.
 *
 * The rule (readout_model.h) must keep the single merge where more merge
 * threads only add work: at the default level on few threads, and at -u
 * on two.  It must use more where one merge cannot feed the threads, never
 * more threads than the input has minimum ranges, and never fewer merge
 * threads for more threads.
 * Prints `N passed, M failed` last.
 */
#include <stdio.h>
#include "../readout_model.h"
#include "unit_report.h"

#define GB 1000000000ULL
#define MIN_RANGE (32ULL << 20)

static int k_for(int threads, int level)
{
    return readout_ranges_for(threads, level, 0, 100 * GB, MIN_RANGE, 64);
}

static const char *single_merge_where_ranges_cost(void)
{
    if (k_for(2, 6) != 1) return "-@ 2 -l 6 splits";
    if (k_for(2, 0) != 1) return "-@ 2 -u splits";
    if (k_for(16, 6) != 1) return "-@ 16 -l 6 splits";
    return NULL;
}

static const char *ranges_where_one_merge_cannot_keep_up(void)
{
    if (k_for(8, 0) < 2) return "-@ 8 -u stays one merge";
    if (k_for(64, 1) < 2) return "-@ 64 -l 1 stays one merge";
    return NULL;
}

static const char *more_threads_never_fewer_ranges(void)
{
    for (int level = 0; level <= 9; level++)
        for (int t = 1, prev = 1; t <= 128; t++) {
            int k = k_for(t, level);
            if (k < prev) return "K fell as threads grew";
            if (k > t && k > 1) return "more ranges than threads";
            prev = k;
        }
    return NULL;
}

static const char *small_inputs_stay_one_merge(void)
{
    if (readout_ranges_for(64, 0, 0, MIN_RANGE * 3 / 2, MIN_RANGE, 32) != 1)
        return "an input of 1.5 ranges split";
    if (readout_ranges_for(64, 0, 0, MIN_RANGE * 3, MIN_RANGE, 32) > 3)
        return "ranges smaller than the minimum";
    return NULL;
}

int main(void)
{
    report("single_merge_where_ranges_cost", single_merge_where_ranges_cost());
    report("ranges_where_one_merge_cannot_keep_up", ranges_where_one_merge_cannot_keep_up());
    report("more_threads_never_fewer_ranges", more_threads_never_fewer_ranges());
    report("small_inputs_stay_one_merge", small_inputs_stay_one_merge());
    return report_summary();
}
