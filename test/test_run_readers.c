/* test_run_readers.c -- the compact runs' group size against the readout's memory.
 *
 * run_readers_group_bytes() picks the group size a sort's compact runs are
 * written in, once the number of runs is estimated.  A RocksDB merge copies
 * groups whole, so the readout holds a decoded group of every run written;
 * where those groups do not fit the readers' memory, every run is rewritten
 * in a merge pass first.  On the 1 GiB benchmark input at -@ 2 -m 32M, 168
 * runs read from 20 merged files did not fit 44 MB at 256 KiB groups: the
 * sort rewrote 23 files into 3.  These tests pin the choice: the default
 * wherever it needs no pass, else the largest smaller size that fits (with
 * room to spare first), the default again where nothing fits (passes
 * rewrite the runs anyway), and the readers counted at the chosen size.
 * Prints `N passed, M failed` last.
 */
#include <stdio.h>
#include "store/run_readers.h"
#include "store/store_types.h"
#include "unit_report.h"

#define MIB (1ULL << 20)

static uint64_t readers_at(uint64_t runs, uint64_t files, size_t group_bytes, size_t readahead)
{
    run_readers_shape s = { .runs = files, .groups = runs, .grouped = 1, .parts = 1,
                            .ahead = READERS_FEED_AHEAD, .group_bytes = group_bytes };
    return run_readers_bytes(&s, readahead);
}

/* The default budget's 20 runs keep 256 KiB groups: nothing changes there. */
static const char *default_groups_where_they_fit(void)
{
    if (run_readers_group_bytes(20, 20, 1, 350 * MIB) != STORE_GROUP_BYTES)
        return "20 runs in 350 MiB did not keep the default groups";
    if (run_readers_group_bytes(1, 1, 1, READOUT_MIN_MEMORY) != STORE_GROUP_BYTES)
        return "one run at the least memory did not keep the default groups";
    return NULL;
}

/* The benchmark's case: 168 runs in 20 files, 44 MB for the readers. */
static const char *many_runs_take_smaller_groups(void)
{
    uint64_t memory = 44000000, runs = 168, files = 20;
    size_t g = run_readers_group_bytes(runs, files, 1, memory);
    if (g >= STORE_GROUP_BYTES) return "168 runs in 44 MB kept 256 KiB groups, which need passes";
    if (g < STORE_GROUP_MIN_BYTES) return "a group size below the least";
    if (readers_at(runs, files, STORE_GROUP_BYTES, READERS_MIN_READAHEAD) <= memory)
        return "the case no longer needs passes at the default: the test lost its point";
    if (readers_at(runs, files, g, READERS_MIN_READAHEAD) > memory)
        return "the readers at the chosen size still do not fit";
    return NULL;
}

static int fits(uint64_t runs, uint64_t files, size_t g, size_t readahead, uint64_t memory)
{
    return readers_at(runs, files, g, readahead) <= memory;
}

/* Over a grid: a size of the three; the default wherever it fits without
 * passes; else the largest smaller size with room to spare, else the
 * largest that just fits; the default where none fits at all. */
static const char *smaller_only_where_the_default_needs_passes(void)
{
    const size_t lo = READERS_MIN_READAHEAD, spare = READERS_GROUPS_READAHEAD;
    const size_t half = STORE_GROUP_BYTES / 2, least = STORE_GROUP_MIN_BYTES;
    for (uint64_t runs = 1; runs <= 4096; runs = runs * 3 / 2 + 1)
        for (uint64_t files = 1; files <= runs; files = files * 2 + 1)
            for (uint64_t mem = READOUT_MIN_MEMORY; mem <= 8ULL << 30; mem += mem / 3) {
                size_t g = run_readers_group_bytes(runs, files, 1, mem);
                int by_default = fits(runs, files, STORE_GROUP_BYTES, lo, mem);
                if (g != STORE_GROUP_BYTES && g != half && g != least)
                    return "a size other than 256, 128 or 64 KiB";
                if (by_default && g != STORE_GROUP_BYTES)
                    return "smaller groups where the default needs no pass";
                if (by_default) continue;
                if (!fits(runs, files, least, lo, mem)) {
                    if (g != STORE_GROUP_BYTES) return "smaller groups that still need passes";
                    continue;
                }
                size_t want = fits(runs, files, half, spare, mem) ? half
                            : fits(runs, files, least, spare, mem) ? least
                            : fits(runs, files, half, lo, mem) ? half : least;
                if (g != want) return "not the largest size with room to spare, or that fits";
            }
    return NULL;
}

/* The readers are counted at the size the runs were written in: a quarter
 * of the groups' bytes at 64 KiB, and 0 meaning the default; each feed's
 * zstd decoder whatever the size. */
static const char *readers_counted_at_the_group_size(void)
{
    run_readers_shape s = { .runs = 10, .groups = 100, .grouped = 1, .parts = 2, .ahead = 4 };
    uint64_t by_default = run_readers_bytes(&s, READERS_MIN_READAHEAD);
    s.group_bytes = STORE_GROUP_BYTES;
    if (run_readers_bytes(&s, READERS_MIN_READAHEAD) != by_default)
        return "0 is not the default size";
    s.group_bytes = STORE_GROUP_MIN_BYTES;
    uint64_t small = run_readers_bytes(&s, READERS_MIN_READAHEAD);
    uint64_t files = 10 * run_readers_per_run(READERS_MIN_READAHEAD, 0) + 2 * READERS_FEED_DECODER_BYTES;
    if ((small - files) * 4 != by_default - files)
        return "groups not counted at a quarter of the bytes";
    return NULL;
}

int main(void)
{
    report("default_groups_where_they_fit", default_groups_where_they_fit());
    report("many_runs_take_smaller_groups", many_runs_take_smaller_groups());
    report("smaller_only_where_the_default_needs_passes",
           smaller_only_where_the_default_needs_passes());
    report("readers_counted_at_the_group_size", readers_counted_at_the_group_size());
    return report_summary();
}
