/* disk/run_journal.h -- an append-only log of records, kept whole across kills.
 *
 * Contract: run_journal_open() opens (creating it if missing) the log at path,
 * takes an exclusive lock on it (a second process fails: one sort per
 * state), and reads back every whole record in order.  Each record is
 * framed by its length and a CRC-32 of its bytes; reading stops at the
 * first record that is torn (a kill during its write) or damaged, and the
 * file is cut there, so that appends go on from the last good record.
 * run_journal_append() writes one record; run_journal_cut() forgets records from
 * index i on, in memory and in the file.  The lock is flock(): on a file
 * system that keeps such locks per node (Lustre with localflock, BeeGFS by
 * default) it stops a second sort on the same node only; on one without
 * locks at all (ENOLCK, ENOSYS, EOPNOTSUPP) the journal opens unlocked and
 * run_journal_unlocked() says why.  Nothing is synced: the log lives
 * as long as the page cache does, like the temporary runs it describes
 * (a process killed leaves both; a machine that crashes loses the scratch
 * disk's recent writes, and then the records fail their CRC).  Returns 0,
 * or -1 with the cause (naming the file) in err; NULL for run_journal_open().
 */
#ifndef RUN_JOURNAL_H
#define RUN_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include "util/errmsg.h"

typedef struct run_journal run_journal;

run_journal *run_journal_open(const char *path, errmsg *err);
/* The same records, read without the lock and without cutting the file:
 * a look at a journal that may be another process's. */
run_journal *run_journal_read(const char *path, errmsg *err);
void run_journal_close(run_journal *j);

/* Whole records read back, plus those appended since. */
size_t run_journal_records(const run_journal *j);
const uint8_t *run_journal_record(const run_journal *j, size_t i, size_t *len);

/* 0, or the errno of a lock the file system refused. */
int run_journal_unlocked(const run_journal *j);

int run_journal_append(run_journal *j, const void *rec, size_t len, errmsg *err);
int run_journal_cut(run_journal *j, size_t i, errmsg *err);

/* Without opening it as a journal (no lock, no repair): the first record
 * of the log at path, malloc'd into *rec: 1; 0 if the file is empty; -1
 * with the cause in err if it cannot be read or does not begin with a
 * whole record (a file that is not a journal). */
int run_journal_first_record(const char *path, uint8_t **rec, size_t *len, errmsg *err);

#endif
