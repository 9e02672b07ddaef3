/* cli/split_args.c -- see cli/split_args.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/split_args.h"
#include "output/output_target.h"
#include "output/split_names.h"

static int refuse(const char *fmt, const char *arg)
{
    fprintf(stderr, "samtools rocksort: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return -1;
}

/* A SAM tag: a letter, then a letter or digit. */
static int is_tag(const char *arg)
{
    return strlen(arg) == 2 && isalpha((unsigned char)arg[0]) && isalnum((unsigned char)arg[1]);
}

int split_args_option(rocksort_opts *r, int ch, const char *arg)
{
    split_spec *s = &r->sort.split;
    char *end;
    switch (ch) {
    case SPLIT_ARGS_SPLIT:
        if (!is_tag(arg)) return refuse("--split '%s': give RG or a two-character tag", arg);
        s->on = 1;
        s->tag[0] = arg[0];
        s->tag[1] = arg[1];
        s->by_rg = !strcmp(arg, "RG");
        return 0;
    case SPLIT_ARGS_OTHER:
        if (!*arg || !strcmp(arg, "-"))
            return refuse("--split-other '%s': give a file name", arg);
        r->split_other = arg;
        return 0;
    case SPLIT_ARGS_PAD: {
        unsigned long pad = strtoul(arg, &end, 10);
        /* samtools split's -p takes 0 to 20 */
        if (!isdigit((unsigned char)*arg) || *end || pad > SPLIT_PAD_MAX)
            return refuse("invalid value '%s' for --split-pad (0 to 20)", arg);
        s->pad = (int)pad;
        return 0;
    }
    default:
        return SPLIT_ARGS_NOT_MINE;
    }
}

/* FORMAT, and with --write-index's "##idx##INDEX" each of the two by
 * itself: each may have a directory, and each needs a name per value. */
static int check_formats(const char *format, split_names_shape *shape, errmsg *err)
{
    const char *delim = strstr(format, HTS_IDX_DELIM);
    if (!delim) return split_names_check(format, shape, err);
    char *outputs = strndup(format, (size_t)(delim - format));
    split_names_shape index_shape;
    int ret = !outputs ? errmsg_set(err, "out of memory")
            : split_names_check(outputs, shape, err) < 0 ? -1
            : split_names_check(delim + strlen(HTS_IDX_DELIM), &index_shape, err);
    free(outputs);
    return ret;
}

int split_args_finish(rocksort_opts *r, const char **out_fn, int legacy)
{
    split_spec *s = &r->sort.split;
    errmsg err;
    if (!s->on) {
        if (r->split_other || s->pad)
            return refuse("%s needs --split", r->split_other ? "--split-other" : "--split-pad");
        return 0;
    }
    if (legacy) return refuse("--split does not apply to the legacy form IN OUT%s", "");
    if (!strcmp(*out_fn, "-")) *out_fn = s->by_rg ? "%*_%#.%." : "%*_%!.%.";
    split_names_shape shape;
    if (check_formats(*out_fn, &shape, &err) < 0) return refuse("%s", err.msg);
    s->value_named = shape.value_named;
    s->value_alone = shape.value_alone;
    if (!r->split_other) return 0;
    /* Renamed into place with the outputs: a regular file or a new name. */
    char *path = NULL;
    int kind = output_target(r->split_other, &path, &err);
    free(path);
    if (kind < 0) return refuse("--split-other: %s", err.msg);
    if (kind != TARGET_RENAME)
        return refuse("--split-other '%s': not a regular file (the outputs of --split are renamed "
                      "into place)", r->split_other);
    return 0;
}
