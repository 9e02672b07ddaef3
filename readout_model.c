/* readout_model.c -- see readout_model.h. */
#include "readout_model.h"

double readout_compress_s_per_gb(int level)
{
    if (level <= 0) return 0.3;
    if (level == 1) return 5.5;
    if (level <= 5) return 18.0;
    return 34.0;
}

static double max2(double a, double b) { return a > b ? a : b; }

double readout_seconds_per_gb(int k, int threads, int level, double decode)
{
    double m = READOUT_MERGE_S_PER_GB, c = readout_compress_s_per_gb(level);
    double out = level > 0 ? READOUT_COMPRESSED_SHARE : 1.0;
    int t = threads > 1 ? threads : 1;
    if (k <= 1) return max2(m, (m + decode + c) / t);
    return max2(READOUT_APPEND_S_PER_GB * out,
                (m + decode * (1 + READOUT_STRADDLE_SHARE) + c + READOUT_PASS_S_PER_GB * out)
                / (k < t ? k : t));
}

int readout_ranges_for(int threads, int level, double decode, uint64_t bytes, uint64_t min_range,
                       int max_k)
{
    int limit = threads > 1 ? threads : 1;
    if (limit > max_k) limit = max_k;
    if (min_range && bytes / min_range < (uint64_t)limit) limit = (int)(bytes / min_range);
    int best = 1;
    for (int k = 2; k <= limit; k++)
        if (readout_seconds_per_gb(k, threads, level, decode)
            < readout_seconds_per_gb(best, threads, level, decode) * (1 - READOUT_K_SLACK))
            best = k;
    return best;
}
