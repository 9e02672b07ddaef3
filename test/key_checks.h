/* key_checks.h -- what the C unit tests of sort keys share: records made
 * from their fields, and the comparison tally.
 *
 * Contract: check() notes a comparison that disagrees with the rules
 * (printing the first ten of a group); run_group() runs one group of
 * checks and prints PASS or FAIL for it; key_checks_summary() prints the
 * last line, "N passed, M failed", and returns the exit status.
 * make_record() and make_full() build records (exit 2 on failure);
 * put_z() appends a string tag of type Z or H; random_bases() fills s with
 * len characters of alphabet.
 */
#ifndef KEY_CHECKS_H
#define KEY_CHECKS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/sam.h>

static int passed, failed, group_failures;

static inline void check(int ok, const char *what, const char *a, const char *b)
{
    if (ok) return;
    if (group_failures++ < 10) printf("  mismatch in %s: '%s' vs '%s'\n", what, a, b);
}

static inline void run_group(const char *name, void (*test)(void))
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

static inline bam1_t *make_record(const char *name, int tid, int64_t pos, uint16_t flag)
{
    bam1_t *b = bam_init1();
    if (bam_set1(b, strlen(name), name, flag, tid, pos, 0, 0, NULL, -1, -1, 0, 0, NULL, NULL, 0) < 0) {
        fprintf(stderr, "bam_set1 failed for %s\n", name);
        exit(2);
    }
    return b;
}

static inline int key_checks_summary(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* A record with a CIGAR, a sequence and qualities. */
static inline bam1_t *make_full(const char *name, uint16_t flag, int tid, int64_t pos,
                                const char *cigar, int mtid, int64_t mpos, const char *seq)
{
    uint32_t *ops = NULL;
    size_t mem = 0;
    ssize_t n_ops = cigar && *cigar ? sam_parse_cigar(cigar, NULL, &ops, &mem) : 0;
    size_t l_seq = strlen(seq);
    char *qual = malloc(l_seq + 1);
    for (size_t i = 0; i < l_seq; i++) qual[i] = (char)(i % 40);
    bam1_t *b = bam_init1();
    if (n_ops < 0 || bam_set1(b, strlen(name), name, flag, tid, pos, 0, (size_t)n_ops, ops, mtid, mpos,
                              0, l_seq, seq, qual, 256) < 0) {
        fprintf(stderr, "cannot make record %s\n", name);
        exit(2);
    }
    free(ops);
    free(qual);
    return b;
}

static inline void put_z(bam1_t *b, const char *tag, char type, const char *value)
{
    bam_aux_append(b, tag, type, (int)strlen(value) + 1, (const uint8_t *)value);
}

static inline void random_bases(char *s, int len, const char *alphabet)
{
    size_t n = strlen(alphabet);
    for (int i = 0; i < len; i++) s[i] = alphabet[(size_t)rand() % n];
    s[len] = '\0';
}

#endif
