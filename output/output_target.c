/* output/output_target.c -- see output/output_target.h. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "output/output_target.h"

#define FOLLOW_LINK (-2)
#define MAX_LINK_HOPS 40    /* the kernel's own limit before ELOOP */

static char *dir_of(const char *path)
{
    char *copy = strdup(path), *dir = copy ? strdup(dirname(copy)) : NULL;
    free(copy);
    return dir;
}

/* A name in this process's descriptor table (/dev/fd, /dev/stdout's
 * /proc/self/fd, /proc/thread-self/fd) is an open descriptor.  samtools
 * writes through it, and so must we: renaming a file onto whatever it
 * points to would bypass the descriptor (a pipe, a file opened to append). */
static int is_own_fd_dir(const char *dir)
{
    char real[PATH_MAX];
    if (!realpath(dir, real)) return 0;
    int pid, tid, end = 0;
    if (sscanf(real, "/proc/%d/fd%n", &pid, &end) == 1 && end && !real[end])
        return pid == getpid();
    end = 0;
    if (sscanf(real, "/proc/%d/task/%d/fd%n", &pid, &tid, &end) == 2 && end && !real[end])
        return pid == getpid();
    return 0;
}

/* The link's target, relative to the link's directory as the kernel reads it. */
static char *link_target(const char *path)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    if (n < 0) return NULL;
    buf[n] = '\0';
    if (buf[0] == '/') return strdup(buf);
    char *dir = dir_of(path), *joined = NULL;
    if (dir && asprintf(&joined, "%s/%s", dir, buf) < 0) joined = NULL;
    free(dir);
    return joined;
}

/* A new file, or one renamed over an old one, is made in path's directory:
 * it must exist and the user must be allowed to create files in it.  The
 * effective ids decide, as they will for the real creation. */
static int check_parent(const char *fn, const char *path, errmsg *err)
{
    char *dir = dir_of(path);
    if (!dir) return errmsg_set(err, "out of memory");
    struct stat st;
    int ret = 0;
    if (stat(dir, &st) < 0)
        ret = errno == ENOENT
            ? errmsg_set(err, "cannot write '%s': directory '%s' does not exist", fn, dir)
            : errmsg_set(err, "cannot write '%s': directory '%s': %s", fn, dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        ret = errmsg_set(err, "cannot write '%s': '%s' is not a directory", fn, dir);
    else if (euidaccess(dir, W_OK | X_OK) < 0)
        ret = errmsg_set(err, "cannot write '%s': cannot create files in directory '%s': %s",
                     fn, dir, strerror(errno));
    free(dir);
    return ret;
}

/* One step along fn's chain of links; path is where the chain has led. */
static int classify(const char *fn, const char *path, errmsg *err)
{
    char *dir = dir_of(path);
    int own_fd = dir && is_own_fd_dir(dir);
    free(dir);
    if (own_fd) return TARGET_DIRECT;
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            return errmsg_set(err, "cannot write '%s': %s", fn, strerror(errno));
        return check_parent(fn, path, err) < 0 ? -1 : TARGET_RENAME;
    }
    if (S_ISLNK(st.st_mode)) return FOLLOW_LINK;
    if (S_ISDIR(st.st_mode)) return errmsg_set(err, "cannot write '%s': it is a directory", fn);
    if (S_ISREG(st.st_mode)) return check_parent(fn, path, err) < 0 ? -1 : TARGET_RENAME;
    return TARGET_DIRECT;   /* a device, FIFO or socket: nothing to rename */
}

int output_target(const char *fn, char **path_out, errmsg *err)
{
    *path_out = NULL;
    if (!strcmp(fn, "-")) return TARGET_STDOUT;
    /* Such a name would pass every check and fail only at the final rename. */
    if (!*fn || fn[strlen(fn) - 1] == '/')
        return errmsg_set(err, "cannot write '%s': not a file name", fn);
    char *path = strdup(fn);
    for (int hops = 0; path && hops <= MAX_LINK_HOPS; hops++) {
        int kind = classify(fn, path, err);
        if (kind != FOLLOW_LINK) {
            if (kind < 0) free(path);
            else *path_out = path;
            return kind;
        }
        char *next = link_target(path);
        free(path);
        path = next;
    }
    if (!path) return errmsg_set(err, "cannot follow the link '%s': %s", fn, strerror(errno));
    free(path);
    return errmsg_set(err, "cannot write '%s': too many levels of symbolic links", fn);
}

int output_target_check(const char *fn, errmsg *err)
{
    char *path = NULL;
    int kind = output_target(fn, &path, err);
    free(path);
    return kind < 0 ? -1 : 0;
}
