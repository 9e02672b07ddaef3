/* engine/sort_load.c -- see engine/sort_load.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <htslib/bgzf.h>
#include <htslib/cram.h>
#include <htslib/hfile.h>
#include "engine/sort_load.h"
#include "engine/sort_plan.h"
#include "util/cleanup.h"
#include "util/clock_util.h"
#include "load/input_check.h"
#include "codec/record.h"
#include "engine/resume_fate.h"
#include "engine/resume_progress.h"
#include "util/thread.h"


int sort_load_prepare_header(sort_job *j)
{
    errmsg err;
    j->sort = j->o->sort;
    if (sort_key_spec_prepare(&j->sort, j->hdr, &err) < 0)
        return sort_job_fail("%s (sorting '%s')", err.msg, j->o->in_fn);
    if (j->o->pg_cmdline &&
        sam_hdr_add_pg(j->hdr, "samtools", "VN", ROCKSORT_VERSION,
                       "CL", j->o->pg_cmdline, NULL) < 0) {
        sort_job_fail("failed to add a @PG line for '%s'", j->o->in_fn);
        return -1;
    }
    /* The output header is this one: a record must fit it too. */
    if (sam_hdr_nref(j->hdr) < j->n_refs) j->n_refs = sam_hdr_nref(j->hdr);
    return 0;
}

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
 * thread, which sort_load_start_threads() defers. */
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
int sort_load_start_threads(sort_job *j)
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
        return sort_job_fail("bad --input-fmt-option nthreads for '%s'", j->o->in_fn);
    return 0;
}

/* Opens the input; 1 if it holds no byte at all (htslib's empty format),
 * then closed again. */
static int open_file(sort_job *j)
{
    const rocksort_opts *o = j->o;
    j->in = hts_open_format(o->in_fn, "r", o->in_format);
    if (!j->in) return sort_job_fail("cannot open '%s': %s", o->in_fn, strerror(errno));
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
                         "is sorted with a warning)", j->o->in_fn, (long long)j->in->lineno);
}

/* The open input's header, options and checks. */
static int read_header(sort_job *j)
{
    const rocksort_opts *o = j->o;
    if (j->in->format.category != sequence_data) {
        sort_job_fail("'%s' is not a SAM, BAM or CRAM file", o->in_fn);
        return -1;
    }
    struct stat st;
    if (strcmp(o->in_fn, "-") && stat(o->in_fn, &st) == 0 && S_ISREG(st.st_mode))
        j->in_file_size = (uint64_t)st.st_size;
    int header_cut = !j->in_file_size && sam_lines_header_cut(j->in);
    if (o->reference && hts_set_fai_filename(j->in, o->reference) < 0) {
        sort_job_fail("cannot load reference '%s' for '%s'", o->reference, o->in_fn);
        return -1;
    }
    if (apply_input_options(j) < 0) {
        sort_job_fail("bad --input-fmt-option for '%s'", o->in_fn);
        return -1;
    }
    j->hdr = sam_hdr_read(j->in);
    if (header_cut) return report_header_cut(j);     /* a cut line may not parse */
    if (!j->hdr) {
        sort_job_fail("failed to read the header of '%s'", o->in_fn);
        return -1;
    }
    j->read_lines = j->in->format.format == sam && !parsed_on_threads(j);
    if (j->resume.on && !(j->resume.header_text = strdup(sam_hdr_str(j->hdr))))
        return sort_job_fail("out of memory reading '%s'", o->in_fn);
    /* The references htslib's BAM reader checks records against; adding
     * @PG parses the text header, which may list more (refs_beyond_header). */
    j->n_refs = sam_hdr_nref(j->hdr);
    errmsg err;
    if (input_check_start(j->in, o->in_fn, j->in_file_size, &err) < 0)
        return sort_job_fail("%s", err.msg);
    return sort_load_prepare_header(j);
}

int sort_load_open_input_unless_empty(sort_job *j)
{
    int empty = open_file(j);
    return empty ? empty : read_header(j);
}

int sort_load_open_input(sort_job *j)
{
    int empty = open_file(j);
    if (empty > 0) return sort_job_fail("'%s' is not a SAM, BAM or CRAM file", j->o->in_fn);
    return empty < 0 ? -1 : read_header(j);
}

static int start_spiller(sort_job *j)
{
    size_t cap = sort_plan_batch_bytes(j->o);
    spill_setup s = { .store = j->store, .prog = j->prog, .batch_cap = cap,
                      .pool = sort_plan_spill_pooled(j) ? j->pool.pool : NULL, .threads = j->o->threads };
    int r = spill_start(&j->q, &s);
    if (r == SPILL_NO_MEMORY)
        sort_job_fail("out of memory for a %zu-byte sort batch (lower -m)", cap);
    else if (r < 0)
        sort_job_fail("cannot start the spill thread");
    return r < 0 ? -1 : 0;
}

/* A run failed to go in.  A stored run found damaged meanwhile (a
 * background merge reads them all) makes a state wrong, as in the readout. */
static int spill_error(sort_job *j)
{
    if (store_shows_damage(j->q.error.msg)) resume_fate_state_wrong(j, "a stored run does not read back");
    return sort_job_fail("writing temporary data under '%s' failed: %s", store_run_dir(j->store),
                         j->q.error.msg);
}

/* Hands a full batch to the spill thread, with the note a resumable sort
 * journals with its run. */
static batch *hand_over(sort_job *j, batch *full)
{
    byte_writer note = { 0 };
    if (j->resume.on) resume_progress_note_now(j, &note);
    batch *next = note.failed ? NULL : spill_swap(&j->q, full, &note);
    if (note.failed) {
        spill_input_ended(&j->q);   /* no pool job touches full any more */
        batch_destroy(full);
        sort_job_fail("out of memory reading '%s'", j->o->in_fn);
    }
    bw_free(&note);
    return next;
}

/* A BAM record's bytes besides its variable-length data (bam1_t's l_data):
 * block_size and the fixed fields. */
#define BAM_FIXED_BYTES 36

/* Bytes of a regular input file consumed so far; -1 if unknown (CRAM). */
static int64_t input_offset(const sort_job *j)
{
    if (!j->in_file_size) return -1;
    if (j->in->format.compression == bgzf)
        return bgzf_tell(j->in->fp.bgzf) >> BGZF_WITHIN_BLOCK_BITS;
    if (j->in->format.format == sam && j->in->format.compression == no_compression)
        return htell(j->in->fp.hfile);
    return -1;
}

static int input_permille(const sort_job *j)
{
    int64_t at = input_offset(j);
    if (at < 0) return -1;
    uint64_t pm = (uint64_t)at * 1000 / j->in_file_size;
    return pm > 1000 ? 1000 : (int)pm;
}

static void report_reading(const sort_job *j)
{
    if (j->prog) progress_set_read(j->prog, j->records_in, j->bytes_in, input_permille(j));
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

static void report_refs_beyond(const sort_job *j, const bam1_t *b)
{
    int mate = b->core.tid >= -1 && b->core.tid < j->n_refs;
    sort_job_fail("'%s': record '%s' has %sreference id %d, but the header has %d reference%s",
                  j->o->in_fn, bam_get_qname(b), mate ? "mate " : "",
                  mate ? b->core.mtid : b->core.tid, j->n_refs, j->n_refs == 1 ? "" : "s");
}

/* The errno of a read that failed under htslib (EIO from a failing disk),
 * which a record's error does not tell apart from damage; 0 if none. */
static int input_errno(const sort_job *j)
{
    hFILE *h = j->in->format.format == cram ? cram_fd_get_fp(j->in->fp.cram)
             : j->in->format.compression != no_compression ? j->in->fp.bgzf->fp
             : j->in->fp.hfile;
    return h ? herrno(h) : 0;
}

/* The records before the last line read: it gave one if kept. */
static unsigned long long records_before_line(const sort_job *j, const sam_lines *t)
{
    return (unsigned long long)(j->records_in - (t->kept && j->records_in ? 1 : 0));
}

/* The SAM line that did not parse: as read, or, for a file parsed on
 * threads or resumed past its stored records, found by reading the file
 * again.  Returns 0 if the failure was no parse error, or is not found. */
static int report_bad_line(const sort_job *j)
{
    sam_lines t = j->lines;
    uint64_t n = j->records_in;
    if (j->read_lines && !t.bad) return 0;      /* not a parse error */
    if (!j->read_lines || j->resume.seeked) {
        sam_lines_source src = { j->o->in_fn, j->o->in_format, j->o->reference, j->o->in_opts };
        if (!j->in_file_size || sam_lines_find_error(&src, &t, &n) != 1) return 0;
    }
    if (sam_lines_cut(&t))
        sort_job_fail("'%s' is truncated: its last line (line %lld, after %llu records) has no "
                      "newline and does not parse as SAM", j->o->in_fn, (long long)t.line,
                      (unsigned long long)n);
    else
        sort_job_fail("'%s' is truncated or corrupt: line %lld does not parse as SAM (after %llu "
                      "records)", j->o->in_fn, (long long)t.line, (unsigned long long)n);
    return 1;
}

/* A CRAM slice fails to decode most often because its reference was not
 * found (moved FASTA, empty REF_PATH); htslib's own message says so, but it
 * is silenced, so say it here.  htslib's BAM reader returns -3 for a
 * record whose reference ids lie beyond the header (and for a cut one). */
static void report_read_error(const sort_job *j, const bam1_t *b, int r)
{
    unsigned long long n = j->records_in;
    int read_errno = input_errno(j);
    if (read_errno)
        sort_job_fail("cannot read '%s' (after %llu records): %s", j->o->in_fn, n, strerror(read_errno));
    else if (r == -3 && refs_beyond_header(j, b))
        report_refs_beyond(j, b);
    else if (j->in->format.format == cram && !reference_given(j->o))
        sort_job_fail("cannot decode CRAM '%s' (after %llu records): reference sequence not found, "
                      "or corrupt data; give --reference FILE or set REF_PATH", j->o->in_fn, n);
    else if (j->in->format.format != sam || !report_bad_line(j))
        sort_job_fail("'%s' is truncated or corrupt (after %llu records)", j->o->in_fn, n);
}

/* A stream's last line without a newline: its writer stopped mid-line
 * (killed, out of space) as often as not, and the rest of the line may be
 * all that is missing. */
static int report_stream_cut(const sort_job *j)
{
    return sort_job_fail("'%s' is truncated: its last line (line %lld, after %llu records) has no "
                         "newline; a stream must end with one (a complete file given by name is "
                         "sorted with a warning)", j->o->in_fn, (long long)j->lines.line,
                         records_before_line(j, &j->lines));
}

/* Adds one record to the batch being filled, handing full batches to the
 * spill thread.  Returns 0, or -1 once the error is reported. */
static int take_record(sort_job *j, batch **cur, bam1_t *b)
{
    int added;
    errmsg err;
    if (refs_beyond_header(j, b)) {
        report_refs_beyond(j, b);
        return -1;
    }
    /* A stream's records are hashed as read, before -M rewrites them. */
    uint64_t digest = j->o->verify || j->resume.hash_stream ? record_digest(b) : 0;
    uint64_t hash = j->resume.hash_stream ? resume_progress_stream_hash(j->resume.stream_hash, digest) : 0;
    while ((added = batch_add(*cur, &j->sort, b, j->records_in, &err)) == 0) {
        if (!j->size_planned) sort_plan_from_input(j, *cur, input_offset(j));
        if (!(*cur = hand_over(j, *cur))) return j->q.failed ? spill_error(j) : -1;
    }
    if (added < 0) return sort_job_fail("'%s': %s", j->o->in_fn, err.msg);
    spill_loaded(&j->q, *cur);
    j->resume.stream_hash = hash;
    j->records_in++;
    j->bytes_in += (uint64_t)b->l_data + BAM_FIXED_BYTES;
    j->digest_in += digest;
    if ((j->records_in & PROGRESS_EVERY) == 0) report_reading(j);
    return 0;
}

int sort_load_read_record(sort_job *j, bam1_t *b)
{
    if (j->read_lines) return sam_lines_read(j->in, j->hdr, b, &j->lines);
    return sam_read1(j->in, j->hdr, b);
}

int sort_load_read_first_record(sort_job *j)
{
    bam1_t *b = bam_init1();
    if (!b) return sort_job_fail("out of memory reading '%s'", j->o->in_fn);
    int r = sort_load_read_record(j, b);
    if (r >= 0 && !refs_beyond_header(j, b)) {
        j->first = b;
        return 0;
    }
    if (r >= 0) report_refs_beyond(j, b);
    int ret = r >= 0 ? -1 : r == -1 ? 0 : sort_load_check_read_end(j, b, r);
    bam_destroy1(b);
    return ret;
}

/* Whether the last line read ended with a newline: -1 if not known (no
 * line read here, or the read failed). */
static int last_line_newline(const sort_job *j, int r)
{
    return r == -1 && j->read_lines && j->lines.read_any ? j->lines.newline : -1;
}

int sort_load_check_read_end(const sort_job *j, const bam1_t *b, int r)
{
    errmsg err;
    int whole = r < -1 ? -1 : input_check_end(j->in, j->o->in_fn, j->in_file_size,
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

/* A resumable sort stores its last batch too, and notes that the input
 * is complete: killed during the readout, a rerun needs no input. */
static int store_last_batch(sort_job *j, batch **cur)
{
    *cur = hand_over(j, *cur);
    spill_stop(&j->q);
    if (!*cur) return j->q.failed ? spill_error(j) : -1;
    if (j->q.failed) return spill_error(j);
    return resume_progress_input_complete(j);
}

int sort_load_input(sort_job *j)
{
    double t0 = now_seconds();
    j->resume.load_started = t0;
    batch *cur = batch_create(sort_plan_batch_bytes(j->o));
    bam1_t *b = bam_init1();
    int ret = 0, r;
    if (!cur || !b) {
        sort_job_fail("out of memory reading '%s'", j->o->in_fn);
        ret = -1;
        goto done;
    }
    if (sort_load_start_threads(j) < 0 || start_spiller(j) < 0) {
        ret = -1;
        goto done;
    }
    /* Into an empty batch: its position is never journaled. */
    if (j->first && take_record(j, &cur, j->first) < 0) { ret = -1; goto done; }
    for (;;) {
        if (j->resume.on) j->resume.pos_before = resume_progress_position(j);
        if ((r = sort_load_read_record(j, b)) < 0) break;
        if (take_record(j, &cur, b) < 0) { ret = -1; goto done; }
    }
    spill_input_ended(&j->q);
    report_reading(j);
    if (sort_load_check_read_end(j, b, r) < 0) { ret = -1; goto done; }
    if (j->resume.on && store_last_batch(j, &cur) < 0) { ret = -1; goto done; }
    /* Otherwise the last batch never goes to disk: the readout merges it
     * from memory (an input that fits in one batch is sorted without temp
     * I/O). */
    spill_sort(&j->q, cur);
    batch_drop_scratch(cur);    /* the readout only reads it */
    j->tail = cur;
    cur = NULL;
    spill_stop(&j->q);
    if (j->q.failed) ret = spill_error(j);
done:
    spill_stop(&j->q);      /* before cur goes: the spill thread may touch it */
    batch_destroy(cur);
    bam_destroy1(b);
    j->t_load = now_seconds() - t0;
    return ret;
}
