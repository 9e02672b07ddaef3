/* util/heap_trim.h -- hands the allocator's free memory back to the system, now and then.
 *
 * Contract: heap_trim_start() starts a thread (THREAD_TRIM) that calls
 * glibc's malloc_trim(0) every `period` seconds until heap_trim_stop(),
 * which wakes and joins it.  NULL when the thread cannot start or without
 * glibc: then nothing trims, which costs memory, never correctness.
 * heap_trim_stop(NULL) does nothing.
 *
 * Why: RocksDB allocates a readahead buffer of a little over 2 MiB again
 * and again, on many threads.  Once glibc's adaptive mmap threshold has
 * risen past that size, the buffers come from its per-thread arenas, and
 * what they free stays there: tens of MB of RSS that no one uses, as much
 * as 15% of a budget of a few hundred MB.  malloc_trim() returns the free
 * pages inside the arenas too (doc/DESIGN.md, "The readout's memory").
 */
#ifndef HEAP_TRIM_H
#define HEAP_TRIM_H

typedef struct heap_trimmer heap_trimmer;

heap_trimmer *heap_trim_start(double period);
void heap_trim_stop(heap_trimmer *t);

#endif
