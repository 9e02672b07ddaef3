/* output/output_stale.c -- see output/output_stale.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "output/output_stale.h"
#include "util/name_fit.h"

char *output_stale_stem(const char *dir, const char *base)
{
    return name_fit(dir, base, 1 + strlen(OUTPUT_HIDDEN_SUFFIX) + OUTPUT_HIDDEN_RANDOM);
}

char *output_stale_hidden_name(const char *dir, const char *stem, int slot)
{
    char tail[16] = "XXXXXX", *name;    /* room for any int: -Wformat-truncation */
    if (slot >= 0) snprintf(tail, sizeof tail, "%0*d", OUTPUT_HIDDEN_RANDOM, slot);
    if (asprintf(&name, "%s/.%s" OUTPUT_HIDDEN_SUFFIX "%s", strcmp(dir, "/") ? dir : "", stem,
                 tail) < 0)
        return NULL;
    return name;
}

int output_stale_hidden_form(const char *name, const char *stem)
{
    size_t n = strlen(name), suffix = strlen(OUTPUT_HIDDEN_SUFFIX);
    size_t tail = suffix + OUTPUT_HIDDEN_RANDOM;
    if (name[0] != '.' || n <= tail + 1) return 0;
    if (stem && (n != 1 + strlen(stem) + tail || strncmp(name + 1, stem, strlen(stem))))
        return 0;
    if (strncmp(name + n - tail, OUTPUT_HIDDEN_SUFFIX, suffix)) return 0;
    for (size_t i = n - OUTPUT_HIDDEN_RANDOM; i < n; i++)
        if (!isalnum((unsigned char)name[i])) return 0;
    return 1;
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int output_stale_hold(int fd, const char *path)
{
    struct stat held, named;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) return errno == EWOULDBLOCK ? -1 : 0;
    /* A sweep may have locked, removed and let go of it before this lock. */
    return fstat(fd, &held) == 0 && lstat(path, &named) == 0 && same_file(&held, &named) ? 0 : -1;
}

/* Whether the lock on fd is ours: taken, or (dead_if_no_locks) refused
 * by a file system that has none. */
static int lock_taken(int fd, int dead_if_no_locks)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 1;
    return dead_if_no_locks && errno != EWOULDBLOCK && errno != EINTR;
}

/* Only a regular file is opened: opening a device or a FIFO can act or
 * block. */
int output_stale_remove(const char *path, int dead_if_no_locks)
{
    struct stat named, held;
    if (lstat(path, &named) < 0 || !S_ISREG(named.st_mode)) return 0;
    /* Writable: on NFS an exclusive flock() is a POSIX lock, which needs it. */
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return 0;
    int removed = fstat(fd, &held) == 0 && same_file(&named, &held) &&
                  lock_taken(fd, dead_if_no_locks) && lstat(path, &named) == 0 &&
                  same_file(&named, &held) && unlink(path) == 0;
    close(fd);
    return removed;
}

void output_stale_sweep(const char *dir, const char *stem)
{
    for (int slot = 0; slot < OUTPUT_HIDDEN_SLOTS; slot++) {
        char *name = output_stale_hidden_name(dir, stem, slot);
        if (name) output_stale_remove(name, 0);
        free(name);
    }
}
