/* batch_records.h -- records of every kind for the loading tests, and a
 * filled batch checked against batch_add()'s.
 *
 * Contract: make_records() fills recs[] with N_RECORDS records: mostly
 * short reads, now and then a 400 kB one (larger than a batch of 256 KiB)
 * or an unplaced one, with short and long names.  check_batch() sorts a
 * filled batch holding records from..from+n-1 and compares its sorted keys
 * and values, byte for byte, with those batch_add() gives the same
 * records; it returns NULL or what differs.  Included by one test each.
 */
#ifndef BATCH_RECORDS_H
#define BATCH_RECORDS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "load/batch.h"
#include "load/batch_sort.h"

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

static void make_records(void)
{
    for (uint32_t i = 0; i < N_RECORDS; i++) recs[i] = random_record(i);
}

static void free_records(void)
{
    for (uint32_t i = 0; i < N_RECORDS; i++) bam_destroy1(recs[i]);
}

#endif
