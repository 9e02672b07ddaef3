/* output_stale.c -- see output_stale.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "output_stale.h"

int output_hidden_form(const char *name, const char *base)
{
    size_t n = strlen(name), suffix = strlen(OUTPUT_HIDDEN_SUFFIX);
    size_t tail = suffix + OUTPUT_HIDDEN_RANDOM;
    if (name[0] != '.' || n <= tail + 1) return 0;
    if (base && (n != 1 + strlen(base) + tail || strncmp(name + 1, base, strlen(base))))
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

/* name in the directory dfd, removed if it is a regular file that no one
 * holds, while this process holds it.  Only a
 * regular file is opened: opening a device or a FIFO can act or block. */
static int remove_unheld(int dfd, const char *name)
{
    struct stat named, held;
    if (fstatat(dfd, name, &named, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(named.st_mode)) return 0;
    /* Writable: on NFS an exclusive flock() is a POSIX lock, which needs it. */
    int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return 0;
    int removed = fstat(fd, &held) == 0 && same_file(&named, &held) &&
                  flock(fd, LOCK_EX | LOCK_NB) == 0 &&
                  fstatat(dfd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
                  same_file(&named, &held) && unlinkat(dfd, name, 0) == 0;
    close(fd);
    return removed;
}

void output_stale_sweep(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (output_hidden_form(e->d_name, base)) remove_unheld(dirfd(d), e->d_name);
    closedir(d);
}
