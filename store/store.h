/* store/store.h -- the store: opened and closed, what it holds; and the one
 * include for the layers above.
 *
 * Contract: store_open() opens the store that store/store_run.h
 * describes, one database in each directory of opt->dirs, or a resumable
 * one in opt->state_dir (store/store_state.h); NULL with the cause in err.
 * store_close() closes the databases, and removes their directories unless
 * keep is set.  store_shows_damage() reads a failure's cause for what it
 * says of the stored runs.  The rest say what the store holds: its
 * directories, parts, runs and samples.  store.c calls the store's other
 * files, and none of them calls it.
 * Each of the store's other files declares its functions in its own
 * header: store/store_run.h (runs written), store/store_merge.h (merges),
 * store/store_iter.h (runs read back), store/store_pass.h (merge passes),
 * store/store_state.h (a resumable store); store/store_types.h the types
 * and constants they share.  This header includes them all, with the
 * state directory's checks (store/state_dir.h), the readers' arithmetic
 * (store/run_readers.h) and the temp space check (store/temp_space.h):
 * the loader, the output, the readout and the engine include it alone.
 * The store's own files include the precise headers, and the databases'
 * state in store/store_db_internal.h, which nothing outside store/ sees.
 */
#ifndef STORE_H
#define STORE_H

#include <stddef.h>
#include <stdint.h>
#include "util/errmsg.h"
#include "keys/key_bytes.h"
#include "store/store_types.h"
#include "store/store_run.h"
#include "store/store_merge.h"
#include "store/store_iter.h"
#include "store/store_pass.h"
#include "store/store_state.h"
#include "store/state_dir.h"
#include "store/run_readers.h"
#include "store/temp_space.h"

/* The databases the open-file budget can hold, each with its own files and
 * room for a few runs: the caller spreads the runs over at most this many
 * directories.  max_open_files < 0: no limit. */
int store_dirs_that_fit(int max_open_files);

rocks_store *store_open(const store_options *opt, errmsg *err);

/* Whether a failure's cause, as the store gave it (RocksDB's text names
 * the errno), shows the runs themselves damaged (RocksDB's Corruption: a
 * checksum that does not match, a file missing or cut short; a group of
 * records that does not decode), for no cause outside them (a full disk,
 * no permission, a lock held, too few descriptors or memory, an I/O
 * error, after which they may read back on a mended machine).  A state is
 * removed then, and kept otherwise. */
#define STORE_RUN_CORRUPT "a temporary run is corrupt"
int store_shows_damage(const char *msg);

/* Closes the databases; removes their directories unless keep is set. */
void store_close(rocks_store *st, int keep);

/* Runs ingested, and every byte RocksDB wrote (runs, merges, its own files). */
uint64_t store_runs_ingested(const rocks_store *st);
uint64_t store_bytes_written(const rocks_store *st);

/* Keys sampled from the runs as they were written (store/store_run.h),
 * for splitting the key space into ranges of about equal size
 * (readout/range_readout.h). */
size_t store_samples(const rocks_store *st);
const key_sample *store_sample_at(const rocks_store *st, size_t i);

/* Parts holding runs: the readout merges store_iter_open_range(st, 0..n-1, ...)
 * (store/store_iter.h). */
int store_parts(const rocks_store *st);

/* True when runs hold groups of records (compact runs in columns, or
 * plain): see store/store_iter.h for what that means to a reader. */
int store_grouped(const rocks_store *st);
/* Runs in groups: the records per group of the runs written from now on
 * (store_merge_plan(), store/store_merge.h). */
size_t store_group_bytes(const rocks_store *st);

/* Sorted runs the readout will merge: the databases' files (all in level 0). */
int store_sorted_runs(rocks_store *st);
/* The runs whose groups a piece of the readout starting inside them may
 * straddle: a file that RocksDB merged in the background keeps a group
 * open for every run merged into it, so each piece decodes a group of
 * every run written, not of every file (the files where no index says
 * more). */
size_t store_straddled_runs(rocks_store *st);
/* Runs that store_merge_settle() merged to meet the budget (0: none needed). */
int store_catch_up_runs(const rocks_store *st);

/* True when runs are read with direct I/O (every temp file system allows it). */
int store_direct_io(const rocks_store *st);
/* The databases' directories, for messages: one, or several as
 * "a/samtools-rocksort.X', 'b/samtools-rocksort.Y" (to be quoted '%s'). */
const char *store_path(const rocks_store *st);

/* The databases, one per directory: for -v and -k. */
int store_dirs(const rocks_store *st);
store_dir_report store_dir_at(const rocks_store *st, int i);

#endif
