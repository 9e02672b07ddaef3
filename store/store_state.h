/* store/store_state.h -- a resumable store: its journal.
 *
 * Contract: a resumable store (opt->state_dir).  The directory is created if
 * missing; one that holds anything but a store's journal and database is
 * refused, untouched.  The store journals every run before RocksDB takes
 * it in (disk/run_journal.h): its key ranges, samples and groups, and the
 * caller's note.  store_open() then takes back the runs of an earlier,
 * interrupted run of the same sort: one whose identity matches and whose
 * journal and database agree (the entries of every run are in the
 * database, or the last run's file is still there to take in).  Anything
 * else (another identity, a state that does not open or does not add up,
 * or one the caller calls stale: o->state_stale) is discarded, and the
 * sort starts afresh in the same directory; with state_other, none is.
 * The state's layout is STORE_STATE_VERSION (store/store_types.h); its
 * directory and first record, store/state_dir.h.
 * store_state_resumed() says what happened.  store_state_keep() journals a blob the
 * caller wants back on resuming, in one of STORE_KEEP_SLOTS slots (the
 * header, the output's hidden name); store_state_complete() journals
 * that the whole input is stored, with a last note.  A discarded state's
 * blobs are still reported in kept[]: what they name (a half-written
 * output) outlives the state.  store_close() removes
 * the whole directory unless asked to keep it.
 */
#ifndef STORE_STATE_H
#define STORE_STATE_H

#include <stddef.h>
#include <stdint.h>
#include "util/errmsg.h"
#include "store/store_types.h"

const store_resume *store_state_resumed(const rocks_store *st);
/* 0, or the errno of the lock on the state that its file system refused
 * (disk/run_journal.h): the state is then used unlocked. */
int store_state_unlocked(const rocks_store *st);
/* 1 with the state directory's path now in now (from /proc) when it is no
 * longer at the path given (renamed, or a directory above it), else 0. */
int store_state_moved(const rocks_store *st, char *now, size_t size);
int store_state_keep(rocks_store *st, int slot, const void *blob, size_t len, errmsg *err);
int store_state_complete(rocks_store *st, const void *note, size_t note_len, errmsg *err);

/* For store/store.c and store/store_run.c: the journal, in one database.
 * store_state_prepare() checks and locks the directory before the database
 * opens, and sets st->dbs[0].dir; a fresh or discarded state has its
 * identity journaled then, before its database exists.  store_state_restore()
 * takes the journaled runs back once it is open: 0, -1 with the cause in
 * err, or 1 when the state must be discarded (why in st->discarded): the
 * caller then closes the database, calls store_state_wipe() (the database
 * removed, the journal holding only the identity again) and opens it
 * afresh; with o->state_other, store_state_keep_other() fails instead, the
 * state kept as it was (why in err).  store_state_journal_run() journals a run,
 * before RocksDB takes it in.
 * Each returns 0 or -1 with the cause in err unless said otherwise. */
int store_state_prepare(rocks_store *st, const store_options *o, errmsg *err);
int store_state_restore(rocks_store *st, errmsg *err);
int store_state_wipe(rocks_store *st, const store_options *o, errmsg *err);
void store_state_discard(rocks_store *st, const char *why);
int store_state_keep_other(rocks_store *st, const store_options *o, const char *why, errmsg *err);
int store_state_journal_run(rocks_store *st, int part, uint64_t bytes, const void *note,
                            size_t note_len, errmsg *err);
void store_state_close(rocks_store *st, int keep);

#endif
