/* test_deflate_cache.c -- each thread keeps its libdeflate compressor's memory.
 *
 * htslib 1.24 allocates a compressor for every BGZF block and frees it.
 * Under a small budget the sort fixes glibc's mmap threshold at 256 KiB,
 * so each compressor (0.67 MB at htslib's default level) was mapped anew
 * and its pages faulted in again: 3.7 million minor faults, a tenth of the
 * sort's CPU, at -@ 2 -m 32M on the 1 GiB benchmark input
 * (bench/RESULTS.md, 2026-11-30).  These tests pin the mechanism: a block
 * freed is handed back to the same thread, sizes outside the kept range
 * pass through, a reused compressor writes the same bytes, and compressing
 * block after block under the fixed threshold no longer faults each time.
 * Prints `N passed, M failed` last.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <libdeflate.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include "util/deflate_cache.h"
#include "unit_report.h"

#define BLOCK (64 << 10)
#define LIBDEFLATE_DEFAULT 7      /* htslib's -l 6 */

static const char *freed_block_comes_back(void)
{
    void *a = deflate_cache_alloc(600 << 10);
    if (!a) return "out of memory";
    deflate_cache_free(a);
    void *b = deflate_cache_alloc(500 << 10);
    int same = a == b;
    void *c = deflate_cache_alloc(500 << 10);   /* nothing kept now */
    int fresh = c != b;
    deflate_cache_free(c);
    deflate_cache_free(b);
    if (!same) return "a block freed was not handed back to the thread's next allocation";
    return fresh ? NULL : "one kept block was handed out twice";
}

static const char *too_small_a_block_is_not_reused(void)
{
    void *a = deflate_cache_alloc(DEFLATE_CACHE_MIN);
    if (!a) return "out of memory";
    deflate_cache_free(a);
    void *b = deflate_cache_alloc(DEFLATE_CACHE_MAX);   /* a itself is still kept */
    int larger = b != a;
    deflate_cache_free(b);                 /* the larger one is kept now */
    void *c = deflate_cache_alloc(DEFLATE_CACHE_MAX);
    int kept = c == b;
    deflate_cache_free(c);
    if (!larger) return "a kept block served a larger request";
    return kept ? NULL : "the larger of two freed blocks was not the one kept";
}

static const char *sizes_outside_pass_through(void)
{
    void *small = deflate_cache_alloc(DEFLATE_CACHE_MIN - 1);
    void *big = deflate_cache_alloc(DEFLATE_CACHE_MAX + 1);
    if (!small || !big) return "out of memory";
    memset(small, 1, DEFLATE_CACHE_MIN - 1);
    memset(big, 1, DEFLATE_CACHE_MAX + 1);
    deflate_cache_free(small);
    deflate_cache_free(big);
    void *again = deflate_cache_alloc(DEFLATE_CACHE_MIN - 1);
    void *big_again = deflate_cache_alloc(DEFLATE_CACHE_MAX + 1);
    deflate_cache_free(again);
    deflate_cache_free(big_again);
    deflate_cache_free(NULL);
    return NULL;   /* ASan and valgrind check that each was freed */
}

static void fill_records_like(unsigned char *b, size_t n)
{
    unsigned x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = "ACGTNacgt#:FF,"[(x >> 16) % 14];
    }
}

static size_t compress_once(const unsigned char *in, unsigned char *out, size_t cap)
{
    struct libdeflate_compressor *z = libdeflate_alloc_compressor(LIBDEFLATE_DEFAULT);
    if (!z) return 0;
    size_t n = libdeflate_deflate_compress(z, in, BLOCK, out, cap);
    libdeflate_free_compressor(z);
    return n;
}

static long minor_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_minflt : 0;
}

#define ROUNDS 200

/* The sort's setting under a small budget (engine/sort_plan.c), then block
 * after block as htslib compresses them.  A fresh mapping each time faults
 * in some 70 pages a block. */
static void *compress_blocks(void *arg)
{
    const char **problem = arg;
    unsigned char *in = malloc(BLOCK), *out = malloc(2 * BLOCK), *first = malloc(2 * BLOCK);
    if (!in || !out || !first) {
        *problem = "out of memory";
        goto done;
    }
    fill_records_like(in, BLOCK);
    size_t n0 = compress_once(in, first, 2 * BLOCK);
    long before = minor_faults();
    for (int i = 0; i < ROUNDS; i++) {
        size_t n = compress_once(in, out, 2 * BLOCK);
        if (!n || n != n0 || memcmp(out, first, n)) {
            *problem = "a reused compressor wrote other bytes";
            goto done;
        }
    }
    if (minor_faults() - before > ROUNDS * 4)
        *problem = "compressing each block faulted its compressor's pages in again";
done:
    free(in);
    free(out);
    free(first);
    return NULL;
}

/* On a thread of its own, as the pool's are: its kept block is freed when
 * it exits (valgrind and LeakSanitizer would see it otherwise). */
static const char *blocks_compress_without_faulting_anew(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
#endif
    const char *problem = NULL;
    pthread_t t;
    if (pthread_create(&t, NULL, compress_blocks, &problem) != 0) return "no thread";
    pthread_join(t, NULL);
    return problem;
}

typedef struct {
    const char *(*check)(void);
    const char *problem;
} fresh_check;

static void *run_check(void *arg)
{
    fresh_check *c = arg;
    c->problem = c->check();
    return NULL;
}

/* Each check on a thread of its own, so that none starts with a block kept
 * by the one before. */
static const char *on_fresh_thread(const char *(*check)(void))
{
    fresh_check c = { check, NULL };
    pthread_t t;
    if (pthread_create(&t, NULL, run_check, &c) != 0) return "no thread";
    pthread_join(t, NULL);
    return c.problem;
}

int main(void)
{
    deflate_cache_install();
    report("freed_block_comes_back", on_fresh_thread(freed_block_comes_back));
    report("too_small_a_block_is_not_reused", on_fresh_thread(too_small_a_block_is_not_reused));
    report("sizes_outside_pass_through", on_fresh_thread(sizes_outside_pass_through));
    report("blocks_compress_without_faulting_anew", blocks_compress_without_faulting_anew());
    return report_summary();
}
