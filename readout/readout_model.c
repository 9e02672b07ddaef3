/* readout/readout_model.c -- see readout/readout_model.h. */
#include "readout/readout_model.h"

/* Compressing at deflate level `level` (0: BGZF's stored blocks). */
static double readout_model_compress_s_per_gb(int level)
{
    if (level <= 0) return 0.1;
    if (level == 1) return 4.0;
    if (level <= 5) return 11.0;
    return 21.0;
}

static double max2(double a, double b) { return a > b ? a : b; }

readout_cost readout_model_costs(int k, int level, double read, int parts)
{
    return readout_model_costs_straddling(k, level, read, parts, READOUT_STRADDLE_SHARE);
}

readout_cost readout_model_costs_straddling(int k, int level, double read, int parts,
                                            double straddle)
{
    double m = READOUT_MERGE_S_PER_GB, c = readout_model_compress_s_per_gb(level);
    double out = level > 0 ? READOUT_COMPRESSED_SHARE : 1.0;
    readout_cost r;
    if (k <= 1) {
        double write = READOUT_WRITE_S_PER_GB * out;
        r.cpu = m + read + c + write;
        r.longest = max2(max2(m, write), read / (parts > 1 ? parts : 1));
    } else {
        r.cpu = m + read * (1 + straddle) + c + READOUT_PASS_S_PER_GB * out;
        r.longest = max2(r.cpu / k, READOUT_APPEND_S_PER_GB * out);
    }
    return r;
}

double readout_model_seconds_per_gb(int k, int threads, int level, double read, int parts)
{
    return readout_model_seconds_straddling(k, threads, level, read, parts, READOUT_STRADDLE_SHARE);
}

double readout_model_seconds_straddling(int k, int threads, int level, double read, int parts,
                                        double straddle)
{
    readout_cost r = readout_model_costs_straddling(k, level, read, parts, straddle);
    int t = threads > 1 ? threads : 1;
    int workers = k <= 1 ? t : k < t ? k : t;
    return max2(r.longest, r.cpu / workers);
}

int readout_model_one_stream(int threads, int level, double read, int parts)
{
    readout_cost one = readout_model_costs(1, level, read, parts);
    return one.longest <= one.cpu / (threads > 1 ? threads : 1);
}

int readout_model_ranges_for(int threads, int level, double read, int parts, uint64_t bytes,
                             uint64_t min_range, int max_k)
{
    int t = threads > 1 ? threads : 1;
    if (readout_model_one_stream(t, level, read, parts)) return 1;
    int k = t < max_k ? t : max_k;
    if (min_range && bytes / min_range < (uint64_t)k) k = (int)(bytes / min_range);
    if (k < 2) return 1;
    return readout_model_seconds_per_gb(k, t, level, read, parts)
           < readout_model_seconds_per_gb(1, t, level, read, parts) ? k : 1;
}

uint64_t readout_model_piece(const readout_room *r, int k, uint64_t run_share)
{
    uint64_t fits = r->room / (uint64_t)(k + 2), piece = r->runs * run_share;
    if (fits > r->piece_max) fits = r->piece_max;
    if (piece < r->piece_min) piece = r->piece_min;
    return piece <= fits ? piece : 0;
}

readout_shape readout_model_fewer_or_smaller(const readout_room *r, int k, int threads, int level,
                                             double read, int parts)
{
    readout_shape best = { 1, 0 };
    double fastest = readout_model_seconds_per_gb(1, threads, level, read, parts);
    for (uint64_t share = READOUT_RUN_SHARE; share >= READOUT_RUN_SHARE / 2; share /= 2) {
        double straddle = READOUT_STRADDLE_SHARE * (double)READOUT_RUN_SHARE / (double)share;
        int j = k;
        while (j >= 2 && !readout_model_piece(r, j, share)) j--;
        if (j < 2) continue;
        double s = readout_model_seconds_straddling(j, threads, level, read, parts, straddle);
        if (s < fastest) {
            fastest = s;
            best.k = j;
            best.piece = readout_model_piece(r, j, share);
        }
    }
    return best;
}
