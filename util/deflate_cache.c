/* util/deflate_cache.c -- see util/deflate_cache.h. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <libdeflate.h>
#include "util/deflate_cache.h"

/* Each block starts with its usable size, so that a free can tell whether
 * to keep it; 16 bytes keep malloc's alignment for libdeflate. */
typedef union {
    size_t size;
    max_align_t align;
} block_head;

static pthread_key_t kept_key;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;
static int kept_ok;

static void free_kept(void *head)
{
    free(head);
}

static void make_key(void)
{
    kept_ok = pthread_key_create(&kept_key, free_kept) == 0;
}

static int keepable(size_t size)
{
    return size >= DEFLATE_CACHE_MIN && size <= DEFLATE_CACHE_MAX;
}

void *deflate_cache_alloc(size_t size)
{
    pthread_once(&kept_once, make_key);
    if (kept_ok && keepable(size)) {
        block_head *kept = pthread_getspecific(kept_key);
        if (kept && kept->size >= size) {
            pthread_setspecific(kept_key, NULL);
            return kept + 1;
        }
    }
    if (size > SIZE_MAX - sizeof(block_head)) return NULL;
    block_head *h = malloc(sizeof *h + size);
    if (!h) return NULL;
    h->size = size;
    return h + 1;
}

/* The larger of the kept block and this one stays: the same thread asks for
 * the same compressor size again, and a smaller one would not do. */
void deflate_cache_free(void *p)
{
    if (!p) return;
    block_head *h = (block_head *)p - 1;
    if (!kept_ok || !keepable(h->size)) {
        free(h);
        return;
    }
    block_head *kept = pthread_getspecific(kept_key);
    if (kept && kept->size >= h->size) {
        free(h);
        return;
    }
    if (pthread_setspecific(kept_key, h) != 0) {
        free(h);
        return;
    }
    free(kept);
}

void deflate_cache_install(void)
{
    pthread_once(&kept_once, make_key);
    libdeflate_set_memory_allocator(deflate_cache_alloc, deflate_cache_free);
}
