/* test_run_merge.c -- unit tests: sorted batches, packed runs and their merge.
 *
 * Random records of varied sizes are spread over several batches; some are
 * merged as batches, some as packed copies (as a held input is at the
 * readout).  Every record must come out exactly once, keys ascending, each
 * value the bytes of the record its name's sequence number names.  Prints
 * "N passed, M failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keys/sort_key.h"
#include "codec/record.h"
#include "load/batch.h"
#include "load/batch_sort.h"
#include "readout/run_merge.h"
#include "keys/key_samples.h"
#include "order_rules.h"
#include "unit_report.h"

#define N_BATCHES 5
#define PER_BATCH 3000

/* Names of 3..36 characters (ending in _SEQ) and 0..150 bases move the
 * record size through every remainder modulo 8. */
static bam1_t *random_record(uint64_t seq)
{
    char name[64], bases[160], quals[160];
    int prefix = 1 + rand() % 30, seq_len = rand() % 151;
    for (int i = 0; i < prefix; i++) name[i] = "ACGTxyz0123456789"[rand() % 17];
    int name_len = prefix + snprintf(name + prefix, sizeof name - (size_t)prefix, "_%llu",
                                     (unsigned long long)seq);
    for (int i = 0; i < seq_len; i++) {
        bases[i] = "ACGTN"[rand() % 5];
        quals[i] = (char)(rand() % 42);
    }
    uint16_t flag = (uint16_t)((rand() & 1) ? 16 : 0);
    int tid = rand() % 4 - (seq % 7 == 0);   /* some unmapped, tid -1 */
    hts_pos_t pos = tid < 0 ? -1 : rand() % 5000;
    bam1_t *b = bam_init1();
    uint32_t cigar = bam_cigar_gen(seq_len ? seq_len : 1, BAM_CMATCH);
    if (bam_set1(b, name_len, name, tid < 0 ? flag | 4 : flag, tid, pos, 60,
                 tid < 0 ? 0 : 1, &cigar, -1, -1, 0, seq_len, bases, quals, 0) < 0) {
        fprintf(stderr, "bam_set1 failed\n");
        exit(2);
    }
    return b;
}

/* The records as batch_add() leaves them, by sequence number. */
typedef struct {
    batch *batch[N_BATCHES];
    bam1_t *rec[N_BATCHES * PER_BATCH];
} fixture;

static void fill(fixture *f)
{
    sort_spec spec = spec_of(ORDER_COORDINATE);
    errmsg err;
    for (int i = 0; i < N_BATCHES; i++) {
        f->batch[i] = batch_create((size_t)64 << 20);
        for (int r = 0; r < PER_BATCH; r++) {
            uint64_t seq = (uint64_t)i * PER_BATCH + (uint64_t)r;
            f->rec[seq] = random_record(seq);
            if (batch_add(f->batch[i], &spec, f->rec[seq], seq, &err) != 1) {
                fprintf(stderr, "batch_add failed: %s\n", err.msg);
                exit(2);
            }
        }
        batch_sort(f->batch[i]);
    }
}

static int same_record(const bam1_t *b, const uint8_t *v, size_t vlen)
{
    static uint8_t want[4096];
    if (vlen != record_value_len(b) || vlen > sizeof want) return 0;
    record_value_pack(b, want);
    return memcmp(v, want, vlen) == 0;
}

static const char *check_pack_matches_batch(const fixture *f, packed_run *const *packed)
{
    for (int i = 0; i < 2; i++) {
        const uint8_t *r = batch_packed_first(packed[i]);
        for (size_t e = 0; e < batch_count(f->batch[i]); e++, r = batch_packed_next(packed[i], r)) {
            size_t kl, vl, pkl, pvl;
            const uint8_t *k = batch_key(f->batch[i], e, &kl), *v = batch_value(f->batch[i], e, &vl);
            if (!r) return "a packed run ends early";
            const uint8_t *pk = packed_key(r, &pkl), *pv = packed_value(r, &pvl);
            if (kl != pkl || vl != pvl || memcmp(k, pk, kl) || memcmp(v, pv, vl))
                return "a packed record differs from the batch's";
        }
        if (r) return "a packed run has records past the batch's";
    }
    return NULL;
}

/* A record's input number is the digits after the last '_' of its name. */
static uint64_t seq_in_value(const uint8_t *v)
{
    const char *name = (const char *)v + sizeof(bam1_core_t);
    return strtoull(strrchr(name, '_') + 1, NULL, 10);
}

static int key_before(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
    int c = memcmp(a, b, la < lb ? la : lb);
    return c < 0 || (c == 0 && la < lb);
}

static const char *check_merge(const fixture *f, packed_run *const *packed)
{
    static char seen[N_BATCHES * PER_BATCH];
    const char *problem = NULL;
    const batch_slice batches[] = {run_merge_batch_whole(f->batch[2]), run_merge_batch_whole(f->batch[3]),
                                   run_merge_batch_whole(f->batch[4])};
    const packed_slice runs[] = {run_merge_packed_whole(packed[0]), run_merge_packed_whole(packed[1])};
    run_merge *m = run_merge_open(NULL, 0, NULL, 0, batches, 3, runs, 2);
    if (!m) return "merge_open failed";
    sort_spec spec = spec_of(ORDER_COORDINATE);
    uint8_t prev[512], key[512];
    size_t prev_len = 0, n = 0, vlen;
    for (const uint8_t *v; !problem && (v = run_merge_next(m, &vlen)) != NULL; n++) {
        uint64_t seq = seq_in_value(v);
        size_t len;
        if (seq >= N_BATCHES * PER_BATCH || seen[seq]) problem = "a record comes out twice";
        else if (!same_record(f->rec[seq], v, vlen)) problem = "a value differs from its record";
        else if (len = sort_key_encode(&spec, f->rec[seq], seq, key),
                 n && !key_before(prev, prev_len, key, len))
            problem = "values come out of key order";
        else {
            seen[seq] = 1;
            memcpy(prev, key, len);
            prev_len = len;
        }
    }
    run_merge_close(m);
    if (!problem && n != N_BATCHES * PER_BATCH) problem = "records are lost";
    return problem;
}

#define N_ALL (N_BATCHES * PER_BATCH)

/* The sequence numbers of a merge of batches 2-4 and both packed runs,
 * limited to [lo, hi) (a NULL key: open), appended at out + *n. */
static int merge_range(const fixture *f, packed_run *const *packed, const key_sample *lo,
                       const key_sample *hi, uint64_t *out, size_t *n)
{
    batch_slice b[3];
    packed_slice p[2];
    for (int i = 0; i < 3; i++) {
        const batch *sb = f->batch[2 + i];
        b[i] = (batch_slice){ sb, lo ? batch_seek(sb, lo->key, lo->len) : 0,
                              hi ? batch_seek(sb, hi->key, hi->len) : batch_count(sb) };
    }
    for (int i = 0; i < 2; i++) {
        p[i] = run_merge_packed_whole(packed[i]);
        if (lo) p[i].begin = batch_packed_seek(packed[i], lo->key, lo->len);
        if (hi) p[i].end = batch_packed_seek(packed[i], hi->key, hi->len);
        if (!p[i].begin) p[i].end = NULL;
    }
    run_merge *m = run_merge_open(NULL, 0, NULL, 0, b, 3, p, 2);
    if (!m) return -1;
    size_t vlen;
    for (const uint8_t *v; (v = run_merge_next(m, &vlen)) != NULL && *n < N_ALL; )
        out[(*n)++] = seq_in_value(v);
    run_merge_close(m);
    return 0;
}

/* Split into k ranges at sampled keys (as the readout does), the ranges'
 * merges one after the other give exactly the whole merge. */
static const char *check_ranges(const fixture *f, packed_run *const *packed, int k)
{
    static uint64_t whole[N_ALL], ranged[N_ALL];
    size_t n_whole = 0, n_ranged = 0, len;
    key_samples samples = { 0 };
    key_sample splits[16];
    for (int i = 2; i < N_BATCHES; i++)
        for (size_t e = 0; e < batch_count(f->batch[i]); e += 97)
            key_samples_add(&samples, batch_key(f->batch[i], e, &len), len, 97);
    int n = key_samples_split(&samples, k, splits);
    const char *problem = NULL;
    if (n != k - 1) problem = "fewer splits than asked for";
    else if (merge_range(f, packed, NULL, NULL, whole, &n_whole) < 0) problem = "merge_open failed";
    for (int r = 0; !problem && r <= n; r++)
        if (merge_range(f, packed, r ? &splits[r - 1] : NULL, r < n ? &splits[r] : NULL,
                        ranged, &n_ranged) < 0)
            problem = "merge_open failed";
    if (!problem && (n_ranged != n_whole || memcmp(whole, ranged, n_whole * sizeof *whole)))
        problem = "the ranges' merges differ from the whole merge";
    key_samples_free(&samples);
    return problem;
}

/* A record larger than an empty batch gets an arena of its own, which
 * must hold its padding too: batch_pack() copies whole packed records, so
 * an arena cut at the unpadded size was read past its end.  Names of 1..8
 * characters move the record's size through every remainder modulo 8. */
static const char *check_huge_record_arena(void)
{
    sort_spec spec = spec_of(ORDER_COORDINATE);
    static char bases[20000], quals[20000];
    memset(bases, 'A', sizeof bases);
    memset(quals, 30, sizeof quals);
    uint32_t cigar = bam_cigar_gen(sizeof bases, BAM_CMATCH);
    const char *problem = NULL;
    for (int name_len = 1; name_len <= 8 && !problem; name_len++) {
        batch *sb = batch_create(4096);
        bam1_t *b = bam_init1();
        errmsg err;
        if (!sb || !b || bam_set1(b, (size_t)name_len, "ABCDEFGH", 0, 0, 100, 60, 1, &cigar,
                                  -1, -1, 0, sizeof bases, bases, quals, 0) < 0 ||
            batch_add(sb, &spec, b, 0, &err) != 1)
            problem = "cannot add a record larger than the batch";
        else if (batch_claim_ahead(sb, SIZE_MAX, SIZE_MAX).len < batch_bytes(sb))
            problem = "a record's padding lies past the arena made for it";
        batch_destroy(sb);
        bam_destroy1(b);
    }
    return problem;
}

int main(void)
{
    srand(20261124);
    fixture f;
    fill(&f);
    packed_run *packed[2] = {batch_pack(f.batch[0]), batch_pack(f.batch[1])};
    if (!packed[0] || !packed[1]) {
        fprintf(stderr, "batch_pack failed\n");
        return 2;
    }
    report("packed_run_keeps_batch_order", check_pack_matches_batch(&f, packed));
    batch_clear(f.batch[0]);   /* a packed run must not borrow the batch's memory */
    report("merge_of_batches_and_packed_runs", check_merge(&f, packed));
    report("merge_in_2_key_ranges_equals_whole", check_ranges(&f, packed, 2));
    report("merge_in_7_key_ranges_equals_whole", check_ranges(&f, packed, 7));
    batch *empty = batch_create(1 << 20);
    packed_run *none = batch_pack(empty);
    report("packed_run_of_empty_batch", !none ? "batch_pack failed"
                                        : batch_packed_first(none) ? "an empty run has records" : NULL);
    batch_packed_destroy(none);
    batch_destroy(empty);
    report("record_larger_than_batch_fits_its_arena", check_huge_record_arena());
    for (int i = 0; i < 2; i++) batch_packed_destroy(packed[i]);
    for (int i = 0; i < N_BATCHES; i++) batch_destroy(f.batch[i]);
    for (int s = 0; s < N_BATCHES * PER_BATCH; s++) bam_destroy1(f.rec[s]);
    return report_summary();
}
