/* group_probe.c -- bytes per record and speed of group_codec on a BAM.
 *
 * Usage: group_probe IN.bam GROUP_BYTES
 * Reads IN (which should be sorted, like a run), keys each record by
 * coordinate and a pseudo-random input number, packs groups of about
 * GROUP_BYTES of keys and values, and checks every group decodes back to
 * the same bytes.  Prints bytes per record for each column and in all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <htslib/sam.h>
#include "codec/record.h"
#include "keys/key_bytes.h"
#include "codec/group_codec.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static const char *names[] = { "key_len", "key", "core", "aux_len", "name", "cigar", "seq", "qual", "aux" };   /* codec/group_codec.c: enum column */

int main(int argc, char **argv)
{
    if (argc < 3) return fprintf(stderr, "usage: group_probe IN.bam GROUP_BYTES\n"), 2;
    samFile *in = sam_open(argv[1], "r");
    sam_hdr_t *h = in ? sam_hdr_read(in) : NULL;
    if (!h) return fprintf(stderr, "cannot read %s\n", argv[1]), 1;
    size_t group_bytes = strtoull(argv[2], NULL, 10);
    bam1_t *b = bam_init1();
    group_encoder *e = group_codec_encoder_create(GROUP_COLUMNS);
    group_records r = { 0 };
    group_scratch scratch = { 0 };
    uint8_t key[32], *val = NULL, *copy = NULL;
    size_t val_cap = 0, copy_cap = 0, copy_n = 0, n_rec = 0, raw = 0, blob_total = 0;
    double col_bytes[9] = { 0 }, t_enc = 0, t_dec = 0;
    uint64_t seq = 88172645463325252ULL;
    int ret, eof = 0;
    while (!eof) {
        eof = (ret = sam_read1(in, h, b)) < 0;
        if (!eof) {
            seq ^= seq << 13, seq ^= seq >> 7, seq ^= seq << 17;
            uint8_t *p = put_i32(key, b->core.tid);
            p = put_i64(p, b->core.pos);
            *p++ = bam_is_rev(b);
            p = put_be(p, 3000000 + seq % 407498, 8);   /* a batch's input numbers */
            size_t vl = record_value_len(b), kl = (size_t)(p - key);
            if (vl > val_cap) val = realloc(val, val_cap = vl * 2);
            record_value_pack(b, val);
            if (copy_n + kl + vl > copy_cap) copy = realloc(copy, copy_cap = (copy_n + kl + vl) * 2);
            memcpy(copy + copy_n, key, kl);
            memcpy(copy + copy_n + kl, val, vl);
            copy_n += kl + vl;
            if (group_codec_add(e, key, kl, val, vl) < 0) return fprintf(stderr, "add failed\n"), 1;
            n_rec++;
            raw += kl + vl;
        }
        if (group_codec_count(e) && (eof || group_codec_raw_bytes(e) >= group_bytes)) {
            const uint8_t *blob;
            size_t len, n = group_codec_count(e);
            double t0 = now();
            if (group_codec_encode(e, &blob, &len) < 0) return fprintf(stderr, "encode failed\n"), 1;
            double t1 = now();
            if (group_codec_decode(blob, len, &r, &scratch) < 0 || r.n != n) return fprintf(stderr, "decode failed\n"), 1;
            t_enc += t1 - t0;
            t_dec += now() - t1;
            if (r.off[2 * n] != copy_n || memcmp(r.bytes, copy, copy_n))
                return fprintf(stderr, "round trip differs\n"), 1;
            copy_n = 0;
            blob_total += len;
            size_t at = 9;   /* codec/group_codec.c: HEADER_BYTES */
            for (int c = 0; c < 9; c++) {
                uint32_t stored = blob[at + 5] | blob[at + 6] << 8 | blob[at + 7] << 16 | (uint32_t)blob[at + 8] << 24;
                col_bytes[c] += stored + 9;
                at += 9 + stored;
            }
        }
    }
    if (ret < -1) return fprintf(stderr, "read error\n"), 1;
    printf("records %zu raw %.1f B/rec blob %.2f B/rec (ratio %.3f) encode %.0f MB/s decode %.0f MB/s\n",
           n_rec, (double)raw / n_rec, (double)blob_total / n_rec, (double)blob_total / raw,
           raw / t_enc / 1e6, raw / t_dec / 1e6);
    for (int c = 0; c < 9; c++) printf("  %-8s %6.2f B/rec\n", names[c], col_bytes[c] / n_rec);
    group_codec_records_free(&r);
    group_codec_scratch_free(&scratch);
    group_codec_encoder_destroy(e);
    free(val), free(copy);
    bam_destroy1(b);
    sam_hdr_destroy(h);
    sam_close(in);
    return 0;
}
