/* sort_resume.c -- see sort_resume.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <htslib/bgzf.h>
#include <htslib/hfile.h>
#include <htslib/kstring.h>
#include "sort_resume.h"
#include "resume_progress.h"
#include "cleanup.h"
#include "clock_util.h"
#include "record_codec.h"
#include "sort_load.h"
#include "sort_output.h"
#include "sort_plan.h"
#include <unistd.h>

/* What the state keeps for a rerun: the input's header, and the hidden
 * name the output was being written under. */
enum { KEPT_HEADER, KEPT_OUTPUT };

/* bgzf_tell()'s virtual offset: the block's file offset, then 16 bits of
 * offset within the block. */
#define BGZF_WITHIN_BLOCK_BITS 16

static int regular_file(const char *fn, struct stat *st)
{
    return strcmp(fn, "-") && stat(fn, st) == 0 && S_ISREG(st->st_mode);
}

/* A 64-bit FNV-1a hash: the header's fingerprint in the identity. */
static uint64_t text_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

/* Everything that decides which records the runs hold and in what order,
 * one line each: a rerun whose text differs starts afresh. */
static char *identity(const sort_job *j, const struct stat *file)
{
    const rocksort_opts *o = j->o;
    const sort_spec *s = &o->sort;
    kstring_t k = { 0, 0, NULL };
    char path[PATH_MAX];
    if (file && realpath(o->in_fn, path))
        ksprintf(&k, "input %s\nsize %lld\nmtime %lld.%09ld\nheader %016" PRIx64 "\n", path,
                 (long long)file->st_size, (long long)file->st_mtim.tv_sec,
                 file->st_mtim.tv_nsec, text_hash(j->resume.header_text));
    else
        ksprintf(&k, "input a stream\n");
    ksprintf(&k, "order %d by_tag %d tag %.2s kmer %d window %d squash %d try_rev %d seed %" PRIu64
             "\nminimiser_ref %s\nreference %s\noutput format %c\n", (int)s->order, s->by_tag,
             s->tag, s->kmer, s->window, s->squash, s->try_rev, s->seed,
             s->minimiser_ref ? s->minimiser_ref : "-", o->reference ? o->reference : "-",
             o->out_mode[1] == 'b' || o->out_mode[1] == 'c' ? o->out_mode[1] : 's');
    for (const hts_opt *x = o->in_opts; x; x = x->next) ksprintf(&k, "input option %s\n", x->arg);
    return ks_release(&k);
}

static position_kind kind_of(const sort_job *j, int file)
{
    if (!file) return POS_RECORDS;
    if (j->in->format.compression == bgzf) return POS_BGZF;
    if (j->in->format.format == sam && j->in->format.compression == no_compression)
        return POS_BYTES;
    return POS_RECORDS;
}

/* Reads past the first n records, hashing them for a stream. */
static int read_past(sort_job *j, uint64_t n, uint64_t want_hash)
{
    bam1_t *b = bam_init1();
    uint64_t hash = 0, i = 0;
    int r = 0;
    while (b && i < n && (r = sam_read1(j->in, j->hdr, b)) >= 0) {
        if (j->resume.hash_stream) hash = resume_stream_hash(hash, b);
        i++;
    }
    bam_destroy1(b);
    if (!b) return job_fail("out of memory reading '%s'", j->o->in_fn);
    if (i < n || r < -1)
        return job_fail("'%s' ends, or fails, before the %" PRIu64 " records the state in '%s' "
                        "holds: it is not the input of that sort", j->o->in_fn, n,
                        j->o->resume_dir);
    if (j->resume.hash_stream && hash != want_hash)
        return job_fail("standard input differs from the one the state in '%s' was made from "
                        "(its first %" PRIu64 " records do not match); the state is kept",
                        j->o->resume_dir, n);
    return 0;
}

/* Moves the input to the record after the last stored one. */
static int position_input(sort_job *j, const resume_note *n)
{
    int ok = 1;
    switch (n->kind) {
    case POS_BGZF:
        ok = bgzf_seek(j->in->fp.bgzf, (int64_t)n->pos, SEEK_SET) == 0;
        j->resume.bytes_skipped = n->pos >> BGZF_WITHIN_BLOCK_BITS;
        break;
    case POS_BYTES:
        ok = hseek(j->in->fp.hfile, (off_t)n->pos, SEEK_SET) >= 0;
        j->resume.bytes_skipped = n->pos;
        break;
    default:
        j->resume.bytes_skipped = n->bytes;
        return read_past(j, n->records, n->stream_hash);
    }
    /* Reading a SAM header keeps the first record's line: read anew. */
    j->in->line.l = 0;
    return ok ? 0 : job_fail("cannot seek in '%s' to resume: %s", j->o->in_fn, strerror(errno));
}

/* The state holds the whole input: the header it kept stands in for it. */
static int header_from_state(sort_job *j, const store_resume *r)
{
    if (!j->hdr && !(j->hdr = sam_hdr_parse(r->kept_len[KEPT_HEADER],
                                            (const char *)r->kept[KEPT_HEADER])))
        return job_fail("the state in '%s' is damaged: its header does not parse",
                        j->o->resume_dir);
    j->n_refs = sam_hdr_nref(j->hdr);
    j->resume.input_stored = 1;
    return j->sort.ctx ? 0 : prepare_header(j);
}

/* A stream must be the one the state was made from: its header first. */
static int check_stream_header(sort_job *j, const store_resume *r)
{
    const uint8_t *kept = r->kept[KEPT_HEADER];
    size_t len = r->kept_len[KEPT_HEADER];
    if (kept && strlen(j->resume.header_text) == len && !memcmp(j->resume.header_text, kept, len))
        return 0;
    j->resume.keep = 1;
    return job_fail("standard input differs from the one the state in '%s' was made from "
                    "(another header); the state is kept", j->o->resume_dir);
}

static int take_back(sort_job *j, const store_resume *r, int file)
{
    resume_note n;
    if (note_decode(r->note, r->note_len, &n) < 0 || !r->kept[KEPT_HEADER])
        return job_fail("the state in '%s' is damaged: its notes do not read", j->o->resume_dir);
    if (r->complete) {
        if (header_from_state(j, r) < 0) return -1;
    } else {
        if (!file && (open_input(j) < 0 || check_stream_header(j, r) < 0)) return -1;
        j->resume.kind = kind_of(j, file);
        j->resume.hash_stream = !file;
        if (n.kind != j->resume.kind)
            return job_fail("the state in '%s' is damaged: its positions are of another kind",
                            j->o->resume_dir);
        if (position_input(j, &n) < 0) return -1;
    }
    j->records_in = n.records;
    j->bytes_in = n.bytes;
    j->digest_in = n.digest;
    j->resume.stream_hash = n.stream_hash;
    if (n.placed) sort_spec_set_placed(&j->sort);
    j->resume.seconds_before = (double)n.micros / 1e6;
    j->resume.runs_taken = r->runs;
    j->resume.records_taken = n.records;
    return 0;
}

static int start_fresh(sort_job *j, int file)
{
    errmsg err;
    if (!file && open_input(j) < 0) return -1;
    j->resume.kind = kind_of(j, file);
    j->resume.hash_stream = !file;
    if (store_keep(j->store, KEPT_HEADER, j->resume.header_text, strlen(j->resume.header_text),
                   &err) < 0)
        return job_fail("%s", err.msg);
    return 0;
}

static void say_what_happened(const sort_job *j, const store_resume *r)
{
    if (r->discarded)
        fprintf(stderr, "samtools rocksort: not resuming from '%s': %s; sorting afresh\n",
                j->o->resume_dir, r->discarded);
    else if (r->complete)
        fprintf(stderr, "samtools rocksort: resuming from '%s': the whole input is stored "
                "(%" PRIu64 " runs); writing the output\n", j->o->resume_dir, r->runs);
    else if (r->runs)
        fprintf(stderr, "samtools rocksort: resuming from '%s': %" PRIu64 " runs stored; "
                "reading the rest of the input\n", j->o->resume_dir, r->runs);
}

/* A run killed by SIGKILL left the output it was writing under its hidden
 * name (output_file.h): that file goes, and this run's name is kept in its
 * place.  Only a name of the hidden form beside this output is removed. */
static int replace_partial_output(sort_job *j, const store_resume *r)
{
    const char *old = (const char *)r->kept[KEPT_OUTPUT];
    size_t len = r->kept_len[KEPT_OUTPUT];
    char *path = old ? strndup(old, len) : NULL;
    if (path && output_is_hidden_partial(&j->out, path)) unlink(path);
    free(path);
    const char *now = j->out.tmp_path;
    errmsg err;
    if (now && store_keep(j->store, KEPT_OUTPUT, now, strlen(now), &err) < 0)
        return job_fail("%s", err.msg);
    return 0;
}

static const sort_job *signalled_job;

/* Called by the signal thread (cleanup.h) instead of its own line. */
static void note_signal(int sig)
{
    const sort_job *j = signalled_job;
    fprintf(stderr, "samtools rocksort: interrupted by signal %d (%s); the sort's state is kept "
            "in '%s' (%" PRIu64 " runs stored): run the same command again to resume\n",
            sig, strsignal(sig), j->o->resume_dir, store_runs_ingested(j->store));
}

int open_resumable(sort_job *j)
{
    struct stat st;
    int file = regular_file(j->o->in_fn, &st);
    if (file && open_input(j) < 0) return -1;
    if (!(j->resume.identity = identity(j, file ? &st : NULL)))
        return job_fail("out of memory");
    if (open_store(j) < 0) return -1;
    const store_resume *r = store_resumed(j->store);
    say_what_happened(j, r);
    int ret = r->runs || r->complete ? take_back(j, r, file) : start_fresh(j, file);
    if (ret == 0) ret = open_output(j);
    if (ret == 0) ret = replace_partial_output(j, r);
    signalled_job = j;
    if (ret == 0) cleanup_on_signal(note_signal);
    return ret;
}

void resume_report(const sort_job *j)
{
    if (!j->resume.on) return;
    fprintf(stderr, "[rocksort] resumed: %" PRIu64 " runs and %" PRIu64 " records taken back "
            "from '%s'; %.1f MB of input skipped; %.2f s of loading saved%s\n",
            j->resume.runs_taken, j->resume.records_taken, j->o->resume_dir,
            (double)j->resume.bytes_skipped / 1e6, j->resume.seconds_before,
            j->resume.input_stored ? " (no input read)" : "");
}
