/* output/split_commit.c -- see output/split_commit.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "output/split_commit.h"
#include "output/split_set_internal.h"
#include "output/output_attrs.h"
#include "output/output_target.h"
#include "keys/key_bytes.h"
#include "util/cleanup.h"

static int by_first_key(const void *a, const void *b, void *set)
{
    const split_group *g = ((const split_set *)set)->g;
    const split_group *x = &g[*(const size_t *)a], *y = &g[*(const size_t *)b];
    return key_cmp(x->first, x->first_len, y->first, y->first_len);
}

/* %#: by @RG the line's number (set as the lines were read), else the
 * rank of the value's first record in the sort's order, which is the
 * order in which samtools split, reading the sorted file, meets them. */
static int number_values(split_set *set)
{
    if (set->spec.by_rg) return 0;
    size_t *order = malloc((set->n ? set->n : 1) * sizeof *order), n = 0;
    if (!order) return -1;
    for (size_t i = 0; i < set->n; i++)
        if (set->g[i].value) order[n++] = i;
    qsort_r(order, n, sizeof *order, by_first_key, set);
    for (size_t r = 0; r < n; r++) set->g[order[r]].number = (long)r;
    free(order);
    return 0;
}

/* The index beside --split-other's FILE: the suffix the outputs' have. */
static const char *index_suffix(const split_set *set)
{
    size_t n = strlen(set->s.index_format);
    if (n >= 4 && !strcasecmp(set->s.index_format + n - 4, ".bai")) return ".bai";
    return set->cram ? ".crai" : set->s.index_min_shift ? ".csi" : ".bai";
}

/* The file a name stands for, as one output's (output/output_target.h):
 * a link followed to its target, which is renamed onto; a device or FIFO
 * cannot be (the outputs are renamed into place), nor can a directory. */
static int target_of(const char *name, char **target, errmsg *err)
{
    int kind = output_target(name, target, err);
    if (kind < 0) return -1;
    if (kind == TARGET_RENAME) return 0;
    free(*target);
    *target = NULL;
    return errmsg_set(err, "cannot write '%s': not a regular file (--split's outputs are renamed "
                      "into place)", name);
}

static int name_group(split_set *set, split_group *g)
{
    const char *value = g->value ? g->value : SPLIT_NAMES_UNACCOUNTED;
    if (!g->value && set->s.other) g->final = strdup(set->s.other);
    else g->final = split_names_expand(&set->names, value, g->number);
    if (!g->final) return -1;
    if (!g->indexed) return 0;
    split_format idx = set->names;
    idx.format = set->s.index_format;
    if (!g->value && set->s.other) {
        if (asprintf(&g->idx_final, "%s%s", set->s.other, index_suffix(set)) < 0) g->idx_final = NULL;
    } else {
        g->idx_final = split_names_expand(&idx, value, g->number);
    }
    return g->idx_final ? 0 : -1;
}

typedef struct {
    const char *name;
    const split_group *g;
} named;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

static void describe(const split_set *set, const split_group *g, char *out, size_t size)
{
    if (g->value) snprintf(out, size, "%.2s value '%s'", set->spec.tag, g->value);
    else snprintf(out, size, "the records without a%s %.2s value", set->spec.by_rg ? "n @RG" : "",
                  set->spec.tag);
}

/* The file a target names, spelled one way: its directory resolved
 * (realpath) and its own name, so that "o/x.bam", "o/./x.bam", "./o//x.bam"
 * and a link to o all give one string.  A directory that cannot be
 * resolved keeps the name as given (its rename fails later anyway). */
static char *one_spelling(const char *target)
{
    const char *slash = strrchr(target, '/');
    char *dir = slash ? strndup(target, (size_t)(slash - target) + 1) : strdup(".");
    char *real = dir ? realpath(dir, NULL) : NULL, *out = NULL;
    if (real && asprintf(&out, "%s/%s", strcmp(real, "/") ? real : "", slash ? slash + 1 : target) < 0)
        out = NULL;
    if (!real && dir) out = strdup(target);
    free(dir);
    free(real);
    return out;
}

/* No two outputs or indexes of one file (by name, by a link to it or by
 * another spelling of its directory): one would replace the other. */
static int check_distinct(const split_set *set, errmsg *err)
{
    named *all = malloc(2 * (set->n ? set->n : 1) * sizeof *all);
    size_t n = 0;
    int ret = all ? 0 : -1;
    for (size_t i = 0; i < set->n && ret == 0; i++)
        for (int index = 0; index <= (set->g[i].idx_target != NULL) && ret == 0; index++) {
            all[n].g = &set->g[i];
            all[n].name = one_spelling(index ? set->g[i].idx_target : set->g[i].target);
            ret = all[n++].name ? 0 : -1;
        }
    if (ret < 0) {
        for (size_t i = 0; all && i < n; i++) free((char *)all[i].name);
        free(all);
        return errmsg_set(err, "out of memory");
    }
    qsort(all, n, sizeof *all, by_name);
    for (size_t i = 1; i < n && ret == 0; i++)
        if (!strcmp(all[i - 1].name, all[i].name)) {
            char a[320], b[320];
            describe(set, all[i - 1].g, a, sizeof a);
            describe(set, all[i].g, b, sizeof b);
            ret = errmsg_set(err, "-o '%s': the outputs for %s and for %s would both be written to "
                             "'%s'", set->s.format, a, b, all[i].name);
        }
    for (size_t i = 0; i < n; i++) free((char *)all[i].name);
    free(all);
    return ret;
}

/* One hidden file to its final name, with the mode, group and owner of
 * the file it replaces. */
static int move_one(const char *hidden, const char *final, mode_t mask)
{
    int fd = open(hidden, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    output_attrs_carry_umask(fd, final, mask);
    /* What reached the disk leaves the page cache, as a single output's does. */
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return rename(hidden, final);
}

/* Takes back the renames of groups [0, upto): their files are ours. */
static void take_back(split_set *set, size_t upto, int index_too)
{
    for (size_t i = 0; i < upto; i++) {
        unlink(set->g[i].target);
        if (set->g[i].idx_target) unlink(set->g[i].idx_target);
    }
    if (index_too) unlink(set->g[upto].target);
}

static int move_all(split_set *set, errmsg *err)
{
    mode_t mask = output_attrs_umask();
    for (size_t i = 0; i < set->n; i++) {
        split_group *g = &set->g[i];
        for (int index = 0; index <= g->indexed; index++) {
            char *hidden = split_set_hidden(set, i, index);
            const char *final = index ? g->idx_target : g->target;
            errno = 0;
            int ret = hidden ? move_one(hidden, final, mask) : -1;
            free(hidden);
            if (ret == 0) continue;
            errmsg_set(err, "cannot rename the finished %s to '%s': %s", index ? "index" : "output",
                       final, strerror(errno ? errno : ENOMEM));
            take_back(set, i, index);
            return -1;
        }
    }
    return 0;
}

int split_commit_run(split_set *set, errmsg *err)
{
    if (number_values(set) < 0) return errmsg_set(err, "out of memory");
    for (size_t i = 0; i < set->n; i++) {
        split_group *g = &set->g[i];
        if (name_group(set, g) < 0) return errmsg_set(err, "out of memory");
        if (target_of(g->final, &g->target, err) < 0
            || (g->idx_final && target_of(g->idx_final, &g->idx_target, err) < 0))
            return -1;
    }
    if (check_distinct(set, err) < 0) return -1;
    /* A signal waits for the renames: it then finds the run finished, or
     * (a rename failed) the renames taken back. */
    cleanup_hold_signals();
    int ret = move_all(set, err);
    if (ret == 0) cleanup_mark_finished();
    cleanup_release_signals();
    if (ret == 0) set->committed = 1;
    return ret;
}
