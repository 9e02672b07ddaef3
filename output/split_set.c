/* output/split_set.c -- see output/split_set.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>
#include <sys/stat.h>
#include <htslib/kstring.h>
#include "output/split_set_internal.h"
#include "keys/key_bytes.h"
#include "util/cleanup.h"
#include "util/grow_array.h"

/* "bam", "cram" or "sam": what %. gives for the outputs' mode, as split
 * gives its --output-fmt's extension. */
static const char *extension_of(const char *mode)
{
    return strchr(mode + 1, 'c') ? "cram" : strchr(mode + 1, 'b') ? "bam" : "sam";
}

/* A new group, its value copied (NULL: none): its index, or -1. */
static long add_group(split_set *set, const char *value, size_t vlen, long number)
{
    if (set->n == set->cap && grow_array((void **)&set->g, &set->cap, set->n + 1, sizeof *set->g) < 0)
        return -1;
    split_group *g = &set->g[set->n];
    memset(g, 0, sizeof *g);
    g->number = number;
    if (value && !(g->value = strndup(value, vlen))) return -1;
    return (long)set->n++;
}

/* By @RG: every line's output, numbered as split numbers them, each ID
 * refused as a value met in a record would be, and no two with one name. */
static int add_read_groups(split_set *set, sam_hdr_t *hdr, errmsg *err)
{
    int n = sam_hdr_count_lines(hdr, "RG");
    char why[512];
    for (int i = 0; i < n; i++) {
        const char *id = sam_hdr_line_name(hdr, "RG", i);
        if (!id || add_group(set, id, strlen(id), i) < 0) return errmsg_set(err, "out of memory");
        if (split_key_value_refused(&set->spec, id, why, sizeof why))
            return errmsg_set(err, "-o '%s': @RG line %d %s", set->s.format, i + 1, why);
    }
    set->n_rg = set->n;
    for (size_t i = 0; i < set->n; i++)
        for (size_t k = i + 1; set->spec.value_named && k < set->n; k++)
            if (!strcmp(set->g[i].value, set->g[k].value))
                return errmsg_set(err, "-o '%s': two @RG lines have the ID '%s'", set->s.format,
                                  set->g[i].value);
    return 0;
}

/* --split-other's FILE is renamed out of the hidden directory too: it must
 * lie on the outputs' file system. */
static int other_beside(const split_set *set, errmsg *err)
{
    if (!set->s.other) return 0;
    char *copy = strdup(set->s.other);
    struct stat there, here;
    int ok = copy && stat(dirname(copy), &there) == 0 && stat(set->dir.dir, &here) == 0;
    free(copy);
    if (!ok || there.st_dev == here.st_dev) return 0;   /* a missing one: the commit says */
    return errmsg_set(err, "--split-other '%s' is on another file system than the outputs' "
                      "directory '%s': the outputs are renamed into place together",
                      set->s.other, set->dir.dir);
}

split_set *split_set_open(const split_setup *s, sam_hdr_t *hdr, errmsg *err)
{
    split_set *set = calloc(1, sizeof *set);
    if (!set) {
        errmsg_set(err, "out of memory");
        return NULL;
    }
    set->s = *s;
    set->spec = *s->spec;
    set->dir.lock_fd = -1;
    pthread_mutex_init(&set->lock, NULL);
    set->cram = strchr(s->mode + 1, 'c') != NULL;
    set->base = split_names_base(s->in_fn);
    set->ext = strdup(extension_of(s->mode));
    set->names = (split_format){ s->format, set->base, set->ext, s->spec->pad };
    if (!set->base || !set->ext) {
        errmsg_set(err, "out of memory");
    } else if ((!set->spec.by_rg || add_read_groups(set, hdr, err) == 0)
               && split_dir_open(&set->dir, s->format, err) == 0 && other_beside(set, err) == 0) {
        return set;
    }
    split_set_free(set);
    return NULL;
}

int split_set_header(split_set *set, const sam_hdr_t *sorted, errmsg *err)
{
    /* A copy as text alone: each writer writes it as it is, never
     * rebuilding it from its parsed lines, so they may share it. */
    if (!(set->plain = sam_hdr_dup(sorted))) return errmsg_set(err, "out of memory");
    return 0;
}

char *split_set_hidden(const split_set *set, size_t i, int index)
{
    return split_dir_file(&set->dir, (unsigned long)i, index ? ".idx" : "");
}

/* The group a writer begins: by @RG a line's (found by its ID), else a new
 * one.  Returns its index, with its value in *kept, or -1 when memory runs
 * out. */
static long group_of(split_set *set, const uint8_t *group, size_t glen, const uint8_t *first,
                     size_t flen, const char **kept)
{
    const char *value = NULL;
    size_t vlen = 0;
    int other = split_key_group_value(group, glen, &value, &vlen);
    long i = -1;
    pthread_mutex_lock(&set->lock);
    for (size_t k = 0; !other && k < set->n_rg && i < 0; k++)
        if (strlen(set->g[k].value) == vlen && !memcmp(set->g[k].value, value, vlen))
            i = (long)k;
    if (i < 0) i = add_group(set, other ? NULL : value, vlen, -1);
    if (i >= 0 && first && !(set->g[i].first = key_dup(first, flen))) i = -1;
    if (i >= 0) {
        set->g[i].first_len = flen;
        *kept = set->g[i].value;
    }
    pthread_mutex_unlock(&set->lock);
    return i;
}

/* What a message calls group i's output: its name where FORMAT gives it
 * now, else FORMAT and the value. */
static char *display_name(split_set *set, size_t i)
{
    pthread_mutex_lock(&set->lock);
    const split_group *g = &set->g[i];
    char *name = NULL;
    if (!g->value && set->s.other) name = strdup(set->s.other);
    else if (!strstr(set->s.format, "%#") || set->spec.by_rg || !g->value)
        name = split_names_expand(&set->names, g->value ? g->value : SPLIT_NAMES_UNACCOUNTED, g->number);
    else if (asprintf(&name, "%s (%.2s value '%s')", set->s.format, set->spec.tag, g->value) < 0)
        name = NULL;
    pthread_mutex_unlock(&set->lock);
    return name;
}

/* By @RG a value's output keeps its own @RG lines alone, as split's do. */
static int header_for(split_set *set, split_file *f)
{
    f->hdr = set->plain;
    if (!set->spec.by_rg || !f->value) return 0;
    f->own_hdr = sam_hdr_dup(set->plain);
    if (!f->own_hdr || sam_hdr_remove_except(f->own_hdr, "RG", "ID", f->value) < 0) return -1;
    f->hdr = f->own_hdr;
    return 0;
}

static int open_output(split_set *set, split_file *f, htsThreadPool *pool, errmsg *err)
{
    /* Once a signal has come, its thread is emptying the hidden directory:
     * a file created now could outlive that (writers start a file in
     * milliseconds), so none is. */
    if (cleanup_signal_arrived()) return errmsg_set(err, "interrupted before '%s'", f->name);
    char *path = split_set_hidden(set, f->group, 0);
    if (!path) return errmsg_set(err, "out of memory");
    f->fp = hts_open(path, set->s.mode);
    free(path);
    if (!f->fp)
        return errmsg_set(err, "cannot create '%s' in '%s': %s", f->name, set->dir.path,
                          strerror(errno ? errno : ENOMEM));
    if (set->s.reference && hts_set_fai_filename(f->fp, set->s.reference) < 0)
        return errmsg_set(err, "cannot load reference '%s' for '%s'", set->s.reference, f->name);
    if (set->s.opts && hts_opt_apply(f->fp, (hts_opt *)set->s.opts) < 0)
        return errmsg_set(err, "bad --output-fmt-option for '%s'", f->name);
    if (pool && pool->pool) hts_set_thread_pool(f->fp, pool);
    return 0;
}

static int begin_index(split_set *set, split_file *f, errmsg *err)
{
    if (!set->s.index_format) return 0;
    /* htslib keeps the name, not a copy: freed with the file (release()). */
    f->idx_path = split_set_hidden(set, f->group, 1);
    int ret = f->idx_path ? sam_idx_init(f->fp, (sam_hdr_t *)f->hdr, set->s.index_min_shift,
                                         f->idx_path) : -1;
    if (ret < 0) return errmsg_set(err, "cannot start the index of '%s'", f->name);
    f->indexed = 1;
    return 0;
}

int split_set_begin(split_set *set, const uint8_t *group, size_t glen, const uint8_t *first,
                    size_t flen, htsThreadPool *pool, split_file *f, errmsg *err)
{
    memset(f, 0, sizeof *f);
    long i = group_of(set, group, glen, first, flen, &f->value);
    if (i < 0) return errmsg_set(err, "out of memory");
    f->group = (size_t)i;
    if (!(f->name = display_name(set, f->group)) || header_for(set, f) < 0)
        return errmsg_set(err, "out of memory");
    if (open_output(set, f, pool, err) < 0) return -1;
    errno = 0;
    if (sam_hdr_write(f->fp, f->hdr) < 0)
        return errmsg_set(err, "cannot write the header to '%s': %s", f->name,
                          strerror(errno ? errno : EIO));
    return begin_index(set, f, err);
}

static void release(split_file *f)
{
    sam_hdr_destroy(f->own_hdr);
    free(f->idx_path);
    free(f->name);
    memset(f, 0, sizeof *f);
}

int split_set_end(split_set *set, split_file *f, uint64_t records, errmsg *err)
{
    int ret = f->indexed && cleanup_signal_arrived()   /* the index is a new file too */
            ? errmsg_set(err, "interrupted before the index of '%s'", f->name) : 0;
    errno = 0;
    if (ret == 0 && f->indexed && sam_idx_save(f->fp) < 0)
        ret = errmsg_set(err, "error writing the index of '%s': %s", f->name,
                         strerror(errno ? errno : EIO));
    if (sam_close(f->fp) < 0 && ret == 0)
        ret = errmsg_set(err, "error writing to '%s': %s", f->name, strerror(errno ? errno : EIO));
    pthread_mutex_lock(&set->lock);
    split_group *g = &set->g[f->group];
    g->records = records;
    g->indexed = f->indexed;
    g->written = ret == 0;
    pthread_mutex_unlock(&set->lock);
    release(f);
    return ret;
}

void split_set_drop(split_file *f)
{
    if (f->fp) sam_close(f->fp);
    release(f);
}

/* An output with no record: its header alone. */
static int write_empty(split_set *set, size_t i, errmsg *err)
{
    split_file f = { .group = i, .value = set->g[i].value };
    if (!(f.name = display_name(set, i)) || header_for(set, &f) < 0) {
        release(&f);
        return errmsg_set(err, "out of memory");
    }
    errno = 0;
    if (open_output(set, &f, NULL, err) < 0
        || (sam_hdr_write(f.fp, f.hdr) < 0
            && errmsg_set(err, "cannot write the header to '%s': %s", f.name,
                          strerror(errno ? errno : EIO)) < 0)
        || begin_index(set, &f, err) < 0) {
        split_set_drop(&f);
        return -1;
    }
    return split_set_end(set, &f, 0, err);
}

int split_set_fill(split_set *set, errmsg *err)
{
    int other = 0;
    for (size_t i = 0; i < set->n; i++) other |= !set->g[i].value;
    if (set->s.other && !other) {
        long i = add_group(set, NULL, 0, -1);
        if (i < 0) return errmsg_set(err, "out of memory");
        if (write_empty(set, (size_t)i, err) < 0) return -1;
    }
    for (size_t i = 0; i < set->n_rg; i++)
        if (!set->g[i].written && write_empty(set, i, err) < 0) return -1;
    return 0;
}

const char *split_set_path(const split_set *set)
{
    return set->dir.path;
}

size_t split_set_outputs(const split_set *set)
{
    return set->n;
}

const char *split_set_output(const split_set *set, size_t i, uint64_t *records)
{
    *records = set->g[i].records;
    return set->g[i].final;
}

void split_set_free(split_set *set)
{
    if (!set) return;
    split_dir_remove(&set->dir);
    for (size_t i = 0; i < set->n; i++) {
        free(set->g[i].value);
        free(set->g[i].first);
        free(set->g[i].final);
        free(set->g[i].idx_final);
        free(set->g[i].target);
        free(set->g[i].idx_target);
    }
    free(set->g);
    free(set->base);
    free(set->ext);
    sam_hdr_destroy(set->plain);
    pthread_mutex_destroy(&set->lock);
    free(set);
}
