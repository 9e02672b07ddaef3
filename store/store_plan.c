/* store/store_plan.c -- see store/store_plan.h. */
#include <math.h>
#include "store/store_plan.h"
#include "store/run_readers.h"

uint64_t store_plan_runs(const rocks_store *st, uint64_t size)
{
    return st->run_bytes ? (size + st->run_bytes - 1) / st->run_bytes : 1;
}

/* What the readout will read `runs` runs from, as the databases will
 * write them (store_merge_plan()): each takes its share of the runs by
 * weight, and merges them in the background only past STORE_MERGE_MIN_RUNS
 * of its own, to about 2*sqrt of them (merge_plan_for()), all in its first
 * part (store_run.c's next_part()); else it deals them to every part. */
typedef struct {
    uint64_t files;     /* open at the readout */
    int parts;          /* feeds reading them */
    int merged;         /* some database merges in the background */
} readout_estimate;

static readout_estimate estimate_readout(const rocks_store *st, uint64_t runs)
{
    readout_estimate e = { 0, 0, 0 };
    double total = 0;
    for (int i = 0; i < st->n_dbs; i++) total += (double)st->dbs[i].weight;
    for (int i = 0; i < st->n_dbs; i++) {
        const store_db *d = &st->dbs[i];
        double share = total > 0 ? (double)d->weight / total : 1.0 / st->n_dbs;
        uint64_t t = (uint64_t)ceil((double)runs * share);   /* as store_plan_runs() rounds */
        if (t > STORE_MERGE_MIN_RUNS) {
            e.files += (uint64_t)merge_plan_for(t).trigger;
            e.parts++;
            e.merged = 1;
        } else {
            e.files += t;
            e.parts += t < (uint64_t)d->n_parts ? (int)t : d->n_parts;
        }
    }
    if (!e.parts) e.parts = 1;
    return e;
}

/* Compact runs: the groups of the runs to come are sized for `runs` runs
 * read as estimate_readout() says.  A resumable store keeps
 * STORE_GROUP_BYTES: a rerun's readout counts the runs it takes back at
 * that size, and with -s this is planned before they are taken back.
 * Called before the first run begins (store_merge_plan()'s contract). */
static void plan_groups(rocks_store *st, uint64_t runs, const readout_estimate *e)
{
    if (!store_codec_grouped(st->codec) || !st->readout_memory || st->state_dir) return;
    st->group_bytes = run_readers_group_bytes(runs, e->files, e->parts, st->readout_memory);
    if (st->groups) group_writer_set_group_bytes(st->groups, st->group_bytes);
}

/* Sizes the groups for `runs` runs, then says whether background merges
 * are pointless (store/store_plan.h): compact runs
 * whose readers, merged, would still exceed the readout's memory at the
 * smallest readahead are merged in passes instead.  Too few runs to merge
 * are never merged in the background anyway, and a resumable store is
 * never passed over (run_passes.h): background merges are all it has. */
int store_plan_groups_and_passes(rocks_store *st, uint64_t runs)
{
    readout_estimate e = estimate_readout(st, runs);
    plan_groups(st, runs, &e);
    run_readers_shape s = { .runs = e.files, .groups = runs, .grouped = 1, .parts = e.parts,
                            .ahead = READERS_FEED_AHEAD, .group_bytes = st->group_bytes };
    return store_codec_grouped(st->codec) && st->readout_memory && !st->state_dir && e.merged &&
           run_readers_bytes(&s, READERS_MIN_READAHEAD) > st->readout_memory;
}

/* Whether groups of long records, larger than the plan knew, make the
 * merged runs' readers exceed the readout's memory: a merged file holds a
 * group open per run merged into it, so passes, which rewrite the groups,
 * must merge instead (store_plan_groups_and_passes(), at the largest group).
 * Short records take a group past its size by a record only: groups under
 * twice the size leave the plan alone. */
int store_plan_outgrown(const rocks_store *st)
{
    if (!store_codec_grouped(st->codec) || !st->readout_memory || st->state_dir ||
        st->largest_group <= 2 * (uint64_t)st->group_bytes || !st->runs_planned)
        return 0;
    readout_estimate e = estimate_readout(st, st->runs_planned);
    run_readers_shape s = { .runs = e.files, .groups = st->runs_planned, .grouped = 1,
                            .parts = e.parts, .ahead = READERS_FEED_AHEAD,
                            .group_bytes = (size_t)st->largest_group };
    return run_readers_bytes(&s, READERS_MIN_READAHEAD) > st->readout_memory;
}
