/* temp_sync.c -- see temp_sync.h.
 *
 * Why: RocksDB makes every ingested run durable.  SstFileWriter::Finish
 * syncs the file and ingestion syncs it and its directory again, and the C
 * API cannot turn that off.  On the 1 GB benchmark the spill thread spent
 * about a quarter of the load phase in fdatasync, waiting for each run to
 * reach the disk.  The runs need no durability: after a crash the sort is
 * lost either way, and the directory is deleted when the sort ends.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "temp_sync.h"

typedef int (*sync_fn)(int);

static sync_fn libc_fsync, libc_fdatasync;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;
static char skip_dir[PATH_MAX];     /* resolved; empty: skip nothing */

static void find_libc(void)
{
    libc_fsync = (sync_fn)dlsym(RTLD_NEXT, "fsync");
    libc_fdatasync = (sync_fn)dlsym(RTLD_NEXT, "fdatasync");
}

void temp_sync_skip_under(const char *dir)
{
    if (!dir || !realpath(dir, skip_dir)) skip_dir[0] = '\0';
}

static int is_temp(int fd)
{
    if (!skip_dir[0]) return 0;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    size_t len = strlen(skip_dir);
    return strncmp(path, skip_dir, len) == 0 && (path[len] == '/' || path[len] == '\0');
}

int fsync(int fd)
{
    if (is_temp(fd)) return 0;
    pthread_once(&libc_once, find_libc);
    return libc_fsync ? libc_fsync(fd) : 0;
}

int fdatasync(int fd)
{
    if (is_temp(fd)) return 0;
    pthread_once(&libc_once, find_libc);
    return libc_fdatasync ? libc_fdatasync(fd) : 0;
}
