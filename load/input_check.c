/* load/input_check.c -- see load/input_check.h. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
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

/* The hFILE htslib reads the input through. */
static hFILE *input_hfile(samFile *in)
{
    if (in->format.format == cram) return cram_fd_get_fp(in->fp.cram);
    if (in->format.format == bam || in->format.compression != no_compression)
        return in->fp.bgzf->fp;
    return in->fp.hfile;
}

/* Whether a regular text file ends with a newline.  Tools and people often
 * leave the last one out, and samtools reads such files; but a file cut at
 * the end of a field, or inside the value of its last tag, also parses. */
static int last_byte_is_newline(const char *fn, uint64_t size)
{
    char last = 0;
    int fd = open(fn, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;   /* htslib has it open: let the read decide */
    ssize_t got = pread(fd, &last, 1, (off_t)(size - 1));
    close(fd);
    return got != 1 || last == '\n';
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

int input_check_end(samFile *in, const char *fn, uint64_t file_size, errmsg *err)
{
    if (is_bgzf(in) && in->fp.bgzf->no_eof_block) {
        errmsg_set(err, "'%s' is truncated: it ended without the BGZF EOF marker", fn);
        return -1;
    }
    if (in->format.format == cram && !cram_ended_with_eof(in->fp.cram)) {
        errmsg_set(err, "'%s' is truncated: it ended without the CRAM EOF container", fn);
        return -1;
    }
    int64_t consumed = file_size ? (int64_t)htell(input_hfile(in)) : 0;
    if (consumed >= 0 && (uint64_t)consumed < file_size) {
        errmsg_set(err, "'%s' is truncated or changed while being read: reading ended "
                "at byte %" PRId64 " of %" PRIu64, fn, consumed, file_size);
        return -1;
    }
    if (file_size && is_plain_sam(in) && !last_byte_is_newline(fn, file_size)) {
        errmsg_set(err, "'%s' does not end with a newline: its last line was read as a whole "
                "record, as samtools reads it (a file cut at the end of a field or inside its "
                "last tag would read the same)", fn);
        return 1;
    }
    return 0;
}
