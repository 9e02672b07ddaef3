/* test_record_parse.c -- unit tests: batches filled from a BAM stream by
 * jobs that parse on a pool (load/record_parse.h) hold exactly what
 * batch_add() would put in them.
 *
 * The records of batch_records.h are written to a BAM file, read back
 * chunk by chunk and placed span by span as the loader places them: full
 * batches settled, sorted, checked and cleared.  Each batch must be a run
 * of consecutive input records whose sorted keys and values equal, byte for
 * byte, those of the same records given to batch_add() and sorted, which
 * also checks each span's key statistics (the records come grouped by
 * reference, so that a span's keys share more than the batch's do).  Small batches reach the arena
 * replaced for a record larger than the batch and chunks split between
 * batches; large ones make the entries grow while jobs are in flight.  The
 * digest of the records as written must be batch_add()'s.  Prints
 * "N passed, M failed".
 */
#include <unistd.h>
#include <htslib/thread_pool.h>
#include "batch_records.h"
#include "codec/record.h"
#include "load/record_parse.h"
#include "scratch_dir.h"
#include "unit_report.h"

static char bam_path[4200];

/* Records grouped by reference, in input order within each, and the
 * first reference's group ending with a long read, which takes a chunk of
 * its own: the next span then starts the second group, and shares more of
 * its keys among its records than with the batch's first record.  Its key
 * statistics must not hide that. */
static const char *group_by_reference(void)
{
    static bam1_t *grouped[N_RECORDS];
    bam1_t *long_read = NULL;
    size_t n = 0;
    for (int32_t tid = 0; tid <= 3; tid++) {
        for (size_t i = 0; i < N_RECORDS; i++) {
            if (recs[i]->core.tid != (tid < 3 ? tid : -1)) continue;
            if (tid == 0 && !long_read && recs[i]->core.l_qseq > (int32_t)RECORD_PARSE_CHUNK_BYTES)
                long_read = recs[i];
            else
                grouped[n++] = recs[i];
        }
        if (tid == 0 && long_read) grouped[n++] = long_read;
    }
    memcpy(recs, grouped, sizeof recs);
    return long_read ? NULL : "test is wrong: no long read on the first reference";
}

static const char *write_bam(void)
{
    sam_hdr_t *h = sam_hdr_parse(60, "@SQ\tSN:c1\tLN:200000\n@SQ\tSN:c2\tLN:200000\n"
                                     "@SQ\tSN:c3\tLN:9\n");
    samFile *out = sam_open(bam_path, "wb");
    int ok = h && out && sam_hdr_write(out, h) == 0;
    for (size_t i = 0; ok && i < N_RECORDS; i++) ok = sam_write1(out, h, recs[i]) >= 0;
    if (out && sam_close(out) < 0) ok = 0;
    sam_hdr_destroy(h);
    return ok ? NULL : "cannot write the BAM file";
}

/* The digest batch_add() leaves: of each record as it will be written. */
static uint64_t reference_digest(const sort_spec *spec)
{
    batch *sb = batch_create((size_t)1 << 30);
    bam1_t *b = bam_init1();
    uint64_t sum = 0;
    errmsg err;
    for (size_t i = 0; sb && b && i < N_RECORDS; i++) {
        if (!bam_copy1(b, recs[i]) || batch_add(sb, spec, b, i, &err) != 1) break;
        sum += record_digest(b);
        if (batch_count(sb) > 1000) batch_clear(sb);
    }
    bam_destroy1(b);
    batch_destroy(sb);
    return sum;
}

typedef struct {
    sort_spec spec;
    record_parse *p;
    batch *cur;
    size_t from, batches;
} filling;

/* The chunk's records into batches, checking each batch as it fills. */
static const char *place(filling *f, const record_parse_chunk *c, uint64_t *seq)
{
    for (size_t at = 0; at < c->n;) {
        batch_span span;
        int r = batch_reserve_span(f->cur, c->bound + at, c->n - at, 0, &span);
        if (r == BATCH_UNSETTLED) {
            if (record_parse_settle(f->p) < 0) return "a job failed";
            r = batch_reserve_span(f->cur, c->bound + at, c->n - at, 1, &span);
        }
        if (r < 0) return "out of memory";
        if (r == 0) {
            if (record_parse_settle(f->p) < 0) return "a job failed";
            const char *why = check_batch(&f->spec, f->cur, f->from);
            if (why) return why;
            f->from += batch_count(f->cur);
            f->batches++;
            batch_clear(f->cur);
            continue;
        }
        if (record_parse_span(f->p, f->cur, &span, at, *seq) < 0) return "a span failed";
        *seq += span.n;
        at += span.n;
    }
    return NULL;
}

static const char *parse_all(filling *f, BGZF *fp)
{
    record_parse_chunk c;
    uint64_t seq = 0;
    do {
        if (record_parse_read(f->p, fp, &c) < 0) return "cannot read a chunk";
        const char *why = place(f, &c, &seq);
        if (why) return why;
    } while (!c.end);
    if (c.end < 0) return "a block did not read";
    if (record_parse_settle(f->p) < 0) return "a job failed";
    bam1_t *b = bam_init1();
    int tail = record_parse_tail(f->p, b);
    bam_destroy1(b);
    if (tail != -1) return "bytes were left after the last record";
    if (seq != N_RECORDS) return "records went missing";
    return NULL;
}

/* Every record, parsed on the pool, in batches of `capacity` bytes. */
static const char *parse_file(hts_tpool *pool, sort_order order, size_t capacity)
{
    filling f = { .from = 0 };
    sort_key_spec_init(&f.spec, order);
    record_parse_setup s = { .pool = pool, .spec = &f.spec, .n_refs = 3, .verify = 1,
                             .jobs = 3 };
    f.p = record_parse_create(&s);
    f.cur = batch_create(capacity);
    BGZF *fp = bgzf_open(bam_path, "r");
    sam_hdr_t *h = fp ? bam_hdr_read(fp) : NULL;
    const char *why = f.p && f.cur && h ? parse_all(&f, fp) : "cannot start";
    if (!why) why = check_batch(&f.spec, f.cur, f.from);
    if (!why && f.from + batch_count(f.cur) != N_RECORDS) why = "records went missing";
    if (!why && capacity < ((size_t)1 << 20) && f.batches < 10) why = "too few batches to test";
    if (!why && record_parse_digest(f.p) != reference_digest(&f.spec)) why = "digests differ";
    sam_hdr_destroy(h);
    if (fp) bgzf_close(fp);
    record_parse_free(f.p);
    batch_destroy(f.cur);
    return why;
}

int main(void)
{
    char dir[4096];
    hts_tpool *pool = hts_tpool_init(4);
    if (!pool || !scratch_dir_make(dir, sizeof dir, "record_parse")) return 2;
    snprintf(bam_path, sizeof bam_path, "%s/records.bam", dir);
    make_records();
    const char *written = group_by_reference();
    if (!written) written = write_bam();
    report("bam_written", written);
    static const struct {
        const char *name;
        sort_order order;
    } orders[] = {
        { "coordinate", ORDER_COORDINATE },
        { "minimiser", ORDER_MINIMISER },
    };
    for (size_t o = 0; !written && o < sizeof orders / sizeof *orders; o++) {
        char name[80];
        snprintf(name, sizeof name, "%s_small_batches", orders[o].name);
        report(name, parse_file(pool, orders[o].order, (size_t)256 << 10));
        snprintf(name, sizeof name, "%s_large_batches", orders[o].name);
        report(name, parse_file(pool, orders[o].order, (size_t)16 << 20));
    }
    unlink(bam_path);
    rmdir(dir);
    free_records();
    hts_tpool_destroy(pool);
    return report_summary();
}
