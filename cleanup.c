/* cleanup.c -- see cleanup.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cleanup.h"
#include "thread_cpu.h"

/* A directory whose files background threads may still be creating is
 * emptied and removed up to this many times, this far apart. */
#define REMOVE_ATTEMPTS 20
#define REMOVE_RETRY_US 10000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Taken before lock, by the signal thread and by cleanup_hold_signals(). */
static pthread_mutex_t setup = PTHREAD_MUTEX_INITIALIZER;
/* Registered paths; a forgotten one leaves a NULL slot for reuse.  The table
 * grows as needed: a path that could not be registered is never kept. */
static char **paths;
static size_t n_paths;
static volatile sig_atomic_t interrupted;
static void (*_Atomic say_on_signal)(int sig);
static int finished;    /* the output is in place: the run has succeeded */

int cleanup_interrupted(void) { return interrupted; }

/* -> 0, or -1 with errno ENOMEM and nothing registered. */
static int add_locked(const char *path)
{
    size_t slot = 0;
    while (slot < n_paths && paths[slot]) slot++;
    if (slot == n_paths) {
        size_t n = n_paths ? 2 * n_paths : 8;
        char **grown = realloc(paths, n * sizeof *paths);
        if (!grown) return -1;
        memset(grown + n_paths, 0, (n - n_paths) * sizeof *grown);
        paths = grown;
        n_paths = n;
    }
    paths[slot] = strdup(path);
    return paths[slot] ? 0 : -1;
}

/* The signal thread takes the lock before it removes anything, so holding
 * it from creation to registration closes the window between the two.  A
 * path that cannot be registered is removed again: nothing is created that
 * a signal would leave behind. */
char *cleanup_mkdtemp(char *tmpl)
{
    pthread_mutex_lock(&lock);
    char *dir = mkdtemp(tmpl);
    if (dir && add_locked(dir) < 0) {
        rmdir(dir);
        dir = NULL;
        errno = ENOMEM;
    }
    pthread_mutex_unlock(&lock);
    return dir;
}

/* A file just created (fd, or -1) and registered under the lock taken
 * before its creation; one that cannot be registered is removed again. */
static int registered_file(int fd, const char *path)
{
    int saved = errno;
    if (fd >= 0 && add_locked(path) < 0) {
        close(fd);
        unlink(path);
        fd = -1;
        saved = ENOMEM;
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
    return fd;
}

int cleanup_mkstemp(char *tmpl)
{
    pthread_mutex_lock(&lock);
    return registered_file(mkstemp(tmpl), tmpl);
}

int cleanup_create(const char *path)
{
    pthread_mutex_lock(&lock);
    return registered_file(open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600), path);
}

void cleanup_forget(const char *path)
{
    if (!path) return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_paths; i++)
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
    for (int attempt = 0; attempt < REMOVE_ATTEMPTS; attempt++) {
        remove_dir_entries(path);
        if (rmdir(path) == 0) return;
        usleep(REMOVE_RETRY_US);
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

void cleanup_remove_all(void)
{
    /* The process is about to end: if a thread holds the lock, go on. */
    int locked = pthread_mutex_trylock(&lock) == 0;
    interrupted = 1;
    for (size_t i = 0; i < n_paths; i++)
        if (paths[i]) cleanup_remove_path(paths[i]);
    if (locked) pthread_mutex_unlock(&lock);
    void (*say)(int) = say_on_signal;
    if (say) say(0);
}

static void *signal_waiter(void *arg)
{
    (void)arg;
    sigset_t set;
    fill_fatal_set(&set);
    int sig = wait_for_timely_signal(&set);
    if (sig < 0) return NULL;
    interrupted = 1;
    for (size_t i = 0; i < n_paths; i++)
        if (paths[i]) cleanup_remove_path(paths[i]);
    void (*say)(int) = say_on_signal;
    if (say) say(sig);
    else fprintf(stderr, "samtools rocksort: interrupted by signal %d (%s); temporary data "
                 "removed\n", sig, strsignal(sig));
    _exit(128 + sig);
}

void cleanup_on_signal(void (*say)(int sig))
{
    say_on_signal = say;
}

int cleanup_start(void)
{
    sigset_t set;
    fill_fatal_set(&set);
    signal(SIGPIPE, SIG_IGN);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    pthread_t t;
    if (pthread_create(&t, NULL, signal_waiter, NULL) != 0) return -1;
    pthread_setname_np(t, THREAD_SIGNALS);
    pthread_detach(t);
    return 0;
}
