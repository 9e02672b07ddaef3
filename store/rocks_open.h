/* store/rocks_open.h -- the store's databases, one per temp directory: opened and closed.
 *
 * Contract: store_open() opens the store that store/store_run.h
 * describes, one database in each directory of opt->dirs, or a resumable
 * one in opt->state_dir (store/store_state.h); NULL with the cause in err.
 * store_close() closes the databases, and removes their directories unless
 * keep is set.  store_cause_outside() and store_shows_damage() read a
 * failure's cause for what it says of the stored runs.
 */
#ifndef ROCKS_OPEN_H
#define ROCKS_OPEN_H

#include "util/errmsg.h"
#include "store/store_types.h"

/* The databases the open-file budget can hold, each with its own files and
 * room for a few runs: the caller spreads the runs over at most this many
 * directories.  max_open_files < 0: no limit. */
int store_dirs_that_fit(int max_open_files);

rocks_store *store_open(const store_options *opt, errmsg *err);

/* What a failure's cause, as the store gave it (RocksDB's text names the
 * errno), says of the stored runs.  store_cause_outside(): a cause outside
 * them (a full disk, no permission, a lock held, too few descriptors or
 * memory, an I/O error), after which they may read back on a mended
 * machine; a state is kept then.  store_shows_damage(): the runs
 * themselves are damaged, for no such cause (RocksDB's Corruption: a
 * checksum that does not match, a file missing or cut short; a group of
 * records that does not decode); a state is removed then. */
#define STORE_RUN_CORRUPT "a temporary run is corrupt"
int store_cause_outside(const char *msg);
int store_shows_damage(const char *msg);

/* Closes the databases; removes their directories unless keep is set. */
void store_close(rocks_store *st, int keep);

#endif
