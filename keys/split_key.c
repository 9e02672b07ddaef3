/* keys/split_key.c -- see keys/split_key.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keys/split_key.h"

struct split_ids {
    char **id;          /* sorted by strcmp */
    size_t n;
};

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

split_ids *split_key_ids_new(sam_hdr_t *h)
{
    int n = sam_hdr_count_lines(h, "RG");
    split_ids *ids = calloc(1, sizeof *ids);
    if (!ids || n < 0) goto fail;
    ids->id = calloc((size_t)n + 1, sizeof *ids->id);
    if (!ids->id) goto fail;
    for (int i = 0; i < n; i++) {
        const char *id = sam_hdr_line_name(h, "RG", i);
        if (!id || !(ids->id[ids->n++] = strdup(id))) goto fail;
    }
    qsort(ids->id, ids->n, sizeof *ids->id, by_string);
    return ids;
fail:
    split_key_ids_free(ids);
    return NULL;
}

void split_key_ids_free(split_ids *ids)
{
    if (!ids) return;
    for (size_t i = 0; i < ids->n; i++) free(ids->id[i]);
    free(ids->id);
    free(ids);
}

int split_key_ids_has(const split_ids *ids, const char *value)
{
    return ids && bsearch(&value, ids->id, ids->n, sizeof *ids->id, by_string) != NULL;
}

/* bam_split.c's reading: Z and H as they are, integers in decimal (padded
 * as its -p pads them), anything else no value. */
int split_key_value(const split_spec *s, const bam1_t *b, char num[SPLIT_NUMBER_MAX],
                    const char **str)
{
    const uint8_t *aux = bam_aux_get(b, s->tag);
    if (!aux) return -1;
    switch (aux[0]) {
    case 'Z': case 'H': {
        const uint8_t *start = aux + 1, *end = b->data + b->l_data;
        const uint8_t *nul = memchr(start, 0, (size_t)(end - start));
        if (!nul) return -1;    /* htslib's reader refuses it; a value never runs off */
        *str = (const char *)start;
        return (int)(nul - start);
    }
    case 'c': case 'C': case 's': case 'S': case 'i': case 'I': {
        int64_t v = bam_aux2i(aux);
        int n = s->pad ? snprintf(num, SPLIT_NUMBER_MAX, "%0*" PRId64, v < 0 ? s->pad + 1 : s->pad, v)
                       : snprintf(num, SPLIT_NUMBER_MAX, "%" PRId64, v);
        *str = num;
        return n;
    }
    default:
        return -1;
    }
}

size_t split_key_max_len(const split_spec *s, const bam1_t *b)
{
    if (!s->on) return 0;
    size_t longest = (size_t)b->l_data > SPLIT_NUMBER_MAX ? (size_t)b->l_data : SPLIT_NUMBER_MAX;
    return 1 + longest + 1;
}

static int refused(const split_spec *s, const char *v, size_t n)
{
    if (s->value_named && memchr(v, '/', n)) return 1;
    return s->value_alone && (n == 0 || (n == 1 && v[0] == '.') || (n == 2 && !memcmp(v, "..", 2)));
}

uint8_t *split_key_prefix(const split_spec *s, const split_ids *ids, const bam1_t *b, uint8_t *p)
{
    char num[SPLIT_NUMBER_MAX];
    const char *v;
    int n = split_key_value(s, b, num, &v);
    if (n >= 0 && s->by_rg && !split_key_ids_has(ids, v)) n = -1;
    if (n < 0) {
        *p++ = SPLIT_OTHER_MARK;
        return p;
    }
    /* by_rg's values are the header's, checked before the sort began. */
    if (!s->by_rg && refused(s, v, (size_t)n)) return NULL;
    *p++ = SPLIT_VALUE_MARK;
    memcpy(p, v, (size_t)n);
    p[n] = 0;
    return p + n + 1;
}

/* Why value v (n bytes) is refused; a long value is cut in the message only. */
static void describe(const split_spec *s, const char *v, size_t n, char *why, size_t size)
{
    snprintf(why, size, "has %.2s value '%.*s%s': %s", s->tag, n > 200 ? 200 : (int)n, v,
             n > 200 ? "..." : "",
             memchr(v, '/', n) ? "a '/' in a file name would put it outside the output directory"
                               : "as a whole file name it would not name a file in the output "
                                 "directory");
}

int split_key_value_refused(const split_spec *s, const char *value, char *why, size_t size)
{
    size_t n = strlen(value);
    if (!refused(s, value, n)) return 0;
    describe(s, value, n, why, size);
    return 1;
}

const char *split_key_problem(const split_spec *s, const bam1_t *b)
{
    static _Thread_local char why[512];
    char num[SPLIT_NUMBER_MAX];
    const char *v;
    int n = s->on && !s->by_rg ? split_key_value(s, b, num, &v) : -1;
    if (n < 0 || !refused(s, v, (size_t)n)) return NULL;
    describe(s, v, (size_t)n, why, sizeof why);
    return why;
}

size_t split_key_group_len(const uint8_t *key, size_t len)
{
    if (!len) return 0;
    if (key[0] == SPLIT_OTHER_MARK) return 1;
    if (key[0] != SPLIT_VALUE_MARK) return 0;
    const uint8_t *nul = memchr(key + 1, 0, len - 1);
    return nul ? (size_t)(nul - key) + 1 : 0;
}

int split_key_group_value(const uint8_t *group, size_t len, const char **value, size_t *vlen)
{
    if (len < 2 || group[0] != SPLIT_VALUE_MARK) return 1;
    *value = (const char *)group + 1;
    *vlen = len - 2;
    return 0;
}
