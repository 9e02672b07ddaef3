/* engine/resume_fate.h -- what becomes of a resumable sort's state (--resume DIR).
 *
 * Contract: the one rule for DIR (doc/DESIGN.md has the table of every
 * failure).  DIR goes after a sort that succeeded, and when the state
 * itself is shown wrong or unusable: resume_fate_state_wrong() says why (notes
 * that do not read, a stored run that does not read back, records that do
 * not add up); at the open, another identity, version or format, or a
 * database that does not open or does not add up, discard it and the sort
 * starts afresh in DIR (store/store_state.h), once the input's header has been
 * read (engine/sort_resume.h; no input discards no state of another sort).  Every
 * other failure, and a signal, keeps DIR.  Every line names DIR by its real path (a relative DIR from
 * another working directory is another state).
 * - resume_fate_watch_signals(), first: a signal from then on says what became
 *   of DIR (kept, with its runs once the store is open; or nothing stored).
 * - resume_fate_state_opened(), once the store is open: says why a state
 *   was discarded, and warns of a state its file system cannot lock.
 * - resume_fate_resuming(): says what was taken back and what comes next,
 *   once the take-back has passed every check that refuses at once (no
 *   input to finish a partial state, another header, --verify with no
 *   input): a line that says "writing the output" is never followed by a
 *   refusal of that kind.
 * - resume_fate_close(), instead of store_close(): closes the store by the rule
 *   and, after a failure, says in one line whether DIR is kept (with its
 *   runs) or removed (and why).  Signals wait meanwhile, so that a
 *   signal's line tells what became of DIR.  A failure before the store
 *   opened leaves DIR as it was, and says so if it holds a state.
 */
#ifndef RESUME_FATE_H
#define RESUME_FATE_H

#include "engine/sort_job.h"

void resume_fate_watch_signals(sort_job *j);
void resume_fate_state_opened(sort_job *j);
void resume_fate_resuming(const sort_job *j, const char *next);

/* The state itself is wrong (why, a constant string): it goes when the
 * sort ends.  Does nothing without --resume. */
void resume_fate_state_wrong(sort_job *j, const char *why);

void resume_fate_close(sort_job *j, int failed);

/* The command line was refused before any sort began (an output that can
 * never be written, options that do not go together): if DIR holds a
 * state, one line says it is kept as it was. */
void resume_fate_refused(const char *dir);

/* DIR as messages name it. */
const char *resume_fate_dir_shown(const sort_job *j);

/* -v's line: what was taken back, and the time that saved. */
void resume_fate_report(const sort_job *j);

#endif
