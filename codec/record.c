/* codec/record.c -- see codec/record.h. */
#include <string.h>
#include "codec/record.h"
#include "util/mix64.h"

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

uint64_t record_digest(const bam1_t *b)
{
    /* Not cryptographic, but a lost, duplicated or altered record changes the sum. */
    uint64_t h = mix64_bytes(0x243f6a8885a308d3ULL, &b->core, sizeof b->core);
    return mix64_bytes(h, b->data, (size_t)b->l_data);
}
