/* test_page_cache.c -- POSIX_FADV_DONTNEED keeps the pages; other advice
 * still reaches the C library.
 *
 * A file is written and synced, so its pages are clean: the real DONTNEED
 * would drop them at once, and mincore() would show them gone.  A bad file
 * descriptor shows which path a call took: the C library answers EBADF.
 * Prints `N passed, M failed` last.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGES 64

static int passed, failed;

static void check(int ok, const char *what)
{
    if (ok) passed++;
    else {
        failed++;
        printf("FAIL page_cache: %s\n", what);
    }
}

/* How many of the file's first PAGES pages are in the page cache; -1 on error. */
static int resident_pages(int fd, size_t page)
{
    void *map = mmap(NULL, PAGES * page, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return -1;
    unsigned char vec[PAGES];
    int n = -1;
    if (mincore(map, PAGES * page, vec) == 0) {
        n = 0;
        for (int i = 0; i < PAGES; i++) n += vec[i] & 1;
    }
    munmap(map, PAGES * page);
    return n;
}

int main(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char path[] = "/tmp/test_page_cache.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 2;
    unlink(path);
    char *buf = malloc(PAGES * page);
    if (!buf) return 2;
    memset(buf, 'r', PAGES * page);
    if (write(fd, buf, PAGES * page) != (ssize_t)(PAGES * page) || fdatasync(fd) < 0) return 2;

    check(resident_pages(fd, page) == PAGES, "a file just written is in the cache");
    check(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0, "DONTNEED reports success");
    check(resident_pages(fd, page) == PAGES, "DONTNEED leaves clean pages in the cache");
    check(posix_fadvise(-1, 0, 0, POSIX_FADV_DONTNEED) == 0,
          "DONTNEED does not reach the C library");
    check(posix_fadvise(-1, 0, 0, POSIX_FADV_SEQUENTIAL) == EBADF,
          "other advice reaches the C library");
    check(posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL) == 0, "and works on a real file");

    free(buf);
    close(fd);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
