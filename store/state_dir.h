/* store/state_dir.h -- a resumable store's directory, and the record that makes it one.
 *
 * Contract: a state directory (--resume DIR) holds a journal (store/run_journal.h)
 * and a database, under the names below, and nothing else.  Its journal's
 * first record is 'S': the state's version (STORE_STATE_VERSION), then the
 * sort's identity, the runs' codec and the number of parts; it is written
 * before the database exists, so that an empty journal beside a database
 * is no state's.  state_dir_start_write() appends that record's fields to w;
 * state_dir_start_read() reads them back (s->bad when they do not parse as
 * this version's: a state of rocksort 0.3 has no version, its identity's
 * length stands there).  state_dir_usable(), state_dir_peek() and
 * state_dir_identity() (store/rocks_store.h) are implemented here.  state_dir_join() returns "dir/name",
 * malloc'd, or NULL.
 */
#ifndef STATE_DIR_H
#define STATE_DIR_H

#include <stddef.h>
#include <stdint.h>
#include "util/byte_io.h"
#include "store/rocks_store.h"

#define STATE_JOURNAL_NAME "journal"
#define STATE_DB_NAME "db"
#define STATE_REC_START 'S'

typedef struct {
    uint64_t type, version, codec, parts;
    const uint8_t *identity;
    size_t identity_len;
    int bad;
} state_start;

void state_dir_start_write(byte_writer *w, const char *identity, uint64_t codec, uint64_t parts);
void state_dir_start_read(const uint8_t *rec, size_t len, state_start *s);
char *state_dir_join(const char *dir, const char *name);

#endif
