/* engine/resume_fate.c -- see engine/resume_fate.h. */
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine/resume_fate.h"
#include "util/cleanup.h"
#include "store/store.h"

enum { STATE_OPEN, STATE_KEPT, STATE_REMOVED };

/* For the signal thread, which may speak while the main thread opens or
 * closes the store. */
static const sort_job *signalled_job;
static rocks_store *_Atomic opened_store;
static volatile sig_atomic_t fate = STATE_OPEN;
static uint64_t runs_at_close;

const char *resume_fate_dir_shown(const sort_job *j)
{
    return j->resume.dir_shown ? j->resume.dir_shown : j->o->resume_dir;
}

static int dir_has_journal(const char *dir)
{
    char *journal = state_dir_join(dir, STATE_JOURNAL_NAME);
    int there = journal && access(journal, F_OK) == 0;
    free(journal);
    return there;
}

static int has_journal(const sort_job *j) { return dir_has_journal(j->o->resume_dir); }

/* Called by the signal thread (util/cleanup.h) instead of its own line, and
 * with sig 0 after a fatal error that cannot return (cleanup_remove_all()),
 * whose cause has a line of its own.  The store opens and closes with
 * signals held, so it is there or not. */
static void note_signal(int sig)
{
    const sort_job *j = signalled_job;
    rocks_store *st = opened_store;
    char real[PATH_MAX];
    const char *dir = store_state_moved(st, real, sizeof real) ? real
                    : j->resume.dir_shown || !realpath(j->o->resume_dir, real)
                    ? resume_fate_dir_shown(j) : real;
    if (sig)
        fprintf(stderr, "samtools rocksort: interrupted by signal %d (%s); ", sig, strsignal(sig));
    else
        fprintf(stderr, "samtools rocksort: ");
    if (fate == STATE_REMOVED)
        fprintf(stderr, "the state in '%s' was removed\n", dir);
    else if (fate == STATE_KEPT || st)
        fprintf(stderr, "the sort's state is kept in '%s' (%" PRIu64 " runs stored): run the "
                "same command again to resume\n", dir,
                fate == STATE_KEPT ? runs_at_close : store_runs_ingested(st));
    else if (has_journal(j))
        fprintf(stderr, "the state in '%s' is kept\n", dir);
    else
        fprintf(stderr, "nothing was stored in '%s'\n", dir);
}

/* DIR by its real path, once it exists. */
static void find_dir(sort_job *j)
{
    char real[PATH_MAX];
    if (!j->resume.dir_shown && realpath(j->o->resume_dir, real))
        j->resume.dir_shown = strdup(real);
}

void resume_fate_watch_signals(sort_job *j)
{
    find_dir(j);
    signalled_job = j;
    opened_store = NULL;
    fate = STATE_OPEN;
    cleanup_on_signal(note_signal);
}

static void say_what_happened(const sort_job *j, const store_resume *r)
{
    const char *dir = resume_fate_dir_shown(j);
    /* With no input, only a state of the whole input goes on: any other
     * fails next, with its own line. */
    if (r->discarded)
        fprintf(stderr, "samtools rocksort: not resuming from '%s': %s%s\n", dir, r->discarded,
                j->resume.no_input ? "" : "; sorting afresh");
    int unlocked = store_state_unlocked(j->store);
    if (unlocked)
        sort_job_warn("the file system of '%s' does not lock files (%s): a second sort started on "
                      "this state at the same time would not be stopped", dir, strerror(unlocked));
}

void resume_fate_state_opened(sort_job *j)
{
    find_dir(j);
    opened_store = j->store;
    say_what_happened(j, store_state_resumed(j->store));
}

void resume_fate_resuming(const sort_job *j, const char *next)
{
    const store_resume *r = store_state_resumed(j->store);
    const char *dir = resume_fate_dir_shown(j);
    if (r->complete)
        fprintf(stderr, "samtools rocksort: resuming from '%s': the whole input is stored "
                "(%" PRIu64 " runs); %s\n", dir, r->runs, next);
    else
        fprintf(stderr, "samtools rocksort: resuming from '%s': %" PRIu64 " runs stored; %s\n",
                dir, r->runs, next);
}

void resume_fate_state_wrong(sort_job *j, const char *why)
{
    if (j->resume.on && !j->resume.state_wrong) j->resume.state_wrong = why;
}

/* A failure before the store opened touched nothing in DIR, unless the
 * store discarded a state before failing (its line said so). */
static void say_untouched(const sort_job *j)
{
    if (has_journal(j))
        fprintf(stderr, "samtools rocksort: the state in '%s' is kept %s\n", resume_fate_dir_shown(j),
                j->resume.discarded ? "with no run" : "as it was");
}

void resume_fate_refused(const char *dir)
{
    errmsg not_a_state;
    char real[PATH_MAX];
    if (state_dir_usable(dir, &not_a_state) == 0 && dir_has_journal(dir))
        fprintf(stderr, "samtools rocksort: the state in '%s' is kept as it was\n",
                realpath(dir, real) ? real : dir);
}

void resume_fate_close(sort_job *j, int failed)
{
    if (!j->store) {
        if (failed) say_untouched(j);
        return;
    }
    int keep = failed && !j->resume.state_wrong;
    char now[PATH_MAX];
    const char *dir = store_state_moved(j->store, now, sizeof now) ? now : resume_fate_dir_shown(j);
    cleanup_hold_signals();
    runs_at_close = store_runs_ingested(j->store);
    fate = keep ? STATE_KEPT : STATE_REMOVED;
    if (keep)
        fprintf(stderr, "samtools rocksort: the sort's state is kept in '%s' (%" PRIu64 " runs "
                "stored): a rerun with the same input and options resumes from it\n", dir,
                runs_at_close);
    else if (failed)
        fprintf(stderr, "samtools rocksort: the state in '%s' is removed (%s): the next run "
                "sorts afresh\n", dir, j->resume.state_wrong);
    store_close(j->store, keep);
    j->store = opened_store = NULL;
    cleanup_release_signals();
}

void resume_fate_report(const sort_job *j)
{
    if (!j->resume.on) return;
    fprintf(stderr, "[rocksort] resumed: %" PRIu64 " runs and %" PRIu64 " records taken back "
            "from '%s'; %.1f MB of input skipped; %.2f s of loading saved%s\n",
            j->resume.runs_taken, j->resume.records_taken, resume_fate_dir_shown(j),
            (double)j->resume.bytes_skipped / 1e6, j->resume.seconds_before,
            j->resume.input_stored ? " (no input read)" : "");
}
