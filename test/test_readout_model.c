/* test_readout_model.c -- how many threads the readout merges with.
 *
 * The rule (readout/readout_model.h) must keep the single merge where none of its
 * threads needs more than its share of the cores: at the default level up
 * to 16 threads, at -u on two, and on two threads whatever the runs.  It
 * must take more merge threads where one thread of the single merge would
 * bound the readout (many threads, fast levels, one part of compact runs
 * to decode), never more merge threads than threads or than the input has
 * minimum ranges, never fewer for more threads, and never a choice the
 * model itself says is slower.  Prints `N passed, M failed` last.
 */
#include <stdio.h>
#include "readout/readout_model.h"
#include "unit_report.h"

#define GB 1000000000ULL
#define MIN_RANGE (32ULL << 20)

static int k_for(int threads, int level, double read, int parts)
{
    return readout_model_ranges_for(threads, level, read, parts, 100 * GB, MIN_RANGE, 64);
}

static const char *single_merge_where_it_fits(void)
{
    if (k_for(2, 6, READOUT_DECODE_S_PER_GB, 2) != 1) return "-@ 2 -l 6 splits";
    if (k_for(2, 0, READOUT_READ_S_PER_GB, 2) != 1) return "-@ 2 -u splits";
    if (k_for(2, 0, READOUT_DECODE_S_PER_GB, 1) != 1) return "-@ 2 -u, one part of compact runs, splits";
    if (k_for(2, 1, READOUT_READ_S_PER_GB, 2) != 1) return "-@ 2 -l 1 splits";
    if (k_for(16, 6, READOUT_DECODE_S_PER_GB, 2) != 1) return "-@ 16 -l 6 splits";
    return NULL;
}

static const char *ranges_where_one_thread_bounds(void)
{
    if (k_for(8, 0, READOUT_READ_S_PER_GB, 2) < 2) return "-@ 8 -u stays one merge";
    if (k_for(64, 1, READOUT_DECODE_S_PER_GB, 2) < 2) return "-@ 64 -l 1 stays one merge";
    if (k_for(32, 6, READOUT_DECODE_S_PER_GB, 2) < 2) return "-@ 32 -l 6 stays one merge";
    if (k_for(16, 6, READOUT_DECODE_S_PER_GB, 1) < 2)
        return "-@ 16 -l 6 with one part to decode stays one merge";
    return NULL;
}

/* Every choice: one stream whose threads fit their share, or K merge
 * threads the model finds faster than one stream. */
static const char *no_thread_past_its_share(void)
{
    const double reads[] = { 0, READOUT_READ_S_PER_GB, READOUT_DECODE_S_PER_GB };
    for (int level = 0; level <= 9; level++)
        for (int r = 0; r < 3; r++)
            for (int parts = 1; parts <= 4; parts++)
                for (int t = 1; t <= 128; t++) {
                    int k = k_for(t, level, reads[r], parts);
                    readout_cost one = readout_model_costs(1, level, reads[r], parts);
                    if (k == 1 && one.longest > one.cpu / t &&
                        readout_model_seconds_per_gb(t < 64 ? t : 64, t, level, reads[r], parts)
                        < readout_model_seconds_per_gb(1, t, level, reads[r], parts))
                        return "one stream kept where its busiest thread bounds it";
                    if (k > 1 && readout_model_seconds_per_gb(k, t, level, reads[r], parts)
                                 >= readout_model_seconds_per_gb(1, t, level, reads[r], parts))
                        return "merge threads chosen where the model finds them no faster";
                }
    return NULL;
}

static const char *more_threads_never_fewer_ranges(void)
{
    for (int level = 0; level <= 9; level++)
        for (int parts = 1; parts <= 2; parts++)
            for (int t = 1, prev = 1; t <= 128; t++) {
                int k = k_for(t, level, READOUT_DECODE_S_PER_GB, parts);
                if (k < prev) return "K fell as threads grew";
                if (k > t && k > 1) return "more ranges than threads";
                prev = k;
            }
    return NULL;
}

static const char *small_inputs_stay_one_merge(void)
{
    if (readout_model_ranges_for(64, 0, 0, 1, MIN_RANGE * 3 / 2, MIN_RANGE, 32) != 1)
        return "an input of 1.5 ranges split";
    if (readout_model_ranges_for(64, 0, 0, 1, MIN_RANGE * 3, MIN_RANGE, 32) > 3)
        return "ranges smaller than the minimum";
    return NULL;
}

#define MIB (1ULL << 20)

static readout_room room_of(uint64_t runs, uint64_t memory)
{
    readout_room r = { .runs = runs, .room = memory / 4, .piece_min = 4 * MIB, .piece_max = 64 * MIB };
    return r;
}

/* Issue #52's case: -@ 16 -u, 512 MB, 20 compact runs in two parts.  16
 * threads' pieces of 1 MiB a run do not fit; the readout must still split
 * (it fell back to one chain), within the memory. */
static const char *many_runs_split_in_fewer_or_smaller_pieces(void)
{
    readout_room r = room_of(20, 512 * MIB);
    if (readout_model_piece(&r, 16, READOUT_RUN_SHARE)) return "the test's pieces fit at 16 threads";
    readout_shape s = readout_model_fewer_or_smaller(&r, 16, 16, 0, READOUT_DECODE_S_PER_GB, 2);
    if (s.k < 2) return "-@ 16 -u with 20 runs in 512 MB read out in one stream";
    if (s.piece * (uint64_t)(s.k + 2) > r.room) return "the pieces in flight exceed the memory";
    if (s.piece < 20 * READOUT_RUN_SHARE / 2) return "a piece holds less than half a MiB a run";
    return NULL;
}

/* The two shapes are both tried, and each at its own cost: with 20 runs
 * at -@ 16 -u, 1400 MiB fits 15 threads at 1 MiB a run (3.22 / 15 s/GB)
 * and 16 at half of it (3.62 / 16): the first is faster.  300 MiB fits 5
 * threads at half a MiB a run, faster than one stream (0.72 against 0.80)
 * only if their straddle is twice, not four times, 1 MiB's. */
static const char *the_faster_shape_at_its_own_cost(void)
{
    readout_room wide = room_of(20, 1400 * MIB), narrow = room_of(20, 300 * MIB);
    readout_shape a = readout_model_fewer_or_smaller(&wide, 16, 16, 0, READOUT_DECODE_S_PER_GB, 2);
    readout_shape b = readout_model_fewer_or_smaller(&narrow, 16, 16, 0, READOUT_DECODE_S_PER_GB, 2);
    if (a.k != 15 || a.piece != 20 * MIB) return "1400 MiB: not 15 threads at 1 MiB a run";
    if (b.k != 5 || b.piece != 10 * MIB) return "300 MiB: not 5 threads at half a MiB a run";
    return NULL;
}

/* Over runs, budgets, threads, levels and reads: a choice of merge
 * threads fits the memory, is no more than asked, and is faster by the
 * model than one stream; one stream only where nothing that fits is. */
static const char *fewer_or_smaller_fits_and_pays(void)
{
    const double reads[] = { 0, READOUT_READ_S_PER_GB, READOUT_DECODE_S_PER_GB };
    for (uint64_t runs = 1; runs <= 400; runs = runs * 3 / 2 + 1)
        for (uint64_t mem = 16 * MIB; mem <= 64ULL << 30; mem *= 2)
            for (int t = 2; t <= 64; t *= 2)
                for (int level = 0; level <= 6; level += 6)
                    for (int r = 0; r < 3; r++) {
                        readout_room room = room_of(runs, mem);
                        readout_shape s = readout_model_fewer_or_smaller(&room, t, t, level, reads[r], 2);
                        double one = readout_model_seconds_per_gb(1, t, level, reads[r], 2);
                        if (s.k < 1 || s.k > t) return "merge threads outside 1..asked";
                        if (s.k == 1) {
                            if (s.piece) return "one stream with a piece size";
                            if (readout_model_piece(&room, 2, READOUT_RUN_SHARE / 2) &&
                                readout_model_seconds_straddling(2, t, level, reads[r], 2,
                                                                 2 * READOUT_STRADDLE_SHARE) < one)
                                return "one stream kept where two threads' pieces fit and pay";
                            continue;
                        }
                        if (s.piece * (uint64_t)(s.k + 2) > room.room || s.piece > room.piece_max)
                            return "pieces in flight beyond the memory";
                        if (s.piece < runs * READOUT_RUN_SHARE / 2 || s.piece < room.piece_min)
                            return "a piece below half a MiB a run or the minimum";
                        double straddle = s.piece >= runs * READOUT_RUN_SHARE
                                        ? READOUT_STRADDLE_SHARE : 2 * READOUT_STRADDLE_SHARE;
                        if (readout_model_seconds_straddling(s.k, t, level, reads[r], 2, straddle) >= one)
                            return "merge threads the model finds no faster than one stream";
                    }
    return NULL;
}

int main(void)
{
    report("single_merge_where_it_fits", single_merge_where_it_fits());
    report("ranges_where_one_thread_bounds", ranges_where_one_thread_bounds());
    report("no_thread_past_its_share", no_thread_past_its_share());
    report("more_threads_never_fewer_ranges", more_threads_never_fewer_ranges());
    report("small_inputs_stay_one_merge", small_inputs_stay_one_merge());
    report("many_runs_split_in_fewer_or_smaller_pieces", many_runs_split_in_fewer_or_smaller_pieces());
    report("fewer_or_smaller_fits_and_pays", fewer_or_smaller_fits_and_pays());
    report("the_faster_shape_at_its_own_cost", the_faster_shape_at_its_own_cost());
    return report_summary();
}
