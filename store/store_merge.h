/* store/store_merge.h -- the store's merges of runs: RocksDB's universal
 * compaction, planned, followed and waited for.
 *
 * Contract: each database merges its runs in the background as
 * store_merge_plan() (or a size hint at store_open()) set it up, within
 * its share of the open-file budget (store/merge_plan.h); store_merge_settle()
 * ends the merges before the readout.  The rest report what they did, and
 * how many runs the readout will merge.
 */
#ifndef STORE_MERGE_H
#define STORE_MERGE_H

#include <stdint.h>
#include "store/store_types.h"

/* Without a size hint, the caller may still estimate the total (from the
 * input file's size) once loading has begun: past STORE_MERGE_MIN_RUNS
 * runs, merging starts as a hint would have set it up; below, the readout
 * merges every run itself, which is cheaper than rewriting them.
 * Compact runs' groups are sized first (run_readers_group_bytes(),
 * store/run_readers.h; a resumable store keeps STORE_GROUP_BYTES, at which
 * a rerun's readout counts the runs it takes back).  They are not
 * merged in the background when their readers, even merged (a group per
 * run written, which a RocksDB merge copies whole, and about 2*sqrt(runs)
 * files), would not fit readout_memory: merge passes rewrite them before
 * the readout (readout/run_passes.h), and background merges would only add
 * a rewrite, and files holding more groups open than a pass can read at
 * once; a resumable store, never passed over, merges them in the background
 * anyway.  Call it before the first run begins: its groups take the size
 * planned here, and runs already dealt to other parts would stay there,
 * outside the merges' reach.  run_bytes: the bytes of the estimate's kind
 * that one run took (the first batch's records), as a batch holds fewer
 * than its capacity (each record's key and index entry take room too); 0:
 * the run size given at store_open().  Returns the fewest runs a background
 * merge takes, 0 if there will be no merges, -1 if RocksDB refused the
 * change.  STORE_MERGE_MIN_RUNS is in store/store_types.h. */
int store_merge_plan(rocks_store *st, uint64_t size_estimate, uint64_t run_bytes);

/* The most runs one background merge may take when `size` bytes arrive in
 * runs of run_bytes: the merge budget above, or 0 if no merges would be
 * planned (hinted: the size comes from -s, which plans merges at any
 * size).  For sizing the temp space before a store exists. */
int store_merge_width(uint64_t size, uint64_t run_bytes, int hinted);

/* Stops starting new compactions and waits for running ones to end.  If
 * background merges were planned but fell behind, merges the newest runs
 * until at most 2*sqrt(T) remain (T: runs written, when above
 * STORE_MERGE_MIN_RUNS), and in any case until the readout can keep every
 * run open.  Returns the seconds spent. */
double store_merge_settle(rocks_store *st);

/* What the background merges wrote, and how they were planned
 * (store_merge_report, store/store_types.h). */
store_merge_report store_merge_summary(const rocks_store *st);

/* For store/store.c and store/store_run.c: a database's compaction
 * options at open (share: its fraction of the runs), and after each run
 * the merges the open-file budget forces when none were planned. */
struct store_db;
void store_merge_configure(rocks_store *st, struct store_db *d, const store_options *o,
                            double share);
void store_merge_after_run(rocks_store *st, struct store_db *d);

#endif
