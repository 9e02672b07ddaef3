/* test_cleanup.c -- unit tests of cleanup.c: every registered path is
 * removed on a fatal signal, however many there are. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cleanup.h"
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

int main(void)
{
    report("many_paths_all_removed_on_signal", test_many_paths_all_removed());
    return report_summary();
}
