/* util/path_within.c -- see util/path_within.h. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "util/path_within.h"

/* Whether the resolved path `real` is `dir_real` or below it. */
static int below(const char *real, const char *dir_real)
{
    size_t n = strlen(dir_real);
    if (!strcmp(dir_real, "/")) return 1;
    return !strncmp(real, dir_real, n) && (real[n] == '\0' || real[n] == '/');
}

/* The place `path` names with its parent directories' links resolved, the
 * last part as written; for a path whose parent does not exist, the deepest
 * ancestor that does.  0, or -1 if nothing of it resolves. */
static int resolve_parent(const char *path, char out[PATH_MAX])
{
    char copy[PATH_MAX];
    if (strlen(path) >= sizeof copy) return -1;
    strcpy(copy, path);
    for (;;) {
        char *slash = strrchr(copy, '/');
        const char *parent = slash == copy ? "/" : slash ? copy : ".";
        if (slash && slash != copy) *slash = '\0';
        if (realpath(parent, out)) return 0;
        if (!slash || slash == copy) return -1;
    }
}

/* Where a link at `path` that does not resolve (its target not there yet)
 * would have a writer create its target: the target, relative to the
 * link's directory.  0, or -1 if path is no such link. */
static int dangling_target(const char *path, char out[PATH_MAX])
{
    struct stat st;
    char target[PATH_MAX];
    if (lstat(path, &st) < 0 || !S_ISLNK(st.st_mode)) return -1;
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) return -1;
    target[n] = '\0';
    const char *slash = strrchr(path, '/');
    if (target[0] == '/' || !slash) return snprintf(out, PATH_MAX, "%s", target) < PATH_MAX ? 0 : -1;
    int dir_len = (int)(slash - path);
    return snprintf(out, PATH_MAX, "%.*s/%s", dir_len, path, target) < PATH_MAX ? 0 : -1;
}

static int within(const char *path, const char *dir_real, int links_left)
{
    char real[PATH_MAX];
    if (realpath(path, real)) {
        if (below(real, dir_real)) return 1;
    } else if (links_left > 0 && dangling_target(path, real) == 0
               && within(real, dir_real, links_left - 1)) {
        return 1;
    }
    if (resolve_parent(path, real) < 0) return 0;
    const char *slash = strrchr(path, '/');
    const char *last = slash ? slash + 1 : path;
    size_t n = strlen(real);
    /* The name itself, unless it is a link into dir (checked above). */
    if (*last && strcmp(last, ".") && strcmp(last, "..") && n + 1 + strlen(last) < sizeof real) {
        if (n > 1) real[n++] = '/';
        strcpy(real + n, last);
    }
    return below(real, dir_real);
}

int path_within_dir(const char *path, const char *dir)
{
    char dir_real[PATH_MAX];
    /* A chain of links not yet made longer than this is no real use. */
    return realpath(dir, dir_real) ? within(path, dir_real, 16) : 0;
}
