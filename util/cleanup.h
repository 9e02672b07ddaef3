/* util/cleanup.h -- temporary paths removed on exit and on fatal signals.
 *
 * Contract: cleanup_start() must run before any other thread is created: it
 * blocks SIGINT, SIGTERM and SIGHUP in every thread (those not ignored at
 * the start: under nohup, SIGHUP stays ignored) and starts one thread that
 * waits for them.  When one arrives, that thread removes every
 * registered path (a file, or a directory and the files in it) and ends the
 * process with status 128 + signal.  SIGPIPE is ignored, so a closed stdout
 * shows up as a write error that the normal error path handles.
 */
#ifndef CLEANUP_H
#define CLEANUP_H

#include <stddef.h>

int cleanup_start(void);

/* mkdtemp() and mkstemp() whose result is registered for removal in the
 * same step, so a signal never finds the path created but not registered.
 * cleanup_forget() drops a path (once it is removed or committed). */
char *cleanup_mkdtemp(char *tmpl);
int cleanup_mkstemp(char *tmpl);
/* A new file of that very name (O_EXCL, mode 0600, open for reading and
 * writing), registered likewise; -1 with errno (EEXIST: it is there). */
int cleanup_create(const char *path);
/* A new directory of that very name (mode 0700), registered and held open
 * as cleanup_mkdtemp()'s: 0, or -1 with errno (EEXIST: it is there). */
int cleanup_mkdir(const char *path);
void cleanup_forget(const char *path);

/* Defers signal handling while temp data is being set up.  RocksDB's open
 * recreates its directory if it is missing, so a removal running alongside
 * it could be undone; around the open, a signal waits instead. */
void cleanup_hold_signals(void);
void cleanup_release_signals(void);

/* The commit point of a run.  cleanup_commit_rename() renames the finished
 * output into place atomically with respect to signal handling, and
 * cleanup_mark_finished() does the same for output already flushed to
 * stdout.  A signal before the commit undoes the run (128 + signal); one
 * after it is reported and the run ends normally, since its output is
 * complete.  Returns rename()'s result. */
int cleanup_commit_rename(const char *from, const char *to);
void cleanup_mark_finished(void);

/* Replaces the line the signal thread prints once it has removed every
 * registered path (a resumable sort says what it kept).  say() runs on
 * that thread, with the other threads still running. */
void cleanup_on_signal(void (*say)(int sig));

/* True once a fatal signal is pending, or taken and not found to have
 * come after the commit: a failure now is likely the signal's doing (its
 * writer killed, a stream ends early), and the signal's line is the one to
 * stand.  cleanup_signal_within() waits up to ms for one.  A run that
 * failed calls cleanup_await_signal() before it cleans up and exits: if a
 * signal arrived, the signal thread ends the process (128 + signal), and
 * it does not return. */
int cleanup_signal_arrived(void);
int cleanup_signal_within(int ms);
void cleanup_await_signal(void);

/* Removes a file, or a directory with the files in it.  A directory
 * made by cleanup_mkdtemp() and not yet forgotten is held open, and goes
 * even if it (or a directory above it) was renamed. */
void cleanup_remove_path(const char *path);

/* Removes the directory open as dir_fd, named path when it was opened,
 * with its plain files and directories of plain files, from wherever it is
 * now (it, or a directory above it, may have been renamed). */
void cleanup_remove_dir_at(int dir_fd, const char *path);

/* 1 with the path now of the directory open as dir_fd in now (read from
 * /proc) when path no longer names it (it, or a directory above it, was
 * renamed); else 0.  cleanup_registered_moved() says it of a directory made
 * by cleanup_mkdtemp() and not yet forgotten. */
int cleanup_dir_moved(int dir_fd, const char *path, char *now, size_t size);
int cleanup_registered_moved(const char *path, char *now, size_t size);

/* For a fatal error that cannot return (an exception RocksDB does not
 * catch): removes every registered path now, as a signal would, and has
 * the line cleanup_on_signal() set up said for it too (with sig 0). */
void cleanup_remove_all(void);

#endif
