/* test_keys.c -- unit tests: encoded sort keys order records as samtools does.
 *
 * Each property compares memcmp() order of two encoded keys with a reference
 * comparison written straight from the rules (not from the encoder), on
 * hand-picked cases and on many random pairs.  Prints "N passed, M failed".
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bam_sort.h"
#include "order_rules.h"

static int passed, failed, group_failures;

static void check(int ok, const char *what, const char *a, const char *b)
{
    if (ok) return;
    if (group_failures++ < 10) printf("  mismatch in %s: '%s' vs '%s'\n", what, a, b);
}

static void run_group(const char *name, void (*test)(void))
{
    group_failures = 0;
    test();
    if (group_failures) {
        failed++;
        printf("FAIL %s: %d comparisons disagree with the rules\n", name, group_failures);
    } else {
        passed++;
        printf("PASS %s\n", name);
    }
}

static bam1_t *make_record(const char *name, int tid, int64_t pos, uint16_t flag)
{
    bam1_t *b = bam_init1();
    if (bam_set1(b, strlen(name), name, flag, tid, pos, 0, 0, NULL, -1, -1, 0, 0, NULL, NULL, 0) < 0) {
        fprintf(stderr, "bam_set1 failed for %s\n", name);
        exit(2);
    }
    return b;
}

static void name_pair(int natural, const char *na, uint16_t fa, const char *nb, uint16_t fb)
{
    bam1_t *a = make_record(na, -1, -1, fa), *b = make_record(nb, -1, -1, fb);
    sort_order o = natural ? ORDER_NAME_NATURAL : ORDER_NAME_ASCII;
    for (uint64_t sa = 0; sa < 2; sa++) {
        int want = name_ref_cmp(natural, na, fa, sa, nb, fb, 1 - sa);
        check(key_cmp(o, a, sa, b, 1 - sa) == want, natural ? "natural name" : "ascii name", na, nb);
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
        check(key_cmp(ORDER_COORDINATE, a, sa, b, sb) == coord_ref_cmp(ta, pa, ra, sa, tb, pb, rb, sb),
              "coordinate", desc_a, desc_b);
        bam_destroy1(a);
        bam_destroy1(b);
    }
}

static void test_key_bound(void)
{
    char name[255];
    for (int len = 1; len < 255; len += 7) {
        for (int i = 0; i < len; i++) name[i] = (char)(i % 2 ? 'x' : '1');
        name[len] = '\0';
        bam1_t *b = make_record(name, 0, 0, 0);
        uint8_t key[1024];
        size_t n = sort_key_encode(ORDER_NAME_NATURAL, b, 7, key);
        check(n <= sort_key_max_len(ORDER_NAME_NATURAL, b), "key length bound", name, "");
        bam_destroy1(b);
    }
}

int main(void)
{
    srand(12345);
    run_group("keys: natural and ASCII name cases (digit runs, zeros, long numbers, flags)", test_named_cases);
    run_group("keys: 200k random name pairs against the rules", test_random_names);
    run_group("keys: coordinate order (tid -1 last, pos -1, 2^31+, strand, input order)", test_coordinates);
    run_group("keys: natural key length bound", test_key_bound);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
