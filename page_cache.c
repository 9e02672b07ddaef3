/* page_cache.c -- keep freshly written sorted runs in the page cache.
 *
 * Contract: this object defines posix_fadvise() for the whole process.
 * POSIX_FADV_DONTNEED is ignored; every other advice goes to the C library.
 *
 * Why: RocksDB's SstFileWriter, the bulk-load path of its C API, advises the
 * kernel to drop each megabyte of a run right after writing it (its
 * invalidate_page_cache flag cannot be turned off from the C API).  The
 * final merge reads those runs back soon after, so with that advice it read
 * every temp byte from disk again.  Ignoring the advice lets the kernel keep
 * the runs while memory allows, write them back on its own schedule and
 * evict them under pressure as usual.  Measured on a 1 GB BAM, 2 cores:
 * readout 12.4-14.1 s -> 10.0-10.9 s at -u, total 57.2 s -> 54.5 s at -l 6.
 *
 * Writeback is left to the kernel too.  Starting it early for every
 * megabyte (sync_file_range) kept the disk busy during the load, and the
 * spill thread's writes stalled behind ext4 journal commits (single 1 MB
 * writes of 0.4-0.7 s under strace).  Runs that are deleted before the
 * kernel writes them back never reach the disk at all.  Alternating runs on
 * the same BAM: at -l 6 the load went 10.7-14.2 s -> 7.4-9.2 s and the
 * readout grew 1-3 s; median total 73.8 s -> 71.1 s (7 pairs), and 30.7 s ->
 * 27.1 s at -u (3 pairs).  The kernel's dirty limits still throttle a
 * writer that outruns the disk.
 * Nothing in rocksort, htslib or RocksDB relies on DONTNEED for correctness.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>

typedef int (*fadvise_fn)(int, off_t, off_t, int);

static fadvise_fn libc_fadvise;
static pthread_once_t libc_fadvise_once = PTHREAD_ONCE_INIT;

static void find_libc_fadvise(void)
{
    libc_fadvise = (fadvise_fn)dlsym(RTLD_NEXT, "posix_fadvise");
}

int posix_fadvise(int fd, off_t offset, off_t len, int advice)
{
    if (advice == POSIX_FADV_DONTNEED) return 0;
    pthread_once(&libc_fadvise_once, find_libc_fadvise);
    /* Advice is only a hint: without the real call, doing nothing is valid. */
    return libc_fadvise ? libc_fadvise(fd, offset, len, advice) : 0;
}
