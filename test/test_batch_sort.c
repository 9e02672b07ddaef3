/* test_batch_sort.c -- unit tests: batch_sort() orders keys bytewise.
 *
 * Each case fills a batch with keys of one shape, in random order, sorts it
 * and compares the result with qsort() by memcmp over the common length,
 * then shorter first: RocksDB's bytewise order, which the rest of the
 * pipeline relies on.  The shapes aim at how batch_sort() works: 24 key
 * bytes held inline after the prefix all keys share, then tie groups
 * refined window by window.  So there are long shared prefixes, keys that
 * are prefixes of others or differ from them only by trailing zero bytes
 * (the inline windows are zero padded), groups that tie on one or several
 * windows, both small groups and large ones, lengths from 0 up, and random
 * bytes.  One batch serves every case in turn, so the shared prefix a batch
 * starts with is often wrong.  Prints "N passed, M failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/thread_pool.h>
#include "load/batch_internal.h"
#include "load/batch_sort.h"
#include "batch_keys.h"
#include "util/pool_jobs.h"
#include "unit_report.h"

#define MAX_KEYS 200000
#define MAX_KEY_LEN 400

typedef struct {
    uint8_t bytes[MAX_KEY_LEN];
    size_t len;
} test_key;

static test_key *keys;     /* the case's keys, in the order they are added */
static size_t n_keys;

static uint64_t rng_state = 20261125;

static uint32_t rnd(uint32_t bound)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % bound;
}

/* Few distinct byte values, zero among them, make ties and zero padding
 * matter; 255 checks that bytes compare unsigned. */
static uint8_t rnd_byte(void)
{
    static const uint8_t few[] = {0, 0, 1, 2, 'A', 255};
    return few[rnd(sizeof few)];
}

static test_key *new_key(void)
{
    if (n_keys == MAX_KEYS) {
        fprintf(stderr, "too many keys\n");
        exit(2);
    }
    test_key *k = &keys[n_keys++];
    k->len = 0;
    return k;
}

static void put(test_key *k, const uint8_t *b, size_t len)
{
    if (k->len + len > MAX_KEY_LEN) len = MAX_KEY_LEN - k->len;
    memcpy(k->bytes + k->len, b, len);
    k->len += len;
}

static void put_random(test_key *k, size_t len)
{
    for (size_t i = 0; i < len && k->len < MAX_KEY_LEN; i++) k->bytes[k->len++] = rnd_byte();
}

static void put_fill(test_key *k, uint8_t byte, size_t len)
{
    for (size_t i = 0; i < len && k->len < MAX_KEY_LEN; i++) k->bytes[k->len++] = byte;
}

/* ---- shapes ---- */

static void shape_random(void)
{
    for (int i = 0; i < 20000; i++) put_random(new_key(), rnd(60));
}

/* All keys share 37 bytes: the inline words start after them. */
static void shape_shared_prefix(void)
{
    uint8_t prefix[37];
    for (size_t i = 0; i < sizeof prefix; i++) prefix[i] = (uint8_t)('a' + i % 26);
    for (int i = 0; i < 20000; i++) {
        test_key *k = new_key();
        put(k, prefix, sizeof prefix);
        put_random(k, rnd(40));
    }
}

/* Truncations of a few long keys, and the same followed by zero bytes:
 * keys that are prefixes of one another, equal inline words included. */
static void shape_prefixes(void)
{
    for (int base = 0; base < 40; base++) {
        uint8_t b[150];
        for (size_t i = 0; i < sizeof b; i++) b[i] = rnd_byte();
        for (int i = 0; i < 300; i++) {
            test_key *k = new_key();
            put(k, b, rnd(sizeof b + 1));
            if (rnd(3) == 0) put_fill(k, 0, rnd(30));
        }
    }
}

/* Groups of keys that agree on 24, 47, 48, 49, 100 or 300 bytes, then
 * differ: each group ties on one or several windows.  Sizes around the
 * small-group limit and far above it. */
static void shape_deep_ties(void)
{
    static const size_t sizes[] = {2, 3, 7, 8, 9, 10, 17, 64, 700, 3000};
    static const size_t shared[] = {24, 47, 48, 49, 100, 300};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        for (size_t d = 0; d < sizeof shared / sizeof *shared; d++) {
            uint8_t common[300];
            for (size_t i = 0; i < shared[d]; i++) common[i] = rnd_byte();
            for (size_t i = 0; i < sizes[s]; i++) {
                test_key *k = new_key();
                put(k, common, shared[d]);
                put_random(k, rnd(30));
            }
        }
    }
}

/* Groups whose keys all end one or two bytes after a shared part that
 * ends at, before or after a window's end: the last bytes decide. */
static void shape_short_tails(void)
{
    static const size_t shared[] = {23, 24, 25, 47, 48, 49, 72};
    for (size_t d = 0; d < sizeof shared / sizeof *shared; d++) {
        for (size_t tail = 1; tail <= 2; tail++) {
            uint8_t common[72];
            for (size_t i = 0; i < shared[d]; i++) common[i] = rnd_byte();
            for (int i = 0; i < 40; i++) {
                test_key *k = new_key();
                put(k, common, shared[d]);
                for (size_t t = 0; t < tail; t++) put_fill(k, (uint8_t)rnd(256), 1);
            }
        }
    }
}

/* "P", then 0..119 zero bytes, some ending in 1: the whole group has the
 * same zero-padded windows and differs only in length, over several. */
static void shape_zero_tails(void)
{
    for (int rep = 0; rep < 3; rep++) {
        for (size_t z = 0; z < 120; z++) {
            test_key *k = new_key();
            put(k, (const uint8_t *)"P", 1);
            put_fill(k, 0, z);
            if (rep == 2) put_fill(k, 1, 1);
        }
    }
}

/* Every length from 0 to 399 of one key, and duplicates of a few keys. */
static void shape_lengths_and_duplicates(void)
{
    uint8_t b[MAX_KEY_LEN];
    for (size_t i = 0; i < sizeof b; i++) b[i] = rnd_byte();
    for (size_t len = 0; len < MAX_KEY_LEN; len++) put(new_key(), b, len);
    for (int i = 0; i < 50; i++) put(new_key(), b, 30 + (size_t)i % 3);
}

/* Keys like sort keys of read names: one of two prefixes, fields of digits. */
static void shape_names(void)
{
    for (int i = 0; i < 50000; i++) {
        char name[120];
        int n = snprintf(name, sizeof name, "%s:%u:%u:%u:%u", rnd(7) ? "SIM:1:FCX" : "SIM:2:FCY",
                         1 + rnd(2), 1101 + rnd(30), 1000 + rnd(300), 1000 + rnd(300));
        test_key *k = new_key();
        put(k, (const uint8_t *)name, (size_t)n + 1);
        put_fill(k, 0, 1);
        put_fill(k, (uint8_t)rnd(2), 1);
        put_random(k, 8);
    }
}

/* A large mix, so the merge runs through many levels. */
static void shape_everything(void)
{
    shape_random();
    shape_shared_prefix();
    shape_prefixes();
    shape_deep_ties();
    shape_short_tails();
    shape_zero_tails();
    shape_lengths_and_duplicates();
    shape_names();
}

/* ---- checking ---- */

static int bytewise(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
    int c = memcmp(a, b, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static int by_key(const void *pa, const void *pb)
{
    const test_key *a = *(const test_key *const *)pa, *b = *(const test_key *const *)pb;
    return bytewise(a->bytes, a->len, b->bytes, b->len);
}

static void shuffle_keys(void)
{
    for (size_t i = n_keys; i > 1; i--) {
        size_t j = rnd((uint32_t)i);
        test_key t = keys[i - 1];
        keys[i - 1] = keys[j];
        keys[j] = t;
    }
}

/* A key of the test's making, added as batch_add() adds a record's:
 * 1 if added, 0 if the batch is full, -1 when out of memory. */
static int fill(batch *sb)
{
    for (size_t i = 0; i < n_keys; i++) {
        uint64_t index = i;
        if (test_batch_add_key(sb, keys[i].bytes, keys[i].len, (const uint8_t *)&index, sizeof index) != 1)
            return -1;
    }
    return 0;
}

/* The batch's keys must be the reference order's, each with its value. */
static const char *check_order(const batch *sb, test_key **want)
{
    if (batch_count(sb) != n_keys) return "the batch lost keys";
    for (size_t i = 0; i < n_keys; i++) {
        size_t kl, vl;
        const uint8_t *k = batch_key(sb, i, &kl), *v = batch_value(sb, i, &vl);
        uint64_t index;
        if (vl != sizeof index) return "a value has the wrong length";
        memcpy(&index, v, sizeof index);
        if (bytewise(k, kl, want[i]->bytes, want[i]->len) != 0) return "keys out of bytewise order";
        if (index >= n_keys || bytewise(k, kl, keys[index].bytes, keys[index].len) != 0)
            return "a value is not its key's";
    }
    return NULL;
}

/* A runner that calls the jobs last first, on this thread: a parallel
 * sort must not depend on the order its jobs run in. */
static void backwards(void *ctx, int n, batch_job_fn job, void *arg)
{
    (void)ctx;
    for (int i = n; i-- > 0;) job(arg, i);
}

/* How a case is sorted: by batch_sort(), or in parts by a runner. */
typedef struct {
    const char *suffix;
    batch_runner run;
    void *ctx;
    int parts;
} sorter;

static void sort_by(batch *sb, const sorter *s)
{
    if (s->run) batch_sort_parallel(sb, s->run, s->ctx, s->parts);
    else batch_sort(sb);
}

/* The batch copied in key order in parts must be the serial copy: the
 * same bytes and the same marks. */
static const char *check_pack(const batch *sb, const sorter *s)
{
    packed_run *one = batch_pack(sb), *parts = batch_pack_parallel(sb, s->run, s->ctx, s->parts);
    const char *problem = !one || !parts ? "batch_pack failed" : NULL;
    if (!problem && batch_packed_marks(one) != batch_packed_marks(parts)) problem = "packed marks differ";
    for (size_t i = 0; !problem && i < batch_packed_marks(one); i++)
        if (batch_packed_mark(one, i) - batch_packed_first(one) != batch_packed_mark(parts, i) - batch_packed_first(parts))
            problem = "a packed mark points elsewhere";
    const uint8_t *a = one ? batch_packed_first(one) : NULL, *b = parts ? batch_packed_first(parts) : NULL;
    for (; !problem && a && b; a = batch_packed_next(one, a), b = batch_packed_next(parts, b)) {
        size_t la, lb, va, vb;
        const uint8_t *ka = packed_key(a, &la), *kb = packed_key(b, &lb);
        const uint8_t *xa = packed_value(a, &va), *xb = packed_value(b, &vb);
        if (la != lb || va != vb || memcmp(ka, kb, la) || memcmp(xa, xb, va))
            problem = "a packed record differs";
    }
    if (!problem && (a || b)) problem = "the packed copies differ in length";
    batch_packed_destroy(one);
    batch_packed_destroy(parts);
    return problem;
}

static void run_case(batch *sb, const char *name, void (*shape)(void), const sorter *how)
{
    n_keys = 0;
    shape();
    shuffle_keys();
    test_key **want = malloc(n_keys * sizeof *want);
    if (!want) exit(2);
    for (size_t i = 0; i < n_keys; i++) want[i] = &keys[i];
    qsort(want, n_keys, sizeof *want, by_key);
    batch_clear(sb);
    const char *problem = fill(sb) < 0 ? "test_batch_add_key failed" : NULL;
    if (!problem) {
        sort_by(sb, how);
        problem = check_order(sb, want);
    }
    if (!problem && how->run) problem = check_pack(sb, how);
    /* A batch held to be read drops its scratch; the next case refills
     * this batch, which must make the scratch again before its sort. */
    batch_drop_scratch(sb);
    if (!problem) problem = check_order(sb, want);
    char full[128];
    snprintf(full, sizeof full, "%s%s", name, how->suffix);
    report(full, problem);
    free(want);
}

int main(void)
{
    static const struct {
        const char *name;
        void (*shape)(void);
    } cases[] = {
        {"random_bytes", shape_random},
        {"long_shared_prefix", shape_shared_prefix},
        {"keys_that_prefix_others", shape_prefixes},
        {"groups_tied_over_windows", shape_deep_ties},
        {"groups_decided_by_last_bytes", shape_short_tails},
        {"zero_tails_differ_in_length", shape_zero_tails},
        {"every_length_and_duplicates", shape_lengths_and_duplicates},
        {"name_like_keys", shape_names},
        {"all_shapes_at_once", shape_everything},
    };
    size_t n_cases = sizeof cases / sizeof *cases;
    keys = malloc(MAX_KEYS * sizeof *keys);
    batch *sb = batch_create((size_t)256 << 20);
    hts_tpool *pool = hts_tpool_init(4);
    if (!keys || !sb || !pool) return 2;
    /* Parts of every size, odd counts among them (a range without a partner
     * in a merge round), in any order, and on real threads. */
    const sorter how[] = {
        {"", NULL, NULL, 1}, {"_in_2_parts", backwards, NULL, 2},
        {"_in_3_parts", backwards, NULL, 3}, {"_in_7_parts", backwards, NULL, 7},
        {"_in_64_parts", backwards, NULL, 64}, {"_in_5_parts_on_a_pool", pool_jobs_runner, pool, 5},
        {"_in_16_parts_on_a_pool", pool_jobs_runner, pool, 16},
    };
    for (size_t h = 0; h < sizeof how / sizeof *how; h++) {
        /* Forward, then backward: each case follows another shape's batch. */
        for (size_t i = 0; i < n_cases; i++) run_case(sb, cases[i].name, cases[i].shape, &how[h]);
        for (size_t i = n_cases; i-- > 0;) run_case(sb, cases[i].name, cases[i].shape, &how[h]);
    }
    hts_tpool_destroy(pool);
    batch_destroy(sb);
    free(keys);
    return report_summary();
}
