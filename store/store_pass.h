/* store/store_pass.h -- the store's merge passes: a part's runs rewritten, a few at a time.
 *
 * Contract: merge passes (driven by readout/run_passes.h), once store_merge_settle()
 * has stopped the background merges, never on a resumable store (its
 * journal names the runs a later run takes back).  store_pass_begin()
 * lists a part's runs, the oldest first; the caller reads them, each on its
 * own (store_pass_iter()), in consecutive groups from the oldest, and
 * writes each group as one run: store_pass_run_begin(), store_run_put()
 * for each record in key order, then store_pass_run_end(p, n) with the n
 * runs of the group, which are deleted once the new run is in.  A pass
 * must rewrite every run of the part before store_pass_end(), which frees
 * p; store_pass_abort() frees it after a failure (the sort then fails: the
 * part may hold keys twice).  store_pass_survey() tells the caller, in
 * one call, what it plans passes from: each part's runs and the groups
 * their readers hold open; store_pass_run_depth() is one run's share of
 * its part's groups.  The -v report's counts: runs a pass replaced, and
 * runs passes wrote.
 */
#ifndef STORE_PASS_H
#define STORE_PASS_H

#include <stddef.h>
#include <stdint.h>
#include "util/errmsg.h"
#include "store/store_types.h"

/* What the readers of every run would hold (store/run_readers.h), part by
 * part, as the store stands after store_merge_settle(). */
typedef struct {
    int parts;                          /* parts holding runs: 0..parts-1 */
    int grouped;                        /* runs in groups (store_grouped()) */
    int block_codec;                    /* RocksDB decompresses each block (lz4, snappy, zstd) */
    int resumable;                      /* --resume's store: never passed over */
    size_t group_bytes;                 /* compact runs: the most bytes of records a group
                                           holds: store_group_bytes(), or the largest group
                                           written where records longer than a group made
                                           one larger */
    uint64_t runs[STORE_MAX_PARTS];     /* each part's runs, each an open file */
    uint64_t groups[STORE_MAX_PARTS];   /* compact runs: each part's groups its merge holds
                                           decoded at once (a RocksDB merge copies groups
                                           whole: one per run ever written to the part, or
                                           written by a pass); 0 for records */
} store_survey;
void store_pass_survey(rocks_store *st, store_survey *out);

store_pass *store_pass_begin(rocks_store *st, int part, errmsg *err);
int store_pass_runs(const store_pass *p);
uint64_t store_pass_run_depth(const store_pass *p, int i);
/* Whether RocksDB merged some of the part's runs: they hold more groups
 * open than one a run. */
int store_pass_merged(const store_pass *p);
store_iter *store_pass_iter(store_pass *p, int i, size_t readahead, errmsg *err);
int store_pass_run_begin(store_pass *p, errmsg *err);
int store_pass_run_end(store_pass *p, int runs, errmsg *err);
void store_pass_end(store_pass *p);
void store_pass_abort(store_pass *p);
uint64_t store_pass_runs_replaced(const rocks_store *st);
uint64_t store_pass_runs_written(const rocks_store *st);

#endif
