/* output/output_parts.c -- see output/output_parts.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>
#include "output/output_parts.h"

/* The empty BGZF block that ends every BGZF file (SAM/BAM specification,
 * section 4.1.2). */
static const uint8_t bgzf_eof[28] = {
    0x1f, 0x8b, 0x08, 0x04, 0, 0, 0, 0, 0, 0xff, 0x06, 0, 0x42, 0x43, 0x02, 0,
    0x1b, 0, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0
};

static int fail(errmsg *err, const char *what, const char *path)
{
    return errmsg_set(err, "%s '%s': %s", what, path, errno ? strerror(errno) : "unexpected end");
}

int output_parts_slot_create(void)
{
    return memfd_create("rocksort-output-part", MFD_CLOEXEC);
}

int output_parts_slot_rewind(int fd)
{
    return lseek(fd, 0, SEEK_SET) < 0 ? -1 : 0;
}

int output_parts_slot_length(int fd, int strip_eof, off_t *len, errmsg *err)
{
    uint8_t tail[sizeof bgzf_eof];
    errno = 0;
    *len = lseek(fd, 0, SEEK_CUR);
    if (*len < 0) {
        fail(err, "cannot read back", "a part of the output in memory");
        return -1;
    }
    if (!strip_eof) return 0;
    if (*len < (off_t)sizeof tail
        || pread(fd, tail, sizeof tail, *len - (off_t)sizeof tail) != (ssize_t)sizeof tail
        || memcmp(tail, bgzf_eof, sizeof tail) != 0) {
        fail(err, "missing EOF marker in", "a part of the output in memory");
        return -1;
    }
    *len -= (off_t)sizeof tail;
    return 0;
}

/* sendfile() takes the pages straight from the memory file to a file, a
 * pipe or a device; read() and write() serve where it is refused. */
static ssize_t copy_some(int in, off_t *off, int out, size_t n)
{
    static _Thread_local char buf[1 << 16];
    ssize_t r = sendfile(out, in, off, n);
    if (r >= 0 || (errno != EINVAL && errno != ENOSYS)) return r;
    r = pread(in, buf, n < sizeof buf ? n : sizeof buf, *off);
    if (r <= 0) return r;
    ssize_t w = write(out, buf, (size_t)r);
    if (w > 0) *off += w;
    return w;
}

int output_parts_append(output_file *o, int fd, off_t len, errmsg *err)
{
    int out = o->cache_fd >= 0 ? o->cache_fd : o->stream_fd;
    off_t off = 0;
    while (off < len) {
        errno = 0;
        if (copy_some(fd, &off, out, (size_t)(len - off)) <= 0) {
            fail(err, "error writing to", o->name);
            return -1;
        }
    }
    return 0;
}
