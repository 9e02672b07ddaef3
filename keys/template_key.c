/* keys/template_key.c -- see keys/template_key.h. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "keys/template_key.h"
#include "keys/key_bytes.h"

/* ---- --template-coordinate ----
 * samtools: each read gets its own and its mate's unclipped 5' end (tid, pos,
 * strand; unmapped ends are INT32_MAX/HTS_POS_MAX/forward), the lower end
 * first; then the library of its read group, the cell barcode (CB, by
 * strcmp; a missing one is "", so it ties with an empty one), the MI tag
 * (without a final "/X"), the name, and whether the read had the upper end.
 * "Unclipped" undoes soft clips only: 1.24 steps over hard clips without
 * counting them.  Library, CB and name are NUL-terminated (strings hold no
 * NUL), so each compares as strcmp and a shorter one ends before the next
 * field can count. */

static int is_clip(int op)
{
    return op == BAM_CSOFT_CLIP || op == BAM_CHARD_CLIP;
}

static hts_pos_t leading_soft_clips(const uint32_t *cigar, uint32_t n)
{
    hts_pos_t clipped = 0;
    for (uint32_t i = 0; i < n && is_clip(bam_cigar_op(cigar[i])); i++)
        if (bam_cigar_op(cigar[i]) == BAM_CSOFT_CLIP) clipped += bam_cigar_oplen(cigar[i]);
    return clipped;
}

static hts_pos_t trailing_soft_clips(const uint32_t *cigar, uint32_t n)
{
    hts_pos_t clipped = 0;
    for (uint32_t i = n; i-- > 0 && is_clip(bam_cigar_op(cigar[i])); )
        if (bam_cigar_op(cigar[i]) == BAM_CSOFT_CLIP) clipped += bam_cigar_oplen(cigar[i]);
    return clipped;
}

/* 1-based unclipped 5' ends, as samtools computes them. */
static hts_pos_t own_five_prime(const bam1_t *b)
{
    const uint32_t *cigar = bam_get_cigar(b);
    if (bam_is_rev(b)) return bam_endpos(b) + trailing_soft_clips(cigar, b->core.n_cigar);
    return b->core.pos - leading_soft_clips(cigar, b->core.n_cigar) + 1;
}

/* The mate's, from its position and the CIGAR text of its MC tag: a
 * forward mate starts at mpos minus its leading soft clips; a reverse mate
 * ends at mpos plus its reference length and the soft clips after its
 * first reference-consuming operation.  A count without an operation is 1. */
static hts_pos_t mate_five_prime(const bam1_t *b, const char *cigar)
{
    hts_pos_t span = 0;
    int reverse = bam_is_mrev(b), seen_ref = 0;
    const char *c = cigar;
    while (*c && *c != '*') {
        long n = 1;
        if (isdigit((unsigned char)*c)) {
            char *end;
            n = strtol(c, &end, 10);
            c = end;
            if (!*c) break;
        }
        if (!reverse) {
            if (*c != 'S' && *c != 'H') break;
            if (*c == 'S') span += n;
        } else if (strchr("MDN=X", *c)) {
            span += n;
            seen_ref = 1;
        } else if (*c == 'S' && seen_ref) {
            span += n;
        }
        c++;
    }
    return reverse ? b->core.mpos + span : b->core.mpos - span + 1;
}

/* MI compares as samtools does: by signed char, a prefix first.  Bytes map
 * to 1..255 in that order, leaving 0 for the end. */
static uint8_t *put_molecule_id(uint8_t *p, const char *mi)
{
    size_t n = strlen(mi);
    if (n >= 2 && mi[n - 2] == '/') n -= 2;
    for (size_t i = 0; i < n; i++) {
        uint8_t v = (uint8_t)mi[i] ^ 0x80;
        *p++ = v < 0x80 ? v + 1 : v;
    }
    *p++ = 0;
    return p;
}

/* A string tag's text: "" when absent, NULL when not a string (Z or H). */
static const char *string_tag(const bam1_t *b, const char tag[2])
{
    const uint8_t *aux = bam_aux_get(b, tag);
    return aux ? bam_aux2Z(aux) : "";
}

int template_key_problem(const bam1_t *b, template_tags *t)
{
    t->mate_cigar = NULL;
    if ((b->core.flag & BAM_FPAIRED) && !(b->core.flag & BAM_FMUNMAP)) {
        const uint8_t *tag = bam_aux_get(b, "MC");
        if (!tag) return TEMPLATE_NO_MC;
        if (!(t->mate_cigar = bam_aux2Z(tag))) return TEMPLATE_BAD_MC;
    }
    if (!(t->cell = string_tag(b, "CB"))) return TEMPLATE_BAD_CB;
    if (!(t->molecule = string_tag(b, "MI"))) return TEMPLATE_BAD_MI;
    return TEMPLATE_OK;
}

uint8_t *template_key_body(const bam1_t *b, const char *lib, uint8_t *p)
{
    template_tags tags;
    if (template_key_problem(b, &tags) != TEMPLATE_OK) return NULL;
    const char *mc = tags.mate_cigar;
    int32_t tid[2] = { INT32_MAX, INT32_MAX };
    hts_pos_t pos[2] = { HTS_POS_MAX, HTS_POS_MAX };
    int neg[2] = { 0, 0 };
    if (!(b->core.flag & BAM_FUNMAP)) {
        tid[0] = b->core.tid;
        neg[0] = bam_is_rev(b);
        pos[0] = own_five_prime(b);
    }
    if (mc) {
        tid[1] = b->core.mtid;
        neg[1] = bam_is_mrev(b);
        pos[1] = mate_five_prime(b, mc);
    }
    int upper = !(tid[0] < tid[1] || (tid[0] == tid[1] && pos[0] < pos[1])
                  || (tid[0] == tid[1] && pos[0] == pos[1] && !neg[0]));
    int lo = upper, hi = !upper;
    p = put_i32(p, tid[lo]);
    p = put_i32(p, tid[hi]);
    p = put_i64(p, pos[lo]);
    p = put_i64(p, pos[hi]);
    *p++ = neg[lo] ? 0 : 1;     /* reverse strand first */
    *p++ = neg[hi] ? 0 : 1;
    p = put_string(p, lib, strlen(lib));
    p = put_string(p, tags.cell, strlen(tags.cell));
    p = put_molecule_id(p, tags.molecule);
    const char *name = bam_get_qname(b);
    p = put_string(p, name, strlen(name));
    *p++ = (uint8_t)upper;
    return p;
}
