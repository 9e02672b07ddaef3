/* fuzz_record.c -- fuzzes record -> key -> value -> record.
 *
 * Two records are decoded from the input.  For every sort order the key must
 * fit sort_key_max_len(), the value must round-trip to an identical record,
 * and memcmp order of the keys must agree with test/order_rules.h.  Any
 * violation aborts, which the fuzzer reports as a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/sam.h>
#include "keys/sort_key.h"
#include "keys/minimiser.h"
#include "codec/record.h"
#include "order_rules.h"

typedef struct {
    const uint8_t *p;
    size_t n;
} reader;

static uint64_t take(reader *r, int nbytes)
{
    uint64_t v = 0;
    for (int i = 0; i < nbytes; i++) {
        v = (v << 8) | (r->n ? *r->p : 0);
        if (r->n) r->p++, r->n--;
    }
    return v;
}

static bam1_t *decode_record(reader *r)
{
    uint16_t flag = (uint16_t)take(r, 2);
    int tid = (int)(take(r, 1) % 8) - 1;                  /* -1..6 */
    int64_t pos = (int64_t)(take(r, 5) % (1ULL << 40)) - 1;
    size_t l_name = 1 + take(r, 1) % 254;
    char name[256];
    for (size_t i = 0; i < l_name; i++) {
        char c = (char)take(r, 1);
        name[i] = c ? c : '0';                             /* names never hold NUL */
    }
    name[l_name] = '\0';
    size_t l_seq = take(r, 1) % 16;
    char seq[16], qual[16];
    for (size_t i = 0; i < l_seq; i++) {
        seq[i] = "ACGTN"[take(r, 1) % 5];
        qual[i] = (char)(take(r, 1) % 40);
    }
    uint32_t cigar[1] = { bam_cigar_gen(l_seq, BAM_CMATCH) };
    bam1_t *b = bam_init1();
    if (bam_set1(b, l_name, name, flag, tid, pos, 60, l_seq ? 1 : 0, cigar,
                 -1, -1, 0, l_seq, seq, qual, 0) < 0) {
        bam_destroy1(b);
        return NULL;
    }
    return b;
}

static void check_round_trip(const bam1_t *b)
{
    uint8_t *val = malloc(record_value_len(b));
    if (!val) abort();
    record_value_pack(b, val);
    bam1_t *back = bam_init1();
    if (record_value_unpack(val, record_value_len(b), back) < 0) abort();
    if (memcmp(&back->core, &b->core, sizeof b->core) != 0) abort();
    if (back->l_data != b->l_data || memcmp(back->data, b->data, (size_t)b->l_data) != 0) abort();
    bam_destroy1(back);
    free(val);
}

static void check_orders(const bam1_t *a, const bam1_t *b)
{
    uint8_t key[2048];
    for (int order = ORDER_COORDINATE; order <= ORDER_SHUFFLE; order++) {
        sort_spec s = spec_of((sort_order)order);
        for (s.by_tag = 0; s.by_tag < 2; s.by_tag++)
            if (sort_key_encode(&s, a, 0, key) > sort_key_max_len(&s, a)) abort();
    }
    const char *na = bam_get_qname(a), *nb = bam_get_qname(b);
    uint16_t fa = a->core.flag, fb = b->core.flag;
    sort_spec natural = spec_of(ORDER_NAME_NATURAL), ascii = spec_of(ORDER_NAME_ASCII);
    sort_spec coord = spec_of(ORDER_COORDINATE), tag = coord;
    tag.by_tag = 1;
    memcpy(tag.tag, "XT", 2);   /* no record has it: the coordinate decides */
    if (records_key_cmp(&natural, a, 0, b, 1) != name_ref_cmp(1, na, fa, 0, nb, fb, 1)) abort();
    if (records_key_cmp(&ascii, a, 0, b, 1) != name_ref_cmp(0, na, fa, 0, nb, fb, 1)) abort();
    int want = coord_ref_cmp(a->core.tid, a->core.pos, bam_is_rev(a), 0,
                             b->core.tid, b->core.pos, bam_is_rev(b), 1);
    if (records_key_cmp(&coord, a, 0, b, 1) != want) abort();
    if (records_key_cmp(&tag, a, 0, b, 1) != want) abort();
    /* Template: decoded records have no MC, so paired ones with a mapped
     * mate have no key; the others compare as the rules say. */
    sort_spec tc = spec_of(ORDER_TEMPLATE);
    template_fields ta, tb;
    int bad_a = template_ref_fields(a, "", &ta) < 0, bad_b = template_ref_fields(b, "", &tb) < 0;
    int got = records_key_cmp(&tc, a, 0, b, 1);
    if (bad_a || bad_b) {
        if (got != 2) abort();
    } else {
        int w = template_ref_cmp(&ta, &tb);
        if (got != (w ? w : -1)) abort();
    }
    /* Minimiser hashes against the k-mer by k-mer scan. */
    for (int k = 1; k <= 31; k += 6) {
        mm_params p = { k, 100, k % 2, k % 3 != 0 };
        mm_result r = minimiser_read_key(a, &p, NULL);
        minimiser_ref m = minimiser_ref_key(a, p.kmer, p.squash, p.try_rev);
        if (r.key != m.key || r.tie != m.tie || r.rev != m.rev) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = { data, size };
    bam1_t *a = decode_record(&r), *b = decode_record(&r);
    if (a && b) {
        check_round_trip(a);
        check_round_trip(b);
        check_orders(a, b);
    }
    bam_destroy1(a);
    bam_destroy1(b);
    return 0;
}
