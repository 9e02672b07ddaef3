/* cleanup.c -- see cleanup.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cleanup.h"

#define MAX_PATHS 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Taken before lock, by the signal thread and by cleanup_hold_signals(). */
static pthread_mutex_t setup = PTHREAD_MUTEX_INITIALIZER;
static char *paths[MAX_PATHS];
static volatile sig_atomic_t interrupted;
static int finished;    /* the output is in place: the run has succeeded */

int cleanup_interrupted(void) { return interrupted; }

static void add_locked(const char *path)
{
    for (int i = 0; i < MAX_PATHS; i++)
        if (!paths[i]) {
            paths[i] = strdup(path);
            break;
        }
}

/* The signal thread takes the lock before it removes anything, so holding
 * it from creation to registration closes the window between the two. */
char *cleanup_mkdtemp(char *tmpl)
{
    pthread_mutex_lock(&lock);
    char *dir = mkdtemp(tmpl);
    if (dir) add_locked(dir);
    pthread_mutex_unlock(&lock);
    return dir;
}

int cleanup_mkstemp(char *tmpl)
{
    pthread_mutex_lock(&lock);
    int fd = mkstemp(tmpl);
    if (fd >= 0) add_locked(tmpl);
    pthread_mutex_unlock(&lock);
    return fd;
}

void cleanup_forget(const char *path)
{
    if (!path) return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_PATHS; i++)
        if (paths[i] && !strcmp(paths[i], path)) {
            free(paths[i]);
            paths[i] = NULL;
        }
    pthread_mutex_unlock(&lock);
}

static void remove_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = NULL;
        if (asprintf(&p, "%s/%s", dir, e->d_name) >= 0) {
            unlink(p);
            free(p);
        }
    }
    closedir(d);
}

void cleanup_remove_path(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0) return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    /* Background threads may still be creating files: retry a few times. */
    for (int attempt = 0; attempt < 20; attempt++) {
        remove_dir_entries(path);
        if (rmdir(path) == 0) return;
        usleep(10000);
    }
}

static void fill_fatal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

void cleanup_hold_signals(void) { pthread_mutex_lock(&setup); }
void cleanup_release_signals(void) { pthread_mutex_unlock(&setup); }

int cleanup_commit_rename(const char *from, const char *to)
{
    pthread_mutex_lock(&lock);
    int ret = rename(from, to);
    if (ret == 0) finished = 1;
    pthread_mutex_unlock(&lock);
    return ret;
}

void cleanup_mark_finished(void)
{
    pthread_mutex_lock(&lock);
    finished = 1;
    pthread_mutex_unlock(&lock);
}

/* Once the output is complete, undoing the run would lose a good result and
 * exiting 128+sig would report a failure that did not happen: a late signal
 * is noted and the few remaining steps (removing temp data) finish normally.
 * Returns holding the lock, with the first signal that came in time. */
static int wait_for_timely_signal(const sigset_t *set)
{
    int sig = 0;
    for (;;) {
        if (sigwait(set, &sig) != 0) return -1;
        pthread_mutex_lock(&setup);
        pthread_mutex_lock(&lock);
        if (!finished) return sig;
        pthread_mutex_unlock(&lock);
        pthread_mutex_unlock(&setup);
        fprintf(stderr, "samtools rocksort: signal %d (%s) arrived after the output was "
                "complete; finishing normally\n", sig, strsignal(sig));
    }
}

static void *signal_waiter(void *arg)
{
    (void)arg;
    sigset_t set;
    fill_fatal_set(&set);
    int sig = wait_for_timely_signal(&set);
    if (sig < 0) return NULL;
    interrupted = 1;
    for (int i = 0; i < MAX_PATHS; i++)
        if (paths[i]) cleanup_remove_path(paths[i]);
    fprintf(stderr, "samtools rocksort: interrupted by signal %d (%s); temporary data removed\n",
            sig, strsignal(sig));
    _exit(128 + sig);
}

int cleanup_start(void)
{
    sigset_t set;
    fill_fatal_set(&set);
    signal(SIGPIPE, SIG_IGN);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    pthread_t t;
    if (pthread_create(&t, NULL, signal_waiter, NULL) != 0) return -1;
    pthread_detach(t);
    return 0;
}
