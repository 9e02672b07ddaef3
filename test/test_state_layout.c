/* test_state_layout.c -- a change to what a resumable state stores bumps
 * its version.
 *
 * A state (--resume DIR) written by one build is taken back by another
 * only when both have the same STORE_STATE_VERSION (store/store_types.h).  This
 * test hashes what a state holds for fixed records (with the tags the
 * orders read: RG, MC, CB, MI, a -t tag): every order's keys (with -t), the
 * values (codec/record.h), a note (resume/resume_state.h) and the
 * first journal record (store/state_dir.h), and compares the hash with the one
 * recorded here for the current version.  A change to any of them fails
 * it until the version is bumped and the new hash recorded, so that no
 * build takes back another's runs in a layout it misreads.  (The group
 * codec's blobs are not hashed: their compressed bytes follow the zstd
 * library's version, and each column names its method; a change to the
 * codec's format must still bump the version, as store/store_types.h says.)
 * The values are htslib's in-memory records, so the hash is of a
 * little-endian 64-bit host; elsewhere the test only says so.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/sam.h>
#include "keys/sort_key.h"
#include "util/byte_io.h"
#include "util/mix64.h"
#include "codec/record.h"
#include "resume/resume_state.h"
#include "store/store.h"
#include "store/state_dir.h"
#include "unit_report.h"

/* The version, and the hash of its layout on a little-endian 64-bit host. */
#define RECORDED_VERSION 6
#define RECORDED_LAYOUT 0x8cc456f4773e9ddeULL

static const char header_text[] =
    "@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:4000000000\n@SQ\tSN:chr2\tLN:5000\n"
    "@RG\tID:g1\tLB:lib1\n";

static const char *sam_lines[] = {
    "r1\t99\tchr1\t100\t60\t5M\t=\t200\t105\tACGTA\tIIIII\tNM:i:0\tRG:Z:g1\tMC:Z:5M\tXT:Z:b"
    "\tCB:Z:ACGT-1\tMI:Z:9",
    "r1\t147\tchr1\t200\t60\t5M\t=\t100\t-105\tTTGCA\tIIIII\tRG:Z:g1\tMC:Z:5M\tXT:i:3"
    "\tCB:Z:ACGT-1\tMI:Z:9",
    "r2\t4\t*\t0\t0\t*\t*\t0\t0\tACG\t*",
    "read:10:2101\t16\tchr2\t4990\t3\t2S3M\t*\t0\t0\tACGTA\t#$%&'\tMI:Z:7\tXT:f:1.5",
    "r5\t0\tchr1\t3000000000\t60\t4M\t*\t0\t0\tNNNN\t!!!!",
};

static void hash_key(uint64_t *h, sort_order order, int by_tag, sam_hdr_t *hdr, bam1_t **recs,
                     size_t n)
{
    sort_spec s;
    errmsg err;
    sort_key_spec_init(&s, order);
    s.seed = 7;
    s.by_tag = by_tag;
    memcpy(s.tag, "XT", 2);
    if (sort_key_spec_prepare(&s, hdr, &err) < 0) {
        *h = mix64_bytes(*h, err.msg, strlen(err.msg));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t *key = malloc(sort_key_max_len(&s, recs[i]));
        size_t len = key ? sort_key_encode(&s, recs[i], 1000 + i, key) : 0;
        *h = mix64_bytes(*h, key, len);
        free(key);
    }
    sort_key_spec_free(&s);
}

static uint64_t layout_hash(sam_hdr_t *hdr, bam1_t **recs, size_t n)
{
    uint64_t h = 0;
    for (int order = ORDER_COORDINATE; order <= ORDER_SHUFFLE; order++)
        for (int by_tag = 0; by_tag < 2; by_tag++) hash_key(&h, (sort_order)order, by_tag, hdr, recs, n);
    for (size_t i = 0; i < n; i++) {
        uint8_t *val = malloc(record_value_len(recs[i]));
        if (!val) continue;
        record_value_pack(recs[i], val);
        h = mix64_bytes(h, val, record_value_len(recs[i]));
        free(val);
    }
    resume_note note = {
        .input = 2, .input_first = 3, .kind = POS_BGZF, .pos = 1u << 20, .records = 5,
        .bytes = 600, .digest = 77, .digested = 1, .stream_hash = 88, .placed = 1, .micros = 999,
        .ctime = 1234567, .prefix_bytes = 70000, .prefix_crc = 0xabcd, .done_ctimes = 0x1357,
        .done_crcs = 0x2468,
    };
    byte_writer w = { 0 };
    resume_state_note_encode(&note, &w);
    state_dir_start_write(&w, "input a stream\n", STORE_CODEC_COLUMNS, 2);
    h = mix64_bytes(h, w.p, w.n);
    bw_free(&w);
    return h;
}

int main(void)
{
    sam_hdr_t *hdr = sam_hdr_parse(sizeof header_text - 1, header_text);
    bam1_t *recs[sizeof sam_lines / sizeof *sam_lines];
    size_t n = 0;
    for (; hdr && n < sizeof sam_lines / sizeof *sam_lines; n++) {
        kstring_t line = { 0, 0, NULL };
        kputs(sam_lines[n], &line);
        recs[n] = bam_init1();
        if (sam_parse1(&line, hdr, recs[n]) < 0) {
            report("state layout: the test's records parse", "a SAM line does not parse");
            return report_summary();
        }
        free(line.s);
    }
    uint64_t h = layout_hash(hdr, recs, n);
    const uint16_t one = 1;
    char problem[256];
    if (!*(const uint8_t *)&one || sizeof(void *) != 8) {
        printf("state layout: not a little-endian 64-bit host; the hash is %016" PRIx64 "\n", h);
    } else if (STORE_STATE_VERSION != RECORDED_VERSION || h != RECORDED_LAYOUT) {
        snprintf(problem, sizeof problem, "version %d, hash %016" PRIx64 "; recorded: version %d, "
                 "hash %016llx.  If what a state stores changed, bump STORE_STATE_VERSION "
                 "(store/store_types.h), then record both here", STORE_STATE_VERSION, h,
                 RECORDED_VERSION, RECORDED_LAYOUT);
        report("state layout: what a state stores has the version's layout", problem);
        return report_summary();
    }
    report("state layout: what a state stores has the version's layout", NULL);
    for (size_t i = 0; i < n; i++) bam_destroy1(recs[i]);
    sam_hdr_destroy(hdr);
    return report_summary();
}
