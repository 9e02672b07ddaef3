/* order_rules.h -- samtools sort's ordering rules, written straight from
 * their description (not from the key encoder), for tests and fuzzers to
 * check encoded keys against.  Each comparison returns -1, 0 or 1. */
#ifndef ORDER_RULES_H
#define ORDER_RULES_H

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "keys/sort_key.h"

static inline int sign(long v) { return (v > 0) - (v < 0); }

/* memcmp order of the two keys; 2 if either record has no key. */
static inline int records_key_cmp(const sort_spec *s, const bam1_t *a, uint64_t sa, const bam1_t *b, uint64_t sb)
{
    uint8_t *ka = malloc(sort_key_max_len(s, a)), *kb = malloc(sort_key_max_len(s, b));
    if (!ka || !kb) abort();
    size_t la = sort_key_encode(s, a, sa, ka), lb = sort_key_encode(s, b, sb, kb);
    int c = memcmp(ka, kb, la < lb ? la : lb);
    c = !la || !lb ? 2 : c ? sign(c) : sign((long)la - (long)lb);
    free(ka);
    free(kb);
    return c;
}

static inline sort_spec spec_of(sort_order order)
{
    sort_spec s;
    sort_key_spec_init(&s, order);
    return s;
}

/* Natural order as documented for samtools sort -n: runs of digits compare
 * by numeric value (leading zeros ignored), other bytes by unsigned value,
 * and a string that runs out first is smaller. */
static inline int natural_cmp(const char *a, const char *b)
{
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    while (*p && *q) {
        if (isdigit(*p) && isdigit(*q)) {
            while (*p == '0') p++;
            while (*q == '0') q++;
            const unsigned char *ps = p, *qs = q;
            while (isdigit(*p)) p++;
            while (isdigit(*q)) q++;
            long lp = p - ps, lq = q - qs;
            if (lp != lq) return sign(lp - lq);
            int c = memcmp(ps, qs, (size_t)lp);
            if (c) return sign(c);
        } else {
            if (*p != *q) return sign((long)*p - (long)*q);
            p++, q++;
        }
    }
    return sign((long)(*p != 0) - (long)(*q != 0));
}

static inline int flag_rank(uint16_t f)
{
    int read = f & BAM_FREAD1 ? 1 : f & BAM_FREAD2 ? 2 : 0;
    if (f & BAM_FREAD1 && f & BAM_FREAD2) read = 3;
    int kind = f & BAM_FSECONDARY ? 2 : f & BAM_FSUPPLEMENTARY ? 1 : 0;
    if (f & BAM_FSECONDARY && f & BAM_FSUPPLEMENTARY) kind = 3;
    return read * 4 + kind;
}

static inline int name_ref_cmp(int natural, const char *na, uint16_t fa, uint64_t sa,
                        const char *nb, uint16_t fb, uint64_t sb)
{
    int c = natural ? natural_cmp(na, nb) : sign(strcmp(na, nb));
    if (c) return c;
    if (flag_rank(fa) != flag_rank(fb)) return sign(flag_rank(fa) - flag_rank(fb));
    return sign((long)sa - (long)sb);
}

/* Coordinate: tid as unsigned (so -1 last), then pos+1, forward before
 * reverse, then input order. */
static inline int coord_ref_cmp(int ta, int64_t pa, int ra, uint64_t sa,
                                int tb, int64_t pb, int rb, uint64_t sb)
{
    if (ta != tb) return (uint32_t)ta < (uint32_t)tb ? -1 : 1;
    if (pa != pb) return pa < pb ? -1 : 1;
    if (ra != rb) return ra < rb ? -1 : 1;
    return sa < sb ? -1 : sa > sb;
}

/* -t TAG (samtools 1.24): records without the tag first; then by kind,
 * A < B < string (Z or H) < number; numbers of any type by value, strings
 * by strcmp, characters by byte, arrays all equal; then the secondary
 * order.  Returns 0 when the tags do not decide. */
static inline int tag_kind(const uint8_t *aux)
{
    if (!aux) return 0;
    switch (aux[0]) {
    case 'A': return 1;
    case 'B': return 2;
    case 'Z': case 'H': return 3;
    case 'c': case 'C': case 's': case 'S': case 'i': case 'I': case 'f': case 'd': return 4;
    default: return 5;
    }
}

static inline int tag_ref_cmp(const bam1_t *a, const bam1_t *b, const char tag[2])
{
    const uint8_t *x = bam_aux_get(a, tag), *y = bam_aux_get(b, tag);
    int kx = tag_kind(x), ky = tag_kind(y);
    if (kx != ky) return kx < ky ? -1 : 1;
    switch (kx) {
    case 1: return sign((long)(uint8_t)bam_aux2A(x) - (long)(uint8_t)bam_aux2A(y));
    case 3: return sign(strcmp(bam_aux2Z(x), bam_aux2Z(y)));
    case 4: {
        int xi = x[0] != 'f' && x[0] != 'd', yi = y[0] != 'f' && y[0] != 'd';
        if (xi && yi) {
            int64_t u = bam_aux2i(x), v = bam_aux2i(y);
            return (u > v) - (u < v);
        }
        double u = bam_aux2f(x), v = bam_aux2f(y);
        return (u > v) - (u < v);
    }
    default: return 0;
    }
}

/* --template-coordinate (samtools 1.24).  The 5' end of a read, 1-based:
 * forward, its position minus the soft clips among the clips it starts
 * with; reverse, its last reference base (its position when it has no
 * CIGAR) plus the soft clips among the clips it ends with.  Hard clips
 * count for nothing.  The mate's comes from the MC tag's text: forward, the
 * same; reverse, mpos plus the reference length plus every soft clip after
 * the first reference-consuming operation. */
typedef struct {
    int32_t tid[2];
    int64_t pos[2];
    int neg[2];
    const char *library, *cid, *mid, *name;
    int upper;
} template_fields;

static inline int64_t own_ref_five_prime(const bam1_t *b)
{
    const uint32_t *cig = bam_get_cigar(b);
    uint32_t n = b->core.n_cigar;
    int64_t soft = 0, ref = 0;
    if (!bam_is_rev(b)) {
        for (uint32_t i = 0; i < n && strchr("SH", bam_cigar_opchr(cig[i])); i++)
            if (bam_cigar_opchr(cig[i]) == 'S') soft += bam_cigar_oplen(cig[i]);
        return b->core.pos + 1 - soft;
    }
    for (uint32_t i = 0; i < n; i++)
        if (bam_cigar_type(bam_cigar_op(cig[i])) & 2) ref += bam_cigar_oplen(cig[i]);
    for (uint32_t i = n; i > 0 && strchr("SH", bam_cigar_opchr(cig[i - 1])); i--)
        if (bam_cigar_opchr(cig[i - 1]) == 'S') soft += bam_cigar_oplen(cig[i - 1]);
    return b->core.pos + (n ? ref : 1) + soft;
}

static inline int64_t mate_ref_five_prime(const bam1_t *b, const char *text)
{
    char ops[256];
    long lens[256];
    int n = 0;
    while (*text && *text != '*' && n < 256) {
        char *end = (char *)text;
        long len = isdigit((unsigned char)*text) ? strtol(text, &end, 10) : 1;
        if (!*end) break;
        lens[n] = len;
        ops[n++] = *end;
        text = end + 1;
    }
    int64_t soft = 0, ref = 0;
    if (!bam_is_mrev(b)) {
        for (int i = 0; i < n && (ops[i] == 'S' || ops[i] == 'H'); i++)
            if (ops[i] == 'S') soft += lens[i];
        return b->core.mpos + 1 - soft;
    }
    int seen_ref = 0;
    for (int i = 0; i < n; i++) {
        if (ops[i] && strchr("MDN=X", ops[i])) {
            ref += lens[i];
            seen_ref = 1;
        } else if (ops[i] == 'S' && seen_ref) {
            soft += lens[i];
        }
    }
    return b->core.mpos + ref + soft;
}

/* Fills f, or returns -1 when samtools refuses the record (a mapped mate
 * without an MC string, or a CB or MI that is not a string). */
static inline int template_ref_fields(const bam1_t *b, const char *library, template_fields *f)
{
    f->tid[0] = f->tid[1] = INT32_MAX;
    f->pos[0] = f->pos[1] = HTS_POS_MAX;
    f->neg[0] = f->neg[1] = 0;
    f->library = library;
    f->name = bam_get_qname(b);
    f->cid = "";
    f->mid = "";
    if (!(b->core.flag & BAM_FUNMAP)) {
        f->tid[0] = b->core.tid;
        f->neg[0] = bam_is_rev(b);
        f->pos[0] = own_ref_five_prime(b);
    }
    if ((b->core.flag & BAM_FPAIRED) && !(b->core.flag & BAM_FMUNMAP)) {
        const uint8_t *mc = bam_aux_get(b, "MC");
        if (!mc || (mc[0] != 'Z' && mc[0] != 'H')) return -1;
        f->tid[1] = b->core.mtid;
        f->neg[1] = bam_is_mrev(b);
        f->pos[1] = mate_ref_five_prime(b, (const char *)mc + 1);
    }
    const uint8_t *cb = bam_aux_get(b, "CB");
    if (cb) {
        if (cb[0] != 'Z' && cb[0] != 'H') return -1;
        f->cid = (const char *)cb + 1;
    }
    const uint8_t *mi = bam_aux_get(b, "MI");
    if (mi) {
        if (mi[0] != 'Z' && mi[0] != 'H') return -1;
        f->mid = (const char *)mi + 1;
    }
    f->upper = !(f->tid[0] < f->tid[1] || (f->tid[0] == f->tid[1] && f->pos[0] < f->pos[1])
                 || (f->tid[0] == f->tid[1] && f->pos[0] == f->pos[1] && !f->neg[0]));
    if (f->upper) {
        int32_t t = f->tid[0]; f->tid[0] = f->tid[1]; f->tid[1] = t;
        int64_t p = f->pos[0]; f->pos[0] = f->pos[1]; f->pos[1] = p;
        int g = f->neg[0]; f->neg[0] = f->neg[1]; f->neg[1] = g;
    }
    return 0;
}

/* MI compares without a final "/X", char by char as signed chars, a
 * prefix first. */
static inline int mid_ref_cmp(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la >= 2 && a[la - 2] == '/') la -= 2;
    if (lb >= 2 && b[lb - 2] == '/') lb -= 2;
    for (size_t i = 0; i < la && i < lb; i++)
        if (a[i] != b[i]) return (signed char)a[i] < (signed char)b[i] ? -1 : 1;
    return sign((long)la - (long)lb);
}

static inline int template_ref_cmp(const template_fields *x, const template_fields *y)
{
    for (int i = 0; i < 2; i++)
        if (x->tid[i] != y->tid[i]) return x->tid[i] < y->tid[i] ? -1 : 1;
    for (int i = 0; i < 2; i++)
        if (x->pos[i] != y->pos[i]) return x->pos[i] < y->pos[i] ? -1 : 1;
    for (int i = 0; i < 2; i++)
        if (x->neg[i] != y->neg[i]) return x->neg[i] ? -1 : 1;  /* reverse first */
    int c = sign(strcmp(x->library, y->library));
    if (!c) c = sign(strcmp(x->cid, y->cid));   /* cell barcode: none is "" */
    if (!c) c = mid_ref_cmp(x->mid, y->mid);
    if (!c) c = sign(strcmp(x->name, y->name));
    if (!c) c = sign(x->upper - y->upper);
    return c;
}

/* -M without -I (samtools 1.24): every k-mer of the read is coded 2 bits a
 * base (A0 C1 G2 T3, anything else 0), first base highest, XORed with
 * 0xdead7878beef7878 and masked to 2k bits; on the reverse strand, the
 * reverse complement's k-mers.  With -H each run of one base counts once.
 * The read's key is the smallest such hash (the first one found; reverse
 * only if strictly smaller) plus 2^30, kept to 62 bits; the tie value is
 * 65535 minus the k-mer's start (0 at least), bigger first.  Computed here
 * k-mer by k-mer, with no rolling hash. */
typedef struct {
    uint64_t key;
    int64_t tie;
    int rev;
} minimiser_ref;

static inline minimiser_ref minimiser_ref_key(const bam1_t *b, int k, int squash, int try_rev)
{
    static const int fwd[16] = { 0, 0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0 };
    static const int cmp[16] = { 0, 3, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    const uint8_t *seq = bam_get_seq(b);
    int len = b->core.l_qseq, n = 0;
    int *code = malloc(sizeof(int) * (len + 1)), *at = malloc(sizeof(int) * (len + 1));
    for (int i = 0; i < len; i++) {
        int base = bam_seqi(seq, i);
        if (squash && n && base == code[n - 1]) continue;
        code[n] = base;
        at[n++] = i;
    }
    uint64_t mask = (1ULL << (2 * k)) - 1, best = UINT64_MAX;
    int64_t best_at = 0;
    minimiser_ref r = { 0, 0, 0 };
    for (int strand = 0; strand < 1 + !!try_rev; strand++) {
        for (int e = k - 1; e < n; e++) {
            uint64_t h = 0;
            for (int j = 0; j < k; j++) {
                int base = strand ? code[e - j] : code[e - k + 1 + j];
                h = (h << 2) | (uint64_t)(strand ? cmp[base] : fwd[base]);
            }
            h = (h ^ 0xdead7878beef7878ULL) & mask;
            if (h < best) {
                best = h;
                best_at = strand ? (int64_t)len - at[e] - 1 : (int64_t)at[e] - (k - 1);
                r.rev = strand;
            }
        }
    }
    if (n < k) best_at = -(k - 1);
    free(code);
    free(at);
    r.key = (best + (1ULL << 30)) & ((1ULL << 62) - 1);
    r.tie = 65535 - best_at > 0 ? 65535 - best_at : 0;
    return r;
}

#endif

