/* test_keys.c -- unit tests: encoded sort keys order records as samtools does.
 *
 * Each property compares memcmp() order of two encoded keys with a reference
 * comparison written straight from the rules (not from the encoder), on
 * hand-picked cases and on many random pairs.  Prints "N passed, M failed".
 * --template-coordinate's keys are tested in test_template_keys.c.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keys/sort_key.h"
#include "keys/minimiser.h"
#include "order_rules.h"
#include "key_checks.h"

static void name_pair(int natural, const char *na, uint16_t fa, const char *nb, uint16_t fb)
{
    bam1_t *a = make_record(na, -1, -1, fa), *b = make_record(nb, -1, -1, fb);
    sort_spec o = spec_of(natural ? ORDER_NAME_NATURAL : ORDER_NAME_ASCII);
    for (uint64_t sa = 0; sa < 2; sa++) {
        int want = name_ref_cmp(natural, na, fa, sa, nb, fb, 1 - sa);
        check(records_key_cmp(&o, a, sa, b, 1 - sa) == want, natural ? "natural name" : "ascii name", na, nb);
    }
    bam_destroy1(a);
    bam_destroy1(b);
}

static void test_named_cases(void)
{
    static const char *pairs[][2] = {
        { "r1", "r2" }, { "r2", "r10" }, { "r9", "r10" }, { "r01", "r1" }, { "r001", "r01" },
        { "r0", "r" }, { "r00", "r0" }, { "r0x", "r00" }, { "a1b2", "a1b10" }, { "a01b", "a1c" },
        { "x123456789012345678901234567890", "x123456789012345678901234567891" },
        { "x99999999999999999999999999999", "x100000000000000000000000000000" },
        { "x0000000000000000000000000000001", "x2" }, { "r1", "r1a" }, { "r1", "r1-" },
        { "r5", "r-" }, { "r5", "r:" }, { "r5", "r/" }, { "5", "A" }, { "r1.2", "r1.10" },
        { "SRR1.100", "SRR1.99" }, { "a", "b" }, { "ab", "a" }, { "A0", "A~" }, { "0", "00" },
        { "r18446744073709551616", "r18446744073709551615" }, { "r\x80", "r1" },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        name_pair(1, pairs[i][0], 0, pairs[i][1], 0);
        name_pair(0, pairs[i][0], 0, pairs[i][1], 0);
    }
    /* Same name: READ1 < READ2, primary < supplementary < secondary. */
    static const uint16_t flags[] = {
        0, BAM_FREAD1, BAM_FREAD2, BAM_FREAD1 | BAM_FSUPPLEMENTARY, BAM_FREAD1 | BAM_FSECONDARY,
        BAM_FREAD2 | BAM_FSECONDARY, BAM_FSUPPLEMENTARY, BAM_FSECONDARY, BAM_FREVERSE,
        BAM_FUNMAP, BAM_FREAD1 | BAM_FREAD2, BAM_FSECONDARY | BAM_FSUPPLEMENTARY,
    };
    size_t nf = sizeof flags / sizeof *flags;
    for (size_t i = 0; i < nf; i++)
        for (size_t j = 0; j < nf; j++) {
            name_pair(1, "q7", flags[i], "q7", flags[j]);
            name_pair(1, "q7", flags[i], "q07", flags[j]);
            name_pair(0, "q7", flags[i], "q7", flags[j]);
        }
}

static void random_name(char *s, int len)
{
    static const char alphabet[] = "0000123456789abAZ_-.:~/";
    for (int i = 0; i < len; i++) s[i] = alphabet[rand() % (int)(sizeof alphabet - 1)];
    s[len] = '\0';
}

static void test_random_names(void)
{
    char a[64], b[64];
    for (int i = 0; i < 200000; i++) {
        random_name(a, 1 + rand() % 12);
        if (rand() % 3 == 0) {
            strcpy(b, a);              /* near-misses share a prefix */
            random_name(b + strlen(b) / 2, 1 + rand() % 6);
        } else {
            random_name(b, 1 + rand() % 12);
        }
        uint16_t fa = (uint16_t)(rand() & 0xfff), fb = (uint16_t)(rand() & 0xfff);
        name_pair(1, a, fa, b, fb);
        name_pair(0, a, fa, b, fb);
    }
}

static void test_coordinates(void)
{
    static const int tids[] = { -1, 0, 1, 2, 255, 256, 70000 };
    static const int64_t poss[] = { -1, 0, 1, 255, 256, 65535, (1LL << 31) - 1, 1LL << 31, (1LL << 40) + 3 };
    size_t nt = sizeof tids / sizeof *tids, np = sizeof poss / sizeof *poss;
    char desc_a[64], desc_b[64];
    sort_spec coord = spec_of(ORDER_COORDINATE);
    for (int i = 0; i < 100000; i++) {
        int ta = tids[rand() % nt], tb = tids[rand() % nt];
        int64_t pa = poss[rand() % np], pb = poss[rand() % np];
        int ra = rand() & 1, rb = rand() & 1;
        uint64_t sa = (uint64_t)rand() % 4, sb = (uint64_t)rand() % 4;
        if (sa == sb) sb++;
        bam1_t *a = make_record("a", ta, pa, ra ? BAM_FREVERSE : 0);
        bam1_t *b = make_record("b", tb, pb, rb ? BAM_FREVERSE : 0);
        snprintf(desc_a, sizeof desc_a, "%d:%lld:%d#%llu", ta, (long long)pa, ra, (unsigned long long)sa);
        snprintf(desc_b, sizeof desc_b, "%d:%lld:%d#%llu", tb, (long long)pb, rb, (unsigned long long)sb);
        check(records_key_cmp(&coord, a, sa, b, sb) == coord_ref_cmp(ta, pa, ra, sa, tb, pb, rb, sb),
              "coordinate", desc_a, desc_b);
        bam_destroy1(a);
        bam_destroy1(b);
    }
}

static void test_key_bound(void)
{
    char name[255];
    sort_spec natural = spec_of(ORDER_NAME_NATURAL);
    for (int len = 1; len < 255; len += 7) {
        for (int i = 0; i < len; i++) name[i] = (char)(i % 2 ? 'x' : '1');
        name[len] = '\0';
        bam1_t *b = make_record(name, 0, 0, 0);
        uint8_t key[1024];
        size_t n = sort_key_encode(&natural, b, 7, key);
        check(n <= sort_key_max_len(&natural, b), "key length bound", name, "");
        bam_destroy1(b);
    }
}

/* XT with a random type and value; equal numbers across types are common. */
static void add_random_tag(bam1_t *b, char *desc, size_t len)
{
    static const char *strings[] = { "", "A", "AB", "ABC", "B", "a", "1AE3", "1AE", "~", "\x80x" };
    static const char *hex[] = { "1AE3", "1AE301", "00", "FF", "AB" };
    static const double floats[] = { -0.0, 0.0, 0.5, 1.0, 3.0, -3.0, 1e10, -1e10, 4294967295.0 };
    static const int64_t ints[] = { -3, -1, 0, 1, 3, 127, 128, 255, 65535, -2147483648LL, 4294967295LL };
    switch (rand() % 9) {
    case 0:
        snprintf(desc, len, "none");
        return;
    case 1: {
        uint8_t c = (uint8_t)"aAz!~5\x90"[rand() % 7];
        bam_aux_append(b, "XT", 'A', 1, &c);
        snprintf(desc, len, "A:%c", c);
        return;
    }
    case 2: {
        const char *v = strings[rand() % 10];
        put_z(b, "XT", 'Z', v);
        snprintf(desc, len, "Z:%s", v);
        return;
    }
    case 3: {
        const char *v = hex[rand() % 5];
        put_z(b, "XT", 'H', v);
        snprintf(desc, len, "H:%s", v);
        return;
    }
    case 4: {
        int8_t arr[3] = { (int8_t)(rand() % 5), -1, 2 };
        bam_aux_update_array(b, "XT", 'c', (uint32_t)(1 + rand() % 3), arr);
        snprintf(desc, len, "B");
        return;
    }
    case 5: case 6: {
        double v = floats[rand() % 9];
        if (rand() & 1) {
            float f = (float)v;
            bam_aux_append(b, "XT", 'f', 4, (const uint8_t *)&f);
        } else {
            bam_aux_append(b, "XT", 'd', 8, (const uint8_t *)&v);
        }
        snprintf(desc, len, "f:%g", v);
        return;
    }
    default: {
        int64_t v = ints[rand() % 11];
        bam_aux_update_int(b, "XT", v);   /* the smallest type that holds v */
        snprintf(desc, len, "i:%lld", (long long)v);
        return;
    }
    }
}

static void test_tag_order(void)
{
    static const char *names[] = { "r1", "r2", "r10", "r01", "a" };
    sort_spec specs[3];
    for (int k = 0; k < 3; k++) {
        specs[k] = spec_of(k == 0 ? ORDER_COORDINATE : k == 1 ? ORDER_NAME_NATURAL : ORDER_NAME_ASCII);
        specs[k].by_tag = 1;
        memcpy(specs[k].tag, "XT", 2);
    }
    char da[64], db[64];
    for (int i = 0; i < 60000; i++) {
        const char *na = names[rand() % 5], *nb = names[rand() % 5];
        int ta = rand() % 3 - 1, tb = rand() % 3 - 1;
        int64_t pa = rand() % 3, pb = rand() % 3;
        uint16_t fa = (uint16_t)(rand() & 0x9d0), fb = (uint16_t)(rand() & 0x9d0);
        bam1_t *a = make_full(na, fa, ta, pa, "", -1, -1, "");
        bam1_t *b = make_full(nb, fb, tb, pb, "", -1, -1, "");
        add_random_tag(a, da, sizeof da);
        add_random_tag(b, db, sizeof db);
        uint64_t sa = (uint64_t)(rand() % 3), sb = sa + 1;
        if (rand() & 1) sb = sa, sa++;
        int by_tag = tag_ref_cmp(a, b, "XT");
        int want[3] = {
            coord_ref_cmp(ta, pa, bam_is_rev(a), sa, tb, pb, bam_is_rev(b), sb),
            name_ref_cmp(1, na, fa, sa, nb, fb, sb),
            name_ref_cmp(0, na, fa, sa, nb, fb, sb),
        };
        for (int k = 0; k < 3; k++)
            check(records_key_cmp(&specs[k], a, sa, b, sb) == (by_tag ? by_tag : want[k]),
                  k == 0 ? "-t, then coordinate" : k == 1 ? "-t, then -n" : "-t, then -N", da, db);
        bam_destroy1(a);
        bam_destroy1(b);
    }
}

/* samtools' complement, as a character table: Y stays Y and = becomes N. */
static char samtools_complement(char c)
{
    const char *from = "=ACMGRSVTWYHKDBN", *to = "NTGKCYSBAWYDMHVN";
    const char *p = strchr(from, c);
    return p ? to[p - from] : 'N';
}

static void test_minimiser_keys(void)
{
    static const int kmers[] = { 1, 2, 3, 5, 11, 20, 31 };
    static const char *alphabets[] = { "ACGT", "AAAAACCGT", "ACGTNRYKMSWBDHV=" };
    char seq[80], back[80], desc[128];
    for (int i = 0; i < 30000; i++) {
        mm_params p = { kmers[rand() % 7], 100, rand() % 2, rand() % 2 };
        int len = rand() % 3 == 0 ? rand() % 8 : rand() % 70;
        random_bases(seq, len, alphabets[rand() % 3]);
        bam1_t *b = make_full("m", BAM_FUNMAP | (rand() % 2 ? BAM_FREVERSE : 0), -1, -1, "", -1, 7, seq);
        mm_result got = minimiser_read_key(b, &p, NULL);
        minimiser_ref want = minimiser_ref_key(b, p.kmer, p.squash, p.try_rev);
        snprintf(desc, sizeof desc, "k=%d squash=%d rev=%d %s", p.kmer, p.squash, p.try_rev, seq);
        check(got.key == want.key && got.tie == want.tie && got.rev == want.rev,
              "minimiser against a k-mer by k-mer scan", desc, "");
        /* sort_key_record_finish writes the read as samtools does. */
        sort_spec s = spec_of(ORDER_MINIMISER);
        s.kmer = p.kmer;
        s.squash = p.squash;
        s.try_rev = p.try_rev;
        uint16_t flag = b->core.flag;
        sort_key_record_finish(&s, b);
        for (int j = 0; j < len; j++) back[j] = seq_nt16_str[bam_seqi(bam_get_seq(b), j)];
        back[len] = '\0';
        int ok = b->core.pos == -1 && b->core.mpos == -1 && b->core.isize == 0
              && b->core.flag == (want.rev ? flag ^ BAM_FREVERSE : flag);
        for (int j = 0; j < len && ok; j++) {
            char expect = want.rev ? samtools_complement(seq[len - 1 - j]) : seq[j];
            if (seq_nt16_str[seq_nt16_table[(unsigned char)expect]] != back[j]) ok = 0;
            if (bam_get_qual(b)[j] != (want.rev ? (len - 1 - j) % 40 : j % 40)) ok = 0;
        }
        check(ok, "minimiser: the record as written", desc, back);
        bam_destroy1(b);
    }
}

/* Key order under -M: placed records by coordinate, then the rest by key,
 * tie (bigger first), the strand they are written with, input order. */
static void test_minimiser_order(void)
{
    sort_spec s = spec_of(ORDER_MINIMISER);
    s.kmer = 3;
    char sa_[16], sb_[16];
    for (int i = 0; i < 50000; i++) {
        random_bases(sa_, rand() % 6, "ACGT");
        random_bases(sb_, rand() % 6, "ACGT");
        int ta = rand() % 4 ? -1 : rand() % 2, tb = rand() % 4 ? -1 : rand() % 2;
        uint16_t fa = BAM_FUNMAP | (rand() % 2 ? BAM_FREVERSE : 0), fb = BAM_FUNMAP | (rand() % 2 ? BAM_FREVERSE : 0);
        bam1_t *a = make_full("a", fa, ta, ta < 0 ? -1 : rand() % 3, "", -1, -1, sa_);
        bam1_t *b = make_full("b", fb, tb, tb < 0 ? -1 : rand() % 3, "", -1, -1, sb_);
        int want;
        if (ta != -1 || tb != -1) {
            want = coord_ref_cmp(ta, a->core.pos, bam_is_rev(a), 1, tb, b->core.pos, bam_is_rev(b), 2);
        } else {
            minimiser_ref x = minimiser_ref_key(a, 3, 0, 1), y = minimiser_ref_key(b, 3, 0, 1);
            int xr = bam_is_rev(a) ^ x.rev, yr = bam_is_rev(b) ^ y.rev;
            want = x.key != y.key ? (x.key < y.key ? -1 : 1)
                 : x.tie != y.tie ? (x.tie > y.tie ? -1 : 1)
                 : xr != yr ? (xr < yr ? -1 : 1) : -1;
        }
        check(records_key_cmp(&s, a, 1, b, 2) == want, "minimiser order", sa_, sb_);
        bam_destroy1(a);
        bam_destroy1(b);
    }
}

/* --shuffle: a permutation of the input numbers that only the seed picks. */
static void test_shuffle(void)
{
    enum { N = 2000 };
    static uint64_t first[N], other[N];
    sort_spec s = spec_of(ORDER_SHUFFLE);
    uint8_t key[64];
    bam1_t *a = make_record("a", 0, 5, 0), *b = make_record("zzz", 3, 9, BAM_FREVERSE);
    int same_order = 1, in_order = 1, distinct = 1;
    for (int pass = 0; pass < 2; pass++) {
        s.seed = pass ? 43 : 42;
        for (uint64_t i = 0; i < N; i++) {
            size_t n = sort_key_encode(&s, i % 2 ? a : b, i, key);
            uint64_t v = 0;
            for (int j = 0; j < 8; j++) v = v << 8 | key[j];
            check(n == 16 && n <= sort_key_max_len(&s, a), "shuffle key length", "", "");
            (pass ? other : first)[i] = v;
        }
    }
    for (int i = 1; i < N; i++) {
        if (first[i] < first[i - 1]) in_order = 0;
        if ((first[i] < first[i - 1]) != (other[i] < other[i - 1])) same_order = 0;
        for (int j = 0; j < i && distinct; j++)
            if (first[i] == first[j]) distinct = 0;
    }
    s.seed = 42;
    size_t n1 = sort_key_encode(&s, a, 17, key);
    uint8_t again[64];
    size_t n2 = sort_key_encode(&s, b, 17, again);
    check(n1 == n2 && !memcmp(key, again, n1), "shuffle: the key depends on seed and input number only", "", "");
    check(distinct, "shuffle: distinct keys", "", "");
    check(!in_order, "shuffle: not the input order", "", "");
    check(!same_order, "shuffle: seeds 42 and 43 give different orders", "", "");
    bam_destroy1(a);
    bam_destroy1(b);
}

/* -t on floats: 1.24 says NaN > x and x > NaN, so it has no place; ours is
 * after +inf, NaNs tied (input order).  -0 equals 0, an integer its float. */
static void test_tag_nan(void)
{
    static const double values[] = { -INFINITY, -1.0, -0.0, 0.0, 5.0, INFINITY, NAN, NAN };
    sort_spec s = spec_of(ORDER_COORDINATE);
    s.by_tag = 1;
    memcpy(s.tag, "XT", 2);
    bam1_t *b[9];
    for (int i = 0; i < 8; i++) {
        b[i] = make_record("r", 0, 7, 0);
        bam_aux_append(b[i], "XT", 'd', 8, (const uint8_t *)&values[i]);
    }
    b[8] = make_record("r", 0, 7, 0);
    bam_aux_update_int(b[8], "XT", 5);
    for (int i = 0; i + 1 < 8; i++) {
        int tie = (i == 2) || (i == 6);     /* -0 and 0; two NaNs */
        check(records_key_cmp(&s, b[i + 1], 0, b[i], 1) == (tie ? -1 : 1), "-t float order",
              "value", "next");
    }
    check(records_key_cmp(&s, b[8], 0, b[4], 1) == -1 && records_key_cmp(&s, b[4], 0, b[8], 1) == -1,
          "-t: integer 5 ties with 5.0", "", "");
    for (int i = 0; i < 9; i++) bam_destroy1(b[i]);
}

/* Every order's key fits sort_key_max_len(), tags and long names included. */
static void test_all_key_bounds(void)
{
    static const char header[] = "@HD\tVN:1.6\n@SQ\tSN:a\tLN:1000\n@RG\tID:g\tLB:a-long-library-name\n";
    sam_hdr_t *h = sam_hdr_parse(sizeof header - 1, header);
    char name[256], value[300];
    errmsg err;
    for (int order = ORDER_COORDINATE; order <= ORDER_SHUFFLE; order++) {
        for (int by_tag = 0; by_tag < 2; by_tag++) {
            sort_spec s = spec_of((sort_order)order);
            s.by_tag = by_tag;
            memcpy(s.tag, "XT", 2);
            if (sort_key_spec_prepare(&s, h, &err) < 0) check(0, "prepare", err.msg, "");
            for (int i = 0; i < 400; i++) {
                random_bases(name, 1 + rand() % 250, "0123456789ab");
                bam1_t *b = make_full(name, (uint16_t)(rand() & 0xfff), rand() % 2 - 1, rand() % 100,
                                      "5M", 0, 3, "ACGTA");
                random_bases(value, rand() % 300, "09azAZ");
                put_z(b, "XT", 'Z', value);
                put_z(b, "MC", 'Z', "5M");
                put_z(b, "RG", 'Z', "g");
                put_z(b, "MI", 'Z', value);
                put_z(b, "CB", 'Z', value);
                uint8_t *key = malloc(sort_key_max_len(&s, b));
                size_t n = sort_key_encode(&s, b, UINT64_MAX, key);
                check(n > 0 && n <= sort_key_max_len(&s, b), "key length bound (every order)", name, "");
                free(key);
                bam_destroy1(b);
            }
            sort_key_spec_free(&s);
        }
    }
    sam_hdr_destroy(h);
}

int main(void)
{
    srand(12345);
    run_group("keys: natural and ASCII name cases (digit runs, zeros, long numbers, flags)", test_named_cases);
    run_group("keys: 200k random name pairs against the rules", test_random_names);
    run_group("keys: coordinate order (tid -1 last, pos -1, 2^31+, strand, input order)", test_coordinates);
    run_group("keys: natural key length bound", test_key_bound);
    run_group("keys: -t TAG (missing, A < B < string < number, int vs float; then coordinate, -n or -N)",
              test_tag_order);
    run_group("keys: -t NaN after +inf, -0 equals 0, 5 equals 5.0", test_tag_nan);
    run_group("keys: -M minimiser against a k-mer by k-mer scan (-K, -H, -R), and the record written",
              test_minimiser_keys);
    run_group("keys: -M order (placed by coordinate, then key, tie, strand)", test_minimiser_order);
    run_group("keys: --shuffle is a seeded permutation", test_shuffle);
    run_group("keys: every order's key length bound", test_all_key_bounds);
    return key_checks_summary();
}
