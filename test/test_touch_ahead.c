/* test_touch_ahead.c -- the loading batch's memory touched ahead: claims
 * (batch_claim_ahead()) cover the arena once, in order, and start again on
 * an arena replaced for a huge record; on a real pool, load/touch_ahead.h backs
 * no more than its few slices past what the batch holds, for the first
 * batch and for the next one alike.
 *
 * Residency is read with mincore(): the bound holds whatever the pool's
 * speed, so the checks do not depend on timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <htslib/thread_pool.h>
#include "batch_keys.h"
#include "load/touch_ahead.h"
#include "unit_report.h"

#define MIB ((size_t)1 << 20)
#define RECORD_VALUE 1000

static char problem[200];

static int add_record(batch *sb, uint32_t i, size_t val_len)
{
    static uint8_t val[16 * 1024];
    uint8_t key[8] = { 0 };
    memcpy(key, &i, sizeof i);
    memset(val, (int)(i & 0xff), val_len);
    return test_batch_add_key(sb, key, sizeof key, val, val_len);
}

/* The arena's start: the first record, before any sort. */
static uint8_t *arena_of(const batch *sb)
{
    size_t len;
    return (uint8_t *)batch_key(sb, 0, &len) - sizeof(packed_header);
}

static const char *check_claims(void)
{
    batch *sb = batch_create(10 * MIB);
    if (!sb || add_record(sb, 0, 16) != 1) return "cannot make a batch";
    uint8_t *arena = arena_of(sb);
    batch_memory m = batch_claim_ahead(sb, 3 * MIB, MIB);
    if (m.p != arena || m.len != MIB) return "the first claim is not the arena's first MiB";
    m = batch_claim_ahead(sb, 3 * MIB, 4 * MIB);
    if (m.p != arena + MIB || m.len != 2 * MIB)
        return "a claim does not go on where the last ended";
    if (batch_claim_ahead(sb, 3 * MIB, MIB).len) return "memory claimed twice";
    m = batch_claim_ahead(sb, 64 * MIB, 64 * MIB);
    if (m.p != arena + 3 * MIB || m.len != 7 * MIB) return "a claim goes past the arena";
    /* Cleared, the arena keeps its pages: nothing is claimed again. */
    batch_clear(sb);
    if (add_record(sb, 1, 16) != 1 || batch_claim_ahead(sb, 64 * MIB, 64 * MIB).len)
        return "a cleared batch's memory is claimed again";
    batch_destroy(sb);

    sb = batch_create(4096);
    if (!sb || add_record(sb, 0, 16) != 1) return "cannot make a small batch";
    batch_claim_ahead(sb, 4096, 4096);
    batch_clear(sb);
    if (add_record(sb, 1, 8000) != 1) return "a record larger than the batch was refused";
    m = batch_claim_ahead(sb, 64 * MIB, 64 * MIB);
    if (m.p != arena_of(sb) || m.len < 8000)
        return "a replaced arena is not claimed from its start";
    batch_destroy(sb);
    return NULL;
}

/* Bytes of [p, p + len) the kernel backs now. */
static size_t resident(const uint8_t *p, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page, count = 0;
    unsigned char *vec = malloc(n);
    if (!vec || mincore((void *)p, len, vec) < 0) {
        free(vec);
        return (size_t)-1;
    }
    for (size_t i = 0; i < n; i++) count += vec[i] & 1;
    free(vec);
    return count * page;
}

/* Fills sb with `fill` bytes of records as the loader does, slowly, so
 * that a pool touching too far ahead would have the time to. */
static void load(touch_ahead *t, batch *sb, size_t fill, uint32_t *seq)
{
    while (batch_bytes(sb) < fill && add_record(sb, (*seq)++, RECORD_VALUE) == 1) {
        touch_ahead_loaded(t, sb);
        if (*seq % 256 == 0) usleep(1000);
    }
}

/* Backed beyond what sb holds: the slices ahead, the one being filled, and
 * a huge page's rounding where the kernel gives them. */
static const char *check_bound(const batch *sb, const char *which)
{
    size_t limit = batch_bytes(sb) + (TOUCH_AHEAD_SLICES + 1) * TOUCH_AHEAD_SLICE + 2 * MIB;
    size_t got = resident(arena_of(sb), (size_t)256 * MIB);
    if (got == (size_t)-1) return "mincore() failed";
    if (got <= limit) return NULL;
    snprintf(problem, sizeof problem, "%s: %zu MiB backed for %zu MiB of records (at most %zu)",
             which, got / MIB, batch_bytes(sb) / MIB, limit / MIB);
    return problem;
}

static const char *check_pool_bound(hts_tpool *pool)
{
    touch_ahead t;
    batch *first = batch_create(256 * MIB), *second = batch_create(256 * MIB);
    if (!first || !second || touch_ahead_start(&t, pool, 8) < 0) return "cannot start";
    uint32_t seq = 0;
    load(&t, first, 24 * MIB, &seq);
    touch_ahead_settle(&t);     /* first goes to the spill thread */
    load(&t, second, 9 * MIB, &seq);
    touch_ahead_stop(&t);
    const char *why = check_bound(first, "the first batch");
    if (!why) why = check_bound(second, "the next batch");
    batch_destroy(first);
    batch_destroy(second);
    return why;
}

int main(void)
{
    hts_tpool *pool = hts_tpool_init(8);
    if (!pool) return 2;
    report("claims_cover_the_arena_once", check_claims());
    report("touched_a_few_slices_ahead_of_each_batch", check_pool_bound(pool));
    hts_tpool_destroy(pool);
    return report_summary();
}
