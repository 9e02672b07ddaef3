/* store/temp_space.c -- see store/temp_space.h.
 *
 * All sizes are first estimated as uncompressed run bytes (the records as
 * the store holds them, keys included), then divided by the compression
 * ratio expected of a format.  Where the input says nothing about how well
 * its records compress, the guesses lean towards needing more space: a
 * refusal names -T, while a sort that starts and fills the disk has wasted
 * its time.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <htslib/bgzf.h>
#include <htslib/hfile.h>
#include <htslib/hts.h>
#include <htslib/hts_log.h>
#include "store/temp_space.h"
#include "store/store_merge.h"
#include "disk/disk_speed.h"
#include "util/human_number.h"

/* Run bytes per byte of BAM record: a key of ~21 bytes, the in-memory core
 * (48 bytes against BAM's 36) and the SST's per-entry bytes; short reads pay
 * relatively more. */
#define RECORD_OVERHEAD 1.25
/* Compact run bytes per byte of BGZF input: records in columns (codec/group_codec.h)
 * take well under a level-6 BAM (doc/DESIGN.md); the factor leaves room for
 * data that compresses less well in columns than in deflate. */
#define COMPACT_PER_BGZF_BYTE 0.9
/* Compact runs' ratio where the input cannot tell (-s, SAM, CRAM, pipes):
 * below the short-read benchmark's, for long reads' noisier qualities. */
#define COMPACT_RATIO_GUESS 2.5
/* Run bytes per byte of input that is not BGZF: SAM text is larger than
 * its records; CRAM and plain gzip are guesses of their usual ratios. */
#define SAM_EXPANSION 1.0
#define GZIP_EXPANSION 4.0
#define CRAM_EXPANSION 5.0
/* RocksDB's own files (MANIFEST, OPTIONS, LOG, ...) and a run being written. */
#define STORE_FIXED_BYTES (1ULL << 20)

static const char *const mode_names[] = { "auto", "compact", "none", "lz4", "snappy", "zstd" };

int temp_space_parse_mode(const char *name)
{
    for (size_t i = 0; i < sizeof mode_names / sizeof *mode_names; i++)
        if (!strcmp(name, mode_names[i])) return (int)i;
    return -1;
}

/* Uncompressed bytes per file byte over the BGZF blocks that end within
 * the first TEMP_SAMPLE_BYTES, as htslib's reader decodes them; 0 if there
 * are none.  The sample ends at the first block that does not decode. */
static double bgzf_expansion(BGZF *bg)
{
    uint64_t in = 0, out = 0;
    for (;;) {
        off_t start = htell(bg->fp);
        if (bgzf_read_block(bg) < 0) break;
        off_t end = htell(bg->fp);
        if (end == start || end > (off_t)TEMP_SAMPLE_BYTES) break;
        in += (uint64_t)(end - start);
        out += (uint64_t)bg->block_length;
    }
    return in ? (double)out / (double)in : 0;
}

/* The file's expansion (run bytes per file byte, before RECORD_OVERHEAD):
 * its BGZF blocks', else a guess by its kind; and the compact runs' ratio.
 * Returns 0, or -1 if it cannot be read.  Closes hf. */
static int file_expansion(hFILE *hf, double *expansion, double *ratio)
{
    char magic[4];
    ssize_t n = hpeek(hf, magic, sizeof magic);
    BGZF *bg = n >= 0 ? bgzf_hopen(hf, "r") : NULL;
    if (!bg) {
        hclose_abruptly(hf);
        return -1;
    }
    int kind = bgzf_compression(bg);
    *expansion = kind == bgzf ? bgzf_expansion(bg) : 0;
    bgzf_close(bg);
    *ratio = COMPACT_RATIO_GUESS;
    if (*expansion > 0) {
        *ratio = *expansion * RECORD_OVERHEAD / COMPACT_PER_BGZF_BYTE;
        if (*ratio < 1) *ratio = 1;
    } else if (n >= 4 && !memcmp(magic, "CRAM", 4)) {
        *expansion = CRAM_EXPANSION;
    } else if (kind != no_compression) {
        *expansion = GZIP_EXPANSION;
    } else {
        *expansion = SAM_EXPANSION;
    }
    return 0;
}

/* The start of a regular file: its data bytes and compact ratio.
 * Returns 0, or -1 if the file says nothing (not regular, unreadable).
 * A named pipe is never opened here: closing it again could cost its
 * writer a SIGPIPE before the real reader opens it.  htslib is silent
 * meanwhile: damage is for the sort's own reader to report, once. */
static int estimate_from_file(const char *fn, uint64_t *data, double *ratio)
{
    struct stat st;
    if (stat(fn, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
    int fd = open(fn, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -1;
    hFILE *hf = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? hdopen(fd, "r") : NULL;
    if (!hf) {
        close(fd);
        return -1;
    }
    enum htsLogLevel level = hts_get_log_level();
    hts_set_log_level(HTS_LOG_OFF);
    double expansion;
    int r = file_expansion(hf, &expansion, ratio);
    hts_set_log_level(level);
    if (r < 0) return -1;
    *data = (uint64_t)((double)st.st_size * expansion * RECORD_OVERHEAD);
    return 0;
}

static double mode_ratio(temp_mode mode, double compact_ratio)
{
    switch (mode) {
    case TEMP_NONE: return 1;
    case TEMP_LZ4:
    case TEMP_SNAPPY: return 1 + (compact_ratio - 1) / 2;   /* no entropy coding */
    default: return compact_ratio;
    }
}

/* Peak bytes of uncompressed runs: nothing if the data fits in memory;
 * else all runs, and twice that when background merges will run (a merge
 * starts once `width` runs wait).  A merge's inputs stay until its output
 * is whole, and merges fall behind on a slow disk, so near the end of the
 * load most runs can be inputs of running merges; as each byte is in at
 * most one merge at a time, twice the runs bounds the peak. */
static uint64_t peak_run_bytes(const temp_request *rq, uint64_t data)
{
    if ((double)data * TEMP_HOLD_SLACK <= (double)rq->memory || data <= rq->run_bytes) return 0;
    uint64_t width = (uint64_t)store_merge_width(data, rq->run_bytes, rq->size_hint > 0);
    return width && data >= width * rq->run_bytes ? 2 * data : data;
}

/* The one place where the option's modes and the store's codecs meet. */
static const store_codec codec_of_mode[] = {
    [TEMP_AUTO] = STORE_CODEC_COLUMNS, [TEMP_COMPACT] = STORE_CODEC_COLUMNS,
    [TEMP_NONE] = STORE_CODEC_PLAIN, [TEMP_LZ4] = STORE_CODEC_LZ4,
    [TEMP_SNAPPY] = STORE_CODEC_SNAPPY, [TEMP_ZSTD] = STORE_CODEC_ZSTD,
};

/* A state's runs' mode: the records one by one are uncompressed runs too,
 * as states written before plain groups hold them. */
static temp_mode mode_of_codec(store_codec c)
{
    if (c == STORE_CODEC_NONE) return TEMP_NONE;
    for (int m = TEMP_COMPACT; m <= TEMP_ZSTD; m++)
        if (codec_of_mode[m] == c) return (temp_mode)m;
    return TEMP_COMPACT;
}

/* The data of every input file, and the compact runs' ratio over all of
 * them; -1 if an input is a stream or says nothing (then -s stands in). */
static int estimate_from_files(const temp_request *rq, uint64_t *data, double *ratio)
{
    uint64_t sum = 0;
    double compact = 0;
    for (int i = 0; i < rq->n_in; i++) {
        uint64_t one;
        double r;
        if (!strcmp(rq->in_fns[i], "-") || estimate_from_file(rq->in_fns[i], &one, &r) < 0)
            return -1;
        sum += one;
        compact += (double)one / r;
    }
    *data = sum;
    if (compact > 0) *ratio = (double)sum / compact;
    return 0;
}

static void estimate(const temp_request *rq, temp_plan *p, double *ratio)
{
    uint64_t data = 0;
    *ratio = COMPACT_RATIO_GUESS;
    /* A file's own size beats -s, which is a guess made for merging (and
     * may be far off: it only moves speed); -s still plans the merges. */
    if (estimate_from_files(rq, &data, ratio) == 0) {
        p->source = rq->n_in > 1 ? "the input files" : "the input file";
    } else if (rq->size_hint) {
        data = (uint64_t)((double)rq->size_hint * RECORD_OVERHEAD);
        p->source = "-s";
    }
    if (!p->source) return;
    p->data_bytes = data;
    uint64_t runs = peak_run_bytes(rq, data);
    p->need_none = runs + STORE_FIXED_BYTES;
    p->need_compact = (uint64_t)((double)runs / *ratio) + STORE_FIXED_BYTES;
}

/* The directories, those with most room when there are too many, and
 * their room together. */
static void find_free_space(const temp_request *rq, temp_plan *p)
{
    temp_dirs_measure(&p->dirs, rq->dirs, rq->n_dirs);
    int all = p->dirs.n;
    if (rq->max_dirs > 0) temp_dirs_keep(&p->dirs, rq->max_dirs);
    p->dirs_dropped = all - p->dirs.n;
    p->free_bytes = temp_dirs_free(&p->dirs, &p->free_known);
}

/* The slowest directory's direct writes in MB/s; -1 if none could tell
 * (tmpfs refuses direct I/O: memory, and fast). */
static double slowest_disk_mb_s(const temp_dirs *dirs)
{
    double slowest = -1;
    for (int i = 0; i < dirs->n; i++) {
        double mb_s = disk_speed_write_mb_s(dirs->dir[i].dir);
        if (mb_s >= 0 && (slowest < 0 || mb_s < slowest)) slowest = mb_s;
    }
    return slowest;
}

/* Without --temp-compression: compact runs, which take a fraction of the
 * space and win wherever the disk is slow.  At levels 0 and 1 the output's
 * compression no longer hides the load, whose encoding of the runs then
 * shows: on a fast disk with room to spare, uncompressed runs are faster
 * (doc/DESIGN.md).  The disk's speed is measured only then.  Both are laid
 * out on the pool, but the spill thread alone writes every byte of a run:
 * with more than TEMP_NONE_MAX_THREADS threads, uncompressed runs' three
 * to four times the bytes would make that one thread bound the load. */
#define TEMP_NONE_MAX_THREADS 8

int temp_space_fast_disk_mb_s(int threads)
{
    if (threads < TEMP_FAST_DISK_MIN_THREADS) threads = TEMP_FAST_DISK_MIN_THREADS;
    /* Compared before multiplying: no -@ overflows it. */
    return threads > TEMP_FAST_DISK_MB_S / TEMP_FAST_DISK_MB_S_PER_THREAD
           ? TEMP_FAST_DISK_MB_S : TEMP_FAST_DISK_MB_S_PER_THREAD * threads;
}

static void choose_mode(const temp_request *rq, temp_plan *p)
{
    p->mode = TEMP_COMPACT;
    p->why = "compact runs are the default";
    if (rq->out_level <= 1 && rq->threads > TEMP_NONE_MAX_THREADS)
        p->why = "with more than 8 threads the spill thread, which writes every byte of a run, "
                 "would bound the load with uncompressed runs";
    if (rq->out_level > 1 || rq->threads > TEMP_NONE_MAX_THREADS || !p->source ||
        !p->free_known ||
        p->free_bytes / TEMP_ROOM_FOR_NONE < p->need_none)
        return;
    double mb_s = slowest_disk_mb_s(&p->dirs);
    p->disk_mb_s = mb_s;
    if (mb_s >= 0 && mb_s < temp_space_fast_disk_mb_s(rq->threads)) {
        p->why = "at output levels 0 and 1, uncompressed runs are faster only on a fast disk";
        return;
    }
    p->mode = TEMP_NONE;
    p->why = "at output levels 0 and 1, uncompressed runs are faster on a fast disk with "
             "room to spare";
}

/* Space as the messages show it: "4.2 MB", "83 GB". */
static void space_text(char *buf, size_t n, uint64_t bytes)
{
    human_number(buf, n, (double)bytes, "B", HUMAN_MB_GB);
}

/* "'/a' (1.0 GB free), '/b' (unknown free)" into buf; only the unused
 * places (temp_dirs_fit_runs()) if unused_only. */
static void list_free(const temp_dirs *dirs, int unused_only, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < dirs->n && at < n; i++) {
        const temp_dir *d = &dirs->dir[i];
        char free_s[32] = "unknown";
        if (unused_only && !d->unused) continue;
        if (d->free_known) space_text(free_s, sizeof free_s, d->free_bytes);
        int w = snprintf(buf + at, n - at, "%s'%s' (%s free%s)", at ? ", " : "", d->dir, free_s,
                         d->unused && !unused_only ? ", too little for a run" : "");
        if (w < 0) break;
        at += (size_t)w;
    }
}

/* A directory with room for less than one run of the chosen format gets
 * none: dealt one, it would fail a sort that fits in the others. */
static void leave_out_small_dirs(const temp_request *rq, temp_plan *p, double ratio)
{
    p->run_estimate = (uint64_t)((double)rq->run_bytes / mode_ratio(p->mode, ratio));
    p->dirs_unused = temp_dirs_fit_runs(&p->dirs, p->run_estimate);
    if (!p->dirs_unused) return;
    p->free_bytes = temp_dirs_free(&p->dirs, &p->free_known);
    if (rq->state_found) p->free_bytes += rq->state_bytes;
}

int temp_space_left_out(const temp_plan *p, char *buf, size_t n)
{
    char each[ERRMSG_MAX / 2], run_s[32];
    if (!p->dirs_unused) return 0;
    list_free(&p->dirs, 1, each, sizeof each);
    space_text(run_s, sizeof run_s, p->run_estimate);
    snprintf(buf, n, "no runs go to %s: a run takes about %s", each, run_s);
    return p->dirs_unused;
}

static int refuse(const temp_plan *p, uint64_t need, const char *option, errmsg *err)
{
    char need_s[32], free_s[32], each[ERRMSG_MAX / 2];
    space_text(need_s, sizeof need_s, need);
    space_text(free_s, sizeof free_s, p->free_bytes);
    if (p->dirs.n == 1)
        return errmsg_set(err, "not enough space for temporary data in '%s': about %s needed "
                          "(%s runs, estimated from %s), %s free; use %s to put it on a "
                          "larger file system", p->dirs.dir[0].dir, need_s,
                          mode_names[p->mode], p->source, free_s, option);
    list_free(&p->dirs, 0, each, sizeof each);
    return errmsg_set(err, "not enough space for temporary data in %s: about %s needed (%s runs, "
                      "estimated from %s), %s free in all; use %s to add or pick larger file "
                      "systems", each, need_s, mode_names[p->mode], p->source, free_s, option);
}

int temp_space_plan(const temp_request *rq, temp_plan *p, errmsg *err)
{
    double ratio;
    memset(p, 0, sizeof *p);
    p->threads = rq->threads > 1 ? rq->threads : 1;
    estimate(rq, p, &ratio);
    find_free_space(rq, p);
    if (rq->state_found) p->free_bytes += rq->state_bytes;
    p->mode = rq->mode;
    p->why = "--temp-compression says so";
    if (rq->mode == TEMP_AUTO && rq->state_found) {
        /* Another format would discard the state's runs. */
        p->mode = mode_of_codec(rq->state_codec);
        p->why = "the state to resume holds runs of this format";
    } else if (rq->mode == TEMP_AUTO) {
        choose_mode(rq, p);
    }
    p->codec = rq->state_found && mode_of_codec(rq->state_codec) == p->mode ? rq->state_codec
                                                                            : codec_of_mode[p->mode];
    leave_out_small_dirs(rq, p, ratio);
    if (!p->source || !p->free_known) return 0;
    uint64_t need = p->mode == TEMP_NONE ? p->need_none
                  : p->mode == TEMP_COMPACT ? p->need_compact
                  : (uint64_t)((double)(p->need_none - STORE_FIXED_BYTES) /
                               mode_ratio(p->mode, ratio)) + STORE_FIXED_BYTES;
    if (need <= p->free_bytes) return 0;
    return refuse(p, need, rq->dir_option ? rq->dir_option : "-T", err);
}

void temp_space_store_options(const temp_plan *p, store_options *so)
{
    so->compression = p->codec;
    /* Helper threads take the codecs' compression off the spill thread,
     * which the loader would otherwise wait for. */
    so->compression_threads = p->mode == TEMP_NONE ? 0 : p->threads;
}

void temp_space_report(const temp_plan *p, FILE *fp)
{
    char free_s[32] = "unknown", none_s[32], compact_s[32];
    if (p->free_known) space_text(free_s, sizeof free_s, p->free_bytes);
    fprintf(fp, "[rocksort] temp runs: %s%s, as %s; ", mode_names[p->mode],
            p->codec == STORE_CODEC_COLUMNS ? " (records in columns)"
            : p->codec == STORE_CODEC_PLAIN ? " (records in plain groups)"
            : p->codec == STORE_CODEC_NONE ? " (one entry a record)" : "", p->why);
    /* The measurement behind the choice: a busy disk measures slow.  Whole
     * MB/s rounded down, so the figure printed is on the side it was judged. */
    if (p->disk_mb_s > 0)
        fprintf(fp, "the slowest temp directory took direct writes at %ld MB/s (fast: %d or "
                "more); ", (long)p->disk_mb_s, temp_space_fast_disk_mb_s(p->threads));
    else if (p->disk_mb_s < 0)
        fprintf(fp, "the disk's speed unknown (direct writes refused: tmpfs, memory); ");
    if (p->source) {
        space_text(none_s, sizeof none_s, p->need_none);
        space_text(compact_s, sizeof compact_s, p->need_compact);
        fprintf(fp, "peak estimated from %s: %s uncompressed, %s compact; ",
                p->source, none_s, compact_s);
    } else {
        fprintf(fp, "no size estimate; ");
    }
    if (p->dirs.n == 1) {
        fprintf(fp, "%s free in '%s'\n", free_s, p->dirs.dir[0].dir);
        return;
    }
    char each[ERRMSG_MAX];
    list_free(&p->dirs, 0, each, sizeof each);
    fprintf(fp, "%s free in all: %s\n", free_s, each);
}
