/* store/state_dir.h -- a resumable store's directory, and the record that makes it one.
 *
 * Contract: a state directory (--resume DIR) holds a journal (disk/run_journal.h)
 * and a database, under the names below, and nothing else.  Its journal's
 * first record is 'S': the state's version (STORE_STATE_VERSION), then the
 * sort's identity, the runs' codec and the number of parts; it is written
 * before the database exists, so that an empty journal beside a database
 * is no state's.  state_dir_start_write() appends that record's fields to w;
 * state_dir_start_read() reads them back (s->bad when they do not parse as
 * this version's: a state of rocksort 0.3 has no version, its identity's
 * length stands there).  state_dir_usable(), state_dir_peek(),
 * state_dir_identity() and state_dir_last_note() look at a directory
 * before any store opens it.
 * state_dir_join() returns "dir/name", malloc'd, or NULL.
 */
#ifndef STATE_DIR_H
#define STATE_DIR_H

#include <stddef.h>
#include <stdint.h>
#include "util/byte_io.h"
#include "util/errmsg.h"
#include "store/store_types.h"

#define STATE_JOURNAL_NAME "journal"
#define STATE_DB_NAME "db"
#define STATE_REC_START 'S'
#define STATE_REC_RUN 'R'       /* the other records' types (store/store_state.c) */
#define STATE_REC_DONE 'C'

typedef struct {
    uint64_t type, version, codec, parts;
    const uint8_t *identity;
    size_t identity_len;
    int bad;
} state_start;

void state_dir_start_write(byte_writer *w, const char *identity, uint64_t codec, uint64_t parts);
void state_dir_start_read(const uint8_t *rec, size_t len, state_start *s);
char *state_dir_join(const char *dir, const char *name);

/* Whether a directory could hold a state: missing, or a state's (0), or
 * the user's (-1, with a cause for refusing it in err).  Creates nothing. */
int state_dir_usable(const char *dir, errmsg *err);
/* Whether dir holds a state to resume, before any sort opens it: 0 with
 * the codec its runs are in and the bytes its database holds, else -1.
 * A state that turns out to be another sort's is still discarded at the
 * open; this only lets the caller keep the runs' format and count their
 * space as its own. */
int state_dir_peek(const char *dir, store_codec *codec, uint64_t *bytes);
/* The identity a state in dir was journaled with (malloc'd, in *identity),
 * read without taking its lock: 1; 0 if dir holds no journal, or an empty
 * one; -1 if its journal is not a state of this version, or does not read
 * (store_open() says why). */
int state_dir_identity(const char *dir, char **identity);
/* The caller's note on the last run or completion the journal in dir
 * holds (store_run_end(), store_state_complete()), read without taking its lock:
 * 1 with it malloc'd in *note; 0 if there is none; -1 if the journal does
 * not read or a record does not parse (store_open() says why). */
int state_dir_last_note(const char *dir, uint8_t **note, size_t *len);

#endif
