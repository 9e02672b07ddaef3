/* test_group_codec.c -- compact runs' groups come back byte for byte.
 *
 * Records of every shape samtools may meet (no sequence, no qualities, odd
 * lengths, many CIGAR operations, every aux type, long names, positions past
 * 2^31, a name's extra NULs) go through group_codec and group_writer, with
 * keys of one length and of many; each must decode to the same key and value
 * bytes, in order.  Damaged blobs must fail to decode, not yield records.
 * Through a store of compact runs, iterators with and without key bounds
 * must give the records of their range once each, in key order, however
 * the runs' groups interleave.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/sam.h>
#include "codec/record.h"
#include "codec/group_codec.h"
#include "codec/group_writer.h"
#include "store/store.h"
#include "readout/group_feed.h"
#include "readout/run_merge.h"
#include "unit_report.h"

static const char *header_text = "@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:4000000000\n@SQ\tSN:chr2\tLN:5000\n";

static const char *sam_lines[] = {
    "r1\t99\tchr1\t100\t60\t5M\t=\t200\t105\tACGTA\tIIIII\tNM:i:0\tRG:Z:grp1",
    "r2\t4\t*\t0\t0\t*\t*\t0\t0\tACG\t*",
    "r3\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*",
    "a_rather_long_read_name_that_goes_on_and_on_for_a_while:1:2101:10000:20000\t16\tchr2\t4990\t3\t2S3M1I2D1M\t*\t0\t0\tACGTACG\t#$%&'()\tXA:A:x\tXc:i:-5\tXC:i:200\tXs:i:-300\tXS:i:60000\tXi:i:-70000\tXI:i:4000000000\tXf:f:1.5\tXH:H:1AE301\tXB:B:c,1,-2,3\tXb:B:f,1.5,2.5",
    "r5\t0\tchr1\t3000000000\t60\t4M\t*\t0\t0\tNNNN\t!!!!",
    "r6\t2048\tchr1\t100\t0\t1H4M\t*\t0\t0\tTTTT\tABCD\tSA:Z:chr2,10,+,4M,0,0;",
};

/* One record with 70,000 CIGAR operations, more than BAM's 16-bit count. */
static int add_long_cigar(bam1_t *b)
{
    size_t n = 70000;
    uint32_t *cig = malloc(n * sizeof *cig);
    char *seq = malloc(n + 1);
    if (!cig || !seq) return -1;
    for (size_t i = 0; i < n; i++) cig[i] = bam_cigar_gen(1, i % 2 ? BAM_CINS : BAM_CMATCH);
    memset(seq, 'C', n);
    seq[n] = 0;
    int rc = bam_set1(b, 4, "longcig", 0, 0, 7, 30, n, cig, -1, -1, 0, n, seq, NULL, 0);
    free(cig);
    free(seq);
    return rc < 0 ? -1 : 0;
}

typedef struct {
    uint8_t key[64];
    size_t klen, vlen;
    uint8_t *val;
} pair;

typedef struct {
    pair *p;
    size_t n;
    uint8_t *expect;            /* keys and values back to back, in order */
    size_t expect_len;
} pair_set;

/* Every test record, `copies` times over, each under a key of one length
 * or of lengths that vary. */
static int make_pairs(int fixed_keys, int copies, pair_set *ps)
{
    sam_hdr_t *h = sam_hdr_parse(strlen(header_text), header_text);
    bam1_t *b = bam_init1();
    size_t n_lines = sizeof sam_lines / sizeof *sam_lines;
    memset(ps, 0, sizeof *ps);
    ps->p = calloc((n_lines + 1) * (size_t)copies, sizeof *ps->p);
    for (int c = 0; c < copies; c++)
        for (size_t i = 0; i <= n_lines; i++) {
            kstring_t s = { 0, 0, NULL };
            if (i < n_lines) kputs(sam_lines[i], &s);
            int bad = i < n_lines ? sam_parse1(&s, h, b) < 0 : add_long_cigar(b) < 0;
            free(s.s);
            if (bad) return -1;
            pair *q = &ps->p[ps->n];
            q->vlen = record_value_len(b);
            q->val = malloc(q->vlen);
            record_value_pack(b, q->val);
            q->klen = fixed_keys ? 12 : 1 + (ps->n * 7) % 40;
            for (size_t k = 0; k < q->klen; k++) q->key[k] = (uint8_t)(ps->n >> (8 * (k % 4)) ^ k);
            ps->expect = realloc(ps->expect, ps->expect_len + q->klen + q->vlen);
            memcpy(ps->expect + ps->expect_len, q->key, q->klen);
            memcpy(ps->expect + ps->expect_len + q->klen, q->val, q->vlen);
            ps->expect_len += q->klen + q->vlen;
            ps->n++;
        }
    bam_destroy1(b);
    sam_hdr_destroy(h);
    return 0;
}

static void free_pairs(pair_set *ps)
{
    for (size_t i = 0; i < ps->n; i++) free(ps->p[i].val);
    free(ps->p);
    free(ps->expect);
}

/* Decoded pairs, appended to one byte string. */
typedef struct {
    uint8_t *bytes;
    size_t len;
    size_t groups;
    const char *problem;
    group_records rec;
    group_scratch scratch;
} decoded;

static int append_group(void *ctx, const group_span *span, const uint8_t *blob, size_t len,
                        errmsg *err)
{
    decoded *d = ctx;
    (void)err;
    size_t k0, kn;
    if (group_codec_decode(blob, len, &d->rec, &d->scratch) < 0) {
        d->problem = "a group did not decode";
        return 0;
    }
    const uint8_t *first = group_key(&d->rec, 0, &k0);
    const uint8_t *last = group_key(&d->rec, d->rec.n - 1, &kn);
    if (k0 != span->first_len || memcmp(first, span->first, k0))
        d->problem = "a group was not put under its first key";
    if (kn != span->last_len || memcmp(last, span->last, kn))
        d->problem = "a group's last key is not its last record's";
    size_t n = d->rec.off[2 * d->rec.n];
    d->bytes = realloc(d->bytes, d->len + n);
    memcpy(d->bytes + d->len, d->rec.bytes, n);
    d->len += n;
    d->groups++;
    return 0;
}

static const char *compare(const decoded *d, const pair_set *ps)
{
    if (d->problem) return d->problem;
    if (d->len != ps->expect_len || memcmp(d->bytes, ps->expect, d->len)) return "bytes differ after decoding";
    return NULL;
}

static void free_decoded(decoded *d)
{
    free(d->bytes);
    group_codec_records_free(&d->rec);
    group_codec_scratch_free(&d->scratch);
}

/* One group of everything, through the encoder alone. */
static const char *round_trip(int fixed_keys, group_layout layout)
{
    static char problem[128];
    pair_set ps;
    decoded d = { 0 };
    if (make_pairs(fixed_keys, 3, &ps) < 0) return "test records did not parse";
    group_encoder *e = group_codec_encoder_create(layout);
    const uint8_t *blob;
    size_t len;
    group_span span;
    for (size_t i = 0; i < ps.n; i++)
        if (group_codec_add(e, ps.p[i].key, ps.p[i].klen, ps.p[i].val, ps.p[i].vlen) < 0) return "add failed";
    const char *r = group_codec_encode(e, &blob, &len) < 0 ? "encode failed" : NULL;
    span.first = group_codec_first_key(e, &span.first_len);
    span.last = group_codec_last_key(e, &span.last_len);
    if (!r) append_group(&d, &span, blob, len, NULL);
    if (!r) r = compare(&d, &ps);
    /* Every cut of the blob short of its end must fail. */
    for (size_t cut = 0; !r && cut < len; cut += 1 + cut / 64)
        if (group_codec_decode(blob, cut, &d.rec, &d.scratch) != GROUP_DECODE_MALFORMED) {
            snprintf(problem, sizeof problem, "a blob cut to %zu of %zu bytes was not malformed", cut, len);
            r = problem;
        }
    uint8_t *bad = malloc(len);
    memcpy(bad, blob, len);
    bad[0] ^= 1;                                  /* not a group */
    if (!r && group_codec_decode(bad, len, &d.rec, &d.scratch) != GROUP_DECODE_MALFORMED)
        r = "a blob without its magic was not malformed";
    memcpy(bad, blob, len);
    bad[4] ^= 1;                                  /* the count of pairs */
    if (!r && group_codec_decode(bad, len, &d.rec, &d.scratch) != GROUP_DECODE_MALFORMED)
        r = "a blob with a wrong count was not malformed";
    memcpy(bad, blob, len);
    bad[8] ^= 2;                      /* flags in columns, the data's length when plain */
    if (!r && group_codec_decode(bad, len, &d.rec, &d.scratch) != GROUP_DECODE_MALFORMED)
        r = "a blob with a wrong flag or length was not malformed";
    free(bad);
    group_codec_encoder_destroy(e);
    free_decoded(&d);
    free_pairs(&ps);
    return r;
}

static size_t le32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (size_t)p[3] << 24;
}

/* Damage inside the columns' stored bytes may decode (a raw column) or not,
 * but is never taken for memory running out: a resumable sort keeps its runs
 * for that, and drops them as damaged for the other.  Eight copies of the
 * records fill a column for each codec: zstd's, and rANS' for qualities.
 * Every byte is damaged in turn, as rANS notices few of them.  A plain
 * blob's records are copied whatever they hold (RocksDB's checksums guard
 * them): its header and lengths are damaged, byte by byte. */
static const char *damage_is_not_memory(group_layout layout)
{
    static char problem[128];
    pair_set ps;
    decoded d = { 0 };
    if (make_pairs(1, 8, &ps) < 0) return "test records did not parse";
    group_encoder *e = group_codec_encoder_create(layout);
    const uint8_t *blob;
    size_t len;
    const char *r = NULL;
    for (size_t i = 0; !r && i < ps.n; i++)
        if (group_codec_add(e, ps.p[i].key, ps.p[i].klen, ps.p[i].val, ps.p[i].vlen) < 0) r = "add failed";
    if (!r && group_codec_encode(e, &blob, &len) < 0) r = "encode failed";
    uint8_t *bad = r ? NULL : malloc(len);
    size_t skip_from = layout == GROUP_PLAIN ? 12 : len, skip_to = skip_from + (r ? 0 : le32(blob + 8));
    for (size_t at = layout == GROUP_PLAIN ? 4 : 9; !r && at < len; at++) {  /* past the magic */
        if (at == skip_from) at = skip_to;
        memcpy(bad, blob, len);
        bad[at] ^= 0x5a;
        if (group_codec_decode(bad, len, &d.rec, &d.scratch) == GROUP_DECODE_NO_MEMORY) {
            snprintf(problem, sizeof problem, "damage at byte %zu of %zu read as out of memory", at, len);
            r = problem;
        }
    }
    /* Every column's header claiming 4 GiB (a plain blob's count and
     * length): damage, found before a buffer of tens of gigabytes is asked
     * for. */
    if (!r) memcpy(bad, blob, len);
    if (!r && layout == GROUP_PLAIN) memset(bad + 4, 0xff, 8);
    for (size_t at = 9; !r && layout == GROUP_COLUMNS && at + 9 <= len; at += 9 + le32(bad + at + 5))
        memset(bad + at + 1, 0xff, 4);
    if (!r && group_codec_decode(bad, len, &d.rec, &d.scratch) != GROUP_DECODE_MALFORMED)
        r = "sizes claiming 4 GiB each were not malformed";
    free(bad);
    group_codec_encoder_destroy(e);
    free_decoded(&d);
    free_pairs(&ps);
    return r;
}

/* Small groups on three threads: blobs come back in order, each under its
 * first key. */
static const char *writer_in_order(int threads, group_layout layout)
{
    pair_set ps;
    decoded d = { 0 };
    errmsg err;
    int failed = 0;
    if (make_pairs(1, 50, &ps) < 0) return "test records did not parse";
    group_writer *gw = group_writer_create_on(NULL, threads, 2000, layout, append_group, &d);
    if (!gw) return "writer not created";
    for (size_t i = 0; !failed && i < ps.n; i++)
        failed = group_writer_add(gw, ps.p[i].key, ps.p[i].klen, ps.p[i].val, ps.p[i].vlen, &err) < 0;
    if (!failed) failed = group_writer_finish(gw, &err) < 0;
    group_writer_destroy(gw);
    const char *r = failed ? "the writer failed" : d.groups < 20 ? "too few groups to test the order" : compare(&d, &ps);
    free_decoded(&d);
    free_pairs(&ps);
    return r;
}

#define N_RUNS 3   /* pair i goes to run i % N_RUNS, under key i (8 bytes, big-endian) */

static void seq_key(uint64_t seq, uint8_t key[8])
{
    for (int i = 0; i < 8; i++) key[i] = (uint8_t)(seq >> (56 - 8 * i));
}

static int write_runs(rocks_store *st, const pair_set *ps)
{
    errmsg err;
    int ok = 1;
    for (int run = 0; ok && run < N_RUNS; run++) {
        ok = store_run_begin(st, &err) == 0;
        for (size_t i = (size_t)run; ok && i < ps->n; i += N_RUNS) {
            uint8_t key[8];
            seq_key(i, key);
            ok = store_run_put(st, key, 8, ps->p[i].val, ps->p[i].vlen, &err) == 0;
        }
        ok = ok && store_run_end(st, NULL, 0, &err) == 0;
    }
    return ok ? 0 : -1;
}

/* Reads pairs [lo, hi) of the store through a feed of its groups and the
 * merge, as the readout does, and checks them against ps: a range that
 * starts inside the runs' groups must still get each run's records from lo
 * on (the straddling groups, store/run_index.h). */
static const char *read_range(rocks_store *st, const pair_set *ps, size_t lo, size_t hi)
{
    uint8_t lo_key[8], hi_key[8];
    seq_key(lo, lo_key);
    seq_key(hi, hi_key);
    key_sample lo_b = { lo_key, 8, 0 }, hi_b = { hi_key, 8, 0 };
    errmsg err;
    group_feed *f = group_feed_open(st, 0, lo > 0 ? &lo_b : NULL, hi < ps->n ? &hi_b : NULL,
                                    1 << 20, &err);
    run_merge *m = f ? run_merge_open(NULL, 0, &f, 1, NULL, 0, NULL, 0) : NULL;
    if (!m) {
        group_feed_close(f);
        return "feed or merge not opened";
    }
    const char *r = NULL;
    size_t want = lo, vl;
    for (const uint8_t *v; !r && (v = run_merge_next(m, &vl)); want++)
        if (want >= hi) r = "a record out of range";
        else if (vl != ps->p[want].vlen || memcmp(v, ps->p[want].val, vl)) r = "a value differs";
    if (!r && (run_merge_failed(m) || group_feed_status(f, &err) < 0)) r = "the feed failed";
    if (!r && want != hi) r = "records of the range are missing";
    run_merge_close(m);
    group_feed_close(f);
    return r;
}

static const char *store_ranges(store_codec codec)
{
    pair_set ps;
    if (make_pairs(1, 40, &ps) < 0) return "test records did not parse";
    store_dir place = { "/tmp/test_group_codec", 1 };
    store_options so = { .dirs = &place, .n_dirs = 1, .compression = codec,
                         .compression_threads = 2, .max_open_files = -1,
                         .background_threads = 1, .parts = 1 };
    errmsg err;
    rocks_store *st = store_open(&so, &err);
    const char *r = !st ? "store not opened" : !store_grouped(st) ? "store not grouped"
                  : write_runs(st, &ps) < 0 ? "runs not written" : NULL;
    size_t cuts[][2] = { { 0, ps.n }, { 1, ps.n }, { ps.n / 3, 2 * ps.n / 3 }, { 7, 8 },
                         { ps.n - 1, ps.n } };
    for (size_t c = 0; !r && c < sizeof cuts / sizeof *cuts; c++)
        r = read_range(st, &ps, cuts[c][0], cuts[c][1]);
    store_close(st, 0);
    free_pairs(&ps);
    return r;
}

static const char *short_value_refused(group_layout layout)
{
    group_encoder *e = group_codec_encoder_create(layout);
    uint8_t v[8] = { 0 }, k = 1;
    int rc = group_codec_add(e, &k, 1, v, sizeof v);
    group_codec_encoder_destroy(e);
    return rc < 0 ? NULL : "a value shorter than a record core was taken";
}

int main(void)
{
    report("group_round_trip_fixed_keys", round_trip(1, GROUP_COLUMNS));
    report("group_round_trip_varying_keys", round_trip(0, GROUP_COLUMNS));
    report("plain_group_round_trip_fixed_keys", round_trip(1, GROUP_PLAIN));
    report("plain_group_round_trip_varying_keys", round_trip(0, GROUP_PLAIN));
    report("group_damage_is_not_memory", damage_is_not_memory(GROUP_COLUMNS));
    report("plain_group_damage_is_not_memory", damage_is_not_memory(GROUP_PLAIN));
    report("group_writer_in_order_one_thread", writer_in_order(1, GROUP_COLUMNS));
    report("group_writer_in_order_three_threads", writer_in_order(3, GROUP_COLUMNS));
    report("plain_group_writer_in_order_three_threads", writer_in_order(3, GROUP_PLAIN));
    report("group_short_value_refused", short_value_refused(GROUP_COLUMNS));
    report("plain_group_short_value_refused", short_value_refused(GROUP_PLAIN));
    report("group_store_ranges_in_key_order", store_ranges(STORE_CODEC_COLUMNS));
    report("plain_group_store_ranges_in_key_order", store_ranges(STORE_CODEC_PLAIN));
    return report_summary();
}
