/* engine/sort_resume.c -- see engine/sort_resume.h. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <htslib/bgzf.h>
#include <htslib/hfile.h>
#include "engine/sort_resume.h"
#include "engine/resume_fate.h"
#include "resume/resume_identity.h"
#include "engine/resume_progress.h"
#include "engine/resume_recheck.h"
#include "codec/record.h"
#include "engine/sort_input.h"
#include "engine/sort_inputs.h"
#include "engine/sort_output.h"
#include "engine/sort_plan.h"
#include "output/split_dir.h"

/* What the state keeps for a rerun: the input's header, and the hidden
 * names the output and its index were being written under. */
enum { KEPT_HEADER, KEPT_OUTPUT, KEPT_INDEX };

static int regular_file(const char *fn, struct stat *st)
{
    return strcmp(fn, "-") && stat(fn, st) == 0 && S_ISREG(st->st_mode);
}

/* A named input that is not there (moved, on a file system not mounted
 * yet, a relative name from another directory) or is a directory is no
 * stream: it fails before the state is touched, rather than making the
 * state look like another sort's, discarded before the open fails. */
static int named_input_missing(const char *fn)
{
    struct stat st;
    if (!strcmp(fn, "-")) return 0;
    int cause = stat(fn, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    return cause ? sort_job_fail("cannot open '%s': %s", fn, strerror(cause)) : 0;
}

/* Several inputs are resumed as files only: a stream among them would
 * have to be given again, read again from its start and checked against
 * the records stored, while the files are not read again. */
static int several_need_files(const rocksort_opts *o)
{
    struct stat st;
    for (int i = 0; i < o->n_in; i++) {
        if (regular_file(o->in_fns[i], &st)) continue;
        if (named_input_missing(o->in_fns[i]) < 0) return -1;
        return sort_job_fail("--resume with several inputs reads files only, and '%s' is a "
                             "stream: give it as a file, or sort it apart", o->in_fns[i]);
    }
    return 0;
}

static char *identity_of(const sort_job *j, int file)
{
    int n = j->o->n_in;
    uint64_t *hashes = malloc((size_t)n * sizeof *hashes);
    if (!hashes) {
        sort_job_fail("out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++) hashes[i] = j->inputs[i].header_hash;
    identity_request rq = {
        .in_fns = file ? j->o->in_fns : NULL, .header_hashes = hashes, .n_in = n,
        .sort = &j->o->sort, .reference = j->o->reference, .in_opts = j->o->in_opts,
    };
    errmsg err;
    char *id = resume_identity(&rq, &err);
    free(hashes);
    if (!id) sort_job_fail("%s", err.msg);
    return id;
}

static int state_damaged(sort_job *j, const char *why)
{
    resume_fate_state_wrong(j, why);
    return sort_job_fail("the state in '%s' is damaged: %s", resume_fate_dir_shown(j), why);
}

/* The input is not the one the state was made from; the state is fine. */
static int input_differs(const sort_job *j, const char *how)
{
    if (!strcmp(j->in_fn, "-"))
        return sort_job_fail("standard input differs from the stream the state in '%s' was made "
                             "from (%s)", resume_fate_dir_shown(j), how);
    return sort_job_fail("'%s' differs from the input the state in '%s' was made from (%s)",
                         j->in_fn, resume_fate_dir_shown(j), how);
}

/* What read_past() found: the records read again up to j->records_in, r
 * the last read's result, hash the stream's hash of them. */
static int judge_passed_over(sort_job *j, const resume_note *n, const bam1_t *b, int r,
                             uint64_t hash, int to_end)
{
    char how[160];
    uint64_t i = j->records_in;
    if (r < -1) return sort_input_check_end(j, b, r);
    if (i < n->records) {
        snprintf(how, sizeof how, "it ends after %" PRIu64 " of the %" PRIu64 " records stored",
                 i, n->records);
        return input_differs(j, how);
    }
    if (j->resume.hash_stream && hash != n->stream_hash) {
        snprintf(how, sizeof how, "its first %" PRIu64 " records are not the ones stored", i);
        return input_differs(j, how);
    }
    if (!to_end) return 0;
    if (r >= 0) {
        snprintf(how, sizeof how, "it holds more than the %" PRIu64 " records stored", i);
        return input_differs(j, how);
    }
    return sort_input_check_end(j, b, r);
}

/* Reads the records from number `from`, where the inputs stand, up to the
 * n->records stored (across inputs), and with to_end the rest, which must
 * be nothing.  A stream's are checked against their hash.  Read from the
 * first, their digest stands for the state's: --verify checks them as read
 * now. */
static int read_past(sort_job *j, const resume_note *n, uint64_t from, int to_end)
{
    if (sort_input_start_threads(j) < 0) return -1;
    bam1_t *b = bam_init1();
    uint64_t hash = 0, digest = 0;
    int r = 0;
    j->records_in = from;
    while (b && j->records_in < n->records && (r = sort_inputs_read(j, b)) >= 0) {
        hash = resume_progress_stream_hash(hash, record_digest(b));
        /* As written: -M rewrites unplaced reads (sort_key_record_finish()). */
        sort_key_record_finish(&j->sort, b);
        digest += record_digest(b);
        j->records_in++;
    }
    if (b && j->records_in == n->records && to_end) r = sort_inputs_read(j, b);
    int ret = b ? judge_passed_over(j, n, b, r, hash, to_end)
                : sort_job_fail("out of memory reading '%s'", j->in_fn);
    bam_destroy1(b);
    if (ret == 0 && from == 0) {
        j->digest_in = digest;
        j->resume.digested = 1;
    }
    if (ret == 0) j->resume.bytes_skipped = n->bytes;
    return ret;
}

/* Seeks the input the note's position is in (open already) to it; the
 * files before it count as skipped. */
static int seek_input(sort_job *j, const resume_note *n)
{
    int ok;
    if (n->kind == POS_BGZF) {
        ok = bgzf_seek(j->in->fp.bgzf, (int64_t)n->pos, SEEK_SET) == 0;
        j->resume.bytes_skipped = j->in_before + (n->pos >> BGZF_WITHIN_BLOCK_BITS);
    } else {
        ok = hseek(j->in->fp.hfile, (off_t)n->pos, SEEK_SET) >= 0;
        j->resume.bytes_skipped = j->in_before + n->pos;
    }
    /* Reading a SAM header keeps the first record's line: read anew. */
    j->in->line.l = 0;
    j->resume.seeked = 1;
    return ok ? 0 : sort_job_fail("cannot seek in '%s' to resume: %s", j->in_fn, strerror(errno));
}

static int kind_differs(sort_job *j, const resume_note *n)
{
    return n->kind != j->resume.kind ? state_damaged(j, "its positions are of another kind") : 0;
}

/* Moves the inputs to the record after the last stored one: the files
 * before the one it is in passed over, that one seeked, or read past
 * (CRAM; and from the first input with --verify when the state's digest
 * does not cover every stored record).  The CRCs then go on from the note's. */
static int position_input(sort_job *j, const resume_note *n)
{
    int ret;
    if (n->input >= (uint64_t)j->o->n_in) return state_damaged(j, "its notes name another input");
    if (j->o->verify && !n->digested) {
        /* Read to a note at an input's start, the one before is still open. */
        ret = read_past(j, n, 0, 0);
        if (ret == 0) ret = sort_inputs_goto(j, (int)n->input, n->input_first);
        if (ret == 0) ret = kind_differs(j, n);
    } else if (sort_inputs_goto(j, (int)n->input, n->input_first) < 0 || kind_differs(j, n) < 0) {
        ret = -1;
    } else if (n->kind == POS_RECORDS) {
        ret = read_past(j, n, n->input_first, 0);
    } else {
        ret = seek_input(j, n);
    }
    if (ret == 0) resume_recheck_take_back(j, n);
    return ret;
}

/* The counts, checksums and flags of every stored record, from the last
 * note.  After the header is prepared: -M's flag lives in the order. */
static void restore_counts(sort_job *j, const store_resume *r, const resume_note *n)
{
    j->records_in = n->records;
    j->bytes_in = n->bytes;
    j->digest_in = n->digest;
    j->resume.digested = (int)n->digested;
    j->resume.stream_hash = n->stream_hash;
    if (n->placed) sort_key_set_placed(&j->sort);
    j->resume.seconds_before = (double)n->micros / 1e6;
    j->resume.runs_taken = r->runs;
    j->resume.records_taken = n->records;
    resume_recheck_take_back(j, n);
}

/* A stream must be the one the state was made from: its header first. */
static int check_stream_header(sort_job *j, const store_resume *r)
{
    const uint8_t *kept = r->kept[KEPT_HEADER];
    size_t len = r->kept_len[KEPT_HEADER];
    if (strlen(j->resume.header_text) == len && !memcmp(j->resume.header_text, kept, len))
        return 0;
    return input_differs(j, "another header");
}

/* The state holds the whole input: the header it kept stands in for it. */
static int header_from_state(sort_job *j, const store_resume *r)
{
    if (!j->hdr && !(j->hdr = sam_hdr_parse(r->kept_len[KEPT_HEADER],
                                            (const char *)r->kept[KEPT_HEADER])))
        return state_damaged(j, "its header does not parse");
    j->n_refs = sam_hdr_nref(j->hdr);
    j->resume.input_stored = 1;
    return j->sort.ctx ? 0 : sort_inputs_prepare_header(j);
}

/* With no input, the state must be finished as it is, from what it holds:
 * it is kept, and the line says what to rerun with. */
static int no_input_refused(const sort_job *j, const store_resume *r)
{
    char files[PATH_MAX];
    const char *dir = resume_fate_dir_shown(j);
    if (!r->runs)
        return sort_job_fail("%s: there is nothing to sort, and the state in '%s' holds no run",
                             j->resume.no_input, dir);
    int n = resume_identity_files(j->resume.identity, files, sizeof files);
    if (n)
        return sort_job_fail("%s, and the state in '%s' holds %" PRIu64 " runs, not the whole of %s: "
                             "rerun with %s as the input%s to resume", j->resume.no_input, dir,
                             r->runs, files, n > 1 ? "those files" : "that file", n > 1 ? "s" : "");
    return sort_job_fail("%s, and the state in '%s' holds %" PRIu64 " runs, not the whole stream it "
                         "was made from: rerun with that stream as the input to resume",
                         j->resume.no_input, dir, r->runs);
}

/* With no input, --verify cannot complete a digest that does not cover
 * every stored record (a file's state, sorted without --verify): failing
 * the checksum in the readout would remove the state. */
static int no_input_to_verify(const sort_job *j)
{
    char files[PATH_MAX];
    int n = resume_identity_files(j->resume.identity, files, sizeof files);
    return sort_job_fail("%s, and --verify must read the input again (the state in '%s' holds no "
                         "checksum of every stored record): rerun with %s as the input%s",
                         j->resume.no_input, resume_fate_dir_shown(j),
                         n ? files : "the file it was made from", n > 1 ? "s" : "");
}

/* No record is loaded: a file is read only for --verify's digest, a
 * stream only when one is given, and then wholly. */
static int take_back_complete(sort_job *j, const store_resume *r, const resume_note *n,
                              int file)
{
    if (!j->in && j->o->verify && !n->digested) return no_input_to_verify(j);
    if (!file && j->in && check_stream_header(j, r) < 0) return -1;
    if (header_from_state(j, r) < 0) return -1;
    restore_counts(j, r, n);
    int check = file ? j->o->verify && !n->digested : j->in != NULL;
    resume_fate_resuming(j, !check ? "writing the output"
                            : file ? "reading the input again for --verify's checksum first"
                            : "checking the input against it first");
    for (int i = 0; !check && j->inputs && i < j->o->n_in; i++) j->inputs[i].taken_back = 1;
    return check ? read_past(j, n, 0, 1) : 0;
}

static int take_back_partial(sort_job *j, const store_resume *r, const resume_note *n, int file)
{
    if (!j->in) return no_input_refused(j, r);
    if (!file && check_stream_header(j, r) < 0) return -1;
    restore_counts(j, r, n);
    resume_fate_resuming(j, !file ? "checking the input against it, then reading the rest"
                          : j->o->n_in > 1 ? "reading the rest of the inputs"
                          : "reading the rest of the input");
    return position_input(j, n);
}

static int take_back(sort_job *j, const store_resume *r, int file)
{
    resume_note n;
    if (resume_state_note_decode(r->note, r->note_len, &n) < 0 || !r->kept[KEPT_HEADER])
        return state_damaged(j, "its notes do not read");
    j->resume.hash_stream = !file;
    return r->complete ? take_back_complete(j, r, &n, file) : take_back_partial(j, r, &n, file);
}

static int start_fresh(sort_job *j, const store_resume *r, int file)
{
    errmsg err;
    if (!j->in) return no_input_refused(j, r);
    j->resume.hash_stream = !file;
    j->resume.digested = 1;
    if (store_state_keep(j->store, KEPT_HEADER, j->resume.header_text, strlen(j->resume.header_text),
                   &err) < 0)
        return sort_job_fail("%s", err.msg);
    return 0;
}

/* A run killed by SIGKILL left the output and the index it was writing
 * under hidden names (output/output_file.h): they go, and this run's names are
 * journaled in their place.  Only a name of the hidden form is removed,
 * and not while a live sort holds it: a sort of the same -o may have
 * removed the stale file and made its own under that name since. */
static int replace_hidden_outputs(sort_job *j, const store_resume *r)
{
    const int slots[] = { KEPT_OUTPUT, KEPT_INDEX };
    const char *now[] = { j->split ? split_set_path(j->split) : j->out.tmp_path,
                          j->out.idx_tmp_path };
    for (size_t i = 0; i < sizeof slots / sizeof *slots; i++) {
        const char *old = (const char *)r->kept[slots[i]];
        char *path = old ? strndup(old, r->kept_len[slots[i]]) : NULL;
        if (path) output_file_remove_stale_partial(&j->out, path);
        /* --split's outputs: a hidden directory (output/split_dir.h), not this run's */
        if (path && (!now[i] || strcmp(path, now[i]))) split_dir_remove_stale(path);
        free(path);
        errmsg err;
        if (now[i] && store_state_keep(j->store, slots[i], now[i], strlen(now[i]), &err) < 0)
            return sort_job_fail("%s", err.msg);
    }
    return 0;
}

/* A stream is opened before the state: one that cannot be read fails with
 * DIR untouched.  An empty or closed standard input, and a terminal (reading
 * it would only wait for a Ctrl-D), are no input: j->in stays NULL. */
static int open_stream(sort_job *j)
{
    const char *fn = j->o->in_fns[0];
    int stdin_named = !strcmp(fn, "-");
    int empty = stdin_named && isatty(STDIN_FILENO) ? 2 : sort_inputs_open(j, 1);
    if (empty <= 0) return empty;
    int n = stdin_named ? asprintf(&j->resume.no_input, "standard input is %s",
                                   empty == 2 ? "a terminal" : "empty")
                        : asprintf(&j->resume.no_input, "'%s' is empty", fn);
    return n < 0 ? sort_job_fail("out of memory") : 0;
}

/* With no input, only a state of the whole input can be used, as it is:
 * this sort's identity takes the state's input, so that the state matches
 * when nothing else differs, and one that does not is kept as it was
 * (store_options.state_other).  No state at all: nothing to do. */
static int identity_without_input(sort_job *j)
{
    char *stored = NULL;
    int found = state_dir_identity(j->o->resume_dir, &stored);
    if (found == 0)
        return sort_job_fail("%s: there is nothing to sort, and no state in '%s' to finish",
                             j->resume.no_input, resume_fate_dir_shown(j));
    char *adopted = found > 0 ? resume_identity_with_input_of(j->resume.identity, stored) : NULL;
    free(stored);
    if (adopted) {
        free(j->resume.identity);
        j->resume.identity = adopted;
    }
    return 0;
}

/* A state of another input, or a stale one (engine/resume_recheck.h), goes
 * once the store opens.  Before that, the input's first record must read
 * (or the input end after its header): an input cut after its header, or
 * SAM without its header, keeps DIR. */
static int readable_before_discarding(sort_job *j)
{
    char *stored = NULL;
    int found = state_dir_identity(j->o->resume_dir, &stored);
    int same = found > 0 && !strcmp(stored, j->resume.identity) && !j->resume.stale;
    free(stored);
    return found == 0 || same ? 0 : sort_inputs_read_first(j);
}

int sort_resume_open(sort_job *j)
{
    struct stat st;
    const rocksort_opts *o = j->o;
    int file = o->n_in > 1 || regular_file(o->in_fns[0], &st);
    resume_fate_watch_signals(j);
    if (o->n_in > 1 && several_need_files(o) < 0) return -1;
    if (!file && named_input_missing(o->in_fns[0]) < 0) return -1;
    /* Nothing in DIR is discarded before the input is shown readable. */
    if ((file ? sort_inputs_open(j, 0) : open_stream(j)) < 0) return -1;
    if (!(j->resume.identity = identity_of(j, file))) return -1;
    if (!j->in && identity_without_input(j) < 0) return -1;
    if (file && resume_recheck_state(j) < 0) return -1;
    if (j->in && readable_before_discarding(j) < 0) return -1;
    if (sort_plan_open_store(j) < 0) return -1;
    resume_fate_state_opened(j);
    const store_resume *r = store_state_resumed(j->store);
    int ret = r->runs || r->complete ? take_back(j, r, file) : start_fresh(j, r, file);
    /* The records this run loads without a digest leave the notes' digest short. */
    if (!j->o->verify && !j->resume.hash_stream && !j->resume.input_stored)
        j->resume.digested = 0;
    if (ret == 0) ret = sort_output_open(j);
    if (ret == 0) ret = replace_hidden_outputs(j, r);
    return ret;
}
