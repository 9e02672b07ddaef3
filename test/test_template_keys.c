/* test_template_keys.c -- unit tests: --template-coordinate keys order
 * records as samtools 1.24 does, and refuse the records it refuses.
 *
 * Random pairs are compared with test/order_rules.h's rules (written from
 * 1.24's comparator, not from the encoder); the cell barcode's edge cases
 * (missing vs empty, prefixes, bytes past 0x7f, its place between library
 * and MI) are spelled out one by one.  Prints "N passed, M failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keys/sort_key.h"
#include "order_rules.h"
#include "key_checks.h"

static const char header[] =
    "@HD\tVN:1.6\n@SQ\tSN:a\tLN:1000\n@SQ\tSN:b\tLN:1000\n"
    "@RG\tID:rgA\tLB:libX\n@RG\tID:rgB\tLB:libX\n@RG\tID:rgC\tLB:libY\n@RG\tID:rgD\n";

static const char *template_library(const char *rg)
{
    if (!rg) return "";
    if (!strcmp(rg, "rgA") || !strcmp(rg, "rgB")) return "libX";
    if (!strcmp(rg, "rgC")) return "libY";
    return "";      /* rgD has no LB; rgZ is not in the header */
}

static sort_spec template_spec(sam_hdr_t **h)
{
    sort_spec spec = spec_of(ORDER_TEMPLATE);
    errmsg err = { "" };
    *h = sam_hdr_parse(sizeof header - 1, header);
    if (!*h || sort_key_spec_prepare(&spec, *h, &err) < 0) {
        fprintf(stderr, "cannot prepare the template order: %s\n", err.msg);
        exit(2);
    }
    return spec;
}

/* A string tag from values (NULL: none, or now and then an integer, which
 * samtools refuses); strings go in as Z, or as H one time in five. */
static void random_string_tag(bam1_t *b, const char *tag, const char *value)
{
    if (value) put_z(b, tag, rand() % 5 ? 'Z' : 'H', value);
    else if (rand() % 8 == 0) bam_aux_update_int(b, tag, 5);
}

static bam1_t *random_template_record(const char **rg)
{
    static const char *cigars[] = { "10M", "2S8M", "8M2S", "1H2S8M", "8M2S1H", "3H10M", "4M2I4M",
                                    "3M20D7M", "2S3M10N3M2S" };
    static const char *mcs[] = { "10M", "2S8M", "8M2S", "1H2S7M", "7M2S1H", "3M5S2M", "*", "4N3",
                                 "5=2X3M", NULL };
    static const char *rgs[] = { "rgA", "rgB", "rgC", "rgD", "rgZ", NULL };
    static const char *mis[] = { NULL, NULL, "1", "1/A", "1/B", "1/", "/A", "12", "\x80", "~", "" };
    static const char *cbs[] = { NULL, NULL, "", "A", "AA", "AAAA", "AAAB", "B", "\x80", "~", "a" };
    static const char *names[] = { "t1", "t2", "t10" };
    static const uint16_t flags[] = { 0, BAM_FREVERSE, BAM_FUNMAP, 0x63, 0x93, 0x53, 0xa3, 0x49, 0x89,
                                      0x45, 0x4d, 0x163, 0x883, 0x73 };
    uint16_t flag = flags[rand() % 14];
    /* Now and then a reference id of -1 on a mapped read or mate (BAM can
     * say so): 1.24 compares tids by subtraction, which overflows against
     * an unmapped end's INT32_MAX; the key orders them as signed numbers. */
    int tid = rand() % 10 ? rand() % 2 : -1, mtid = rand() % 10 ? rand() % 2 : -1;
    bam1_t *b = make_full(names[rand() % 3], flag, tid, 10 + rand() % 12,
                          flag & BAM_FUNMAP ? "" : cigars[rand() % 9], mtid, 10 + rand() % 12,
                          "ACGTACGTAC");
    const char *mc = mcs[rand() % 10];
    if (mc) put_z(b, "MC", 'Z', mc);
    else if (rand() % 4 == 0) bam_aux_update_int(b, "MC", 5);
    random_string_tag(b, "CB", cbs[rand() % 11]);
    random_string_tag(b, "MI", mis[rand() % 11]);
    *rg = rgs[rand() % 6];
    if (*rg) put_z(b, "RG", 'Z', *rg);
    return b;
}

static void test_template_order(void)
{
    sam_hdr_t *h;
    sort_spec spec = template_spec(&h);
    char da[96], db[96];
    for (int i = 0; i < 80000; i++) {
        const char *rg[2];
        bam1_t *r[2] = { random_template_record(&rg[0]), random_template_record(&rg[1]) };
        snprintf(da, sizeof da, "%s flag %d", bam_get_qname(r[0]), r[0]->core.flag);
        snprintf(db, sizeof db, "%s flag %d", bam_get_qname(r[1]), r[1]->core.flag);
        template_fields fa, fb;
        int bad_a = template_ref_fields(r[0], template_library(rg[0]), &fa) < 0;
        int bad_b = template_ref_fields(r[1], template_library(rg[1]), &fb) < 0;
        int got = records_key_cmp(&spec, r[0], 5, r[1], 6);
        if (bad_a || bad_b) {
            check(got == 2, "template: records samtools refuses get no key", da, db);
        } else {
            int want = template_ref_cmp(&fa, &fb);
            check(got == (want ? want : -1), "template-coordinate", da, db);
        }
        bam_destroy1(r[0]);
        bam_destroy1(r[1]);
    }
    sort_key_spec_free(&spec);
    sam_hdr_destroy(h);
}

/* A forward single-end read at a:100 with these tags (NULL: none); a CB
 * starting with '#' goes in as an H tag, without the '#'. */
static bam1_t *cell_record(const char *name, const char *rg, const char *cb, const char *mi)
{
    bam1_t *b = make_full(name, 0, 0, 99, "10M", -1, -1, "ACGTACGTAC");
    if (rg) put_z(b, "RG", 'Z', rg);
    if (cb) put_z(b, "CB", cb[0] == '#' ? 'H' : 'Z', cb + (cb[0] == '#'));
    if (mi) put_z(b, "MI", 'Z', mi);
    return b;
}

/* Same ends, so library, CB, MI and name decide: 1.24 compares library and
 * CB with strcmp (a missing CB is "", bytes unsigned, a prefix first),
 * then MI, then the name.  want 0 is a tie: input order decides. */
static void test_cell_barcode_cases(void)
{
    static const struct { const char *rg[2], *cb[2], *mi[2], *name[2]; int want; } cases[] = {
        { { NULL, NULL }, { NULL, "" }, { NULL, NULL }, { "r", "r" }, 0 },     /* none = "" */
        { { NULL, NULL }, { "", NULL }, { NULL, NULL }, { "r", "r" }, 0 },
        { { NULL, NULL }, { "A", NULL }, { NULL, NULL }, { "r", "r" }, 1 },
        { { NULL, NULL }, { "", "A" }, { NULL, NULL }, { "r", "r" }, -1 },
        { { NULL, NULL }, { "AA", "A" }, { NULL, NULL }, { "r", "r" }, 1 },      /* prefix first */
        { { NULL, NULL }, { "AA", "B" }, { NULL, NULL }, { "r", "r" }, -1 },
        { { NULL, NULL }, { "\x80", "~" }, { NULL, NULL }, { "r", "r" }, 1 },    /* unsigned */
        { { NULL, NULL }, { "a", "B" }, { NULL, NULL }, { "r", "r" }, 1 },
        { { NULL, NULL }, { "#AB", "AC" }, { NULL, NULL }, { "r", "r" }, -1 },   /* H is a string */
        { { NULL, NULL }, { "A", "B" }, { "2", "1" }, { "r", "r" }, -1 },        /* CB before MI */
        { { NULL, NULL }, { "B", "A" }, { "1", "2" }, { "a", "b" }, 1 },
        { { NULL, NULL }, { "A", "A" }, { "2", "1" }, { "a", "b" }, 1 },         /* then MI */
        { { NULL, NULL }, { "A", "A" }, { "1/A", "1/B" }, { "b", "a" }, 1 },     /* then name */
        { { "rgC", "rgA" }, { "A", "B" }, { NULL, NULL }, { "r", "r" }, 1 },     /* library first */
        { { "rgA", "rgB" }, { "B", "A" }, { NULL, NULL }, { "r", "r" }, 1 },     /* same library */
        { { "rgA", "rgD" }, { "A", "A" }, { NULL, NULL }, { "r", "r" }, 1 },     /* libX > "" */
    };
    sam_hdr_t *h;
    sort_spec spec = template_spec(&h);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        bam1_t *a = cell_record(cases[i].name[0], cases[i].rg[0], cases[i].cb[0], cases[i].mi[0]);
        bam1_t *b = cell_record(cases[i].name[1], cases[i].rg[1], cases[i].cb[1], cases[i].mi[1]);
        char desc[32];
        snprintf(desc, sizeof desc, "case %zu", i + 1);
        int want = cases[i].want;
        check(records_key_cmp(&spec, a, 1, b, 2) == (want ? want : -1), "cell barcode", desc, "");
        check(records_key_cmp(&spec, b, 1, a, 2) == (want ? -want : -1), "cell barcode, swapped",
              desc, "");
        bam_destroy1(a);
        bam_destroy1(b);
    }
    sort_key_spec_free(&spec);
    sam_hdr_destroy(h);
}

/* A CB that is not a string gets no key, and the error names CB; 1.24
 * checks MC first, then CB, then MI, and reports the first problem. */
static void test_cell_barcode_errors(void)
{
    sam_hdr_t *h;
    sort_spec spec = template_spec(&h);
    uint8_t key[512], c = 'A';
    bam1_t *b[4];
    for (int i = 0; i < 4; i++) b[i] = cell_record("r", NULL, NULL, NULL);
    bam_aux_update_int(b[0], "CB", 7);
    bam_aux_append(b[1], "CB", 'A', 1, &c);
    bam_aux_update_float(b[2], "CB", 1.5f);
    bam_aux_update_int(b[2], "MI", 3);      /* CB is reported, not MI */
    int8_t arr[2] = { 1, 2 };
    bam_aux_update_array(b[3], "CB", 'c', 2, arr);
    for (int i = 0; i < 4; i++) {
        char desc[32];
        snprintf(desc, sizeof desc, "record %d", i + 1);
        check(sort_key_encode(&spec, b[i], 0, key) == 0, "a CB that is not a string gets no key",
              desc, "");
        check(strstr(sort_key_error(&spec, b[i]), "CB tag") != NULL, "the error names CB", desc,
              sort_key_error(&spec, b[i]));
        bam_destroy1(b[i]);
    }
    bam1_t *paired = make_full("p", 0x63, 0, 99, "10M", 0, 200, "ACGTACGTAC");
    bam_aux_update_int(paired, "CB", 7);    /* and no MC: MC is reported */
    check(strstr(sort_key_error(&spec, paired), "MC tag") != NULL, "MC is checked before CB", "",
          sort_key_error(&spec, paired));
    bam_destroy1(paired);
    sort_key_spec_free(&spec);
    sam_hdr_destroy(h);
}

int main(void)
{
    srand(4242);
    run_group("template keys: 80k random pairs against the rules (5' ends from CIGAR and MC, "
              "library, CB, MI, name)", test_template_order);
    run_group("template keys: the cell barcode's cases (none = empty, prefix, unsigned, H, "
              "between library and MI)", test_cell_barcode_cases);
    run_group("template keys: a CB that is not a string is refused, naming CB (MC first)",
              test_cell_barcode_errors);
    return key_checks_summary();
}
