/* test_heap_trim.c -- the arenas' slack, and the trimmer that gives it back.
 *
 * RocksDB allocates a readahead buffer of a little over 2 MiB again and
 * again.  Once glibc's adaptive mmap threshold has risen past that size
 * (a freed mapping of it raises it), such buffers come from the heap, and
 * freed ones below a block still in use stay resident.  On the 1 GiB input
 * at -@ 16 -m 16M this kept the peak RSS over README's bound; trimmed every
 * half second it stayed within it (bench/RESULTS.md, 2026-11-29).  These
 * tests pin that mechanism with the same block size: the slack is there
 * untrimmed, a running trimmer gives it back, a stop with a long period
 * returns at once, and the sort plan trims only where the budget is large
 * overall but small for each thread.
 * Prints `N passed, M failed` last.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/heap_trim.h"
#include "util/clock_util.h"
#include "engine/sort_plan.h"
#include "unit_report.h"

#define MIB (1024L * 1024)
#define BLOCK (2 * MIB + 4096)   /* RocksDB's readahead buffer, aligned */
#define BLOCKS 24

static int trims(int threads, size_t per_thread)
{
    rocksort_opts o;
    memset(&o, 0, sizeof o);
    o.threads = threads;
    o.mem_per_thread = per_thread;
    return sort_plan_allocator(&o);
}

#ifdef __GLIBC__
static long resident_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    if (f) fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The compiler may drop a block that is written and freed unread: each
 * one escapes through here. */
static void *volatile escaped;

static char *touched_block(void)
{
    char *b = malloc(BLOCK);
    if (b) memset(b, 1, BLOCK);
    escaped = b;
    return b;
}

/* BLOCKS touched blocks freed under one kept last: returns the kept one.
 * The first block, mapped and freed, raises the mmap threshold past
 * BLOCK, so that the others come from the heap. */
static char *leave_slack(void)
{
    free(touched_block());
    char *b[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) b[i] = touched_block();
    char *keep = malloc(4096);
    escaped = keep;
    for (int i = 0; i < BLOCKS; i++) free(b[i]);
    return keep;
}

static const char *slack_stays_untrimmed(void)
{
    long before = resident_kib();
    char *keep = leave_slack();
    usleep(200000);
    long slack = resident_kib() - before;
    free(keep);
    if (slack < BLOCKS * (BLOCK / 1024) / 2)
        return "freed blocks did not stay resident: the allocator no longer keeps this slack";
    return NULL;
}

static const char *trimmer_gives_slack_back(void)
{
    heap_trimmer *t = heap_trim_start(0.05);
    if (!t) return "the trimmer did not start";
    usleep(200000);
    long before = resident_kib();
    char *keep = leave_slack();
    usleep(300000);
    long slack = resident_kib() - before;
    heap_trim_stop(t);
    free(keep);
    if (slack > BLOCKS * (BLOCK / 1024) / 4) return "a running trimmer left the slack resident";
    return NULL;
}

static const char *stop_returns_at_once(void)
{
    heap_trimmer *t = heap_trim_start(60);
    if (!t) return "the trimmer did not start";
    usleep(100000);     /* into its wait */
    double t0 = now_seconds();
    heap_trim_stop(t);
    heap_trim_stop(NULL);
    return now_seconds() - t0 > 1 ? "stopping waited for the period" : NULL;
}

static const char *trims_where_each_thread_has_little(void)
{
    if (!trims(16, 16 * MIB)) return "-@ 16 -m 16M does not trim";
    if (!trims(64, 4 * MIB)) return "-@ 64 -m 4M does not trim";
    if (!trims(16, 32 * MIB)) return "-@ 16 -m 32M does not trim";
    if (trims(2, 768 * MIB)) return "the default budget trims";
    if (trims(16, 768 * MIB)) return "-@ 16 at the default -m trims";
    if (trims(2, 256 * MIB)) return "-@ 2 -m 256M trims";
    if (trims(0, 1024 * MIB)) return "-@ 0 -m 1G trims";
    /* Below 256 MiB in all, large blocks are mapped each time instead. */
    if (trims(2, 16 * MIB)) return "-@ 2 -m 16M trims under a fixed mmap threshold";
    return NULL;
}

#else
/* Elsewhere the contract is that nothing trims, and nothing asks to. */
static const char *nothing_trims_without_glibc(void)
{
    heap_trimmer *t = heap_trim_start(0.05);
    heap_trim_stop(t);
    if (t) return "a trimmer started without glibc";
    return trims(16, 16 * MIB) ? "the plan asks for trims without glibc" : NULL;
}
#endif  /* __GLIBC__ */

int main(void)
{
#ifdef __GLIBC__
    report("slack_stays_untrimmed", slack_stays_untrimmed());
    report("trimmer_gives_slack_back", trimmer_gives_slack_back());
    report("stop_returns_at_once", stop_returns_at_once());
    /* Last: under a small budget it fixes the process's mmap threshold. */
    report("trims_where_each_thread_has_little", trims_where_each_thread_has_little());
#else
    report("nothing_trims_without_glibc", nothing_trims_without_glibc());
#endif
    return report_summary();
}
