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
static char *paths[MAX_PATHS];
static volatile sig_atomic_t interrupted;

int cleanup_interrupted(void) { return interrupted; }

void cleanup_add(const char *path)
{
    if (!path) return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_PATHS; i++)
        if (!paths[i]) {
            paths[i] = strdup(path);
            break;
        }
    pthread_mutex_unlock(&lock);
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

static void *signal_waiter(void *arg)
{
    (void)arg;
    sigset_t set;
    fill_fatal_set(&set);
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return NULL;
    interrupted = 1;
    pthread_mutex_lock(&lock);
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
