/* output_parts.c -- see output_parts.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>
#include "output_parts.h"
#include "cleanup.h"

/* The empty BGZF block that ends every BGZF file (SAM/BAM specification,
 * section 4.1.2). */
static const uint8_t bgzf_eof[28] = {
    0x1f, 0x8b, 0x08, 0x04, 0, 0, 0, 0, 0, 0xff, 0x06, 0, 0x42, 0x43, 0x02, 0,
    0x1b, 0, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0
};

static char *fail(const char *what, const char *path)
{
    char *m = NULL;
    if (asprintf(&m, "%s '%s': %s", what, path, errno ? strerror(errno) : "unexpected end")
        < 0)
        m = NULL;
    return m;
}

static char *part_template(const output_file *o, const char *tmp_prefix, int n)
{
    char *t = NULL, *d = NULL, *b = NULL;
    struct stat st;
    int ok;
    if (o->final_path) {
        d = strdup(o->final_path);
        b = strdup(o->final_path);
        ok = d && b && asprintf(&t, "%s/.%s.part%d.XXXXXX", dirname(d), basename(b), n) >= 0;
    } else if (stat(tmp_prefix, &st) == 0 && S_ISDIR(st.st_mode)) {
        ok = asprintf(&t, "%s/samtools-rocksort.part%d.XXXXXX", tmp_prefix, n) >= 0;
    } else {
        ok = asprintf(&t, "%s.rocksort.part%d.XXXXXX", tmp_prefix, n) >= 0;
    }
    free(d);
    free(b);
    return ok ? t : NULL;
}

char *part_create(const output_file *o, const char *tmp_prefix, int n, char **err)
{
    char *path = part_template(o, tmp_prefix, n);
    if (!path) { *err = strdup("out of memory"); return NULL; }
    int fd = cleanup_mkstemp(path);
    if (fd < 0) {
        *err = fail("cannot create a part of the output", path);
        free(path);
        return NULL;
    }
    close(fd);
    return path;
}

/* The part's length without its EOF marker, which must be there. */
static int data_length(int fd, const char *part, int strip_eof, off_t *len, char **err)
{
    struct stat st;
    uint8_t tail[sizeof bgzf_eof];
    errno = 0;
    if (fstat(fd, &st) < 0) { *err = fail("cannot read part", part); return -1; }
    *len = st.st_size;
    if (!strip_eof) return 0;
    if (st.st_size < (off_t)sizeof tail
        || pread(fd, tail, sizeof tail, st.st_size - (off_t)sizeof tail) != (ssize_t)sizeof tail
        || memcmp(tail, bgzf_eof, sizeof tail) != 0) {
        *err = fail("part of the output lacks its EOF marker:", part);
        return -1;
    }
    *len -= (off_t)sizeof tail;
    return 0;
}

/* copy_file_range() copies in the kernel (or shares blocks) between files
 * of one file system; sendfile() reaches pipes and other file systems;
 * read() and write() anything else. */
static ssize_t copy_some(int in, off_t *off, int out, size_t n)
{
    static char buf[1 << 20];
    ssize_t r = copy_file_range(in, off, out, NULL, n, 0);
    if (r >= 0 || (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP
                   && errno != EBADF))
        return r;
    r = sendfile(out, in, off, n);
    if (r >= 0 || (errno != EINVAL && errno != ENOSYS)) return r;
    r = pread(in, buf, n < sizeof buf ? n : sizeof buf, *off);
    if (r <= 0) return r;
    ssize_t w = write(out, buf, (size_t)r);
    if (w > 0) *off += w;
    return w;
}

int part_append(output_file *o, const char *part, int strip_eof, uint64_t *appended,
                char **err)
{
    int out = o->cache_fd >= 0 ? o->cache_fd : o->stream_fd;
    int in = open(part, O_RDONLY | O_CLOEXEC);
    off_t len, off = 0;
    *appended = 0;
    if (in < 0) { *err = fail("cannot open part", part); return -1; }
    int ret = data_length(in, part, strip_eof, &len, err);
    while (ret == 0 && off < len) {
        errno = 0;
        ssize_t n = copy_some(in, &off, out, (size_t)(len - off));
        if (n <= 0) {
            *err = fail("error writing to", o->name);
            ret = -1;
        }
    }
    close(in);
    *appended = (uint64_t)off;
    return ret;
}

void part_remove(char *part)
{
    if (!part) return;
    unlink(part);
    cleanup_forget(part);
    free(part);
}
