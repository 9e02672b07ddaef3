/* alloc_fault.c -- an LD_PRELOAD library for the tests (test/resume_guards.py):
 * memory running out on the threads of one phase.
 *
 * ROCKSORT_TEST_FAULT="alloc:ERRNO:SIZE:NAME" makes malloc(), calloc() and
 * realloc() of SIZE bytes or more fail with ERRNO on the threads named NAME
 * (util/thread.h's names); every other allocation goes to glibc's own
 * allocator.  It replaces the allocator, so it is never loaded under ASan
 * or valgrind, which replace it too (and it is apart from
 * test/fault_inject.c, which the sanitizer run loads).  Built by the test
 * that needs it, with the C compiler that built rocksort.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

/* glibc's allocator under its own names, so that no dlsym() (which may
 * allocate) is needed. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);

static int alloc_fails(size_t size)
{
    static __thread int inside;
    const char *spec = getenv("ROCKSORT_TEST_FAULT");
    if (!spec || strncmp(spec, "alloc:", 6) || inside) return 0;
    inside = 1;
    char name[17] = "";
    int code = 0, n = 0;
    unsigned long long from = 0;
    int match = sscanf(spec, "alloc:%d:%llu:%n", &code, &from, &n) == 2 && n && size >= from &&
                prctl(PR_GET_NAME, name) == 0 && !strcmp(name, spec + n);
    inside = 0;
    if (match) errno = code;
    return match;
}

void *malloc(size_t size)
{
    return alloc_fails(size) ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    return n && size && alloc_fails(n * size) ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    return alloc_fails(size) ? NULL : __libc_realloc(p, size);
}
