/* test_temp_sync.c -- fsync()/fdatasync() skip only the temp directory.
 *
 * The real calls fail with EINVAL on a FIFO, so a FIFO shows which path a
 * call took: 0 means skipped, -1/EINVAL means it reached the C library.
 * Prints `N passed, M failed` last.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../temp_sync.h"

static int passed, failed;

static void check(int ok, const char *what)
{
    if (ok) passed++;
    else {
        failed++;
        printf("FAIL temp_sync: %s\n", what);
    }
}

static int open_fifo(const char *path)
{
    if (mkfifo(path, 0600) < 0) return -1;
    return open(path, O_RDWR);   /* Linux: does not wait for a peer */
}

static int reaches_libc(int (*sync_call)(int), int fd)
{
    errno = 0;
    return sync_call(fd) == -1 && errno == EINVAL;
}

int main(void)
{
    char root[] = "/tmp/test_temp_sync.XXXXXX";
    if (!mkdtemp(root)) return 2;
    char temp[300], inside[320], sibling[300], outside[320];
    snprintf(temp, sizeof temp, "%s/db", root);
    snprintf(inside, sizeof inside, "%s/fifo", temp);
    snprintf(sibling, sizeof sibling, "%s/db-other", root);   /* shares the prefix */
    snprintf(outside, sizeof outside, "%s/fifo", sibling);
    mkdir(temp, 0700);
    mkdir(sibling, 0700);
    int in = open_fifo(inside), out = open_fifo(outside);
    if (in < 0 || out < 0) return 2;

    check(reaches_libc(fdatasync, in), "before any directory is set, a sync reaches libc");
    temp_sync_skip_under(temp);
    check(fdatasync(in) == 0 && fsync(in) == 0, "a file under the temp directory is not synced");
    check(reaches_libc(fdatasync, out) && reaches_libc(fsync, out),
          "a directory sharing the temp directory's prefix is synced");
    int dirfd = open(temp, O_RDONLY | O_DIRECTORY);
    check(dirfd >= 0 && fsync(dirfd) == 0, "the temp directory itself is not synced");
    temp_sync_skip_under(NULL);
    check(reaches_libc(fsync, in), "after clearing, every sync reaches libc again");

    close(dirfd);
    close(in);
    close(out);
    unlink(inside);
    unlink(outside);
    rmdir(temp);
    rmdir(sibling);
    rmdir(root);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
