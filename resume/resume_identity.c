/* resume/resume_identity.c -- see resume/resume_identity.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <htslib/kstring.h>
#include <htslib/sam.h>
#include "resume/resume_identity.h"
#include "util/mix64.h"

#define HASH_SEED 0x243f6a8885a308d3ULL

/* One line of the identity; -1 with the cause in err when memory runs out. */
static int put(kstring_t *k, errmsg *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int put(kstring_t *k, errmsg *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = kvsprintf(k, fmt, ap);
    va_end(ap);
    return r < 0 ? errmsg_set(err, "out of memory") : 0;
}

/* The sampled blocks' digest: where a file of `size` bytes is read is
 * fixed by its size alone, so that the same file gives the same digest. */
static int sample_digest(int fd, uint64_t size, uint64_t *digest)
{
    uint8_t buf[IDENTITY_SAMPLE_BYTES];
    uint64_t h = HASH_SEED, span = size > sizeof buf ? size - sizeof buf : 0;
    for (int i = 0; i < IDENTITY_SAMPLES; i++) {
        off_t at = (off_t)(span / (IDENTITY_SAMPLES - 1) * (uint64_t)i);
        if (i == IDENTITY_SAMPLES - 1) at = (off_t)span;
        ssize_t n = pread(fd, buf, sizeof buf, at);
        if (n < 0) return -1;
        h = mix64_bytes(h, buf, (size_t)n);
    }
    *digest = h;
    return 0;
}

static int describe_file(const char *fn, uint64_t header_hash, kstring_t *k, errmsg *err)
{
    char path[PATH_MAX];
    struct stat st;
    uint64_t sampled = 0;
    int fd = open(fn, O_RDONLY | O_CLOEXEC);
    int ok = fd >= 0 && fstat(fd, &st) == 0 && realpath(fn, path) &&
             sample_digest(fd, (uint64_t)st.st_size, &sampled) == 0;
    if (!ok) errmsg_set(err, "cannot read '%s': %s", fn, strerror(errno));
    if (fd >= 0) close(fd);
    if (!ok) return -1;
    return put(k, err, "input %s\ninode %llu\nsize %lld\nmtime %lld.%09ld\nheader %016" PRIx64
               "\nsampled %016" PRIx64 "\n", path, (unsigned long long)st.st_ino,
               (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
               header_hash, sampled);
}

/* The inputs: one stream, or the files in their order, counted first when
 * there are several (a list that grows or shrinks differs in that line). */
static int describe_inputs(const identity_request *rq, kstring_t *k, errmsg *err)
{
    if (!rq->in_fns) return put(k, err, "input a stream\n");
    if (rq->n_in > 1 && put(k, err, "inputs %d\n", rq->n_in) < 0) return -1;
    for (int i = 0; i < rq->n_in; i++)
        if (describe_file(rq->in_fns[i], rq->header_hashes[i], k, err) < 0) return -1;
    return 0;
}

/* A FASTA named on the command line, by its real path: ./ref.fa and
 * ref.fa are the same file; one missing is refused here. */
static int describe_path(kstring_t *k, const char *what, const char *name, const char *fn,
                         errmsg *err)
{
    char path[PATH_MAX];
    if (!fn) return put(k, err, "%s -\n", what);
    if (!realpath(fn, path))
        return errmsg_set(err, "cannot find the %s '%s': %s", name, fn, strerror(errno));
    return put(k, err, "%s %s\n", what, path);
}

/* Whether hts_opt_apply() passes an input option's value as a string
 * (val.s), not as a number (val.i). */
static int string_valued(enum hts_fmt_option opt)
{
    switch (opt) {
    case CRAM_OPT_VERSION: case CRAM_OPT_PREFIX: case HTS_OPT_FILTER: case FASTQ_OPT_AUX:
    case FASTQ_OPT_BARCODE: case FASTQ_OPT_UMI: case FASTQ_OPT_UMI_REGEX:
        return 1;
    default:
        return 0;
    }
}

/* An input option with its value: the key alone (hts_opt's arg) would let
 * a rerun with another filter expression, or decode_md=1 after 0, take
 * back records read under the old one. */
static int describe_input_option(kstring_t *k, const hts_opt *x, errmsg *err)
{
    if (x->opt == CRAM_OPT_REFERENCE)
        return describe_path(k, "input option reference", "reference", x->val.s, err);
    if (string_valued(x->opt)) return put(k, err, "input option %s=%s\n", x->arg, x->val.s);
    return put(k, err, "input option %s=%d\n", x->arg, x->val.i);
}

static int describe_options(const identity_request *rq, kstring_t *k, errmsg *err)
{
    const sort_spec *s = rq->sort;
    if (put(k, err, "order %d by_tag %d tag %.2s kmer %d window %d squash %d try_rev %d seed %"
            PRIu64 "\n", (int)s->order, s->by_tag, s->tag, s->kmer, s->window, s->squash,
            s->try_rev, s->seed) < 0 ||
        (s->split.on && put(k, err, "split %.2s by_rg %d pad %d\n", s->split.tag, s->split.by_rg,
                            s->split.pad) < 0) ||
        describe_path(k, "minimiser_ref", "-I file", s->minimiser_ref, err) < 0 ||
        describe_path(k, "reference", "reference", rq->reference, err) < 0)
        return -1;
    for (const hts_opt *x = rq->in_opts; x; x = x->next) {
        if (x->opt == HTS_OPT_NTHREADS || x->opt == HTS_OPT_BLOCK_SIZE) continue;
        if (describe_input_option(k, x, err) < 0) return -1;
    }
    return 0;
}

char *resume_identity(const identity_request *rq, errmsg *err)
{
    kstring_t k = { 0, 0, NULL };
    const uint16_t one = 1;
    int ok = put(&k, err, "layout %s-endian core %zu\n",
                 *(const uint8_t *)&one ? "little" : "big", sizeof(bam1_core_t)) == 0 &&
             describe_inputs(rq, &k, err) == 0 &&
             describe_options(rq, &k, err) == 0;
    if (!ok) {
        free(k.s);
        return NULL;
    }
    return ks_release(&k);
}

/* Where the lines that describe the inputs lie in an identity: from its
 * first "input " or "inputs " line to its "order " line (describe_inputs(),
 * describe_options()).  -1 if there are none. */
static int input_span(const char *id, size_t *from, size_t *to)
{
    const char *in = strstr(id, "\ninput"), *order = in ? strstr(in, "\norder ") : NULL;
    if (!order) return -1;
    *from = (size_t)(in - id) + 1;
    *to = (size_t)(order - id) + 1;
    return 0;
}

char *resume_identity_with_input_of(const char *now, const char *stored)
{
    size_t now_from, now_to, from, to;
    if (input_span(now, &now_from, &now_to) < 0 || input_span(stored, &from, &to) < 0)
        return NULL;
    kstring_t k = { 0, 0, NULL };
    if (kputsn(now, now_from, &k) < 0 || kputsn(stored + from, to - from, &k) < 0 ||
        kputs(now + now_to, &k) < 0) {
        free(k.s);
        return NULL;
    }
    return ks_release(&k);
}

int resume_identity_files(const char *identity, char *names, size_t size)
{
    size_t from, to, used = 0;
    int n = 0;
    if (size) names[0] = '\0';
    if (input_span(identity, &from, &to) < 0) return 0;
    /* A file is named by its real path; a stream is "input a stream". */
    for (const char *p = identity + from - 1; (p = strstr(p, "\ninput /")) && p < identity + to;
         p++) {
        const char *name = p + strlen("\ninput ");
        int len = (int)strcspn(name, "\n");
        int w = used < size ? snprintf(names + used, size - used, "%s'%.*s'", n ? ", " : "",
                                       len, name) : 0;
        if (w > 0) used += (size_t)w;
        n++;
    }
    return n;
}
