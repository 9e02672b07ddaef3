/* record_codec.c -- see record_codec.h. */
#include <string.h>
#include "record_codec.h"
#include "mix64.h"

void record_value_pack(const bam1_t *b, uint8_t *out)
{
    memcpy(out, &b->core, sizeof(bam1_core_t));
    memcpy(out + sizeof(bam1_core_t), b->data, (size_t)b->l_data);
}

int record_value_view(const uint8_t *val, size_t len, bam1_t *view)
{
    if (len < sizeof(bam1_core_t) || len - sizeof(bam1_core_t) > INT32_MAX)
        return -1;
    memset(view, 0, sizeof *view);
    memcpy(&view->core, val, sizeof(bam1_core_t));
    view->l_data = (int)(len - sizeof(bam1_core_t));
    view->m_data = (uint32_t)view->l_data;
    view->data = (uint8_t *)(val + sizeof(bam1_core_t));
    bam_set_mempolicy(view, BAM_USER_OWNS_STRUCT | BAM_USER_OWNS_DATA);
    return 0;
}

int record_value_unpack(const uint8_t *val, size_t len, bam1_t *b)
{
    bam1_t view;
    if (record_value_view(val, len, &view) < 0) return -1;
    /* The copy gives the CIGAR the alignment htslib expects. */
    return bam_copy1(b, &view) ? 0 : -1;
}

/* Not cryptographic, but every bit of the input reaches every bit of the
 * result, so a lost, duplicated or altered record changes the sum.  The
 * golden-ratio step keeps a zero word from leaving the state unchanged. */
static uint64_t mix(uint64_t h, uint64_t w)
{
    return mix64(h ^ w) + 0x9e3779b97f4a7c15ULL;
}

static uint64_t digest_bytes(uint64_t h, const uint8_t *p, size_t n)
{
    uint64_t w;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = mix(h, w);
    }
    w = 0;
    memcpy(&w, p, n);
    return mix(h, w ^ ((uint64_t)n << 56));
}

uint64_t record_digest(const bam1_t *b)
{
    uint64_t h = digest_bytes(0x243f6a8885a308d3ULL, (const uint8_t *)&b->core, sizeof b->core);
    return digest_bytes(h, b->data, (size_t)b->l_data);
}
