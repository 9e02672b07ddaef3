/* load/header_merge.c -- see load/header_merge.h.
 *
 * Every line is compared as htslib formats it (sam_hdr_find_line_pos()), so
 * that two inputs written by different tools compare by their tags, not by
 * their whitespace.  The input's own text is walked only to learn the
 * order and type of its lines; every field is read through the sam_hdr API.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/khash.h>
#include <htslib/kstring.h>
#include "load/header_merge.h"

KHASH_SET_INIT_STR(line_set)

/* An @RG or @PG ID that a later input brought, and which input. */
typedef struct {
    char type[3];
    char *id;
    int input;
    const char *fn;
} id_origin;

struct header_merge {
    sam_hdr_t *merged;
    int inputs;                     /* headers added so far */
    const char *first_fn;
    khash_t(line_set) *lines;       /* @CO and other lines merged, as text (keys owned) */
    id_origin *ids;
    size_t n_ids, m_ids;
    kstring_t line, id, there;      /* scratch */
};

/* The lines of one type met so far in the header being walked. */
#define MAX_TYPES 64
typedef struct {
    char type[MAX_TYPES][3];
    int seen[MAX_TYPES], n;
} type_counts;

header_merge *header_merge_new(void)
{
    header_merge *m = calloc(1, sizeof *m);
    if (m && !(m->lines = kh_init(line_set))) {
        free(m);
        return NULL;
    }
    return m;
}

void header_merge_free(header_merge *m)
{
    if (!m) return;
    if (m->merged) sam_hdr_destroy(m->merged);
    for (khint_t k = kh_begin(m->lines); k != kh_end(m->lines); k++)
        if (kh_exist(m->lines, k)) free((char *)kh_key(m->lines, k));
    kh_destroy(line_set, m->lines);
    for (size_t i = 0; i < m->n_ids; i++) free(m->ids[i].id);
    free(m->ids);
    free(m->line.s);
    free(m->id.s);
    free(m->there.s);
    free(m);
}

sam_hdr_t *header_merge_take(header_merge *m)
{
    sam_hdr_t *h = m->merged;
    m->merged = NULL;
    return h;
}

/* The position of the next line of `type` among its type's lines. */
static int next_of_type(type_counts *c, const char *type)
{
    for (int i = 0; i < c->n; i++)
        if (!memcmp(c->type[i], type, 2)) return c->seen[i]++;
    if (c->n == MAX_TYPES) return -1;
    memcpy(c->type[c->n], type, 3);
    c->seen[c->n++] = 1;
    return 0;
}

/* The M5 of reference `name`, if its line gives one: 1, else 0. */
static int find_m5(sam_hdr_t *h, const char *name, kstring_t *ks)
{
    return sam_hdr_find_tag_id(h, "SQ", "SN", name, "M5", ks) == 0;
}

#define SQ_DIFFER "'%s' has other @SQ lines than '%s' (the inputs of one sort must share them): "

static int same_sq(header_merge *m, sam_hdr_t *h, const char *fn, errmsg *err)
{
    sam_hdr_t *f = m->merged;
    int nf = sam_hdr_nref(f), nh = sam_hdr_nref(h);
    for (int i = 0; i < nf || i < nh; i++) {
        const char *mine = i < nh ? sam_hdr_tid2name(h, i) : NULL;
        const char *first = i < nf ? sam_hdr_tid2name(f, i) : NULL;
        hts_pos_t len = mine ? sam_hdr_tid2len(h, i) : 0, first_len = first ? sam_hdr_tid2len(f, i) : 0;
        if (!mine)
            return errmsg_set(err, SQ_DIFFER "it lacks @SQ SN:%s LN:%" PRIhts_pos, fn, m->first_fn,
                              first, first_len);
        if (!first)
            return errmsg_set(err, SQ_DIFFER "its @SQ SN:%s LN:%" PRIhts_pos " is not in the first",
                              fn, m->first_fn, mine, len);
        if (strcmp(mine, first) || len != first_len)
            return errmsg_set(err, SQ_DIFFER "its @SQ SN:%s LN:%" PRIhts_pos " stands where the "
                              "first has SN:%s LN:%" PRIhts_pos, fn, m->first_fn, mine, len, first,
                              first_len);
        if (find_m5(h, mine, &m->line) && find_m5(f, mine, &m->there) &&
            strcmp(m->line.s, m->there.s))
            return errmsg_set(err, SQ_DIFFER "its @SQ SN:%s has M5:%s, the first's M5:%s", fn,
                              m->first_fn, mine, m->line.s, m->there.s);
    }
    return 0;
}

static int add_text(header_merge *m, const kstring_t *line, errmsg *err)
{
    kstring_t with_newline = { 0, 0, NULL };
    int bad = kputsn(line->s, line->l, &with_newline) < 0 || kputc('\n', &with_newline) < 0 ||
              sam_hdr_add_lines(m->merged, with_newline.s, with_newline.l) < 0;
    free(with_newline.s);
    return bad ? errmsg_set(err, "cannot add the header line '%s'", line->s) : 0;
}

/* A line of a type merged by its text: taken unless the same line is there. */
static int merge_plain(header_merge *m, const kstring_t *line, int add, errmsg *err)
{
    int absent;
    char *key = strdup(line->s);
    if (!key) return errmsg_set(err, "out of memory");
    kh_put(line_set, m->lines, key, &absent);
    if (absent < 0) {
        free(key);
        return errmsg_set(err, "out of memory");
    }
    if (!absent) free(key);
    return absent && add ? add_text(m, line, err) : 0;
}

/* The input that brought `id` of `type`: a later one recorded, else the first. */
static const id_origin *origin_of(const header_merge *m, const char *type, const char *id)
{
    for (size_t i = 0; i < m->n_ids; i++)
        if (!strcmp(m->ids[i].type, type) && !strcmp(m->ids[i].id, id)) return &m->ids[i];
    return NULL;
}

static int note_origin(header_merge *m, const char *type, const char *id, const char *fn,
                       errmsg *err)
{
    if (m->n_ids == m->m_ids) {
        size_t want = m->m_ids ? 2 * m->m_ids : 16;
        id_origin *more = realloc(m->ids, want * sizeof *more);
        if (!more) return errmsg_set(err, "out of memory");
        m->ids = more;
        m->m_ids = want;
    }
    id_origin *o = &m->ids[m->n_ids];
    memcpy(o->type, type, 3);
    o->input = m->inputs;
    o->fn = fn;
    if (!(o->id = strdup(id))) return errmsg_set(err, "out of memory");
    m->n_ids++;
    return 0;
}

/* Whether any merged line of `type` with this ID is exactly `line` (an
 * input may give one ID twice: htslib's lookup finds only one of them). */
static int line_there(header_merge *m, const char *type, const char *id, const kstring_t *line)
{
    int n = sam_hdr_count_lines(m->merged, type);
    for (int pos = 0; pos < n; pos++)
        if (sam_hdr_find_tag_pos(m->merged, type, pos, "ID", &m->there) == 0 &&
            !strcmp(m->there.s, id) && sam_hdr_find_line_pos(m->merged, type, pos, &m->there) == 0 &&
            !strcmp(m->there.s, line->s))
            return 1;
    return 0;
}

/* An @RG or @PG line of a later input, whose ID is m->id. */
static int merge_with_id(header_merge *m, const char *type, const kstring_t *line,
                         const char *fn, errmsg *err)
{
    const char *id = m->id.s;
    int r = sam_hdr_find_line_id(m->merged, type, "ID", id, &m->there);
    if (r < -1) return errmsg_set(err, "cannot read the merged header");
    if (r == -1) return add_text(m, line, err) < 0 ? -1 : note_origin(m, type, id, fn, err);
    if (!strcmp(m->there.s, line->s) || line_there(m, type, id, line)) return 0;
    const id_origin *o = origin_of(m, type, id);
    if (o && o->input == m->inputs) return add_text(m, line, err);     /* its own repeat */
    return errmsg_set(err, "'%s' and '%s' both have an @%s line with ID:%s, but not the same "
                      "line: the inputs of one sort may share an @RG or @PG ID only with the "
                      "same line (rocksort never renames one)", o ? o->fn : m->first_fn, fn,
                      type, id);
}

/* One line of h, the pos-th of its type. */
static int merge_line(header_merge *m, sam_hdr_t *h, const char *type, int pos, const char *fn,
                      int first, errmsg *err)
{
    if (!strcmp(type, "HD") || !strcmp(type, "SQ")) return 0;
    if (sam_hdr_find_line_pos(h, type, pos, &m->line) < 0)
        return errmsg_set(err, "cannot read the header of '%s'", fn);
    if (strcmp(type, "RG") && strcmp(type, "PG")) return merge_plain(m, &m->line, !first, err);
    if (first) return 0;
    if (sam_hdr_find_tag_pos(h, type, pos, "ID", &m->id) < 0)
        return errmsg_set(err, "'%s': an @%s header line has no ID", fn, type);
    return merge_with_id(m, type, &m->line, fn, err);
}

/* Every line of h in order: its text is walked for each line's type only. */
static int merge_lines(header_merge *m, sam_hdr_t *h, const char *fn, int first, errmsg *err)
{
    const char *str = sam_hdr_str(h);
    char *text = str ? strdup(str) : NULL;
    if (!text) return errmsg_set(err, "cannot read the header of '%s'", fn);
    type_counts counts = { .n = 0 };
    int ret = 0;
    for (const char *p = text; *p && ret == 0; p += strcspn(p, "\n"), p += *p == '\n') {
        if (p[0] != '@' || !p[1] || !p[2] || p[1] == '\n' || p[2] == '\n') continue;
        char type[3] = { p[1], p[2], 0 };
        int pos = next_of_type(&counts, type);
        ret = pos < 0 ? errmsg_set(err, "'%s': too many kinds of header lines", fn)
                      : merge_line(m, h, type, pos, fn, first, err);
    }
    free(text);
    return ret;
}

int header_merge_add(header_merge *m, sam_hdr_t *h, const char *fn, errmsg *err)
{
    int first = !m->merged;
    if (first) {
        m->first_fn = fn;
        if (!(m->merged = sam_hdr_dup(h))) return errmsg_set(err, "out of memory");
    } else if (same_sq(m, h, fn, err) < 0) {
        return -1;
    }
    int ret = merge_lines(m, h, fn, first, err);
    m->inputs++;
    return ret;
}
