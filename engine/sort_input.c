/* engine/sort_input.c -- see engine/sort_input.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <htslib/bgzf.h>
#include <htslib/cram.h>
#include <htslib/hfile.h>
#include "engine/sort_input.h"
#include "load/input_check.h"
#include "util/cleanup.h"
#include "util/thread.h"

/* htslib's threaded SAM parsing reads far ahead in chunks, and tells
 * neither where a line ended nor which line failed.  SAM is parsed on this
 * thread (load/sam_lines.h), with threads for its BGZF decompression only, from
 * a stream, whose last line must be seen to end, and in a resumable sort,
 * which finds the records again by their offsets. */
static int threaded_parsing_allowed(const sort_job *j)
{
    return j->in->format.format != sam || (!j->resume.on && j->in_file_size);
}

/* Whether the records will be parsed by htslib on threads: the pool, or an
 * nthreads input option, where threaded_parsing_allowed(). */
static int parsed_on_threads(const sort_job *j)
{
    if (!threaded_parsing_allowed(j)) return 0;
    if (j->pool.pool) return 1;
    for (const hts_opt *x = j->o->in_opts; x; x = x->next)
        if (x->opt == HTS_OPT_NTHREADS) return 1;
    return 0;
}

/* --input-fmt-option, all but nthreads: that one starts htslib's reader
 * thread, which sort_input_start_threads() defers. */
static int apply_input_options(sort_job *j)
{
    for (const hts_opt *x = j->o->in_opts; x; x = x->next) {
        if (x->opt == HTS_OPT_NTHREADS) continue;
        hts_opt one = *x;
        one.next = NULL;
        if (hts_opt_apply(j->in, &one) < 0) return -1;
    }
    return 0;
}

/* nthreads from --input-fmt-option, where it would not turn on threaded
 * SAM parsing that threaded_parsing_allowed() refuses. */
static int apply_nthreads_option(sort_job *j)
{
    for (const hts_opt *x = j->o->in_opts; x; x = x->next) {
        if (x->opt != HTS_OPT_NTHREADS || !threaded_parsing_allowed(j)) continue;
        hts_opt one = *x;
        one.next = NULL;
        if (hts_opt_apply(j->in, &one) < 0) return -1;
    }
    return 0;
}

/* htslib's BGZF reader thread, once it has stopped on a block it cannot
 * read (a file cut early, or inside its EOF marker), never answers
 * bgzf_check_EOF() or bgzf_seek() again: both wait for it forever.  So the
 * threads start, as samtools starts them, only after the header is read,
 * the EOF marker checked and a resumed input positioned. */
int sort_input_start_threads(sort_job *j)
{
    if (j->threads_started) return 0;
    j->threads_started = 1;
    if (j->pool.pool) {
        thread_name_scope named;
        thread_name_push(&named, THREAD_INPUT);   /* BGZF's reader thread takes the name */
        if (threaded_parsing_allowed(j)) hts_set_thread_pool(j->in, &j->pool);
        else if (j->in->format.compression == bgzf)
            bgzf_thread_pool(j->in->fp.bgzf, j->pool.pool, j->pool.qsize);
        thread_name_pop(&named);
    }
    if (apply_nthreads_option(j) < 0)
        return sort_job_fail("bad --input-fmt-option nthreads for '%s'", j->in_fn);
    j->in_read_ahead = j->in->format.format == cram ? parsed_on_threads(j)
                     : j->in->format.compression == bgzf && j->in->fp.bgzf->mt;
    return 0;
}

/* Opens the input; 1 if it holds no byte at all (htslib's empty format),
 * then closed again. */
static int open_file(sort_job *j)
{
    j->in = hts_open_format(j->in_fn, "r", j->o->in_format);
    if (!j->in) return sort_job_fail("cannot open '%s': %s", j->in_fn, strerror(errno));
    if (j->in->format.format != empty_format) return 0;
    sam_close(j->in);
    j->in = NULL;
    return 1;
}

/* A stream ends early when its writer is killed, and the same kill (of a
 * process group, or a job's processes one by one) sends this process a
 * signal, perhaps a little later: the end is the signal's doing, and only
 * the signal's line stands (util/cleanup.h). */
#define SIGNAL_GRACE_MS 200

static int ended_by_signal(const sort_job *j)
{
    return !j->in_file_size && cleanup_signal_within(SIGNAL_GRACE_MS);
}

/* A stream that ends inside its header, its last line without a newline:
 * its writer died before any record (report_stream_cut() below). */
static int report_header_cut(const sort_job *j)
{
    if (ended_by_signal(j)) return -1;
    return sort_job_fail("'%s' is truncated: it ends inside its header, whose last line (line %lld) "
                         "has no newline; a stream must end with one (a complete file given by name "
                         "is sorted with a warning)", j->in_fn, (long long)j->in->lineno);
}

/* The open input's header, options and checks. */
static int read_header(sort_job *j)
{
    const rocksort_opts *o = j->o;
    if (j->in->format.category != sequence_data)
        return sort_job_fail("'%s' is not a SAM, BAM or CRAM file", j->in_fn);
    struct stat st;
    if (strcmp(j->in_fn, "-") && stat(j->in_fn, &st) == 0 && S_ISREG(st.st_mode))
        j->in_file_size = (uint64_t)st.st_size;
    int header_cut = !j->in_file_size && sam_lines_header_cut(j->in);
    if (o->reference && hts_set_fai_filename(j->in, o->reference) < 0)
        return sort_job_fail("cannot load reference '%s' for '%s'", o->reference, j->in_fn);
    if (apply_input_options(j) < 0)
        return sort_job_fail("bad --input-fmt-option for '%s'", j->in_fn);
    j->in_hdr = sam_hdr_read(j->in);
    if (header_cut) return report_header_cut(j);     /* a cut line may not parse */
    if (!j->in_hdr) return sort_job_fail("failed to read the header of '%s'", j->in_fn);
    j->read_lines = j->in->format.format == sam && !parsed_on_threads(j);
    /* The references htslib's BAM reader checks records against; adding
     * @PG parses the text header, which may list more (refs_beyond_header). */
    j->n_refs = sam_hdr_nref(j->in_hdr);
    if (j->hdr && sam_hdr_nref(j->hdr) < j->n_refs) j->n_refs = sam_hdr_nref(j->hdr);
    errmsg err;
    if (input_check_start(j->in, j->in_fn, j->in_file_size, &err) < 0)
        return sort_job_fail("%s", err.msg);
    return 0;
}

int sort_input_open(sort_job *j, const char *fn)
{
    j->in_fn = fn;
    j->in_file_size = 0;
    j->threads_started = j->in_read_ahead = 0;
    j->read_lines = 0;
    j->resume.seeked = 0;
    memset(&j->lines, 0, sizeof j->lines);
    int empty = open_file(j);
    return empty ? empty : read_header(j);
}

void sort_input_hold(sort_job *j, held_input *h)
{
    *h = (held_input){ j->in, j->in_hdr, j->in_fn, j->in_file_size, j->read_lines, j->n_refs };
    j->in = NULL;
    j->in_hdr = NULL;
}

void sort_input_take_up(sort_job *j, held_input *h)
{
    j->in = h->in;
    j->in_hdr = h->hdr;
    j->in_fn = h->fn;
    j->in_file_size = h->file_size;
    j->read_lines = h->read_lines;
    j->n_refs = h->n_refs;
    j->threads_started = j->in_read_ahead = 0;
    j->resume.seeked = 0;
    memset(&j->lines, 0, sizeof j->lines);
    memset(h, 0, sizeof *h);
}

void sort_input_drop_held(held_input *h)
{
    if (h->in) sam_close(h->in);
    if (h->hdr) sam_hdr_destroy(h->hdr);
    memset(h, 0, sizeof *h);
}

void sort_input_close(sort_job *j)
{
    if (j->in) sam_close(j->in);
    j->in = NULL;
    if (j->in_hdr && j->in_hdr != j->hdr) sam_hdr_destroy(j->in_hdr);
    j->in_hdr = NULL;
}

int64_t sort_input_offset(const sort_job *j)
{
    if (!j->in_file_size) return -1;
    if (j->in->format.compression == bgzf)
        return bgzf_tell(j->in->fp.bgzf) >> BGZF_WITHIN_BLOCK_BITS;
    if (j->in->format.format == sam && j->in->format.compression == no_compression)
        return htell(j->in->fp.hfile);
    return -1;
}

/* The records read from this input so far. */
static unsigned long long records_here(const sort_job *j)
{
    return (unsigned long long)(j->records_in - j->input_first);
}

static int reference_given(const rocksort_opts *o)
{
    if (o->reference) return 1;
    for (const hts_opt *p = o->in_opts; p; p = p->next)
        if (p->opt == CRAM_OPT_REFERENCE) return 1;
    return 0;
}

/* A record naming a reference the header lacks would make a BAM that no
 * tool can index or read by region.  htslib's BAM reader refuses most such
 * records itself; this check holds whatever the htslib and the format. */
static int refs_beyond_header(const sort_job *j, const bam1_t *b)
{
    const bam1_core_t *c = &b->core;
    return c->tid < -1 || c->tid >= j->n_refs || c->mtid < -1 || c->mtid >= j->n_refs;
}

static int report_refs_beyond(const sort_job *j, const bam1_t *b)
{
    int mate = b->core.tid >= -1 && b->core.tid < j->n_refs;
    return sort_job_fail("'%s': record '%s' has %sreference id %d, but the header has %d "
                         "reference%s", j->in_fn, bam_get_qname(b), mate ? "mate " : "",
                         mate ? b->core.mtid : b->core.tid, j->n_refs, j->n_refs == 1 ? "" : "s");
}

int sort_input_check_refs(const sort_job *j, const bam1_t *b)
{
    return refs_beyond_header(j, b) ? report_refs_beyond(j, b) : 0;
}

/* The errno of a read that failed under htslib (EIO from a failing disk),
 * which a record's error does not tell apart from damage; 0 if none. */
static int input_errno(const sort_job *j)
{
    hFILE *h = input_check_hfile(j->in);
    return h ? herrno(h) : 0;
}

/* Whether every byte of the input was read: its end was met and nothing
 * is left in the buffer. */
static int input_read_to_end(const sort_job *j)
{
    hFILE *h = input_check_hfile(j->in);
    return h && h->at_eof && h->begin == h->end;
}

/* The records before the last line read: it gave one if kept. */
static unsigned long long records_before_line(const sort_job *j, const sam_lines *t)
{
    unsigned long long n = records_here(j);
    return n - (t->kept && n ? 1 : 0);
}

/* The SAM line that did not parse: as read, or, for a file parsed on
 * threads or resumed past its stored records, found by reading the file
 * again.  Returns 0 if the failure was no parse error, or is not found. */
static int report_bad_line(const sort_job *j)
{
    sam_lines t = j->lines;
    uint64_t n = records_here(j);
    if (j->read_lines && !t.bad) return 0;      /* not a parse error */
    if (!j->read_lines || j->resume.seeked) {
        sam_lines_source src = { j->in_fn, j->o->in_format, j->o->reference, j->o->in_opts };
        if (!j->in_file_size || sam_lines_find_error(&src, &t, &n) != 1) return 0;
    }
    if (sam_lines_cut(&t))
        sort_job_fail("'%s' is truncated: its last line (line %lld, after %llu records) has no "
                      "newline and does not parse as SAM", j->in_fn, (long long)t.line,
                      (unsigned long long)n);
    else
        sort_job_fail("'%s' is truncated or corrupt: line %lld does not parse as SAM (after %llu "
                      "records)", j->in_fn, (long long)t.line, (unsigned long long)n);
    return 1;
}

/* Whether records decoded ahead on threads were dropped before the failure,
 * so that the count read is a lower bound.  htslib's BGZF reader thread, on
 * a block it cannot read whole (a cut inside one, a damaged header, a read
 * error), drops the blocks it had decoded ahead and is taken down (the
 * BGZF's mt is gone); a block whose data do not inflate comes back in turn,
 * with the count exact.  CRAM's containers decoded ahead are not told apart. */
static const char *count_bound(const sort_job *j)
{
    if (!j->in_read_ahead) return "";
    if (j->in->format.format == cram) return "at least ";
    return j->in->format.compression == bgzf && !j->in->fp.bgzf->mt ? "at least " : "";
}

/* A CRAM stream that failed once all of it was read (a file given by name
 * was checked for its EOF container when opened), where that tells a cause.
 * Read on one thread, the failure came from a container its data ended
 * inside.  Read ahead on threads, a whole small CRAM is read to its end
 * before any failure in it comes back: without a reference the line names
 * both causes; with one, it tells nothing, and the general line stands. */
static int cram_stream_read_to_end(const sort_job *j)
{
    return j->in->format.format == cram && !j->in_file_size && input_read_to_end(j) &&
           !(j->in_read_ahead && reference_given(j->o));
}

static void report_cram_read_to_end(const sort_job *j, unsigned long long n)
{
    if (!j->in_read_ahead)
        sort_job_fail("'%s' is truncated or corrupt: its CRAM data end inside a container (after "
                      "%llu records)", j->in_fn, n);
    else
        sort_job_fail("cannot decode CRAM '%s' (after %s%llu records), read to its end: it is "
                      "truncated or corrupt, or, if whole, its reference sequence was not found "
                      "(give --reference FILE or set REF_PATH)", j->in_fn, count_bound(j), n);
}

/* A CRAM slice fails to decode most often because its reference was not
 * found (moved FASTA, empty REF_PATH); htslib's own message says so, but it
 * is silenced, so say it here.  htslib's BAM reader returns -3 for a
 * record whose reference ids lie beyond the header (and for a cut one). */
static void report_read_error(const sort_job *j, const bam1_t *b, int r)
{
    unsigned long long n = records_here(j);
    int read_errno = input_errno(j);
    if (read_errno)
        sort_job_fail("cannot read '%s' (after %s%llu records): %s", j->in_fn, count_bound(j), n,
                      strerror(read_errno));
    else if (r == -3 && refs_beyond_header(j, b))
        report_refs_beyond(j, b);
    else if (cram_stream_read_to_end(j))
        report_cram_read_to_end(j, n);
    else if (j->in->format.format == cram && !reference_given(j->o))
        sort_job_fail("cannot decode CRAM '%s' (after %s%llu records): reference sequence not "
                      "found, or corrupt data; give --reference FILE or set REF_PATH", j->in_fn,
                      count_bound(j), n);
    else if (j->in->format.format != sam || !report_bad_line(j))
        sort_job_fail("'%s' is truncated or corrupt (after %s%llu records)", j->in_fn,
                      count_bound(j), n);
}

/* A stream's last line without a newline: its writer stopped mid-line
 * (killed, out of space) as often as not, and the rest of the line may be
 * all that is missing. */
static int report_stream_cut(const sort_job *j)
{
    return sort_job_fail("'%s' is truncated: its last line (line %lld, after %llu records) has no "
                         "newline; a stream must end with one (a complete file given by name is "
                         "sorted with a warning)", j->in_fn, (long long)j->lines.line,
                         records_before_line(j, &j->lines));
}

int sort_input_read(sort_job *j, bam1_t *b)
{
    if (j->read_lines) return sam_lines_read(j->in, j->in_hdr, b, &j->lines);
    return sam_read1(j->in, j->in_hdr, b);
}

/* Whether the last line read ended with a newline: -1 if not known (no
 * line read here, or the read failed). */
static int last_line_newline(const sort_job *j, int r)
{
    return r == -1 && j->read_lines && j->lines.read_any ? j->lines.newline : -1;
}

int sort_input_check_end(const sort_job *j, const bam1_t *b, int r)
{
    errmsg err;
    if (r == SORT_INPUT_REPORTED) return -1;
    int whole = r < -1 ? -1 : input_check_end(j->in, j->in_fn, j->in_file_size,
                                              last_line_newline(j, r), &err);
    int cut = r == -1 && !j->in_file_size && j->read_lines && sam_lines_cut(&j->lines);
    if ((whole < 0 || cut) && ended_by_signal(j)) return -1;
    if (r < -1) {
        report_read_error(j, b, r);
        return -1;
    }
    if (whole < 0) return sort_job_fail("%s", err.msg);
    if (cut) return report_stream_cut(j);
    if (whole > 0) sort_job_warn("%s", err.msg);
    return 0;
}
