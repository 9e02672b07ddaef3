/* output/split_dir.c -- see output/split_dir.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "output/split_dir.h"
#include "output/output_stale.h"
#include "util/cleanup.h"
#include "util/name_fit.h"

#define LOCK_NAME "lock"

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* "DIR/.STEM.rocksort-split.NNNNNN"; malloc'd. */
static char *hidden_name(const char *dir, const char *stem, int slot)
{
    char *name;
    if (asprintf(&name, "%s/.%s" SPLIT_DIR_SUFFIX "%0*d", strcmp(dir, "/") ? dir : "", stem,
                 OUTPUT_HIDDEN_RANDOM, slot) < 0)
        return NULL;
    return name;
}

/* Whether path's last name has the hidden form. */
static int hidden_form(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base), suffix = strlen(SPLIT_DIR_SUFFIX);
    if (base[0] != '.' || n <= 1 + suffix + OUTPUT_HIDDEN_RANDOM) return 0;
    if (strncmp(base + n - OUTPUT_HIDDEN_RANDOM - suffix, SPLIT_DIR_SUFFIX, suffix)) return 0;
    for (size_t i = n - OUTPUT_HIDDEN_RANDOM; i < n; i++)
        if (!isalnum((unsigned char)base[i])) return 0;
    return 1;
}

/* Removes the directory at path with its files, if it is one and no live
 * sort holds its lock.  A directory without a lock file is only removed
 * if empty: its maker, between the two steps, then fails to make its lock
 * file and takes another name. */
int split_dir_remove_stale(const char *path)
{
    struct stat st, held, named;
    if (!hidden_form(path) || lstat(path, &st) < 0 || !S_ISDIR(st.st_mode)) return 0;
    char *lock = NULL;
    if (asprintf(&lock, "%s/" LOCK_NAME, path) < 0) return 0;
    int fd = open(lock, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    int removed = 0;
    if (fd < 0) {
        removed = errno == ENOENT && rmdir(path) == 0;
    } else if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &held) == 0
               && lstat(lock, &named) == 0 && same_file(&held, &named)) {
        int dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir_fd >= 0) {
            cleanup_remove_dir_at(dir_fd, path);
            close(dir_fd);
            removed = lstat(path, &st) < 0;
        }
    }
    if (fd >= 0) close(fd);
    free(lock);
    return removed;
}

/* The real path of format's directory, and the stem of the hidden names
 * there. */
static int split_beside(split_dir *d, const char *format, char **stem)
{
    char *a = strdup(format), *b = strdup(format), real[PATH_MAX];
    *stem = NULL;
    if (a && b) {
        const char *parent = dirname(a);
        d->dir = strdup(realpath(parent, real) ? real : parent);
        if (d->dir)
            *stem = name_fit(d->dir, basename(b), 1 + strlen(SPLIT_DIR_SUFFIX) + OUTPUT_HIDDEN_RANDOM);
    }
    free(a);
    free(b);
    return *stem ? 0 : -1;
}

/* One try at slot's name: 0 when made and locked; 1 if it is taken (or a
 * sweeping sort took it first); -1 with errno. */
static int make_one(split_dir *d, char *path)
{
    if (cleanup_mkdir(path) < 0) return errno == EEXIST ? 1 : -1;
    char *lock = NULL;
    struct stat held, named;
    int fd = asprintf(&lock, "%s/" LOCK_NAME, path) < 0 ? -1
           : open(lock, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int locked = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
    /* A sweep may have locked and removed it before this lock: where the
     * file system has no locks at all, nothing sweeps either. */
    int ours = fd >= 0 && (locked || errno != EWOULDBLOCK) && fstat(fd, &held) == 0
            && lstat(lock, &named) == 0 && same_file(&held, &named);
    int saved = errno;
    free(lock);
    if (ours) {
        d->path = path;
        d->lock_fd = fd;
        return 0;
    }
    if (fd >= 0) close(fd);
    else rmdir(path);       /* fails harmlessly if a sweep took it */
    cleanup_forget(path);
    errno = saved;
    return saved == ENOENT || fd >= 0 ? 1 : -1;
}

int split_dir_open(split_dir *d, const char *format, errmsg *err)
{
    char *stem;
    memset(d, 0, sizeof *d);
    d->lock_fd = -1;
    if (split_beside(d, format, &stem) < 0) return errmsg_set(err, "out of memory");
    for (int slot = 0; slot < OUTPUT_HIDDEN_SLOTS; slot++) {
        char *name = hidden_name(d->dir, stem, slot);
        if (name) split_dir_remove_stale(name);
        free(name);
    }
    int r = 1;
    for (int slot = 0; r > 0 && slot < OUTPUT_HIDDEN_SLOTS; slot++) {
        char *path = hidden_name(d->dir, stem, slot);
        r = path ? make_one(d, path) : -1;
        if (r != 0) free(path);
        if (r < 0)
            errmsg_set(err, "cannot make a hidden directory in '%s' for the outputs: %s", d->dir,
                       strerror(errno ? errno : ENOMEM));
    }
    if (r > 0)
        errmsg_set(err, "cannot make a hidden directory in '%s' for the outputs: each of %d was "
                   "taken by a live sort", d->dir, OUTPUT_HIDDEN_SLOTS);
    free(stem);
    if (r == 0) return 0;
    free(d->dir);
    d->dir = NULL;
    return -1;
}

char *split_dir_file(const split_dir *d, unsigned long number, const char *suffix)
{
    char *name;
    return asprintf(&name, "%s/%lu%s", d->path, number, suffix) < 0 ? NULL : name;
}

static void forget(split_dir *d)
{
    cleanup_forget(d->path);
    if (d->lock_fd >= 0) close(d->lock_fd);
    free(d->path);
    free(d->dir);
    d->path = d->dir = NULL;
    d->lock_fd = -1;
}

/* The lock goes last: until the directory is gone, no sweep takes it. */
void split_dir_remove(split_dir *d)
{
    if (!d->path) return;
    cleanup_remove_path(d->path);
    forget(d);
}
