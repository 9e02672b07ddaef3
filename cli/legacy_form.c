/* cli/legacy_form.c -- see cli/legacy_form.h. */
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "cli/legacy_form.h"

static const struct option *find_long(const struct option *long_opts, const char *arg)
{
    size_t n = strcspn(arg, "=");
    for (const struct option *o = long_opts; o->name; o++)
        if (strlen(o->name) == n && !strncmp(o->name, arg, n)) return o;
    return NULL;
}

static void note_positional(const char *arg, int *n, const char *pos[2])
{
    if (*n < 2) pos[*n] = arg;
    (*n)++;
}

typedef struct {
    const struct option *long_opts;
    const char *short_with_arg;
    int o_takes_arg;
} option_shape;

/* Counts non-option arguments, with -o taking an argument or not; keeps
 * the first two seen in pos[]; *listed says whether -b (a list of inputs)
 * is given. */
static int count_positionals(int argc, char **argv, const option_shape *sh, const char *pos[2],
                             int *listed)
{
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            while (++i < argc) note_positional(argv[i], &n, pos);
            break;
        }
        if (a[0] != '-' || a[1] == '\0') {
            note_positional(a, &n, pos);
        } else if (a[1] == '-') {
            const struct option *lo = find_long(sh->long_opts, a + 2);
            if (lo && lo->has_arg == required_argument && !strchr(a, '=')) i++;
        } else {
            for (const char *c = a + 1; *c; c++)
                if (strchr(sh->short_with_arg, *c) || (*c == 'o' && sh->o_takes_arg)) {
                    *listed |= *c == 'b';
                    if (c[1] == '\0') i++;
                    break;
                }
        }
    }
    return n;
}

static int has_alignment_suffix(const char *fn)
{
    static const char *suffixes[] = { ".bam", ".sam", ".cram", ".sam.gz" };
    size_t n = strlen(fn);
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        size_t m = strlen(suffixes[i]);
        if (n >= m && !strcasecmp(fn + n - m, suffixes[i])) return 1;
    }
    return 0;
}

int legacy_form(int argc, char **argv, const struct option *long_opts,
                const char *short_with_arg)
{
    const char *as_flag[2] = { NULL, NULL }, *as_arg[2] = { NULL, NULL };
    option_shape o_flag = { long_opts, short_with_arg, 0 };
    option_shape o_arg = { long_opts, short_with_arg, 1 };
    int listed = 0;
    int n_flag = count_positionals(argc, argv, &o_flag, as_flag, &listed);
    int n_arg = count_positionals(argc, argv, &o_arg, as_arg, &listed);
    /* A list of inputs makes every argument an input. */
    if (n_flag != 2 || listed) return 0;
    if (n_arg == 2) return 1;
    const char *in = as_flag[0], *prefix = as_flag[1];
    /* `-o out.bam -` reads stdin, whether or not out.bam exists yet. */
    if (!strcmp(prefix, "-")) return 0;
    int in_readable = !strcmp(in, "-") || access(in, R_OK) == 0;
    return in_readable && access(prefix, R_OK) != 0 && !has_alignment_suffix(prefix);
}
