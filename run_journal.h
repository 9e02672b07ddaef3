/* run_journal.h -- an append-only log of records, kept whole across kills.
 *
 * Contract: journal_open() opens (creating it if missing) the log at path,
 * takes an exclusive lock on it (a second process fails: one sort per
 * state), and reads back every whole record in order.  Each record is
 * framed by its length and a CRC-32 of its bytes; reading stops at the
 * first record that is torn (a kill during its write) or damaged, and the
 * file is cut there, so that appends go on from the last good record.
 * journal_append() writes one record; journal_cut() forgets records from
 * index i on, in memory and in the file.  Nothing is synced: the log lives
 * as long as the page cache does, like the temporary runs it describes
 * (a process killed leaves both; a machine that crashes loses the scratch
 * disk's recent writes, and then the records fail their CRC).  Returns 0,
 * or -1 with the cause (naming the file) in err; NULL for journal_open().
 */
#ifndef RUN_JOURNAL_H
#define RUN_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include "errmsg.h"

typedef struct run_journal run_journal;

run_journal *journal_open(const char *path, errmsg *err);
void journal_close(run_journal *j);

/* Whole records read back, plus those appended since. */
size_t journal_records(const run_journal *j);
const uint8_t *journal_record(const run_journal *j, size_t i, size_t *len);
/* Bytes of the file cut away at the open: a torn or damaged tail. */
uint64_t journal_dropped_bytes(const run_journal *j);

int journal_append(run_journal *j, const void *rec, size_t len, errmsg *err);
int journal_cut(run_journal *j, size_t i, errmsg *err);

#endif
