/* util/progress.h -- a progress report on stderr, from its own thread.
 *
 * Contract: progress_start() returns NULL (no report) unless forced or stderr
 * is a terminal.  On a terminal one line is redrawn in place every second;
 * otherwise a plain line is printed every `interval` seconds.  Either way a
 * last line sums up the run at progress_stop().  The sorting threads only
 * store counters (relaxed atomics, no locks); all printing happens in the
 * reporter thread, and only to stderr.  Every function accepts NULL.
 */
#ifndef PROGRESS_H
#define PROGRESS_H

#include <stdint.h>

typedef enum { PHASE_LOAD, PHASE_SETTLE, PHASE_READOUT, PHASE_DONE } progress_phase;

typedef struct progress progress;

progress *progress_start(int forced, double interval);

void progress_set_phase(progress *p, progress_phase phase);

/* Records and decoded bytes read so far; permille of the input consumed,
 * or -1 when unknown (a pipe). */
void progress_set_read(progress *p, uint64_t records, uint64_t bytes, int permille);
void progress_set_temp(progress *p, uint64_t bytes);
void progress_set_written(progress *p, uint64_t records);

/* Callers update the counts every PROGRESS_EVERY + 1 records: a mask,
 * tested as (count & PROGRESS_EVERY) == 0. */
#define PROGRESS_EVERY 4095

/* Stops the reporter; prints the summary line if the run succeeded. */
void progress_stop(progress *p, int succeeded);

#endif
