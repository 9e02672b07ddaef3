/* engine/resume_recheck.c -- see engine/resume_recheck.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>
#include <htslib/bgzf.h>
#include "engine/resume_recheck.h"
#include "engine/resume_fate.h"
#include "store/store.h"
#include "util/mix64.h"

/* Read at a time for the CRC: libdeflate's CRC-32 runs at several GB/s,
 * so the reads, mostly from the page cache, set the pace. */
#define CHUNK (1u << 20)

/* A fold of the inputs read whole: their ctimes, or their bytes' CRCs. */
#define FOLD_SEED 0x9e3779b97f4a7c15ULL

static uint64_t fold(uint64_t acc, uint64_t value)
{
    return mix64((acc ? acc : FOLD_SEED) ^ value);
}

static uint64_t ctime_ns(const struct stat *st)
{
    return (uint64_t)st->st_ctim.tv_sec * 1000000000u + (uint64_t)st->st_ctim.tv_nsec;
}

void resume_recheck_open(sort_job *j, const char *fn)
{
    struct stat st;
    resume_state *r = &j->resume;
    resume_recheck_close(j);
    r->ctime = r->size = r->prefix_bytes = 0;
    r->prefix_crc = 0;
    r->prefix_lost = 0;
    /* A stream has no bytes to read again, and opening a FIFO would wait
     * for its writer. */
    if (!strcmp(fn, "-") || stat(fn, &st) < 0 || !S_ISREG(st.st_mode)) return;
    r->prefix_fd = open(fn, O_RDONLY | O_CLOEXEC);
    /* Without it, the notes keep no prefix and a ctime of 0: a rerun then
     * checks nothing and starts afresh, the safe side. */
    if (r->prefix_fd < 0 || fstat(r->prefix_fd, &st) < 0) {
        resume_recheck_close(j);
        return;
    }
    r->ctime = ctime_ns(&st);
    r->size = (uint64_t)st.st_size;
}

void resume_recheck_close(sort_job *j)
{
    if (j->resume.prefix_fd >= 0) close(j->resume.prefix_fd);
    j->resume.prefix_fd = -1;
}

/* The CRC-32 in *crc extended over bytes [from, to) of fd: 0, or -1 with
 * errno (EIO for a file that ends before `to`). */
static int crc_range(int fd, uint64_t from, uint64_t to, uint32_t *crc)
{
    uint8_t *buf = from < to ? malloc(CHUNK) : NULL;
    if (from < to && !buf) return -1;
    uint32_t c = *crc;
    while (from < to) {
        size_t want = to - from < CHUNK ? (size_t)(to - from) : CHUNK;
        ssize_t got = pread(fd, buf, want, (off_t)from);
        if (got <= 0) {
            if (got == 0) errno = EIO;
            free(buf);
            return -1;
        }
        c = libdeflate_crc32(c, buf, (size_t)got);
        from += (uint64_t)got;
    }
    free(buf);
    *crc = c;
    return 0;
}

/* The bytes that hold every record before pos: up to a plain SAM's byte
 * offset; a BGZF file's up to the end of the block pos is in, which may
 * end anywhere in the next BGZF_MAX_BLOCK_SIZE bytes.  0: not known. */
static uint64_t prefix_end(const resume_state *r, position_kind kind, uint64_t pos)
{
    uint64_t end = kind == POS_BYTES ? pos
                 : kind == POS_BGZF ? (pos >> BGZF_WITHIN_BLOCK_BITS) + BGZF_MAX_BLOCK_SIZE : 0;
    return end < r->size ? end : r->size;
}

void resume_recheck_take_back(sort_job *j, const resume_note *n)
{
    j->resume.prefix_bytes = n->prefix_bytes;
    j->resume.prefix_crc = (uint32_t)n->prefix_crc;
    j->resume.done_ctimes = n->done_ctimes;
    j->resume.done_crcs = n->done_crcs;
    j->resume.done_lost = n->input > 0 && !n->done_crcs;
}

/* The CRC of a whole file goes on from its prefix's, over what the load
 * read since the last note: from the page cache, as the prefix's did. */
void resume_recheck_input_done(sort_job *j)
{
    resume_state *r = &j->resume;
    uint32_t crc = r->prefix_crc;
    int known = r->prefix_fd >= 0 && !r->prefix_lost &&
                crc_range(r->prefix_fd, r->prefix_bytes, r->size, &crc) == 0;
    r->done_ctimes = fold(r->done_ctimes, r->ctime);
    r->done_crcs = fold(r->done_crcs, crc ^ r->size << 32);
    if (!known) r->done_lost = 1;
    resume_recheck_close(j);
}

void resume_recheck_note(sort_job *j, resume_note *n)
{
    resume_state *r = &j->resume;
    n->done_ctimes = r->done_ctimes;
    n->done_crcs = r->done_lost ? 0 : r->done_crcs;
    if (r->prefix_fd < 0) return;
    n->ctime = r->ctime;
    uint64_t end = prefix_end(r, (position_kind)n->kind, n->pos);
    if (!r->prefix_lost && end > r->prefix_bytes) {
        if (crc_range(r->prefix_fd, r->prefix_bytes, end, &r->prefix_crc) < 0) r->prefix_lost = 1;
        else r->prefix_bytes = end;
    }
    if (r->prefix_lost || !end) return;
    n->prefix_bytes = r->prefix_bytes;
    n->prefix_crc = r->prefix_crc;
}

/* The last note of DIR's state, if it has this sort's identity: 1, else 0. */
static int same_sort_note(const sort_job *j, resume_note *n)
{
    char *stored = NULL;
    uint8_t *note = NULL;
    size_t len = 0;
    int same = state_dir_identity(j->o->resume_dir, &stored) > 0 &&
               !strcmp(stored, j->resume.identity) &&
               state_dir_last_note(j->o->resume_dir, &note, &len) > 0 &&
               resume_state_note_decode(note, len, n) == 0;
    free(stored);
    free(note);
    return same;
}

/* Why the state goes (j->resume.stale): 0, or -1 once out of memory is reported. */
static int stale(sort_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int stale(sort_job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&j->resume.stale, fmt, ap);
    va_end(ap);
    if (n >= 0) return 0;
    j->resume.stale = NULL;
    return sort_job_fail("out of memory");
}

/* The input the note's position is in: its ctime, and if that changed,
 * its stored prefix read again. */
static int check_reading(sort_job *j, const resume_note *n)
{
    const char *fn = j->o->in_fns[n->input];
    struct stat st;
    int fd = open(fn, O_RDONLY | O_CLOEXEC);
    int opened = fd >= 0 && fstat(fd, &st) == 0;
    uint32_t crc = 0;
    int ret = 0;
    if (opened && n->ctime == ctime_ns(&st)) goto done;
    if (!n->prefix_bytes || !opened)
        ret = stale(j, "'%s' changed since the state was made (its ctime differs), and the "
                    "state kept no checksum of the part it holds", fn);
    else if (crc_range(fd, 0, n->prefix_bytes, &crc) < 0)
        ret = sort_job_fail("cannot read '%s': %s", fn, strerror(errno));
    else if (crc != (uint32_t)n->prefix_crc)
        ret = stale(j, "'%s' changed since the state was made: its ctime differs, and its first "
                    "%" PRIu64 " bytes are not those the state holds", fn, n->prefix_bytes);
    else if (j->o->verbose)
        fprintf(stderr, "[rocksort] '%s' changed status since the state in '%s' was made (its "
                "ctime), but its first %" PRIu64 " bytes, which the state holds, read back the "
                "same\n", fn, resume_fate_dir_shown(j), n->prefix_bytes);
done:
    if (fd >= 0) close(fd);
    return ret;
}

/* The CRC-32 of a whole file, folded into *acc: 0, or -1 with errno. */
static int fold_file_crc(const char *fn, uint64_t *acc)
{
    struct stat st;
    uint32_t crc = 0;
    int fd = open(fn, O_RDONLY | O_CLOEXEC);
    int ok = fd >= 0 && fstat(fd, &st) == 0 && crc_range(fd, 0, (uint64_t)st.st_size, &crc) == 0;
    int saved = errno;
    if (fd >= 0) close(fd);
    errno = saved;
    if (ok) *acc = fold(*acc, crc ^ (uint64_t)st.st_size << 32);
    return ok ? 0 : -1;
}

/* The inputs the state holds whole: their ctimes, and if one changed,
 * every one of them read again. */
static int check_done(sort_job *j, const resume_note *n)
{
    const char *const *fns = j->o->in_fns;
    const char *at = fns[n->input];
    uint64_t ctimes = 0, crcs = 0;
    struct stat st;
    for (uint64_t i = 0; i < n->input; i++)
        ctimes = fold(ctimes, stat(fns[i], &st) == 0 ? ctime_ns(&st) : 0);
    if (ctimes == n->done_ctimes) return 0;
    if (!n->done_crcs)
        return stale(j, "an input before '%s' changed since the state was made (its ctime "
                     "differs), and the state kept no checksum of it", at);
    for (uint64_t i = 0; i < n->input; i++)
        if (fold_file_crc(fns[i], &crcs) < 0)
            return sort_job_fail("cannot read '%s': %s", fns[i], strerror(errno));
    if (crcs != n->done_crcs)
        return stale(j, "an input before '%s' changed since the state was made: a ctime differs, "
                     "and the inputs' bytes are not those the state holds", at);
    if (j->o->verbose)
        fprintf(stderr, "[rocksort] an input before '%s' changed status since the state in '%s' "
                "was made (its ctime), but the inputs before it, which the state holds whole, "
                "read back the same\n", at, resume_fate_dir_shown(j));
    return 0;
}

int resume_recheck_state(sort_job *j)
{
    resume_note n;
    if (!same_sort_note(j, &n) || n.input >= (uint64_t)j->o->n_in) return 0;
    if (check_done(j, &n) < 0) return -1;
    return j->resume.stale ? 0 : check_reading(j, &n);
}
