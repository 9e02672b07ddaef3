/* output/split_names.c -- see output/split_names.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/kstring.h>
#include "output/split_names.h"

#define EXPANSIONS "%*#!."

int split_names_check(const char *format, split_names_shape *shape, errmsg *err)
{
    const char *slash = strrchr(format, '/');
    const char *name = slash ? slash + 1 : format;
    int numbered = 0, literal = 0;
    memset(shape, 0, sizeof *shape);
    for (const char *p = format; *p; p++) {
        if (*p != '%') {
            literal += p >= name;
            continue;
        }
        char c = *++p;
        if (!c) return errmsg_set(err, "-o '%s': a '%%' ends the format", format);
        if (!strchr(EXPANSIONS, c))
            return errmsg_set(err, "-o '%s': unknown expansion %%%c (%%%%, %%*, %%#, %%! and %%. "
                              "are known)", format, c);
        if (p < name && c != '%')
            return errmsg_set(err, "-o '%s': %%%c in the directory part: --split writes every "
                              "output into one directory, so only the file name may change",
                              format, c);
        if (c == '!') shape->value_named = 1;
        else literal++;     /* %%, %*, %# and %. put other text beside the value */
        numbered |= c == '#';
    }
    if (!shape->value_named && !numbered)
        return errmsg_set(err, "-o '%s': with --split the format needs %%! (the value) or %%# "
                          "(the output's number), else every output would have the same name",
                          format);
    shape->value_alone = shape->value_named && !literal;
    return 0;
}

static int put_number(kstring_t *s, long number, int pad)
{
    if (number < 0) return kputs(SPLIT_NAMES_UNACCOUNTED, s);
    return pad ? ksprintf(s, "%0*ld", pad, number) : kputl(number, s);
}

char *split_names_expand(const split_format *f, const char *value, long number)
{
    kstring_t s = KS_INITIALIZE;
    int ok = 0;
    for (const char *p = f->format; *p && ok >= 0; p++) {
        if (*p != '%') {
            ok = kputc(*p, &s);
            continue;
        }
        switch (*++p) {
        case '%': ok = kputc('%', &s); break;
        case '*': ok = kputs(f->base, &s); break;
        case '#': ok = put_number(&s, number, f->pad); break;
        case '!': ok = kputs(value, &s); break;
        case '.': ok = kputs(f->ext, &s); break;
        default: ok = -1;   /* split_names_check() refused it */
        }
    }
    if (ok < 0) {
        free(s.s);
        return NULL;
    }
    return s.s ? ks_release(&s) : strdup("");
}

char *split_names_base(const char *in_fn)
{
    const char *slash = strrchr(in_fn, '/');
    char *base = strdup(slash ? slash + 1 : in_fn);
    char *dot = base ? strrchr(base, '.') : NULL;
    if (dot) *dot = '\0';
    return base;
}
