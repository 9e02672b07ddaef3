/* output/output_file.c -- see output/output_file.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <htslib/hfile.h>
#include "output/output_file.h"
#include "output/output_attrs.h"
#include "output/output_target.h"
#include "output/output_stale.h"
#include "util/cleanup.h"

/* "WHAT 'PATH': strerror(errno)"; returns -1. */
static int failed(errmsg *err, const char *what, const char *path)
{
    return errmsg_set(err, "%s '%s': %s", what, path, strerror(errno));
}

/* The real path of path's directory (a resumed sort finds a hidden name
 * again from any working directory), and the stem of the hidden names of
 * path's last name there (output/output_stale.h): malloc'd into *dir and
 * *stem; -1 if memory runs out. */
static int split_beside(const char *path, char **dir, char **stem)
{
    char *d = strdup(path), *b = strdup(path), real[PATH_MAX];
    *dir = *stem = NULL;
    if (d && b) {
        const char *parent = dirname(d);
        *dir = strdup(realpath(parent, real) ? real : parent);
        if (*dir) *stem = output_stale_stem(*dir, basename(b));
    }
    free(d);
    free(b);
    if (*dir && *stem) return 0;
    free(*dir);
    free(*stem);
    return -1;
}

int output_file_deflate_level(const char *mode, const hts_opt *opts)
{
    const char *digit = strpbrk(mode, "0123456789");
    int level = digit ? *digit - '0' : -1;
    for (const hts_opt *x = opts; x; x = x->next)
        if (x->opt == HTS_OPT_COMPRESSION_LEVEL) level = x->val.i;
    if (level < 0) level = strpbrk(mode + 1, "bcz") ? 6 : 0;
    return level;
}

/* htslib's first level mapped to libdeflate's level 10, and the pages a
 * BGZF block of records touches in that compressor, rounded up: a block
 * with more repeats touches more of it. */
#define SLOW_DEFLATE_LEVEL 8
#define SLOW_DEFLATE_EXTRA_BYTES (2ULL << 20)

uint64_t output_file_deflate_extra_bytes(int level)
{
    return level >= SLOW_DEFLATE_LEVEL ? SLOW_DEFLATE_EXTRA_BYTES : 0;
}

int output_file_remove_stale_partial(const output_file *o, const char *path)
{
    if ((o->tmp_path && !strcmp(path, o->tmp_path)) ||
        (o->idx_tmp_path && !strcmp(path, o->idx_tmp_path)))
        return 0;
    const char *base = strrchr(path, '/');
    return output_stale_hidden_form(base ? base + 1 : path, NULL) && output_stale_remove(path, 1);
}

/* One try at the hidden name `slot` of stem in dir (output/output_stale.h;
 * mkstemp's random one for -1), created and locked: 0 with its name in
 * *tmp and descriptor in *fd; 1 if a live sort holds that slot, or a
 * sweeping sort took the file first; -1 with the cause in err. */
static int reserve_one(const char *dir, const char *stem, int slot, const char *path,
                       char **tmp, int *fd, errmsg *err)
{
    if (!(*tmp = output_stale_hidden_name(dir, stem, slot))) return errmsg_set(err, "out of memory");
    int made = slot < 0 ? cleanup_mkstemp(*tmp) : cleanup_create(*tmp);
    if (made >= 0 && output_stale_hold(made, *tmp) == 0) {
        *fd = made;
        return 0;
    }
    int busy = made >= 0 || (slot >= 0 && errno == EEXIST);
    if (made >= 0) {
        close(made);            /* the sort that took it removes it */
        cleanup_forget(*tmp);
    } else if (!busy) {
        failed(err, "cannot create a file in the directory of", path);
    }
    free(*tmp);
    *tmp = NULL;
    return busy ? 1 : -1;
}

/* A fresh, private, locked name beside path, created empty and registered
 * for cleanup, its descriptor in *fd_out: the lowest free slot, else a
 * random name; the stale hidden files of path (output/output_stale.h) go first. */
static char *reserve_temp_beside(const char *path, int *fd_out, errmsg *err)
{
    enum { RANDOM_TRIES = 100 };
    char *dir, *stem, *tmp = NULL;
    if (split_beside(path, &dir, &stem) < 0) {
        errmsg_set(err, "out of memory");
        return NULL;
    }
    output_stale_sweep(dir, stem);
    int r = 1;
    for (int i = 0; r > 0 && i < OUTPUT_HIDDEN_SLOTS + RANDOM_TRIES; i++)
        r = reserve_one(dir, stem, i < OUTPUT_HIDDEN_SLOTS ? i : -1, path, &tmp, fd_out, err);
    if (r > 0) errmsg_set(err, "cannot keep a hidden file beside '%s': each was taken", path);
    free(dir);
    free(stem);
    return tmp;
}

static int open_stdout(output_file *o, const char *mode, errmsg *err)
{
    o->fp = sam_open("-", mode);
    if (!o->fp) { failed(err, "cannot write to", "-"); return -1; }
    o->stream_fd = STDOUT_FILENO;
    return 0;
}

/* A device, FIFO or descriptor has no directory entry to replace, and a
 * FIFO's reader waits on this very one: open it as samtools does.  Our own
 * open (not sam_open) keeps the descriptor, so that a failed run can
 * withhold the EOF marker.  No signal hold: opening a FIFO may block until
 * a reader comes, and nothing is created that a signal would have to undo. */
static int open_in_place(output_file *o, const char *path, const char *mode, errmsg *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    hFILE *h = fd >= 0 ? hdopen(fd, "w") : NULL;
    o->fp = h ? hts_hopen(h, path, mode) : NULL;
    if (!o->fp) {
        failed(err, "cannot open output file", o->name);
        if (h) hclose_abruptly(h);
        else if (fd >= 0) close(fd);
        return -1;
    }
    o->stream_fd = fd;
    return 0;
}

static int open_beside(output_file *o, const char *path, const char *mode, errmsg *err)
{
    o->final_path = strdup(path);
    if (!o->final_path) { errmsg_set(err, "out of memory"); return -1; }
    /* sam_open() recreates a name removed under it: no signal in between. */
    cleanup_hold_signals();
    o->tmp_path = reserve_temp_beside(path, &o->cache_fd, err);
    /* htslib writes through a duplicate of cache_fd: they share the file
     * offset, so that output_parts_append() (output/output_parts.h) writes at the end. */
    int fd = o->tmp_path ? dup(o->cache_fd) : -1;
    hFILE *h = fd >= 0 ? hdopen(fd, "w") : NULL;
    o->fp = h ? hts_hopen(h, o->tmp_path, mode) : NULL;
    if (!o->fp && h) hclose_abruptly(h);
    else if (!h && fd >= 0) close(fd);
    cleanup_release_signals();
    if (o->tmp_path && !o->fp) failed(err, "cannot open output file", o->name);
    return o->fp ? 0 : -1;
}

int output_file_open(output_file *o, const char *fn, const char *mode, errmsg *err)
{
    memset(o, 0, sizeof *o);
    o->cache_fd = o->stream_fd = o->idx_hold_fd = -1;
    char *path = NULL;
    int kind = output_target(fn, &path, err);
    if (kind < 0) return -1;
    o->name = strdup(fn);
    int ret = -1;
    if (!o->name) errmsg_set(err, "out of memory");
    else if (kind == TARGET_STDOUT) ret = open_stdout(o, mode, err);
    else if (kind == TARGET_DIRECT) ret = open_in_place(o, path, mode, err);
    else ret = open_beside(o, path, mode, err);
    free(path);
    if (ret < 0) output_file_abort(o);
    return ret;
}

int output_file_index_reserve(output_file *o, const char *idx_fn, errmsg *err)
{
    if (o->idx_write_path) return 0;
    char *path = NULL;
    int kind = output_target(idx_fn, &path, err);
    if (kind < 0) return -1;
    o->idx_name = strdup(idx_fn);
    if (!o->idx_name) { free(path); errmsg_set(err, "out of memory"); return -1; }
    if (kind == TARGET_RENAME) {
        o->idx_final_path = path;
        /* A slot's name a sweep took under it may be another sort's again
         * before it is forgotten: no signal removes it meanwhile. */
        cleanup_hold_signals();
        o->idx_tmp_path = reserve_temp_beside(path, &o->idx_hold_fd, err);
        cleanup_release_signals();
        if (!o->idx_tmp_path) return -1;
    }
    o->idx_write_path = strdup(o->idx_tmp_path ? o->idx_tmp_path : path);
    if (!o->idx_final_path) free(path);
    if (!o->idx_write_path) { errmsg_set(err, "out of memory"); return -1; }
    return 0;
}

int output_file_index_begin(output_file *o, sam_hdr_t *h, const char *idx_fn, int min_shift,
                            errmsg *err)
{
    /* htslib keeps the name, not a copy: it lives as long as the output. */
    if (output_file_index_reserve(o, idx_fn, err) < 0) return -1;
    int ret = sam_idx_init(o->fp, h, min_shift, o->idx_write_path);
    if (ret < 0) {
        failed(err, "cannot start the index", idx_fn);
        return -1;
    }
    o->indexing = 1;
    return 0;
}

int output_file_index_after(output_file *o, const char *idx_fn, int min_shift, int threads,
                            errmsg *err)
{
    if (!o->tmp_path) {
        errmsg_set(err, "an index built after the output needs an output file");
        return -1;
    }
    if (output_file_index_reserve(o, idx_fn, err) < 0) return -1;
    o->idx_min_shift = min_shift;
    o->idx_threads = threads;
    o->idx_after = 1;
    return 0;
}

/* samtools index's own code, on the closed output: the same index. */
static int build_index_after(output_file *o)
{
    if (!o->idx_after) return 0;
    if (o->idx_tmp_path) cleanup_hold_signals();
    errno = 0;
    int ret = sam_index_build3(o->tmp_path, o->idx_write_path, o->idx_min_shift,
                               o->idx_threads);
    if (o->idx_tmp_path) cleanup_release_signals();
    return ret;
}

/* Why: where page-cache pages no process has touched yet are slow to
 * write into (as on the benchmark VM; see bench/RESULTS.md), writing the
 * output costs much system time, even for a plain `view -u`.  Dropping
 * what is already written lets the kernel reuse those pages.  Dirty pages
 * are not dropped, only sent to disk sooner (htslib's writer already syncs
 * every 512 blocks). */
void output_file_drop_written(output_file *o)
{
    if (o->cache_fd >= 0) posix_fadvise(o->cache_fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* The descriptors that hold the hidden files' locks (output/output_stale.h):
 * closed once the files have their final names, or are removed. */
static void close_held_fds(output_file *o)
{
    if (o->cache_fd >= 0) close(o->cache_fd);
    if (o->idx_hold_fd >= 0) close(o->idx_hold_fd);
    o->cache_fd = o->idx_hold_fd = -1;
}

static void forget_temp(char **tmp_path)
{
    cleanup_forget(*tmp_path);
    free(*tmp_path);
    *tmp_path = NULL;
}

static void free_names(output_file *o)
{
    free(o->name);
    free(o->idx_name);
    free(o->final_path);
    free(o->idx_final_path);
    free(o->idx_write_path);
    o->name = o->idx_name = o->final_path = o->idx_final_path = o->idx_write_path = NULL;
}

static int save_index(output_file *o)
{
    if (!o->indexing) return 0;
    /* sam_idx_save() creates a temporary index by name: no signal meanwhile. */
    if (o->idx_tmp_path) cleanup_hold_signals();
    int ret = sam_idx_save(o->fp);
    if (o->idx_tmp_path) cleanup_release_signals();
    return ret;
}

int output_file_commit(output_file *o, errmsg *err)
{
    if (save_index(o) < 0) {
        failed(err, "error writing the index", o->idx_name);
        output_file_abort(o);
        return -1;
    }
    int ret = sam_close(o->fp);
    o->fp = NULL;
    o->stream_fd = -1;
    output_file_drop_written(o);
    if (ret < 0) {
        failed(err, "error closing output file", o->name);
        output_file_abort(o);
        return -1;
    }
    if (build_index_after(o) < 0) {
        failed(err, "error writing the index", o->idx_name);
        output_file_abort(o);
        return -1;
    }
    if (o->final_path) output_attrs_carry(o->cache_fd, o->final_path);
    if (o->idx_tmp_path) output_attrs_carry(o->idx_hold_fd, o->idx_final_path);
    if (!o->final_path) {
        cleanup_mark_finished();
    } else if (cleanup_commit_rename(o->tmp_path, o->final_path) < 0) {
        failed(err, "cannot rename the finished output to", o->final_path);
        output_file_abort(o);
        return -1;
    }
    forget_temp(&o->tmp_path);
    /* Past the commit point (signals no longer undo the run), so the index
     * can follow its output. */
    if (o->idx_tmp_path && rename(o->idx_tmp_path, o->idx_final_path) < 0) {
        failed(err, "cannot rename the finished index to", o->idx_final_path);
        output_file_abort(o);
        return -1;
    }
    if (o->idx_tmp_path) forget_temp(&o->idx_tmp_path);
    close_held_fds(o);
    free_names(o);
    return 0;
}

/* Closing writes the BGZF EOF block: on a destination written in place,
 * where the bytes so far are already out, send it (and whatever htslib still
 * buffers) nowhere, so that a reader sees a truncated stream. */
static void withhold_eof(int fd)
{
    if (fd == STDOUT_FILENO) fflush(stdout);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, fd);
        close(null);
    }
}

void output_file_abort(output_file *o)
{
    if (o->fp) {
        if (o->stream_fd >= 0) withhold_eof(o->stream_fd);
        sam_close(o->fp);
        o->fp = NULL;
        o->stream_fd = -1;
    }
    char **temps[] = { &o->tmp_path, &o->idx_tmp_path };
    for (size_t i = 0; i < sizeof temps / sizeof *temps; i++)
        if (*temps[i]) {
            unlink(*temps[i]);
            forget_temp(temps[i]);
        }
    close_held_fds(o);
    free_names(o);
}
