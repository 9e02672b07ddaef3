/* store/store_plan.h -- what the merges of a store's runs plan for: the
 * runs to come, their groups' size, and background merges or passes.
 *
 * Contract: for store/store_merge.c, on the store's own thread; no I/O.
 *   store_plan_runs() is the runs `size` bytes of records make, at the
 *     store's expected run size (1 when unknown).
 *   store_plan_groups_and_passes() sizes compact runs' groups for `runs`
 *     runs (run_readers_group_bytes()), estimating the files and feeds the
 *     readout will read them with as each temp directory will write them
 *     (its share of the runs; merged in the background past
 *     STORE_MERGE_MIN_RUNS of its own, to about 2*sqrt of them, in one
 *     part), and returns 1 where background merges are pointless: the
 *     merged runs' readers would still exceed the readout's memory, and
 *     merge passes must merge instead.  Called before the first run.
 *   store_plan_outgrown() returns 1 once a group written is more than
 *     twice the group size (long records) and, counted at it, the merged
 *     runs' readers planned for would not fit the readout's memory.
 * A resumable store is never planned for passes (its journal names its
 * runs), nor a store of records runs.
 */
#ifndef STORE_PLAN_H
#define STORE_PLAN_H

#include <stdint.h>
#include "store/store_db_internal.h"

uint64_t store_plan_runs(const rocks_store *st, uint64_t size);
int store_plan_groups_and_passes(rocks_store *st, uint64_t runs);
int store_plan_outgrown(const rocks_store *st);

#endif
