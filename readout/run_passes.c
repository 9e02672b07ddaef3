/* readout/run_passes.c -- see readout/run_passes.h. */
#include <stdlib.h>
#include "readout/run_passes.h"
#include "util/fd_budget.h"
#include "readout/group_feed.h"
#include "readout/merge_sources.h"

/* A pass's feeds decode one group ahead: a group of runs has many feeds. */
#define PASS_AHEAD 1
/* Descriptors kept free of a pass's reads, for RocksDB's own files. */
#define PASS_FD_SPARE 8

/* The readers of every run, one reader thread per part. */
static run_readers_shape shape_of(const store_survey *v)
{
    run_readers_shape s = { .grouped = v->grouped, .parts = v->parts, .ahead = GROUP_FEED_AHEAD,
                            .block_codec = v->block_codec, .group_bytes = v->group_bytes };
    for (int p = 0; p < v->parts; p++) {
        s.runs += v->runs[p];
        s.groups += v->groups[p];
    }
    return s;
}

run_readers_shape run_passes_readers(rocks_store *st)
{
    run_readers_shape s = { 0 };
    if (!st) return s;
    store_survey v;
    store_pass_survey(st, &v);
    return shape_of(&v);
}

/* One run of a pass, read by a feed or a stream of its own. */
static run_readers_shape run_shape(const store_survey *v, const store_pass *p, int i)
{
    run_readers_shape s = { .runs = 1, .grouped = v->grouped, .parts = 1, .ahead = PASS_AHEAD,
                            .block_codec = v->block_codec, .group_bytes = v->group_bytes };
    if (s.grouped) s.groups = store_pass_run_depth(p, i);
    return s;
}

/* The runs from `first` that one merge's readers hold within memory, and
 * at most half the descriptors still free.  At least one where that run
 * was merged by RocksDB (it holds a group per run merged into it, and
 * rewritten alone holds one; its share of the part's groups is counted by
 * size, so an unmerged part's larger runs do not count); else at least
 * two, even where two do not fit (groups of long reads): such a run
 * rewritten alone stays as large, and the passes would stop with every run
 * left for the readout. */
static int group_size(const store_survey *v, const store_pass *p, int first, uint64_t memory)
{
    int n = store_pass_runs(p), fds = fd_budget_available(PASS_FD_SPARE);
    int most = fds < 0 ? n : fds / 2 > 2 ? fds / 2 : 2;
    int least = store_pass_merged(p) && run_shape(v, p, first).groups > 1 ? 1 : 2;
    uint64_t used = 0;
    int count = 0;
    while (first + count < n && count < most) {
        run_readers_shape s = run_shape(v, p, first + count);
        used += run_readers_bytes(&s, READERS_MIN_READAHEAD);
        if (count >= least && used > memory) break;
        count++;
    }
    return count;
}

/* Every record of the sources, in key order, into the pass's new run. */
static int copy_merged(rocks_store *st, store_pass *p, run_merge *m, errmsg *err)
{
    int ret = store_pass_run_begin(p, err);
    const uint8_t *v;
    size_t vlen, klen;
    while (ret == 0 && (v = run_merge_next(m, &vlen))) {
        const uint8_t *k = run_merge_key(m, &klen);
        ret = store_run_put(st, k, klen, v, vlen, err);
    }
    if (ret == 0 && run_merge_failed(m)) ret = errmsg_set(err, "out of memory merging runs");
    return ret;
}

static int merge_group(rocks_store *st, const store_survey *v, store_pass *p, int first, int n,
                       uint64_t memory, errmsg *err)
{
    run_readers_shape s = { 0 };
    for (int i = first; i < first + n; i++) {
        run_readers_shape one = run_shape(v, p, i);
        s = (run_readers_shape){ s.runs + 1, s.groups + one.groups, one.grouped, s.parts + 1,
                                 one.ahead, one.block_codec, one.group_bytes };
    }
    size_t readahead = run_readers_fit(&s, memory);
    merge_sources src;
    int ret = merge_sources_open_pass(&src, st, p, first, n,
                                      readahead ? readahead : READERS_MIN_READAHEAD, PASS_AHEAD, err);
    if (ret == 0) ret = copy_merged(st, p, src.merge, err);
    if (ret == 0) ret = merge_sources_status(&src, err);
    merge_sources_close(&src);
    run_readers_release_freed();
    if (ret == 0) ret = store_pass_run_end(p, n, err);
    return ret;
}

/* Rewrites every run of the part, in groups from the oldest.  The groups
 * left are made even (none larger than fits): a last group of one run
 * would be rewritten for nothing. */
static int pass_over(rocks_store *st, const store_survey *v, int part, uint64_t memory,
                     errmsg *err)
{
    store_pass *p = store_pass_begin(st, part, err);
    if (!p) return -1;
    int n = store_pass_runs(p), ret = 0;
    for (int first = 0; ret == 0 && first < n;) {
        int fits = group_size(v, p, first, memory), left = n - first;
        int groups = (left + fits - 1) / fits;
        int count = (left + groups - 1) / groups;
        ret = merge_group(st, v, p, first, count, memory, err);
        first += count;
    }
    if (ret == 0) store_pass_end(p);
    else store_pass_abort(p);
    return ret;
}

/* What part `part`'s readers hold at the smallest readahead. */
static uint64_t part_bytes(const store_survey *v, int part)
{
    run_readers_shape s = shape_of(v);
    s.runs = v->runs[part];
    s.groups = v->groups[part];
    s.parts = 1;
    return run_readers_bytes(&s, READERS_MIN_READAHEAD);
}

/* The part whose readers take the most and that a pass can make smaller:
 * more than one run, or a run holding several groups open; -1 if none. */
static int costliest_part(const store_survey *v)
{
    int best = -1;
    uint64_t most = 0;
    for (int p = 0; p < v->parts; p++) {
        if (v->runs[p] < 2 && v->groups[p] <= v->runs[p]) continue;
        uint64_t b = part_bytes(v, p);
        if (b > most) {
            most = b;
            best = p;
        }
    }
    return best;
}

int run_passes_merge(rocks_store *st, uint64_t memory, uint64_t writer_bytes, errmsg *err)
{
    if (!st) return 0;
    store_survey v;
    store_pass_survey(st, &v);
    if (v.resumable) return 0;
    uint64_t reading = memory > writer_bytes ? memory - writer_bytes : memory / 2;
    for (;;) {
        run_readers_shape all = shape_of(&v);
        if (run_readers_fit(&all, memory)) return 0;
        int part = costliest_part(&v);
        if (part < 0) return 0;
        uint64_t before = part_bytes(&v, part);
        if (pass_over(st, &v, part, reading, err) < 0) return -1;
        store_pass_survey(st, &v);
        if (part_bytes(&v, part) >= before) return 0;
    }
}
