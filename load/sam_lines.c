/* load/sam_lines.c -- see load/sam_lines.h. */
#include <string.h>
#include <htslib/hfile.h>
#include "load/sam_lines.h"

/* The next line into in->line, as sam_read1() reads it.  A SAM file without
 * a header leaves its first line in in->line, read with the header from the
 * start of the input.  The bytes a plain line took past its text tell its
 * newline (hts_getline() strips it, and a "\r" before it). */
static int next_line(samFile *in, sam_lines *t)
{
    int plain = in->format.compression == no_compression;
    int64_t start = 0;
    if (!in->line.l) {
        start = plain ? htell(in->fp.hfile) : 0;
        int r = hts_getline(in, '\n', &in->line);
        if (r < 0) return r;
    }
    t->line = in->lineno;
    t->read_any = 1;
    t->kept = 0;
    t->newline = !plain || htell(in->fp.hfile) - start > (int64_t)in->line.l;
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

/* htslib builds the header's text from its lines, each given one "\n"
 * (hts_getline() stripped it, and a "\r" before it), a bare "@CO" given a
 * tab, and @SQ lines from a .fai if it has none.  Without a bare @CO or a
 * .fai, the bytes read are the text's length, or one less when the last
 * line has no newline, plus one per "\r\n": one less is always a cut. */
int sam_lines_header_cut(samFile *in, sam_hdr_t *h)
{
    unsigned char next;
    if (in->format.compression != no_compression || in->line.l || in->fn_aux
        || hpeek(in->fp.hfile, &next, 1) != 0)
        return 0;                   /* not plain SAM, or it goes on past its header */
    size_t len = sam_hdr_length(h);
    const char *text = sam_hdr_str(h);
    if (!text || len == SIZE_MAX || strlen(text) != len || strstr(text, "@CO\t\n"))
        return 0;
    return htell(in->fp.hfile) + 1 == (off_t)len;
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
