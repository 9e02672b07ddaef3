/* test_store_codec.c -- unit tests of the run writer's threads
 * (store/store.c, configure_codec()).
 *
 * RocksDB 7.8 starts its parallel-compression threads for every table it
 * writes when they are configured, whether or not it has anything to
 * compress.  Compact and uncompressed runs must not ask for them, at any
 * compression_threads; a block codec must (the check that the count can
 * see them).  Threads are counted in /proc/self/task while a run's writer
 * is open: RocksDB starts them with the table's builder and joins them
 * when the table is finished.  Prints "N passed, M failed".
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <htslib/sam.h>
#include "codec/record.h"
#include "store/store.h"
#include "unit_report.h"

#define THREADS_ASKED 4

static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* The threads a run's open writer adds under codec, or -1. */
static int writer_threads(store_codec codec, const char *dir)
{
    store_dir place = { dir, 1 };
    store_options so = { .dirs = &place, .n_dirs = 1, .max_open_files = -1,
                         .background_threads = 1, .parts = 1, .compression = codec,
                         .compression_threads = THREADS_ASKED };
    errmsg err;
    rocks_store *st = store_open(&so, &err);
    if (!st) return -1;
    int before = threads_now();
    int added = store_run_begin(st, &err) == 0 ? threads_now() - before : -1;
    /* One real record: a compact run encodes the record's fields. */
    bam1_t *b = bam_init1();
    uint8_t key[8] = { 0 }, val[256];
    if (!b || bam_set1(b, 2, "r1", 4, -1, -1, 0, 0, NULL, -1, -1, 0, 4, "ACGT", NULL, 0) < 0 ||
        record_value_len(b) > sizeof val)
        added = -1;
    else
        record_value_pack(b, val);
    if (added >= 0 && (store_run_put(st, key, sizeof key, val, record_value_len(b), &err) < 0 ||
                       store_run_end(st, NULL, 0, &err) < 0))
        added = -1;
    bam_destroy1(b);
    store_close(st, 0);
    return added;
}

static const char *codec_without_threads(store_codec codec, const char *dir)
{
    static char problem[96];
    int added = writer_threads(codec, dir);
    if (added < 0) return "cannot write a run";
    if (added == 0) return NULL;
    snprintf(problem, sizeof problem, "an open run's writer started %d threads", added);
    return problem;
}

static const char *block_codec_threads(const char *dir)
{
    static char problem[96];
    int added = writer_threads(STORE_CODEC_LZ4, dir);
    if (added < 0) return "cannot write a run";
    if (added >= 2) return NULL;
    snprintf(problem, sizeof problem, "lz4 runs at %d threads started %d: the count sees nothing",
             THREADS_ASKED, added);
    return problem;
}

int main(void)
{
    /* run_tests.py runs this from the repository root: scratch in test/out/. */
    char dir[] = "test/out/test_store_codec.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("test_store_codec: cannot make a scratch directory");
        return 1;
    }
    report("uncompressed_runs_start_no_codec_threads", codec_without_threads(STORE_CODEC_NONE, dir));
    report("plain_group_runs_start_no_codec_threads", codec_without_threads(STORE_CODEC_PLAIN, dir));
    report("compact_runs_start_no_codec_threads", codec_without_threads(STORE_CODEC_COLUMNS, dir));
    report("block_codec_runs_start_codec_threads", block_codec_threads(dir));
    rmdir(dir);
    return report_summary();
}
