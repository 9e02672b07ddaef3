/* test_temp_space.c -- the temp space estimate and the runs' format.
 *
 * Inputs are written to a fresh directory under $TMPDIR (or /tmp), which is
 * also the -T prefix, so the free space is that of a real file system;
 * the cases that depend on it use sizes far from any real disk's.
 * Prints `N passed, M failed` last.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <htslib/bgzf.h>
#include "store/temp_space.h"
#include "scratch_dir.h"
#include "unit_report.h"

static char dir[4096];
static const char *dirs[1] = { dir };

static const char *in_fns[1];

static temp_request request(const char *in_fn, uint64_t size_hint, temp_mode mode)
{
    in_fns[0] = in_fn;
    temp_request rq = {
        .mode = mode, .in_fns = in_fns, .n_in = 1, .dirs = dirs, .n_dirs = 1, .size_hint = size_hint,
        .memory = 3u << 20, .run_bytes = 1u << 20, .threads = 2, .out_level = 6,
    };
    return rq;
}

/* n bytes of SAM-like text: compresses several times over. */
static void write_text(const char *path, size_t n, int bgzf)
{
    static const char line[] = "read:1:2\t0\tchr1\t100\t60\t10M\t*\t0\t0\tACGTACGTAA\tFFFFF:::::\n";
    BGZF *bg = bgzf ? bgzf_open(path, "w") : NULL;
    gzFile gz = bgzf < 0 ? gzopen(path, "wb") : NULL;
    FILE *fp = bgzf ? NULL : fopen(path, "w");
    int ok = 1;
    for (size_t done = 0; ok && done < n; done += sizeof line - 1) {
        if (bg) ok = bgzf_write(bg, line, sizeof line - 1) >= 0;
        else if (gz) ok = gzwrite(gz, line, sizeof line - 1) > 0;
        else ok = fwrite(line, 1, sizeof line - 1, fp) == sizeof line - 1;
    }
    if (bg) bgzf_close(bg);
    if (gz) gzclose(gz);
    if (fp) fclose(fp);
}

static const char *check_file_estimate(const char *name, int kind, double lo, double hi)
{
    static char why[200];
    char path[4200];
    temp_plan p;
    errmsg err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_text(path, 8u << 20, kind);
    temp_request rq = request(path, 0, TEMP_AUTO);
    int r = temp_space_plan(&rq, &p, &err);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    double per_byte = (double)p.data_bytes / (double)ftell(f);
    fclose(f);
    unlink(path);
    if (r != 0 || !p.source) return "no estimate from a regular file";
    if (per_byte < lo || per_byte > hi) {
        snprintf(why, sizeof why, "%.2f run bytes per file byte, expected %.2f-%.2f",
                 per_byte, lo, hi);
        return why;
    }
    return NULL;
}

static const char *check_refusal(void)
{
    temp_plan p;
    errmsg err;
    temp_request rq = request("-", 1ULL << 60, TEMP_AUTO);   /* an exabyte */
    if (temp_space_plan(&rq, &p, &err) == 0) return "an exabyte was not refused";
    int ok = strstr(err.msg, dir) && strstr(err.msg, "needed") && strstr(err.msg, "free")
          && strstr(err.msg, "-T") && strstr(err.msg, "-s") && !strchr(err.msg, '\n');
    return ok ? NULL : "the refusal lacks the directory, needed, free, -T or -s";
}

/* A regular file's size wins over -s, which may be far off (it only
 * steers merging): an exabyte -s for a small file is not refused. */
static const char *check_file_beats_hint(void)
{
    char path[4200];
    temp_plan p;
    errmsg err;
    snprintf(path, sizeof path, "%s/small.sam", dir);
    write_text(path, 1u << 20, 0);
    temp_request rq = request(path, 1ULL << 60, TEMP_AUTO);
    int r = temp_space_plan(&rq, &p, &err);
    unlink(path);
    if (r != 0) return "a small file with an exabyte -s was refused";
    return p.source && !strcmp(p.source, "the input file") ? NULL : "the estimate is not the file's";
}

static const char *check_small_hint(void)
{
    temp_plan p;
    errmsg err;
    temp_request rq = request("-", 64u << 20, TEMP_AUTO);
    if (temp_space_plan(&rq, &p, &err) != 0) return "64 MB refused";
    if (p.mode != TEMP_COMPACT) return "64 MB of runs are not compact by default";
    /* -s plans background merges: their output counts on top of the runs. */
    if (p.need_none <= p.data_bytes) return "merges not counted in the peak";
    if (p.need_compact * 2 > p.need_none) return "compact runs not estimated smaller";
    rq.size_hint = 1u << 20;   /* fits in memory: nothing is spilled */
    temp_space_plan(&rq, &p, &err);
    return p.need_none > (2u << 20) ? "an input that fits in memory needs temp space" : NULL;
}

static const char *check_modes(void)
{
    temp_plan p;
    errmsg err;
    temp_request rq = request("-", 0, TEMP_AUTO);
    temp_space_plan(&rq, &p, &err);
    if (p.source || p.mode != TEMP_COMPACT) return "a pipe without -s: not compact runs";
    store_options so = { 0 };
    temp_space_store_options(&p, &so);
    if (so.compression != STORE_CODEC_COLUMNS) return "compact runs are not in columns";
    rq.mode = TEMP_LZ4;
    temp_space_plan(&rq, &p, &err);
    if (p.mode != TEMP_LZ4) return "--temp-compression lz4 not kept";
    temp_space_store_options(&p, &so);
    if (so.compression != STORE_CODEC_LZ4 || so.compression_threads != 2)
        return "lz4 store options";
    if (temp_space_parse_mode("compact") != TEMP_COMPACT || temp_space_parse_mode("gzip") != -1)
        return "temp_space_parse_mode";
    return NULL;
}

/* The store codec of a plan for `mode`, resuming a state of `state` runs. */
static store_codec resumed_codec(temp_mode mode, store_codec state)
{
    temp_plan p;
    errmsg err;
    temp_request rq = request("-", 0, mode);
    rq.state_found = 1;
    rq.state_codec = state;
    temp_space_plan(&rq, &p, &err);
    store_options so = { 0 };
    temp_space_store_options(&p, &so);
    return so.compression;
}

/* Uncompressed runs are plain groups now; a state written before them
 * holds one entry a record, and is resumed as it is, with or without
 * --temp-compression none.  Another format keeps the mode's own codec,
 * which the store then finds differs from the state's. */
static const char *check_resumed_codecs(void)
{
    temp_plan p;
    errmsg err;
    temp_request rq = request("-", 0, TEMP_NONE);
    temp_space_plan(&rq, &p, &err);
    if (p.codec != STORE_CODEC_PLAIN) return "uncompressed runs are not plain groups";
    if (resumed_codec(TEMP_AUTO, STORE_CODEC_NONE) != STORE_CODEC_NONE ||
        resumed_codec(TEMP_NONE, STORE_CODEC_NONE) != STORE_CODEC_NONE)
        return "a state of records one by one is not resumed as it is";
    if (resumed_codec(TEMP_AUTO, STORE_CODEC_PLAIN) != STORE_CODEC_PLAIN ||
        resumed_codec(TEMP_NONE, STORE_CODEC_PLAIN) != STORE_CODEC_PLAIN)
        return "a state of plain groups is not resumed as it is";
    if (resumed_codec(TEMP_COMPACT, STORE_CODEC_NONE) != STORE_CODEC_COLUMNS ||
        resumed_codec(TEMP_NONE, STORE_CODEC_COLUMNS) != STORE_CODEC_PLAIN)
        return "a forced format of another kind than the state's was not kept";
    return NULL;
}

/* -v's line names the layout the runs take, a resumed state's own included. */
static const char *check_report_names_layout(void)
{
    static const struct { temp_mode mode; store_codec state; const char *text; } cases[] = {
        { TEMP_NONE, STORE_CODEC_NONE, "none (one entry a record)" },
        { TEMP_NONE, STORE_CODEC_PLAIN, "none (records in plain groups)" },
        { TEMP_COMPACT, STORE_CODEC_COLUMNS, "compact (records in columns)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        temp_plan p;
        errmsg err;
        temp_request rq = request("-", 0, cases[i].mode);
        rq.state_found = 1;
        rq.state_codec = cases[i].state;
        if (temp_space_plan(&rq, &p, &err) < 0) return "a resumed state was refused";
        char *text = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&text, &len);
        if (!fp) return "open_memstream failed";
        temp_space_report(&p, fp);
        fclose(fp);
        int named = 0;  /* exactly its own layout's words, no other's */
        for (size_t j = 0; j < sizeof cases / sizeof cases[0]; j++)
            if (strstr(text, cases[j].text)) named += j == i ? 1 : 2;
        free(text);
        if (named != 1) return "-v's temp runs line does not name the runs' layout alone";
    }
    return NULL;
}

/* The disk speed that makes uncompressed runs the choice grows with the
 * threads that would share compact runs' encoding, from two threads' worth
 * (above a hard disk) up to the cap, without overflow. */
static const char *check_fast_disk_per_thread(void)
{
    static const struct { int threads, mb_s; } cases[] = {
        { 0, 300 }, { 1, 300 }, { 2, 300 }, { 3, 450 }, { 4, 500 }, { 8, 500 },
        { 1 << 30, 500 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (temp_space_fast_disk_mb_s(cases[i].threads) != cases[i].mb_s)
            return "the fast disk's speed is not 150 MB/s a thread, from 300 to 500";
    return NULL;
}

int main(void)
{
    if (!scratch_dir_make(dir, sizeof dir, "test_temp_space")) {
        perror(dir);
        return 1;
    }
    /* 8 MB of text: BGZF measures its expansion, SAM counts itself. */
    report("temp_space_bgzf_expansion", check_file_estimate("in.bam", 1, 10, 1000));
    report("temp_space_sam_text", check_file_estimate("in.sam", 0, 1.2, 1.3));
    report("temp_space_plain_gzip", check_file_estimate("in.gz", -1, 4.9, 5.1));
    report("temp_space_refusal_message", check_refusal());
    report("temp_space_small_hint", check_small_hint());
    report("temp_space_file_beats_hint", check_file_beats_hint());
    report("temp_space_modes", check_modes());
    report("temp_space_resumed_codecs", check_resumed_codecs());
    report("temp_space_report_names_layout", check_report_names_layout());
    report("temp_space_fast_disk_per_thread", check_fast_disk_per_thread());
    rmdir(dir);
    return report_summary();
}
