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
#include "bam_sort.h"
#include "record_codec.h"
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
    uint8_t key[1024];
    static const sort_order orders[] = { ORDER_COORDINATE, ORDER_NAME_NATURAL, ORDER_NAME_ASCII };
    for (size_t i = 0; i < sizeof orders / sizeof *orders; i++)
        if (sort_key_encode(orders[i], a, 0, key) > sort_key_max_len(orders[i], a)) abort();
    const char *na = bam_get_qname(a), *nb = bam_get_qname(b);
    uint16_t fa = a->core.flag, fb = b->core.flag;
    if (key_cmp(ORDER_NAME_NATURAL, a, 0, b, 1) != name_ref_cmp(1, na, fa, 0, nb, fb, 1)) abort();
    if (key_cmp(ORDER_NAME_ASCII, a, 0, b, 1) != name_ref_cmp(0, na, fa, 0, nb, fb, 1)) abort();
    int want = coord_ref_cmp(a->core.tid, a->core.pos, bam_is_rev(a), 0,
                             b->core.tid, b->core.pos, bam_is_rev(b), 1);
    if (key_cmp(ORDER_COORDINATE, a, 0, b, 1) != want) abort();
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
