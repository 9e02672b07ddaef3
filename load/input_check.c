/* load/input_check.c -- see load/input_check.h. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <htslib/bgzf.h>
#include <htslib/cram.h>
#include <htslib/hfile.h>
#include "load/input_check.h"

static int is_bgzf(const samFile *in)
{
    return in->format.compression == bgzf;
}

static int is_plain_sam(const samFile *in)
{
    return in->format.format == sam && in->format.compression == no_compression;
}

hFILE *input_check_hfile(samFile *in)
{
    if (in->format.format == cram) return cram_fd_get_fp(in->fp.cram);
    if (in->format.format == bam || in->format.compression != no_compression)
        return in->fp.bgzf->fp;
    return in->fp.hfile;
}

/* The last byte of a regular plain file, -1 if it cannot be read. */
static int plain_last_byte(const char *fn, uint64_t size)
{
    unsigned char last = 0;
    int fd = open(fn, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t got = pread(fd, &last, 1, (off_t)(size - 1));
    close(fd);
    return got == 1 ? last : -1;
}

#define BGZF_EOF_BYTES 28       /* the EOF marker, also the smallest block */
#define BGZF_MOST_BYTES 65536   /* the largest block */

/* The start of the BGZF block that ends at `end`: the header, among the
 * 64 KiB before, whose BSIZE says so; -1 if none is found. */
static int64_t block_ending_at(int fd, int64_t end, unsigned char *buf)
{
    int64_t from = end > BGZF_MOST_BYTES ? end - BGZF_MOST_BYTES : 0;
    if (pread(fd, buf, (size_t)(end - from), (off_t)from) != end - from) return -1;
    for (int64_t i = end - from - BGZF_EOF_BYTES; i >= 0; i--) {
        const unsigned char *h = buf + i;
        if (h[0] == 31 && h[1] == 139 && h[2] == 8 && (h[3] & 4) && h[10] == 6 && h[11] == 0
            && h[12] == 'B' && h[13] == 'C' && h[14] == 2 && h[15] == 0
            && (h[16] | h[17] << 8) + 1 == end - from - i)
            return from + i;
    }
    return -1;
}

/* The last byte of a BGZF file's text: its last block's with any, read
 * from the end back (input_check_start() saw the EOF marker), not the
 * whole file again; -1 if not found. */
static int bgzf_last_byte(const char *fn, uint64_t size, BGZF *z)
{
    unsigned char *buf = malloc(BGZF_MOST_BYTES);
    int fd = open(fn, O_RDONLY | O_CLOEXEC), last = -1;
    int64_t end = (int64_t)size - BGZF_EOF_BYTES, at;
    while (buf && fd >= 0 && last < 0 && end > 0 && (at = block_ending_at(fd, end, buf)) >= 0) {
        if (bgzf_seek(z, at << 16, SEEK_SET) < 0 || bgzf_read_block(z) < 0) break;
        const unsigned char *text = z->uncompressed_block;
        if (z->block_length > 0) last = text[z->block_length - 1];
        end = at;
    }
    if (fd >= 0) close(fd);
    free(buf);
    return last;
}

/* The last byte of a gzip (not BGZF) file's text: gzip has no blocks to
 * find from the end, so the whole text is read again; -1 if it fails. */
static int gzip_last_byte(BGZF *z)
{
    unsigned char *buf = malloc(BGZF_MOST_BYTES);
    if (!buf) return -1;
    ssize_t got;
    int last = -1;
    while ((got = bgzf_read(z, buf, BGZF_MOST_BYTES)) > 0) last = buf[got - 1];
    free(buf);
    return got == 0 ? last : -1;
}

/* Whether a regular SAM file's text ends with a newline: its last byte, or
 * for gzipped or bgzipped SAM its text's last (the compression's end shows
 * a whole file, not a whole text).  1 if it cannot be read: then let the
 * read decide. */
static int text_ends_with_newline(const samFile *in, const char *fn, uint64_t size)
{
    int last;
    if (in->format.compression == no_compression) {
        last = plain_last_byte(fn, size);
    } else {
        BGZF *z = bgzf_open(fn, "r");
        if (!z) return 1;
        last = is_bgzf(in) ? bgzf_last_byte(fn, size, z) : gzip_last_byte(z);
        bgzf_close(z);
    }
    return last < 0 || last == '\n';
}

/* Whether the last container read was CRAM's EOF container (from 2.1 on
 * every CRAM ends with one).  cram_eof() would say it too, but not when
 * slices are decoded on a thread pool. */
static int cram_ended_with_eof(cram_fd *fd)
{
    int major = cram_major_vers(fd), minor = cram_minor_vers(fd);
    return (major == 2 && minor == 0) || major < 2 || cram_container_is_empty(fd);
}

int input_check_start(samFile *in, const char *fn, uint64_t file_size, errmsg *err)
{
    if (!file_size) return 0;
    if (is_bgzf(in) && bgzf_check_EOF(in->fp.bgzf) == 0) {
        errmsg_set(err, "'%s' does not end with the BGZF EOF marker: it is truncated, or has "
                "data after its end", fn);
        return -1;
    }
    if (in->format.format == cram && cram_check_EOF(in->fp.cram) == 0) {
        errmsg_set(err, "'%s' does not end with the CRAM EOF container: it is truncated, or has "
                "data after its end", fn);
        return -1;
    }
    return 0;
}

int input_check_end(samFile *in, const char *fn, uint64_t file_size, int newline, errmsg *err)
{
    if (is_bgzf(in) && in->fp.bgzf->no_eof_block) {
        errmsg_set(err, "'%s' is truncated: it ended without the BGZF EOF marker", fn);
        return -1;
    }
    if (in->format.format == cram && !cram_ended_with_eof(in->fp.cram)) {
        errmsg_set(err, "'%s' is truncated: it ended without the CRAM EOF container", fn);
        return -1;
    }
    int64_t consumed = file_size ? (int64_t)htell(input_check_hfile(in)) : 0;
    if (consumed >= 0 && (uint64_t)consumed < file_size) {
        errmsg_set(err, "'%s' is truncated or changed while being read: reading ended "
                "at byte %" PRId64 " of %" PRIu64, fn, consumed, file_size);
        return -1;
    }
    if (in->format.format != sam) return 0;
    /* A plain stream's last line without one is a cut, which the caller refuses. */
    if (!file_size && is_plain_sam(in)) return 0;
    if (newline < 0) newline = file_size ? text_ends_with_newline(in, fn, file_size) : 1;
    if (!newline) {
        errmsg_set(err, "'%s' does not end with a newline: its last line was read whole, as "
                "samtools reads it (a text cut at the end of a field or inside its last tag "
                "would read the same)", fn);
        return 1;
    }
    return 0;
}
