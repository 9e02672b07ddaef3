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

/* Read at a time for the CRC: libdeflate's CRC-32 runs at several GB/s,
 * so the reads, mostly from the page cache, set the pace. */
#define CHUNK (1u << 20)

void resume_recheck_open(sort_job *j)
{
    struct stat st;
    resume_state *r = &j->resume;
    r->prefix_fd = open(j->o->in_fn, O_RDONLY | O_CLOEXEC);
    /* Without it, the notes keep no prefix and a ctime of 0: a rerun then
     * checks nothing and starts afresh, the safe side. */
    if (r->prefix_fd < 0 || fstat(r->prefix_fd, &st) < 0) {
        resume_recheck_close(j);
        return;
    }
    r->ctime = (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
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
}

void resume_recheck_note(sort_job *j, resume_note *n)
{
    resume_state *r = &j->resume;
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

int resume_recheck_state(sort_job *j)
{
    resume_note n;
    if (!same_sort_note(j, &n) || n.ctime == j->resume.ctime) return 0;
    if (!n.prefix_bytes || j->resume.prefix_fd < 0)
        return stale(j, "'%s' changed since the state was made (its ctime differs), and the "
                     "state kept no checksum of the part it holds", j->o->in_fn);
    uint32_t crc = 0;
    if (crc_range(j->resume.prefix_fd, 0, n.prefix_bytes, &crc) < 0)
        return sort_job_fail("cannot read '%s': %s", j->o->in_fn, strerror(errno));
    if (crc != (uint32_t)n.prefix_crc)
        return stale(j, "'%s' changed since the state was made: its ctime differs, and its first "
                     "%" PRIu64 " bytes are not those the state holds", j->o->in_fn, n.prefix_bytes);
    if (j->o->verbose)
        fprintf(stderr, "[rocksort] '%s' changed status since the state in '%s' was made (its "
                "ctime), but its first %" PRIu64 " bytes, which the state holds, read back the "
                "same\n", j->o->in_fn, resume_fate_dir_shown(j), n.prefix_bytes);
    return 0;
}
