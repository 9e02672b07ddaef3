/* disk/run_journal.c -- see disk/run_journal.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <htslib/hts_endian.h>
#include "disk/run_journal.h"
#include "util/grow_array.h"

#define FRAME 8                         /* u32 length, u32 CRC-32 */
#define RECORD_MAX (1u << 30)           /* a longer length is damage */

struct run_journal {
    char *path;
    int fd;
    uint8_t *data;                      /* the file's whole records */
    size_t size, cap;
    size_t *at;                         /* where each record's bytes start */
    size_t n, at_cap;
    int unlocked;                       /* errno of a lock the file system refused */
};

static int fail(run_journal *j, const char *what, errmsg *err)
{
    return errmsg_set(err, "%s '%s': %s", what, j->path, strerror(errno ? errno : EIO));
}

/* The length of the whole, intact record framed at p (n bytes there), or
 * 0 if there is none.  No record is empty: a zero length is a tail of
 * zeros (a file extended by a crash before its data reached the disk),
 * whose CRC-32 of nothing would pass. */
static size_t whole_record(const uint8_t *p, size_t n)
{
    if (n < FRAME) return 0;
    uint32_t len = le_to_u32(p), crc = le_to_u32(p + 4);
    if (len == 0 || len > RECORD_MAX || len > n - FRAME) return 0;
    return (uint32_t)crc32(0L, p + FRAME, len) == crc ? len : 0;
}

static int add_index(run_journal *j, size_t at)
{
    if (grow_array((void **)&j->at, &j->at_cap, j->n + 1, sizeof *j->at) < 0) return -1;
    j->at[j->n++] = at;
    return 0;
}

/* Reads the whole file, then keeps its good records; a writer cuts a torn
 * or damaged tail away. */
static int load_records(run_journal *j, int writing, errmsg *err)
{
    struct stat st;
    if (fstat(j->fd, &st) < 0) return fail(j, "cannot read", err);
    if (grow_array((void **)&j->data, &j->cap, (size_t)st.st_size + 1, 1) < 0)
        return errmsg_set(err, "out of memory reading '%s'", j->path);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = pread(j->fd, j->data + got, (size_t)st.st_size - got, (off_t)got);
        if (r <= 0) return fail(j, "cannot read", err);
        got += (size_t)r;
    }
    size_t at = 0, len;
    while ((len = whole_record(j->data + at, got - at)) > 0) {
        if (add_index(j, at + FRAME) < 0) return errmsg_set(err, "out of memory reading '%s'", j->path);
        at += FRAME + len;
    }
    j->size = at;
    if (writing && got > at && ftruncate(j->fd, (off_t)at) < 0) return fail(j, "cannot repair", err);
    return 0;
}

run_journal *run_journal_open(const char *path, errmsg *err)
{
    run_journal *j = calloc(1, sizeof *j);
    if (!j || !(j->path = strdup(path))) {
        free(j);
        errmsg_set(err, "out of memory");
        return NULL;
    }
    j->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    int ok = j->fd >= 0 || (fail(j, "cannot open", err), 0);
    if (ok && flock(j->fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK) {
            ok = 0;
            errmsg_set(err, "'%s' is in use by another sort", path);
        } else if (errno == ENOLCK || errno == ENOSYS || errno == EOPNOTSUPP) {
            j->unlocked = errno;    /* a file system without locks: see the header */
        } else {
            ok = 0;
            fail(j, "cannot lock", err);
        }
    }
    if (ok && load_records(j, 1, err) == 0) return j;
    run_journal_close(j);
    return NULL;
}

run_journal *run_journal_read(const char *path, errmsg *err)
{
    run_journal *j = calloc(1, sizeof *j);
    if (!j || !(j->path = strdup(path))) {
        free(j);
        errmsg_set(err, "out of memory");
        return NULL;
    }
    struct stat st;
    j->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    int ok = j->fd >= 0 && fstat(j->fd, &st) == 0 && S_ISREG(st.st_mode);
    if (!ok) fail(j, "cannot read", err);
    if (ok && load_records(j, 0, err) == 0) return j;
    run_journal_close(j);
    return NULL;
}

void run_journal_close(run_journal *j)
{
    if (!j) return;
    if (j->fd >= 0) close(j->fd);
    free(j->data);
    free(j->at);
    free(j->path);
    free(j);
}

size_t run_journal_records(const run_journal *j) { return j->n; }
int run_journal_unlocked(const run_journal *j) { return j->unlocked; }

const uint8_t *run_journal_record(const run_journal *j, size_t i, size_t *len)
{
    *len = le_to_u32(j->data + j->at[i] - FRAME);
    return j->data + j->at[i];
}

int run_journal_append(run_journal *j, const void *rec, size_t len, errmsg *err)
{
    if (len > RECORD_MAX) return errmsg_set(err, "a record too large for '%s'", j->path);
    if (grow_array((void **)&j->data, &j->cap, j->size + FRAME + len, 1) < 0 ||
        add_index(j, j->size + FRAME) < 0)
        return errmsg_set(err, "out of memory writing '%s'", j->path);
    uint8_t *p = j->data + j->size;
    u32_to_le((uint32_t)len, p);
    u32_to_le((uint32_t)crc32(0L, rec, (uInt)len), p + 4);
    memcpy(p + FRAME, rec, len);
    /* One write per record: a kill leaves a whole record or a torn one,
     * which the next open cuts away. */
    size_t done = 0;
    while (done < FRAME + len) {
        ssize_t w = pwrite(j->fd, p + done, FRAME + len - done, (off_t)(j->size + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int cause = w < 0 ? errno : EIO;
            j->n--;
            if (ftruncate(j->fd, (off_t)j->size) < 0) { /* the open cuts it anyway */ }
            errno = cause;
            return fail(j, "cannot write", err);
        }
        done += (size_t)w;
    }
    j->size += FRAME + len;
    return 0;
}

int run_journal_cut(run_journal *j, size_t i, errmsg *err)
{
    if (i >= j->n) return 0;
    size_t at = j->at[i] - FRAME;
    if (ftruncate(j->fd, (off_t)at) < 0) return fail(j, "cannot cut", err);
    j->size = at;
    j->n = i;
    return 0;
}

int run_journal_first_record(const char *path, uint8_t **rec, size_t *len, errmsg *err)
{
    uint8_t frame[FRAME];
    *rec = NULL;
    *len = 0;
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return errmsg_set(err, "cannot read '%s': %s", path, strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return errmsg_set(err, "'%s' is not a regular file", path);
    }
    ssize_t head = pread(fd, frame, FRAME, 0);
    uint32_t want = head == FRAME ? le_to_u32(frame) : 0;
    int fits = want && want <= RECORD_MAX && (uint64_t)want + FRAME <= (uint64_t)st.st_size;
    uint8_t *buf = fits ? malloc(FRAME + (size_t)want) : NULL;
    if (buf) {
        memcpy(buf, frame, FRAME);
        if (pread(fd, buf + FRAME, want, FRAME) == (ssize_t)want)
            *len = whole_record(buf, FRAME + (size_t)want);
    }
    close(fd);
    if (head == 0) return 0;
    if (!*len) {
        free(buf);
        return errmsg_set(err, "'%s' does not begin with a whole journal record", path);
    }
    memmove(buf, buf + FRAME, *len);
    *rec = buf;
    return 1;
}
