/* load/record_parse.c -- see load/record_parse.h.
 *
 * A chunk's buffer starts with one byte that is no gzip magic, so that the
 * job's BGZF reader, opened on the buffer as an in-memory hFILE, takes the
 * rest as uncompressed data; the job reads that byte first.  A chunk whose
 * records all go to one span hands its buffer to that job whole (the hFILE
 * frees it); a chunk split between batches gives each span a copy of its
 * records.  The loader reads the stream one BGZF block at a time, so that
 * when a block fails to read, every whole record before it is known.
 */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <htslib/hfile.h>
#include <htslib/hts_endian.h>
#include "load/record_parse.h"
#include "codec/record.h"
#include "util/grow_array.h"

#define LEAD_BYTE 0
#define LEAD 1
/* A BAM record's bytes before its variable-length data: block_size and the
 * fixed fields. */
#define FIXED_BYTES 36

typedef struct {
    record_parse *p;
    batch *sb;
    batch_span span;
    uint64_t seq;
    uint8_t *buf;           /* LEAD and the span's records; the job's hFILE frees it */
    size_t len;
    bam1_t *b;
    int busy;               /* dispatched and not returned: under p->mu */
    int failed, placed;
    record_parse_failure why;
    uint64_t digest;
    size_t shared, shortest, longest;
} parse_job;

struct record_parse {
    record_parse_setup s;
    size_t key_max;
    hts_tpool_process *queue;
    pthread_mutex_t mu;
    pthread_cond_t done;
    parse_job *jobs;
    int next, pending;      /* the slot next dispatched; slots dispatched, not retired */
    uint8_t *buf;           /* the chunk: LEAD, whole records, then a record's start */
    size_t len, cap, whole_end;
    uint32_t *bound, *ends; /* per whole record: its bound, the offset after it */
    size_t n, bound_cap, ends_cap;
    int end;
    record_parse_failure failure;
    int failed;
    uint64_t digest;
    int placed;
};

record_parse *record_parse_create(const record_parse_setup *s)
{
    record_parse *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->s = *s;
    p->key_max = sort_key_max_len_any(s->spec);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->done, NULL);
    p->cap = RECORD_PARSE_CHUNK_BYTES;
    p->jobs = calloc((size_t)s->jobs, sizeof *p->jobs);
    p->buf = malloc(p->cap);
    p->queue = hts_tpool_process_init(s->pool, s->jobs, 1);
    int ok = p->jobs && p->buf && p->queue;
    for (int i = 0; ok && i < s->jobs; i++) ok = (p->jobs[i].b = bam_init1()) != NULL;
    if (!ok) {
        record_parse_free(p);
        return NULL;
    }
    p->buf[0] = LEAD_BYTE;
    p->len = p->whole_end = LEAD;
    return p;
}

static void wait_job(record_parse *p, parse_job *job)
{
    pthread_mutex_lock(&p->mu);
    while (job->busy) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void record_parse_free(record_parse *p)
{
    if (!p) return;
    for (int i = 0; p->jobs && i < p->s.jobs; i++) wait_job(p, &p->jobs[i]);
    if (p->queue) {
        hts_tpool_process_flush(p->queue);
        hts_tpool_process_destroy(p->queue);
    }
    for (int i = 0; p->jobs && i < p->s.jobs; i++) {
        free(p->jobs[i].buf);
        bam_destroy1(p->jobs[i].b);
    }
    free(p->jobs);
    free(p->buf);
    free(p->bound);
    free(p->ends);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->done);
    free(p);
}

/* ---- the loader: chunks ---- */

/* The checks bam_read1() makes on a record's fixed fields before it reads
 * the rest, made before a chunk grows for a long record: a damaged size is
 * then reported where htslib would report it, not read into memory. */
static int fixed_fields_sane(const uint8_t *r, uint32_t block_len)
{
    if (block_len < 32 || block_len - 32 > INT_MAX - 4) return 0;
    uint32_t l_qname = r[12], n_cigar = le_to_u16(r + 16);
    int32_t l_qseq = le_to_i32(r + 20);
    uint64_t extranul = (4 - l_qname % 4) % 4;
    if (l_qseq < 0 || l_qname < 1) return 0;
    return ((uint64_t)n_cigar << 2) + l_qname + extranul + (((uint64_t)l_qseq + 1) >> 1) +
           (uint64_t)l_qseq <= (uint64_t)block_len - 32 + extranul;
}

/* The packed size of a record at r (block_size first, whole) at most: its
 * data grows by the name's padding to 4 bytes, and by 4 where htslib adds
 * the name's missing NUL. */
static uint32_t record_bound(const record_parse *p, const uint8_t *r, uint32_t block_len)
{
    uint32_t l_qname = r[12];
    size_t l_data = block_len - 32 + (4 - l_qname % 4) % 4;
    if (l_qname == 0 || l_qname > block_len - 32 || r[FIXED_BYTES + l_qname - 1] != '\0')
        l_data += 4;
    return (uint32_t)packed_record_size(p->key_max, sizeof(bam1_core_t) + l_data);
}

/* Whole records from whole_end on; returns the bytes the next one needs in
 * all (its size, or its fixed fields), 0 where it is damaged. */
static size_t walk(record_parse *p, uint64_t *bytes)
{
    size_t at = p->whole_end;
    for (;;) {
        if (p->len - at < FIXED_BYTES) return at + FIXED_BYTES;
        uint32_t block_len = le_to_u32(p->buf + at);
        if (block_len > p->len - at - 4) {
            if (!fixed_fields_sane(p->buf + at, block_len)) return 0;
            return at + 4 + (size_t)block_len;
        }
        if (block_len < 32) return 0;
        if (grow_array((void **)&p->bound, &p->bound_cap, p->n + 1, sizeof *p->bound) < 0 ||
            grow_array((void **)&p->ends, &p->ends_cap, p->n + 1, sizeof *p->ends) < 0)
            return SIZE_MAX;
        p->bound[p->n] = record_bound(p, p->buf + at, block_len);
        *bytes += block_len - 32 + (4 - p->buf[at + 12] % 4) % 4 + FIXED_BYTES;
        at += 4 + (size_t)block_len;
        p->ends[p->n++] = (uint32_t)at;
        p->whole_end = at;
    }
}

/* Up to `want` bytes in the chunk, a block at a time: 1 at the stream's
 * end, -1 where a block did not read, 0 once they are there. */
static int fill(record_parse *p, BGZF *fp, size_t want)
{
    if (want > p->cap) {
        uint8_t *b = realloc(p->buf, want);
        if (!b) return -2;
        p->buf = b;
        p->cap = want;
    }
    while (p->len < want) {
        ssize_t avail = fp->block_length - fp->block_offset;
        size_t room = p->cap - p->len;
        /* One byte loads the next block; the rest of a block never fails. */
        size_t ask = avail > 0 ? ((size_t)avail < room ? (size_t)avail : room) : 1;
        ssize_t got = bgzf_read(fp, p->buf + p->len, ask);
        if (got < 0) return -1;
        if (got == 0) return 1;
        p->len += (size_t)got;
    }
    return 0;
}

/* The records of the chunk before were all handed on: the start of the
 * next record moves to the front. */
static void start_chunk(record_parse *p)
{
    size_t tail = p->len - p->whole_end;
    memmove(p->buf + LEAD, p->buf + p->whole_end, tail);
    p->len = LEAD + tail;
    p->whole_end = LEAD;
    p->n = 0;
}

int record_parse_read(record_parse *p, BGZF *fp, record_parse_chunk *c)
{
    start_chunk(p);
    *c = (record_parse_chunk){ 0 };
    size_t want = RECORD_PARSE_CHUNK_BYTES;
    for (;;) {
        int r = fill(p, fp, want > p->cap ? want : p->cap);
        /* No memory for a long record's chunk: bam_read1() reading its start
         * as the tail fails as it would have failed on the loader. */
        if (r < -1 && p->n == 0 && want > p->cap) r = 1;
        else if (r < -1) return -1;
        size_t need = walk(p, &c->bytes);
        if (need == SIZE_MAX) return -1;
        c->n = p->n;
        c->bound = p->bound;
        /* A damaged record ends the chunk as the stream's end would: what is
         * left after the whole records is read as a tail. */
        if (r != 0 || need == 0) {
            c->end = r < 0 ? -1 : 1;
            return 0;
        }
        if (p->n > 0) return 0;
        want = need;
    }
}

/* ---- the jobs ---- */

static void span_stats(parse_job *job, const uint8_t *key, size_t len, size_t i,
                       const uint8_t **first)
{
    if (i == 0) {
        *first = key;
        job->shared = job->shortest = job->longest = len;
        return;
    }
    job->shortest = len < job->shortest ? len : job->shortest;
    job->longest = len > job->longest ? len : job->longest;
    size_t same = 0;
    while (same < job->shared && (*first)[same] == key[same]) same++;
    job->shared = same;
}

static int job_fail(parse_job *job, int kind, uint64_t i)
{
    job->failed = 1;
    job->why.kind = kind;
    job->why.seq = job->seq + i;
    job->why.b = job->b;
    return -1;
}

/* Record i of the span, read into job->b, packed at rec: its size, or 0. */
static size_t pack_one(parse_job *job, uint8_t *rec, size_t room, size_t i)
{
    const record_parse_setup *s = &job->p->s;
    bam1_t *b = job->b;
    const bam1_core_t *c = &b->core;
    if (c->tid < -1 || c->tid >= s->n_refs || c->mtid < -1 || c->mtid >= s->n_refs)
        return job_fail(job, RECORD_PARSE_REFS, i), 0;
    size_t val_len = record_value_len(b);
    if (packed_record_size(sort_key_max_len(s->spec, b), val_len) > room) {
        errmsg_set(&job->why.err, "read '%s' is larger than its place", bam_get_qname(b));
        return job_fail(job, RECORD_PARSE_KEY, i), 0;
    }
    uint8_t *key = rec + sizeof(packed_header);
    size_t len = sort_key_encode(s->spec, b, job->seq + i, key);
    if (len == 0) {
        errmsg_set(&job->why.err, "read '%s' %s", bam_get_qname(b), sort_key_error(s->spec, b));
        return job_fail(job, RECORD_PARSE_KEY, i), 0;
    }
    job->placed |= sort_key_record_rewrite(s->spec, b);
    packed_header h = { (uint32_t)len, (uint32_t)record_value_len(b) };
    memcpy(rec, &h, sizeof h);
    record_value_pack(b, key + len);
    if (s->verify) job->digest += record_digest(b);
    return packed_record_size(h.key_len, h.val_len);
}

static void parse_span(parse_job *job)
{
    hFILE *hf = hopen("mem:", "r:", (char *)job->buf, job->len);
    job->buf = NULL;    /* the hFILE's now, or freed */
    BGZF *fp = hf ? bgzf_hopen(hf, "r") : NULL;
    uint8_t lead;
    if (!fp || bgzf_read(fp, &lead, 1) != 1) {
        if (fp) bgzf_close(fp);
        else if (hf) hclose_abruptly(hf);
        job_fail(job, RECORD_PARSE_MEMORY, 0);
        return;
    }
    uint8_t *rec = job->span.at.rec;
    size_t room = job->span.bytes;
    const uint8_t *first = NULL;
    for (size_t i = 0; i < job->span.n; i++) {
        int r = bam_read1(fp, job->b);
        if (r < 0) {
            job->why.read_code = r;
            job_fail(job, RECORD_PARSE_READ, i);
            break;
        }
        size_t size = pack_one(job, rec, room, i);
        if (!size) break;
        batch_place_entry(job->sb, job->span.at.index + i, rec);
        span_stats(job, rec + sizeof(packed_header), packed_header_of(rec).key_len, i, &first);
        rec += size;
        room -= size;
    }
    bgzf_close(fp);
}

static void *parse_job_run(void *arg)
{
    parse_job *job = arg;
    parse_span(job);
    record_parse *p = job->p;
    pthread_mutex_lock(&p->mu);
    job->busy = 0;
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- the loader: spans ---- */

static int fail_here(record_parse *p, int kind)
{
    if (!p->failed) {
        p->failed = 1;
        p->failure = (record_parse_failure){ .kind = kind };
    }
    return -1;
}

/* The oldest job dispatched, once it returns: its keys go to its batch. */
static int retire_oldest(record_parse *p)
{
    int slot = (p->next - p->pending + p->s.jobs) % p->s.jobs;
    parse_job *job = &p->jobs[slot];
    wait_job(p, job);
    p->pending--;
    if (p->failed) return -1;
    if (job->failed) {
        p->failed = 1;
        p->failure = job->why;
        return -1;
    }
    batch_span_keys(job->sb, job->span.at.index, job->shared, job->shortest, job->longest);
    p->digest += job->digest;
    p->placed |= job->placed;
    return 0;
}

int record_parse_settle(record_parse *p)
{
    int ret = p->failed ? -1 : 0;
    while (p->pending)
        if (retire_oldest(p) < 0) ret = -1;
    return ret;
}

int record_parse_span(record_parse *p, batch *sb, const batch_span *span, size_t first,
                      uint64_t seq)
{
    if (p->pending == p->s.jobs && retire_oldest(p) < 0) return -1;
    parse_job *job = &p->jobs[p->next];
    size_t from = first ? p->ends[first - 1] : LEAD, to = p->ends[first + span->n - 1];
    if (from == LEAD && to == p->whole_end) {
        /* The whole chunk: its buffer goes, and the next record's start
         * moves to a new one. */
        size_t tail = p->len - to, cap = RECORD_PARSE_CHUNK_BYTES;
        if (cap < LEAD + tail) cap = LEAD + tail;   /* a chunk grown for a long read shrinks */
        uint8_t *next = malloc(cap);
        if (!next) return fail_here(p, RECORD_PARSE_MEMORY);
        next[0] = LEAD_BYTE;
        memcpy(next + LEAD, p->buf + to, tail);
        job->buf = p->buf;
        job->len = to;
        p->buf = next;
        p->cap = cap;
        p->len = LEAD + tail;
        p->whole_end = LEAD;
    } else {
        if (!(job->buf = malloc(LEAD + (to - from)))) return fail_here(p, RECORD_PARSE_MEMORY);
        job->buf[0] = LEAD_BYTE;
        memcpy(job->buf + LEAD, p->buf + from, to - from);
        job->len = LEAD + (to - from);
    }
    job->p = p;
    job->sb = sb;
    job->span = *span;
    job->seq = seq;
    job->failed = job->placed = 0;
    job->digest = 0;
    job->busy = 1;
    p->next = (p->next + 1) % p->s.jobs;
    p->pending++;
    if (hts_tpool_dispatch2(p->s.pool, p->queue, parse_job_run, job, 1) < 0) parse_job_run(job);
    return 0;
}

const record_parse_failure *record_parse_failed(const record_parse *p)
{
    return p->failed ? &p->failure : NULL;
}

int record_parse_tail(record_parse *p, bam1_t *b)
{
    start_chunk(p);
    if (p->len == LEAD) return -1;
    hFILE *hf = hopen("mem:", "r:", (char *)p->buf, p->len);
    p->buf = NULL;
    p->len = p->cap = 0;
    BGZF *fp = hf ? bgzf_hopen(hf, "r") : NULL;
    uint8_t lead;
    int r = fp && bgzf_read(fp, &lead, 1) == 1 ? bam_read1(fp, b) : -2;
    if (fp) bgzf_close(fp);
    else if (hf) hclose_abruptly(hf);
    return r < 0 ? r : -4;  /* a record whole here would have been in a chunk */
}

uint64_t record_parse_digest(const record_parse *p)
{
    return p->digest;
}

int record_parse_placed(const record_parse *p)
{
    return p->placed;
}
