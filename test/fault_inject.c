/* fault_inject.c -- an LD_PRELOAD library for the tests (test/resume_guards.py):
 * makes reads or writes of one file fail as a failing disk would.
 *
 * ROCKSORT_TEST_FAULT="OP:ERRNO:OFFSET:PATH": OP is "read" (read() at a
 * file offset of OFFSET or more), "pwrite" (pwrite() at OFFSET or more) or
 * "flock" (any flock(), OFFSET 0: a file system without locks), on a
 * descriptor open on PATH, or on a file under PATH if it is a directory
 * (as /proc/self/fd names them); such a call fails with ERRNO.  Everything
 * else goes through untouched.  "stall:MS:0:PATH" instead makes each link()
 * of a file under PATH wait MS milliseconds first: RocksDB links a run into
 * its database as it takes it in, so a test sees the run journaled and not
 * yet taken in for that long.  Built by the test that needs it, with the C
 * compiler that built rocksort.  Allocations fail by test/alloc_fault.c, a
 * library of its own: an allocator here would stand in front of ASan's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/types.h>
#include <unistd.h>

static int faulty(int fd, const char *op, long long offset)
{
    const char *spec = getenv("ROCKSORT_TEST_FAULT");
    char want[16], link[64], target[4096];
    int code, n = 0;
    long long from;
    if (!spec || sscanf(spec, "%15[^:]:%d:%lld:%n", want, &code, &from, &n) != 3 || !n ||
        strcmp(want, op) || offset < from)
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, target, sizeof target - 1);
    if (len < 0) return 0;
    target[len] = '\0';
    const char *path = spec + n;
    size_t plen = strlen(path);
    if (strcmp(target, path) && (strncmp(target, path, plen) || target[plen] != '/')) return 0;
    errno = code;
    return 1;
}

ssize_t read(int fd, void *buf, size_t count)
{
    static ssize_t (*real)(int, void *, size_t);
    if (!real) real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    if (faulty(fd, "read", (long long)lseek(fd, 0, SEEK_CUR))) return -1;
    return real(fd, buf, count);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    if (faulty(fd, "pwrite", (long long)offset)) return -1;
    return real(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset)
{
    return pwrite(fd, buf, count, offset);
}

int flock(int fd, int operation)
{
    static int (*real)(int, int);
    if (!real) real = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
    if (faulty(fd, "flock", 0)) return -1;
    return real(fd, operation);
}

int link(const char *from, const char *to)
{
    static int (*real)(const char *, const char *);
    if (!real) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "link");
    const char *spec = getenv("ROCKSORT_TEST_FAULT");
    char target[PATH_MAX];
    int ms, n = 0;
    long long zero;
    if (spec && sscanf(spec, "stall:%d:%lld:%n", &ms, &zero, &n) == 2 && n &&
        realpath(from, target)) {
        size_t plen = strlen(spec + n);
        if (!strncmp(target, spec + n, plen) && target[plen] == '/') usleep((useconds_t)ms * 1000);
    }
    return real(from, to);
}
