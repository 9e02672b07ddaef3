/* load/sam_lines.h -- SAM text read on the reading thread, line by line, each
 * line's end known.
 *
 * Contract: sam_lines_read() reads the next record of a SAM input that
 * htslib does not parse on threads (in->state is NULL), as sam_read1()
 * would: htslib's hts_getline() (for gzipped or bgzipped SAM, the same
 * reading of its BGZF) and sam_parse1(), then the input's filter.  It
 * returns what sam_read1() returns.  It notes whether the last line read
 * ended with a newline, which htslib forgets: sam_lines_cut() says, after
 * -1 (the end) or a parse error, that the last line had none (of gzipped
 * SAM without a header, its first line, which htslib reads with the
 * header, is taken to have one).  After a parse error (t->bad) the line
 * that failed is t->line, counted as htslib counts it (header lines
 * included), if the input was read from its start.
 *
 * sam_lines_header_cut(), right before sam_hdr_read() and before any
 * thread reads the input, says that a plain SAM stream ends inside its
 * header, and without a newline: 1 if so, else 0 (also for a header past
 * 1 GiB, or a peek that fails, which sam_hdr_read() then reports).  It
 * peeks at the input, growing its hFILE's buffer to hold the header.
 *
 * sam_lines_find_error() reads a SAM file again from its start, without
 * threads, to the first line that does not parse: it returns 1 with that
 * line in *t and the records before it, 0 if every line parses, or -1 if
 * the file cannot be read again.  It is for a failure whose line is not
 * known: htslib's threaded parsing reports neither line nor count.
 */
#ifndef SAM_LINES_H
#define SAM_LINES_H

#include <stdint.h>
#include <htslib/sam.h>

typedef struct {
    int64_t line;       /* the last line read: its number, as in->lineno counts */
    int read_any;       /* a line was read */
    int newline;        /* the last line read ended with a newline */
    int kept;           /* it gave the last record returned (else filtered out, or bad) */
    int bad;            /* it did not parse */
} sam_lines;

int sam_lines_read(samFile *in, sam_hdr_t *h, bam1_t *b, sam_lines *t);
int sam_lines_cut(const sam_lines *t);
int sam_lines_header_cut(samFile *in);

typedef struct {
    const char *fn;
    const htsFormat *format;    /* --input-fmt, or NULL */
    const char *reference;      /* its .fai may list the references */
    const hts_opt *options;     /* --input-fmt-option: the filter counts */
} sam_lines_source;

int sam_lines_find_error(const sam_lines_source *src, sam_lines *t, uint64_t *records);

#endif
