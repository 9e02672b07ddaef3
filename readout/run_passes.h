/* readout/run_passes.h -- the spilled runs merged down before the readout, until their readers fit its memory.
 *
 * Contract: run_passes_readers() gives the readers one merge of every spilled
 * run holds (store/run_readers.h's shape): the store's runs, each part's
 * reader, and for compact runs the groups open at once.  run_passes_merge()
 * takes the store after store_merge_settle() and the memory the readout's
 * readers may hold (less what a pass's writer holds: writer_bytes).  While
 * those readers do not fit it even at READERS_MIN_READAHEAD, it rewrites
 * the runs of the part whose readers take the most, from the oldest, in
 * groups as large as one merge's readers fit in that memory: each group is
 * merged (readout/run_merge.h) into one run (store/store_pass.h).  A
 * compact run's groups are decoded and written anew, so a run a pass wrote
 * holds one group open where a RocksDB merge kept one per run merged.  It
 * stops once the readers fit, or when no pass makes them smaller (every
 * part down to one run); a resumable store is left as it is (its journal
 * names the runs).  A group holds at most as many runs as half the
 * descriptors still free.  Returns 0, or -1 with the cause in err.
 *
 * Why: the budget sets the number of runs (a batch is a third of it), and
 * every run read at once costs a block and a readahead, a compact one a
 * decoded group too: thousands of runs from a small -m cannot all be read
 * at once within it.  Background merges (RocksDB's) bound their count, not
 * the groups they copy.
 */
#ifndef RUN_PASSES_H
#define RUN_PASSES_H

#include <stdint.h>
#include "util/errmsg.h"
#include "store/store.h"

run_readers_shape run_passes_readers(rocks_store *st);

int run_passes_merge(rocks_store *st, uint64_t memory, uint64_t writer_bytes, errmsg *err);

#endif
