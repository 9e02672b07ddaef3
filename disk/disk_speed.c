/* disk/disk_speed.c -- see disk/disk_speed.h. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "disk/disk_speed.h"
#include "util/cleanup.h"
#include "util/clock_util.h"

#define CHUNK (1u << 20)
#define ALIGN 4096

/* A private, unlinked file in dir open for direct writes; -1 if none. */
static int open_probe(const char *dir)
{
    char *path = NULL;
    if (asprintf(&path, "%s/.rocksort-disk-probe.XXXXXX", dir) < 0) return -1;
    int fd = cleanup_mkstemp(path), direct = -1;
    if (fd >= 0) {
        direct = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
        close(fd);
        unlink(path);
        cleanup_forget(path);
    }
    free(path);
    return direct;
}

double disk_speed_write_mb_s(const char *dir)
{
    void *buf = NULL;
    int fd = open_probe(dir);
    if (fd < 0 || posix_memalign(&buf, ALIGN, CHUNK) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    memset(buf, 0x5a, CHUNK);
    double t0 = now_seconds();
    size_t done = 0;
    while (done < DISK_PROBE_BYTES && pwrite(fd, buf, CHUNK, (off_t)done) == (ssize_t)CHUNK)
        done += CHUNK;
    double t = now_seconds() - t0;
    close(fd);
    free(buf);
    if (done < DISK_PROBE_BYTES || t <= 0) return -1;
    return (double)done / 1e6 / t;
}
