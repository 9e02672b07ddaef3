/* test_batch_fill.c -- unit tests: batches filled on a pool (load/batch_fill.h)
 * hold exactly what batch_add() would put in them.
 *
 * Records of every kind (placed and not, short and long names, empty and
 * 400 kB sequences) are added as the loader adds them: each read into the
 * filler's slot, full batches settled, sorted, checked and cleared.  Each
 * batch must be a run of consecutive input records whose sorted keys and
 * values equal, byte for byte, those of the same records given to
 * batch_add() and sorted.  Small batches reach the arena replaced for a
 * record larger than the batch; large ones make the entries grow while
 * jobs are in flight.  -M changes records as they are added, so a record
 * finished twice would show.  Prints "N passed, M failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/thread_pool.h>
#include "load/batch_fill.h"
#include "load/batch_sort.h"
#include "unit_report.h"

#define N_RECORDS 40000

static bam1_t *recs[N_RECORDS];
static char problem[300];
static uint64_t rng_state = 20261129;

static uint32_t rnd(uint32_t bound)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % bound;
}

/* Mostly short reads; now and then a long one, and an unplaced one. */
static bam1_t *random_record(uint32_t i)
{
    static char seq[400001], qual[400001];
    char name[64];
    size_t len = rnd(400) == 0 ? 400000 : rnd(300);
    snprintf(name, sizeof name, "%s:%u:%u", rnd(2) ? "inst:run7:flowcellA" : "r", rnd(1000), i);
    for (size_t k = 0; k < len; k++) {
        seq[k] = "ACGTN"[rnd(5)];
        qual[k] = (char)rnd(40);
    }
    int placed = rnd(8) != 0;
    int32_t tid = placed ? (int32_t)rnd(3) : -1;
    hts_pos_t pos = placed ? (hts_pos_t)rnd(100000) : -1;
    uint32_t cigar = bam_cigar_gen(len ? len : 1, BAM_CMATCH);
    uint16_t flag = (uint16_t)((placed ? 0 : BAM_FUNMAP) | (rnd(2) ? BAM_FREVERSE : 0));
    bam1_t *b = bam_init1();
    if (!b || bam_set1(b, strlen(name), name, flag, tid, pos, 60, placed && len ? 1 : 0, &cigar,
                       -1, -1, 0, len, seq, qual, 0) < 0) {
        fprintf(stderr, "cannot make a record\n");
        exit(2);
    }
    return b;
}

/* batch_add()'s batch of records [from, from + n), sorted. */
static batch *reference(const sort_spec *spec, size_t from, size_t n)
{
    batch *ref = batch_create((size_t)1 << 30);
    bam1_t *b = bam_init1();
    errmsg err;
    for (size_t i = from; ref && b && i < from + n; i++)
        if (!bam_copy1(b, recs[i]) || batch_add(ref, spec, b, i, &err) != 1) {
            batch_destroy(ref);
            ref = NULL;
        }
    bam_destroy1(b);
    if (ref) batch_sort(ref);
    return ref;
}

static int same_bytes(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    return al == bl && memcmp(a, b, al) == 0;
}

/* The filled batch sb, holding records from on, against batch_add()'s. */
static const char *check_batch(const sort_spec *spec, batch *sb, size_t from)
{
    size_t n = batch_count(sb);
    if (n == 0) return "a batch was handed over empty";
    batch_sort(sb);
    batch *ref = reference(spec, from, n);
    if (!ref) return "cannot make the reference batch";
    const char *why = NULL;
    for (size_t i = 0; i < n && !why; i++) {
        size_t al, bl, cl, dl;
        const uint8_t *ka = batch_key(sb, i, &al), *kb = batch_key(ref, i, &bl);
        const uint8_t *va = batch_value(sb, i, &cl), *vb = batch_value(ref, i, &dl);
        if (!same_bytes(ka, al, kb, bl) || !same_bytes(va, cl, vb, dl)) {
            snprintf(problem, sizeof problem, "records %zu-%zu: entry %zu differs", from,
                     from + n - 1, i);
            why = problem;
        }
    }
    batch_destroy(ref);
    return why;
}

/* Every record, as the loader adds them, in batches of `capacity` bytes. */
static const char *fill_all(hts_tpool *pool, sort_order order, size_t capacity)
{
    sort_spec spec;
    sort_key_spec_init(&spec, order);
    batch_fill *fill = batch_fill_create(pool);
    batch *cur = batch_create(capacity);
    if (!fill || !cur) return "cannot start";
    const char *why = NULL;
    size_t from = 0, batches = 0;
    errmsg err;
    for (size_t i = 0; i < N_RECORDS && !why; i++) {
        int r;
        if (!bam_copy1(batch_fill_slot(fill), recs[i])) why = "out of memory";
        while (!why && (r = batch_fill_add(fill, cur, &spec, i, &err)) == 0) {
            batch_fill_settle(fill);
            why = check_batch(&spec, cur, from);
            from += batch_count(cur);
            batches++;
            batch_clear(cur);
        }
        if (!why && r < 0) {
            snprintf(problem, sizeof problem, "record %zu: %.200s", i, err.msg);
            why = problem;
        }
    }
    batch_fill_settle(fill);
    if (!why) why = check_batch(&spec, cur, from);
    if (!why && from + batch_count(cur) != N_RECORDS) why = "records went missing";
    if (!why && capacity < ((size_t)1 << 20) && batches < 10) why = "too few batches to test";
    batch_fill_free(fill);
    batch_destroy(cur);
    return why;
}

int main(void)
{
    hts_tpool *pool = hts_tpool_init(4);
    if (!pool) return 2;
    for (uint32_t i = 0; i < N_RECORDS; i++) recs[i] = random_record(i);
    static const struct {
        const char *name;
        sort_order order;
    } orders[] = {
        { "coordinate", ORDER_COORDINATE },
        { "name_natural", ORDER_NAME_NATURAL },
        { "minimiser", ORDER_MINIMISER },
    };
    for (size_t o = 0; o < sizeof orders / sizeof *orders; o++) {
        char name[80];
        snprintf(name, sizeof name, "%s_small_batches_on_a_pool", orders[o].name);
        report(name, fill_all(pool, orders[o].order, (size_t)256 << 10));
        snprintf(name, sizeof name, "%s_large_batches_on_a_pool", orders[o].name);
        report(name, fill_all(pool, orders[o].order, (size_t)16 << 20));
        snprintf(name, sizeof name, "%s_without_a_pool", orders[o].name);
        report(name, fill_all(NULL, orders[o].order, (size_t)1 << 20));
    }
    for (uint32_t i = 0; i < N_RECORDS; i++) bam_destroy1(recs[i]);
    hts_tpool_destroy(pool);
    return report_summary();
}
