/* test_cleanup.c -- unit tests of util/cleanup.c: every registered path is
 * removed on a fatal signal, however many there are. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "util/cleanup.h"
#include "util/clock_util.h"
#include "unit_report.h"

#define MANY 100

/* In a child: register MANY files and MANY/10 directories, then SIGTERM
 * itself.  The parent checks the exit status and that nothing is left. */
static void register_many_then_die(const char *dir)
{
    if (cleanup_start() < 0) _exit(2);
    char path[4096];
    for (int i = 0; i < MANY; i++) {
        snprintf(path, sizeof path, "%s/f%03d.XXXXXX", dir, i);
        if (cleanup_mkstemp(path) < 0) _exit(3);
    }
    for (int i = 0; i < MANY / 10; i++) {
        snprintf(path, sizeof path, "%s/d%03d.XXXXXX", dir, i);
        if (!cleanup_mkdtemp(path)) _exit(4);
    }
    kill(getpid(), SIGTERM);
    pause();
    _exit(5);
}

static const char *test_many_paths_all_removed(void)
{
    static char problem[256];
    /* run_tests.py runs this from the repository root: scratch in test/out/. */
    char dir[] = "test/out/test_cleanup.XXXXXX";
    if (!mkdtemp(dir)) return "cannot make a scratch directory";
    pid_t pid = fork();
    if (pid == 0) register_many_then_die(dir);
    int status = 0;
    waitpid(pid, &status, 0);
    problem[0] = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 128 + SIGTERM)
        snprintf(problem, sizeof problem, "child status %#x, expected exit %d",
                 status, 128 + SIGTERM);
    else if (rmdir(dir) != 0)
        snprintf(problem, sizeof problem, "paths left behind in %s", dir);
    return problem[0] ? problem : NULL;
}

/* A temp directory whose parent is renamed (as -T's may be) still goes,
 * files and all, from where it is now. */
static const char *test_renamed_parent_dir_removed(void)
{
    char top[] = "test/out/test_cleanup.XXXXXX";
    char parent[64], moved[64], tmpl[96], file[128];
    if (!mkdtemp(top)) return "cannot make a scratch directory";
    snprintf(parent, sizeof parent, "%s/T", top);
    snprintf(moved, sizeof moved, "%s/T.moved", top);
    snprintf(tmpl, sizeof tmpl, "%s/db.XXXXXX", parent);
    if (mkdir(parent, 0700) != 0 || !cleanup_mkdtemp(tmpl)) return "cannot make the directories";
    snprintf(file, sizeof file, "%s/run.sst", tmpl);
    FILE *f = fopen(file, "w");
    if (!f) return "cannot make a file in the temp directory";
    fclose(f);
    if (rename(parent, moved) != 0) return "cannot rename the parent";
    cleanup_remove_path(tmpl);
    cleanup_forget(tmpl);
    if (rmdir(moved) != 0) return "the temp directory was left in the renamed parent";
    return rmdir(top) == 0 ? NULL : "scratch directory not empty";
}

/* The grace for a signal lasts its milliseconds on the clock, however long
 * each of its naps takes.  A 20 ms timer slack stretches every 1 ms nap of
 * this thread the way a loaded or CPU-throttled machine does (a stdin cut's
 * 200 ms grace took over 3 s in CI when the naps were counted). */
static const char *test_signal_grace_is_clock_time(void)
{
    if (prctl(PR_SET_TIMERSLACK, 20000000UL, 0, 0, 0) != 0) return "cannot set the timer slack";
    double start = now_seconds();
    int arrived = cleanup_signal_within(200);
    double took = now_seconds() - start;
    prctl(PR_SET_TIMERSLACK, 0UL, 0, 0, 0);
    static char problem[128];
    if (arrived) return "a signal was reported where none came";
    if (took < 0.2 || took > 1.0) {
        snprintf(problem, sizeof problem, "a 200 ms grace took %.2f s", took);
        return problem;
    }
    return NULL;
}

int main(void)
{
    report("signal_grace_is_clock_time", test_signal_grace_is_clock_time());
    report("many_paths_all_removed_on_signal", test_many_paths_all_removed());
    report("renamed_parent_dir_removed", test_renamed_parent_dir_removed());
    return report_summary();
}
