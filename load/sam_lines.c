/* load/sam_lines.c -- see load/sam_lines.h. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/bgzf.h>
#include <htslib/hfile.h>
#include <htslib/kstring.h>
#include "load/sam_lines.h"

/* hts_getline() on gzipped or bgzipped SAM, which calls bgzf_getline(),
 * noting whether the line ended with a newline (bgzf_getline() forgets it).
 * Each step is one bgzf_read() within a block, or of the one byte that loads
 * the next: BGZF's own call keeps its offsets as bgzf_getline() does (a
 * resumed sort seeks to them).  The line is returned as bgzf_getline()
 * returns it: without its "\n", nor a "\r" before where it ends. */
static int compressed_line(samFile *in, kstring_t *s, int *newline)
{
    BGZF *fp = in->fp.bgzf;
    s->l = 0;
    *newline = 0;
    in->lineno++;
    for (;;) {
        size_t n = 1;
        if (fp->block_offset < fp->block_length) {
            const char *at = (const char *)fp->uncompressed_block + fp->block_offset;
            size_t left = (size_t)(fp->block_length - fp->block_offset);
            const char *nl = memchr(at, '\n', left);
            n = nl ? (size_t)(nl - at) + 1 : left;
        }
        if (ks_resize(s, s->l + n + 1) < 0) return -2;
        ssize_t got = bgzf_read(fp, s->s + s->l, n);
        if (got < 0) return -2;
        if (got == 0) break;
        s->l += (size_t)got;
        if (s->s[s->l - 1] == '\n') {
            *newline = 1;
            break;
        }
    }
    if (!s->l) return -1;
    if (*newline) s->l--;
    if (s->l && s->s[s->l - 1] == '\r') s->l--;
    s->s[s->l] = '\0';
    return s->l <= INT_MAX ? (int)s->l : INT_MAX;
}

/* The next line into in->line, as sam_read1() reads it.  A SAM file without
 * a header leaves its first line in in->line, read with the header from the
 * start of the input.  The bytes a plain line took past its text tell its
 * newline (hts_getline() strips it, and a "\r" before it); a compressed
 * line's is noted as read, but for that first line, taken to have one. */
static int next_line(samFile *in, sam_lines *t)
{
    int plain = in->format.compression == no_compression;
    int64_t start = 0;
    int newline = 1;
    if (!in->line.l) {
        start = plain ? htell(in->fp.hfile) : 0;
        int r = plain ? hts_getline(in, '\n', &in->line) : compressed_line(in, &in->line, &newline);
        if (r < 0) return r;
    }
    t->line = in->lineno;
    t->read_any = 1;
    t->kept = 0;
    t->newline = plain ? htell(in->fp.hfile) - start > (int64_t)in->line.l : newline;
    return 0;
}

int sam_lines_read(samFile *in, sam_hdr_t *h, bam1_t *b, sam_lines *t)
{
    int passes;
    do {
        int r = next_line(in, t);
        if (r < 0) return r;
        r = sam_parse1(&in->line, h, b);
        in->line.l = 0;
        if (r < 0) {
            t->bad = 1;
            return r;
        }
        passes = in->filter ? sam_passes_filter(h, b, in->filter) : 1;
    } while (passes == 0);
    if (passes < 0) return -2;
    t->kept = 1;
    return 0;
}

int sam_lines_cut(const sam_lines *t)
{
    return t->read_any && !t->newline;
}

/* Beyond this many bytes a header is taken as whole (not told). */
#define HEADER_PEEK_MOST ((size_t)1 << 30)
/* Up to this many, each peek waits for one byte more than seen; beyond, for
 * twice as many: a pipe's reads bring 64 KiB, and copying all that is seen
 * at each would cost the square of a header of hundreds of MB. */
#define HEADER_PEEK_STEPWISE ((size_t)4 << 20)

/* Exported by htslib, but declared in htslib/hfile.h only inside hwrite(). */
extern int hfile_set_blksize(hFILE *fp, size_t bufsiz);

/* Whether the header lines in p[0..n) go on to a line that is not one (a
 * record, or a blank line), as htslib's header reader sees them: a line
 * starting with '@' is a header line.  *at_line_start carries on. */
static int header_ends_in(const char *p, size_t n, int *at_line_start)
{
    const char *end = p + n;
    while (p < end) {
        if (*at_line_start && *p != '@') return 1;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        *at_line_start = nl != NULL;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* The bytes an hFILE holds read but not yet consumed, and the most it can:
 * fields of htslib/hfile.h that its inline readers use too. */
static size_t hfile_buffered(const hFILE *h)
{
    return (size_t)(h->end - h->begin);
}

static size_t hfile_capacity(const hFILE *h)
{
    return (size_t)(h->limit - h->buffer);
}

/* The bytes the next peek asks for, and room for them in h. */
static size_t peek_size(hFILE *h, size_t seen)
{
    size_t want = seen < HEADER_PEEK_STEPWISE ? seen + 1 : 2 * seen;
    if (want < hfile_buffered(h)) want = hfile_buffered(h);
    size_t cap = hfile_capacity(h);
    if (want > cap && hfile_set_blksize(h, want > 2 * cap ? want : 2 * cap) < 0) return 0;
    return want;
}

/* htslib reads the header itself and forgets each line's end, and hpeek()
 * sees no further than the hFILE's buffer, which grows to hold the header.
 * A peek waits for the writer no longer than htslib's reader would (it
 * waits to see the line after the header begin), but for a header past
 * HEADER_PEEK_STEPWISE. */
int sam_lines_header_cut(samFile *in)
{
    if (in->format.format != sam || in->format.compression != no_compression) return 0;
    hFILE *h = in->fp.hfile;
    char *buf = NULL;
    size_t seen = 0, room = 0, want;
    int cut = 0, at_line_start = 1;
    while (seen < HEADER_PEEK_MOST && (want = peek_size(h, seen)) > 0) {
        if (want > room) {
            char *more = realloc(buf, want);
            if (!more) break;
            buf = more;
            room = want;
        }
        ssize_t got = hpeek(h, buf, want);
        if (got < 0 || header_ends_in(buf + seen, (size_t)got - seen, &at_line_start)) break;
        if ((size_t)got == seen) {      /* the stream ended inside its header */
            cut = seen > 0 && buf[seen - 1] != '\n';
            break;
        }
        seen = (size_t)got;
    }
    free(buf);
    return cut;
}

/* The source's options, but not the threads. */
static int apply_options(samFile *in, const sam_lines_source *src)
{
    if (src->reference && hts_set_fai_filename(in, src->reference) < 0) return -1;
    for (const hts_opt *x = src->options; x; x = x->next) {
        if (x->opt == HTS_OPT_NTHREADS) continue;
        hts_opt one = *x;
        one.next = NULL;
        if (hts_opt_apply(in, &one) < 0) return -1;
    }
    return 0;
}

int sam_lines_find_error(const sam_lines_source *src, sam_lines *t, uint64_t *records)
{
    samFile *in = hts_open_format(src->fn, "r", src->format);
    if (!in) return -1;
    sam_hdr_t *h = NULL;
    bam1_t *b = bam_init1();
    int found = -1;
    if (b && in->format.format == sam && apply_options(in, src) == 0
        && (h = sam_hdr_read(in)) != NULL) {
        uint64_t n = 0;
        int r;
        *t = (sam_lines){ 0 };
        while ((r = sam_lines_read(in, h, b, t)) >= 0) n++;
        found = t->bad ? 1 : r == -1 ? 0 : -1;
        *records = n;
    }
    bam_destroy1(b);
    if (h) sam_hdr_destroy(h);
    sam_close(in);
    return found;
}
