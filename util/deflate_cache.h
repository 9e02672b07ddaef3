/* util/deflate_cache.h -- each thread keeps its libdeflate compressor's memory.
 *
 * Contract: deflate_cache_install() makes libdeflate allocate through this
 * module, process-wide; call it once, before any thread compresses or
 * decompresses.  libdeflate 1.14 frees through whatever allocator is
 * installed at the free, so no libdeflate object may live across the
 * install: htslib 1.24 allocates and frees each within one call.  Each
 * thread then keeps the last block libdeflate freed on it, if between
 * DEFLATE_CACHE_MIN and DEFLATE_CACHE_MAX bytes, and hands it back to the
 * thread's next allocation that fits.  A thread's kept
 * block is freed when the thread exits (the main thread's stays reachable
 * until the process ends).  Other sizes go to malloc and free as before.
 * Nothing here changes what libdeflate computes, only where its state
 * lives.
 *
 * Why: htslib 1.24 allocates a libdeflate compressor for every BGZF block it
 * compresses (0.67 MB at the default level), and frees it afterwards.  Under
 * a small budget the allocator's mmap threshold is fixed at 256 KiB
 * (engine/sort_plan.c), so each compressor was a fresh mapping whose pages
 * the kernel faulted in and zeroed again, block after block
 * (doc/DESIGN.md, "The readout's memory").
 */
#ifndef DEFLATE_CACHE_H
#define DEFLATE_CACHE_H

#include <stddef.h>

/* Kept: a compressor at htslib's levels 1-7 (libdeflate's 1-8); the
 * near-optimal parser's 9 MB state at -l 8 and 9, and the small
 * decompressors, pass through. */
#define DEFLATE_CACHE_MIN ((size_t)64 << 10)
#define DEFLATE_CACHE_MAX ((size_t)1 << 20)

void deflate_cache_install(void);

/* For tests: the allocator libdeflate was given. */
void *deflate_cache_alloc(size_t size);
void deflate_cache_free(void *p);

#endif
