/* keys/sort_key.c -- sort keys and @HD tags for samtools sort's orders.
 *
 * Why encoded keys rather than a custom RocksDB comparator: a comparator
 * registered through the C API is an indirect call per comparison that RocksDB
 * cannot inline, and it must re-parse both records each time.  An encoded key
 * is compared with memcmp by the built-in comparator, by our in-memory batch
 * sort and by RocksDB's merging iterator alike.
 *
 * Building blocks: keys/key_bytes.h; the input number last.  The template-
 * coordinate key is keys/template_key.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/kstring.h>
#include "keys/sort_key.h"
#include "keys/key_bytes.h"
#include "keys/template_key.h"
#include "keys/minimiser.h"
#include "util/mix64.h"

#define SEQ_LEN 8
/* tid, pos+1, strand */
#define COORD_BODY_LEN (4 + 8 + 1)
/* NUL after the name, flag rank */
#define NAME_BODY_TAIL (1 + 2)
/* tid, key, tie, strand */
#define MINIMISER_BODY_LEN (4 + 8 + 8 + 1)
/* A digit run starts with this byte: any value in '0'..'9' keeps a run's
 * order against non-digit bytes, which is how samtools compares them. */
#define DIGIT_RUN_MARK '0'

struct sort_ctx {
    char **rg_ids, **libraries;     /* @RG ID -> LB, sorted by ID */
    size_t n_libraries, longest_library;
    mm_index *minimiser_index;
    int placed;                     /* a record with tid >= 0 was seen */
    split_ids *split_ids;           /* --split RG: the header's @RG IDs */
};

static mm_params minimiser_params(const sort_spec *s)
{
    mm_params p = { mm_kmer_clamp(s->kmer), s->window, s->squash, s->try_rev };
    return p;
}

/* ---- the spec and its context ---- */

void sort_key_spec_init(sort_spec *s, sort_order order)
{
    memset(s, 0, sizeof *s);
    s->order = order;
    s->kmer = 20;
    s->window = 100;
    s->try_rev = 1;
}

typedef struct {
    char *id, *lb;
    size_t line;
} rg_library;

static int by_id_then_line(const void *a, const void *b)
{
    const rg_library *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* @RG ID -> LB.  samtools takes, for each ID, the first @RG line with that
 * ID that has an LB tag. */
static int load_libraries(sort_ctx *c, sam_hdr_t *h)
{
    int n = sam_hdr_count_lines(h, "RG");
    rg_library *all = n > 0 ? calloc((size_t)n, sizeof *all) : NULL;
    kstring_t lb = KS_INITIALIZE;
    size_t kept = 0;
    int ret = -1;
    if (n < 0 || (n > 0 && !all)) goto done;
    for (int i = 0; i < n; i++) {
        const char *id = sam_hdr_line_name(h, "RG", i);
        int r = sam_hdr_find_tag_pos(h, "RG", i, "LB", &lb);
        if (!id || r < -1) goto done;
        if (r < 0 || !lb.s) continue;
        all[kept].id = strdup(id);
        all[kept].lb = strdup(lb.s);
        all[kept].line = (size_t)i;
        if (!all[kept].id || !all[kept++].lb) goto done;
    }
    if (kept) qsort(all, kept, sizeof *all, by_id_then_line);
    c->rg_ids = calloc(kept + 1, sizeof *c->rg_ids);
    c->libraries = calloc(kept + 1, sizeof *c->libraries);
    if (!c->rg_ids || !c->libraries) goto done;
    for (size_t i = 0; i < kept; i++) {
        if (c->n_libraries && !strcmp(c->rg_ids[c->n_libraries - 1], all[i].id)) continue;
        c->rg_ids[c->n_libraries] = all[i].id;
        c->libraries[c->n_libraries++] = all[i].lb;
        all[i].id = all[i].lb = NULL;
        size_t len = strlen(c->libraries[c->n_libraries - 1]);
        if (len > c->longest_library) c->longest_library = len;
    }
    ret = 0;
done:
    for (size_t i = 0; i < kept; i++) {
        free(all[i].id);
        free(all[i].lb);
    }
    free(all);
    free(lb.s);
    return ret;
}

int sort_key_spec_prepare(sort_spec *s, sam_hdr_t *h, errmsg *err)
{
    sort_ctx *c = calloc(1, sizeof *c);
    if (!c || (s->order == ORDER_TEMPLATE && load_libraries(c, h) < 0)) {
        s->ctx = c;
        return errmsg_set(err, "out of memory preparing the sort order");
    }
    s->ctx = c;
    if (s->split.on && s->split.by_rg && !(c->split_ids = split_key_ids_new(h)))
        return errmsg_set(err, "out of memory preparing the sort order");
    /* samtools builds the -I index whatever the final order is. */
    if (s->minimiser_ref) {
        mm_params p = minimiser_params(s);
        errno = 0;
        c->minimiser_index = minimiser_index_build(s->minimiser_ref, &p);
        if (!c->minimiser_index) {
            return errmsg_set(err, "cannot read the minimiser reference '%s': %s",
                              s->minimiser_ref, errno ? strerror(errno) : "not a sequence file");
        }
    }
    return 0;
}

void sort_key_spec_free(sort_spec *s)
{
    sort_ctx *c = s->ctx;
    if (!c) return;
    for (size_t i = 0; i < c->n_libraries; i++) {
        free(c->rg_ids[i]);
        free(c->libraries[i]);
    }
    free(c->rg_ids);
    free(c->libraries);
    minimiser_index_free(c->minimiser_index);
    split_key_ids_free(c->split_ids);
    free(c);
    s->ctx = NULL;
}

const split_ids *sort_key_split_ids(const sort_spec *s)
{
    return s->ctx ? s->ctx->split_ids : NULL;
}

/* ---- coordinate and name ---- */

/* The tie-break samtools applies between records of equal name: READ1 before
 * READ2, and within each, primary, then supplementary, then secondary. */
static unsigned sort_key_flag_rank(uint16_t flag)
{
    return ((flag & BAM_FREAD1) << 8) | ((flag & BAM_FREAD2) << 8)
         | ((flag & BAM_FSECONDARY) << 3) | ((flag & BAM_FSUPPLEMENTARY) >> 3);
}

/* samtools compares tid as an unsigned 64-bit value after sign extension, so
 * tid -1 (unmapped) sorts last; as a 32-bit unsigned value it orders the same.
 * pos -1 becomes 0 after the +1. */
static uint8_t *coord_body(const bam1_t *b, uint8_t *p)
{
    p = put_be(p, (uint32_t)b->core.tid, 4);
    p = put_be(p, (uint64_t)(b->core.pos + 1), 8);
    *p++ = bam_is_rev(b) ? 1 : 0;
    return p;
}

/* Natural order compares digit runs by numeric value, ignoring leading zeros
 * (so "r01" equals "r1"), and everything else byte by byte.  A run becomes
 * MARK, count of significant digits, the significant digits: equal-length
 * runs then compare digit by digit, and longer numbers sort higher. */
static uint8_t *natural_name(const char *name, uint8_t *p)
{
    const unsigned char *s = (const unsigned char *)name;
    while (*s) {
        if (!isdigit(*s)) {
            *p++ = *s++;
            continue;
        }
        while (*s == '0') s++;
        const unsigned char *digits = s;
        while (isdigit(*s)) s++;
        size_t n = (size_t)(s - digits);
        *p++ = DIGIT_RUN_MARK;
        *p++ = (uint8_t)n;      /* names are < 255 bytes */
        memcpy(p, digits, n);
        p += n;
    }
    return p;
}

static uint8_t *name_body(const bam1_t *b, int natural, uint8_t *p)
{
    const char *name = bam_get_qname(b);
    if (natural) {
        p = natural_name(name, p);
    } else {
        size_t n = strlen(name);
        memcpy(p, name, n);
        p += n;
    }
    *p++ = 0;   /* end of name: a shorter name sorts first */
    return put_be(p, sort_key_flag_rank(b->core.flag), 2);
}

static size_t name_body_max_len(const bam1_t *b)
{
    /* A one-digit run costs 3 bytes: mark, length, digit. */
    return 3 * (size_t)b->core.l_qname + NAME_BODY_TAIL;
}

/* What follows the tag with -t, or stands alone. */
static uint8_t *plain_body(const sort_spec *s, const bam1_t *b, uint8_t *p)
{
    if (s->order == ORDER_NAME_NATURAL) return name_body(b, 1, p);
    if (s->order == ORDER_NAME_ASCII) return name_body(b, 0, p);
    return coord_body(b, p);
}

/* ---- -t TAG ----
 * samtools: records without the tag first; then by type class, A < B <
 * string (Z and H together) < number; numbers (any integer or float type)
 * by value, strings by strcmp, A by its byte, B arrays all equal. */

static uint8_t *tag_part(const sort_spec *s, const bam1_t *b, uint8_t *p)
{
    const uint8_t *aux = bam_aux_get(b, s->tag);
    if (!aux) {
        *p++ = 0;
        return p;
    }
    switch (aux[0]) {
    case 'c': case 'C': case 's': case 'S': case 'i': case 'I':
        *p++ = 'c';
        return put_double(p, (double)bam_aux2i(aux));
    case 'f': case 'd':
        *p++ = 'c';
        return put_double(p, bam_aux2f(aux));
    case 'A':
        *p++ = 'A';
        *p++ = aux[1];
        return p;
    case 'Z': case 'H': {
        const uint8_t *str = aux + 1, *end = b->data + b->l_data;
        const uint8_t *nul = memchr(str, 0, (size_t)(end - str));
        *p++ = 'H';
        return put_string(p, (const char *)str, (size_t)((nul ? nul : end) - str));
    }
    default:    /* B, or a type samtools does not know: the type alone */
        *p++ = aux[0];
        return p;
    }
}

static const char *library_of(const sort_ctx *c, const bam1_t *b)
{
    const uint8_t *rg = bam_aux_get(b, "RG");
    if (!c || !rg || rg[0] != 'Z') return "";
    const char *id = (const char *)rg + 1;
    size_t lo = 0, hi = c->n_libraries;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int cmp = strcmp(c->rg_ids[mid], id);
        if (!cmp) return c->libraries[mid];
        if (cmp < 0) lo = mid + 1;
        else hi = mid;
    }
    return "";
}

static uint8_t *template_body(const sort_spec *s, const bam1_t *b, uint8_t *p)
{
    return template_key_body(b, library_of(s->ctx, b), p);
}

/* ---- -M ----
 * samtools: records with a reference (tid >= 0) by coordinate; after them
 * those with tid -1, by minimiser key, then the tie value (descending),
 * then the strand they are written with. */

static uint8_t *minimiser_body(const sort_spec *s, const bam1_t *b, uint8_t *p)
{
    if (b->core.tid != -1) return coord_body(b, p);
    mm_params mp = minimiser_params(s);
    mm_result r = minimiser_read_key(b, &mp, s->ctx ? s->ctx->minimiser_index : NULL);
    p = put_be(p, 0xffffffffu, 4);
    p = put_be(p, r.key, 8);
    p = put_be(p, ~((uint64_t)r.tie ^ (1ULL << 63)), 8);
    *p++ = (uint8_t)(bam_is_rev(b) ^ r.rev);
    return p;
}

/* ---- --shuffle ---- */

static uint8_t *shuffle_body(const sort_spec *s, uint64_t seq, uint8_t *p)
{
    return put_be(p, mix64(mix64(s->seed) + seq * 0x9e3779b97f4a7c15ULL), 8);
}

/* ---- the key ---- */

static size_t order_max_len(const sort_spec *s, const bam1_t *b)
{
    size_t body;
    if (s->by_tag) {
        body = 1 + (size_t)b->l_data + 1;   /* type and value; a string needs the most */
        body += s->order == ORDER_NAME_NATURAL || s->order == ORDER_NAME_ASCII
              ? name_body_max_len(b) : COORD_BODY_LEN;
        return body + SEQ_LEN;
    }
    switch (s->order) {
    case ORDER_NAME_NATURAL:
    case ORDER_NAME_ASCII:
        body = name_body_max_len(b);
        break;
    case ORDER_TEMPLATE:
        /* CB and MI both lie in the aux data: their lengths sum to less */
        body = TEMPLATE_FIXED_LEN + (s->ctx ? s->ctx->longest_library : 0) + 1
             + (size_t)b->l_data + 2 + (size_t)b->core.l_qname + 1;
        break;
    case ORDER_MINIMISER:
        body = MINIMISER_BODY_LEN;
        break;
    case ORDER_SHUFFLE:
        body = 8;
        break;
    default:
        body = COORD_BODY_LEN;
    }
    return body + SEQ_LEN;
}

size_t sort_key_max_len_any(const sort_spec *s)
{
    if (s->split.on || s->by_tag) return 0;
    switch (s->order) {
    case ORDER_COORDINATE: return COORD_BODY_LEN + SEQ_LEN;
    case ORDER_MINIMISER:  return MINIMISER_BODY_LEN + SEQ_LEN;
    case ORDER_SHUFFLE:    return 8 + SEQ_LEN;
    default:               return 0;
    }
}

size_t sort_key_max_len(const sort_spec *s, const bam1_t *b)
{
    return split_key_max_len(&s->split, b) + order_max_len(s, b);
}

size_t sort_key_encode(const sort_spec *s, const bam1_t *b, uint64_t seq, uint8_t *out)
{
    uint8_t *p = out;
    if (s->split.on && !(p = split_key_prefix(&s->split, s->ctx ? s->ctx->split_ids : NULL, b, p)))
        return 0;
    if (s->by_tag) {
        p = plain_body(s, b, tag_part(s, b, p));
    } else {
        switch (s->order) {
        case ORDER_TEMPLATE:  p = template_body(s, b, p); break;
        case ORDER_MINIMISER: p = minimiser_body(s, b, p); break;
        case ORDER_SHUFFLE:   p = shuffle_body(s, seq, p); break;
        default:              p = plain_body(s, b, p);
        }
    }
    if (!p) return 0;
    p = put_be(p, seq, SEQ_LEN);
    return (size_t)(p - out);
}

const char *sort_key_error(const sort_spec *s, const bam1_t *b)
{
    template_tags tags;
    const char *split = split_key_problem(&s->split, b);
    if (split) return split;
    if (s->order == ORDER_TEMPLATE && !s->by_tag) {
        switch (template_key_problem(b, &tags)) {
        case TEMPLATE_NO_MC:
            return "has no MC tag; --template-coordinate needs the mate's CIGAR "
                   "(run samtools fixmate -m first)";
        case TEMPLATE_BAD_MC:
            return "has an MC tag that is not a string; --template-coordinate needs "
                   "the one samtools fixmate -m writes";
        case TEMPLATE_BAD_CB:
            return "has a CB tag that is not a string";
        case TEMPLATE_BAD_MI:
            return "has an MI tag that is not a string";
        }
    }
    return "cannot be placed in this sort order";
}

int sort_key_saw_placed(const sort_spec *s)
{
    return s->ctx && s->ctx->placed;
}

void sort_key_set_placed(sort_spec *s)
{
    if (s->ctx) s->ctx->placed = 1;
}

void sort_key_record_finish(const sort_spec *s, bam1_t *b)
{
    if (sort_key_record_rewrite(s, b) && s->ctx) s->ctx->placed = 1;
}

int sort_key_record_rewrite(const sort_spec *s, bam1_t *b)
{
    if (b->core.tid >= 0) return 1;
    if (s->order != ORDER_MINIMISER || s->by_tag || b->core.tid != -1) return 0;
    /* samtools keeps the key in pos/mpos/isize while sorting, and clears
     * them on output. */
    mm_params mp = minimiser_params(s);
    if (minimiser_read_key(b, &mp, s->ctx ? s->ctx->minimiser_index : NULL).rev)
        minimiser_reverse_complement(b);
    b->core.pos = -1;
    b->core.mpos = -1;
    b->core.isize = 0;
    return 0;
}

/* ---- @HD ---- */

static int set_or_remove(sam_hdr_t *h, const char *key, const char *value)
{
    if (value) return sam_hdr_update_hd(h, key, value) < 0 ? -1 : 0;
    sam_hdr_remove_tag_hd(h, key);
    return 0;
}

int sort_key_set_hd_tags(sam_hdr_t *h, const sort_spec *s)
{
    const char *so = "coordinate", *go = NULL, *ss = NULL;
    char tag_ss[64];
    int placed = s->ctx && s->ctx->placed;
    if (s->by_tag) {
        /* "unsorted:TAG:<then>", cut at a NUL in the tag as samtools' own
         * formatting cuts it. */
        const char *then = s->order == ORDER_NAME_NATURAL ? "queryname:natural"
                         : s->order == ORDER_NAME_ASCII ? "queryname:lexicographical"
                         : "coordinate";
        size_t n = !s->tag[0] ? 0 : !s->tag[1] ? 1 : 2;
        snprintf(tag_ss, sizeof tag_ss, "unsorted:%.*s%s%s", (int)n, s->tag,
                 n == 2 ? ":" : "", n == 2 ? then : "");
        so = "unsorted";
        ss = tag_ss;
    } else {
        switch (s->order) {
        case ORDER_NAME_NATURAL: so = "queryname"; ss = "queryname:natural"; break;
        case ORDER_NAME_ASCII:   so = "queryname"; ss = "queryname:lexicographical"; break;
        case ORDER_TEMPLATE:
            so = "unsorted";
            go = "query";
            ss = "unsorted:template-coordinate";
            break;
        case ORDER_MINIMISER:
            so = placed ? "coordinate" : "unsorted";
            ss = placed ? "coordinate:minhash" : "unsorted:minhash";
            break;
        case ORDER_SHUFFLE: so = "unsorted"; break;
        default: break;
        }
    }
    if (sam_hdr_count_lines(h, "HD") <= 0) {
        if (sam_hdr_add_line(h, "HD", "VN", SAM_FORMAT_VERSION, NULL) < 0)
            return -1;
    }
    if (sam_hdr_update_hd(h, "SO", so) < 0) return -1;
    /* samtools sets them in this order: a tag not there yet goes last. */
    if (set_or_remove(h, "GO", go) < 0 || set_or_remove(h, "SS", ss) < 0) return -1;
    return 0;
}
