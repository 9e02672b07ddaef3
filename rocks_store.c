/* rocks_store.c -- see rocks_store.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "rocks_store.h"
#include "merge_plan.h"
#include "cleanup.h"
#include "temp_env.h"
#include "clock_util.h"

/* RocksDB's InfoLogLevel FATAL_LEVEL (c.h has no names for the levels). */
#define STORE_LOG_FATAL 4

/* Percent by which neighbouring runs may differ and still be merged. */
#define MERGE_SIZE_RATIO 10

struct rocks_store {
    char *dir;
    rocksdb_t *db;
    rocksdb_column_family_handle_t *part[STORE_MAX_PARTS];
    int n_parts;                /* column families created */
    int parts_used;             /* of those, how many hold runs */
    rocksdb_options_t *opts;
    rocksdb_env_t *env;
    rocksdb_envoptions_t *envopts;
    rocksdb_block_based_table_options_t *table;
    rocksdb_universal_compaction_options_t *universal;
    rocksdb_ingestexternalfileoptions_t *ingest;
    rocksdb_sstfilewriter_t *writer;
    rocksdb_readoptions_t *read;
    char *run_path;
    uint64_t runs, bytes_written;
    files_plan files;           /* the open-file budget's split */
    int compaction_forced;
    int merges_planned;         /* a size hint or estimate set up background merges */
    int catch_up_runs;          /* runs merged at settle time, after the load */
    int direct_io;              /* runs are read (and merged) bypassing the page cache */
    uint64_t run_bytes;         /* expected size of one run */
};

static const char *const part_names[STORE_MAX_PARTS] = { "default", "part1", "part2", "part3" };

static char *msg(const char *fmt, const char *a, const char *b)
{
    char *m = NULL;
    if (asprintf(&m, fmt, a, b) < 0) m = NULL;
    return m;
}

/* RocksDB's own errors are malloc'd strings: wrap them with our context. */
static char *wrap_rocks_error(const char *what, char *rocks_err)
{
    char *m = msg("%s: %s", what, rocks_err);
    free(rocks_err);
    return m;
}

static char *make_temp_dir(const char *prefix, char **err)
{
    struct stat st;
    char *tmpl = NULL;
    int is_dir = stat(prefix, &st) == 0 && S_ISDIR(st.st_mode);
    if (asprintf(&tmpl, is_dir ? "%s/samtools-rocksort.XXXXXX" : "%s.rocksort.XXXXXX",
                 prefix) < 0)
        return NULL;
    if (!cleanup_mkdtemp(tmpl)) {
        *err = msg("cannot create temporary directory '%s': %s", tmpl, strerror(errno));
        free(tmpl);
        return NULL;
    }
    return tmpl;
}

/* Background merges follow merge_plan_for(), within the open-file budget
 * (files_plan_for).  Similar-size picking keeps merged runs, each many
 * times a fresh one, out of later merges: each byte is rewritten once.
 * Without a size hint compaction stays off, unless the runs would need more
 * open files than the process may have (see store_run_end). */
static uint64_t runs_for(const rocks_store *st, uint64_t size)
{
    return st->run_bytes ? (size + st->run_bytes - 1) / st->run_bytes : 1;
}

static void configure_compaction(rocks_store *st, const store_options *o)
{
    merge_plan p = { 2, st->files.merge_width, st->files.max_runs };
    st->run_bytes = o->run_bytes;
    st->merges_planned = o->size_hint > 0;
    if (o->size_hint > 0) p = merge_plan_for(runs_for(st, o->size_hint));
    else rocksdb_options_set_disable_auto_compactions(st->opts, 1);
    p = fit_to_files(&st->files, p);
    /* Merged runs stay in level 0 next to fresh ones. */
    rocksdb_options_set_num_levels(st->opts, 1);
    st->universal = rocksdb_universal_compaction_options_create();
    rocksdb_universal_compaction_options_set_min_merge_width(st->universal, p.min_width);
    rocksdb_universal_compaction_options_set_max_merge_width(st->universal, p.max_width);
    rocksdb_universal_compaction_options_set_size_ratio(st->universal, MERGE_SIZE_RATIO);
    rocksdb_universal_compaction_options_set_stop_style(st->universal,
                                                        rocksdb_similar_size_compaction_stop_style);
    /* Never rewrite everything to bound space: temp data is short-lived. */
    rocksdb_universal_compaction_options_set_max_size_amplification_percent(st->universal, 1 << 30);
    rocksdb_options_set_compaction_style(st->opts, rocksdb_universal_compaction);
    rocksdb_options_set_universal_compaction_options(st->opts, st->universal);
    rocksdb_options_set_level0_file_num_compaction_trigger(st->opts, p.trigger);
}

/* Whether files in dir can be opened for direct I/O (tmpfs before Linux
 * 6.6 refuses it, and RocksDB would then fail to open every run). */
static int direct_io_works(const char *dir)
{
    char *probe = NULL;
    if (asprintf(&probe, "%s/direct-io-probe", dir) < 0) return 0;
    int fd = open(probe, O_CREAT | O_EXCL | O_WRONLY | O_DIRECT, 0600);
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    free(probe);
    return fd >= 0;
}

/* Runs bypass the page cache.  RocksDB's SST writer drops each run from the
 * cache as it writes it (its advice, which we follow), and the readout and
 * the background merges read them with direct I/O.  Each temp byte is
 * written and read once, so caching it only costs: new page-cache pages
 * (slow to touch first on some machines, the benchmark VM among them),
 * dirty-page throttling once the runs outgrow the kernel's writeback
 * limits, and other programs' cached files.  Why and what it saved:
 * doc/DESIGN.md and bench/RESULTS.md. */
static void configure_direct_io(rocks_store *st)
{
    st->direct_io = direct_io_works(st->dir);
    if (!st->direct_io) return;
    rocksdb_options_set_use_direct_reads(st->opts, 1);
    rocksdb_options_set_use_direct_io_for_flush_and_compaction(st->opts, 1);
    rocksdb_options_compaction_readahead_size(st->opts, STORE_DIRECT_READAHEAD);
}

/* The codec's level and helper threads (temp_space.c picks them); window
 * bits (-14), strategy and dictionary stay RocksDB's defaults. */
static void configure_codec(rocks_store *st, const store_options *o)
{
    if (o->compression_level)
        rocksdb_options_set_compression_options(st->opts, -14, o->compression_level, 0, 0);
    if (o->compression != rocksdb_no_compression && o->compression_threads > 1)
        rocksdb_options_set_compression_options_parallel_threads(st->opts, o->compression_threads);
}

static void configure(rocks_store *st, const store_options *o)
{
    st->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(st->opts, 1);
    rocksdb_options_set_error_if_exists(st->opts, 1);
    rocksdb_options_set_compression(st->opts, o->compression);
    configure_codec(st, o);
    /* Only fatal messages in RocksDB's LOG file.  Its per-run lines are of
     * no use here, and on a full temp file system a LOG line that failed
     * made RocksDB 7.8 abort on an assertion at the next one (in the
     * ingestion's statistics) instead of returning the error. */
    rocksdb_options_set_info_log_level(st->opts, STORE_LOG_FATAL);
    /* Each level-0 run is an open file during the readout and while merged. */
    st->files = files_plan_for(o->max_open_files, o->background_threads);
    rocksdb_options_set_max_open_files(st->opts, st->files.table_cache);
    /* One shard: a sharded cache holds up to its capacity per shard, not
     * in all (64 shards kept 64 runs open under a capacity of 10). */
    rocksdb_options_set_table_cache_numshardbits(st->opts, 0);
    /* Ingested runs all overlap, so they pile up in level 0 by design:
     * never let that count throttle or stop us. */
    rocksdb_options_set_level0_slowdown_writes_trigger(st->opts, 1 << 30);
    rocksdb_options_set_level0_stop_writes_trigger(st->opts, 1 << 30);
    rocksdb_options_set_max_background_jobs(st->opts, st->files.merge_threads + 1);
    rocksdb_options_set_target_file_size_base(st->opts, 1ULL << 40);

    st->table = rocksdb_block_based_options_create();
    /* Large blocks: the data is read once, sequentially. */
    rocksdb_block_based_options_set_block_size(st->table, 256 << 10);
    rocksdb_block_based_options_set_no_block_cache(st->table, 1);
    rocksdb_options_set_block_based_table_factory(st->opts, st->table);

    configure_compaction(st, o);

    /* RocksDB's own environment, but the database's files are never synced
     * (see temp_env.cc).  NULL only when out of memory: store_open fails. */
    st->env = temp_env_create();
    if (st->env) {
        rocksdb_env_set_background_threads(st->env, st->files.merge_threads);
        rocksdb_options_set_env(st->opts, st->env);
    }
    st->envopts = rocksdb_envoptions_create();

    st->ingest = rocksdb_ingestexternalfileoptions_create();
    rocksdb_ingestexternalfileoptions_set_move_files(st->ingest, 1);
}

/* One column family per part, all with the same options. */
static void open_parts(rocks_store *st, int parts, char **rerr)
{
    const rocksdb_options_t *per_part[STORE_MAX_PARTS];
    st->n_parts = parts < 1 ? 1 : parts > STORE_MAX_PARTS ? STORE_MAX_PARTS : parts;
    for (int i = 0; i < st->n_parts; i++) per_part[i] = st->opts;
    rocksdb_options_set_create_missing_column_families(st->opts, 1);
    st->db = rocksdb_open_column_families(st->opts, st->dir, st->n_parts, part_names,
                                          per_part, st->part, rerr);
}

rocks_store *store_open(const char *tmp_prefix, const store_options *o, char **err)
{
    *err = NULL;
    rocks_store *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    cleanup_hold_signals();
    st->dir = make_temp_dir(tmp_prefix, err);
    if (!st->dir) {
        cleanup_release_signals();
        free(st);
        return NULL;
    }
    configure(st, o);
    configure_direct_io(st);
    char *rerr = NULL;
    if (st->env) open_parts(st, o->parts, &rerr);
    cleanup_release_signals();
    if (!st->db) {
        *err = rerr ? wrap_rocks_error(st->dir, rerr) : msg("%s: %s", st->dir, "out of memory");
        store_close(st, 0);
        return NULL;
    }
    return st;
}

static uint64_t part_property(rocks_store *st, int part, const char *name)
{
    char *v = rocksdb_property_value_cf(st->db, st->part[part], name);
    uint64_t n = v ? strtoull(v, NULL, 10) : 0;
    free(v);
    return n;
}

/* A per-part count, summed over the parts. */
static uint64_t int_property(rocks_store *st, const char *name)
{
    uint64_t n = 0;
    for (int i = 0; i < st->n_parts; i++) n += part_property(st, i, name);
    return n;
}

/* Database-wide: any part's handle gives the same count. */
static uint64_t running_merges(rocks_store *st)
{
    return part_property(st, 0, "rocksdb.num-running-compactions");
}

/* Options change for every part alike.  Returns 0, or -1 if refused. */
static int set_part_options(rocks_store *st, int count, const char *const *keys,
                            const char *const *vals)
{
    int ret = 0;
    for (int i = 0; i < st->n_parts; i++) {
        char *rerr = NULL;
        rocksdb_set_options_cf(st->db, st->part[i], count, keys, vals, &rerr);
        if (rerr) ret = -1;
        free(rerr);
    }
    return ret;
}

static void set_auto_compaction(rocks_store *st, int on)
{
    const char *keys[1] = { "disable_auto_compactions" };
    const char *vals[1] = { on ? "false" : "true" };
    set_part_options(st, 1, keys, vals);
}

/* Turns background merging on: a merge starts once `trigger` runs exist and
 * takes min_width to max_width of them, neighbours in age whose sizes
 * differ by at most size_ratio percent. */
static int start_merging(rocks_store *st, int trigger, int min_width, int max_width,
                         int size_ratio)
{
    char trig[24], universal[160];
    snprintf(trig, sizeof trig, "%d", trigger);
    snprintf(universal, sizeof universal,
             "{min_merge_width=%d;max_merge_width=%d;size_ratio=%d;}",
             min_width, max_width, size_ratio);
    const char *keys[] = { "level0_file_num_compaction_trigger", "compaction_options_universal",
                           "disable_auto_compactions" };
    const char *vals[] = { trig, universal, "false" };
    return set_part_options(st, 3, keys, vals);
}

int store_plan_merges(rocks_store *st, uint64_t size_estimate)
{
    uint64_t t = runs_for(st, size_estimate);
    if (t <= STORE_MERGE_MIN_RUNS) return 0;
    merge_plan p = fit_to_files(&st->files, merge_plan_for(t));
    if (start_merging(st, p.trigger, p.min_width, p.max_width, MERGE_SIZE_RATIO) < 0) return -1;
    st->merges_planned = 1;
    return p.min_width;
}

/* Merges runs of similar size (a merged run is not taken again with fresh
 * ones), as many at once as a merge may keep open, while more than `keep`
 * runs are left.  Each part merges its own runs, so each keeps its share.
 * When no runs are similar, RocksDB merges the newest once a part holds
 * more runs than the trigger, down to the trigger. */
static int start_merging_to_fit(rocks_store *st, int keep)
{
    int parts = st->parts_used > 1 ? st->parts_used : 1;
    int per_part = keep / parts > 2 ? keep / parts : 2;
    return start_merging(st, per_part, 2, st->files.merge_width, MERGE_SIZE_RATIO);
}

/* Too many runs for the open-file limit and no merges planned: start them. */
static void force_compaction(rocks_store *st)
{
    st->compaction_forced = 1;
    start_merging_to_fit(st, st->files.max_runs / 2);
}

int store_merge_width(uint64_t size, uint64_t run_bytes, int hinted)
{
    uint64_t t = run_bytes ? (size + run_bytes - 1) / run_bytes : 1;
    if (!hinted && t <= STORE_MERGE_MIN_RUNS) return 0;
    return merge_plan_for(t).trigger;
}

int store_run_begin(rocks_store *st, char **err)
{
    /* RocksDB counts per key in a thread-local perf context, and each count
     * is a __tls_get_addr call through the shared library: a visible share
     * of the writing thread's CPU.  The level is per thread. */
    rocksdb_set_perf_level(rocksdb_disable);
    free(st->run_path);
    if (asprintf(&st->run_path, "%s/run-%06llu.sst", st->dir,
                 (unsigned long long)st->runs) < 0) {
        st->run_path = NULL;
        *err = msg("%s%s", "out of memory", "");
        return -1;
    }
    char *rerr = NULL;
    st->writer = rocksdb_sstfilewriter_create(st->envopts, st->opts);
    rocksdb_sstfilewriter_open(st->writer, st->run_path, &rerr);
    if (rerr) {
        *err = wrap_rocks_error(st->run_path, rerr);
        return -1;
    }
    return 0;
}

int store_run_put(rocks_store *st, const uint8_t *key, size_t klen,
                  const uint8_t *val, size_t vlen, char **err)
{
    char *rerr = NULL;
    rocksdb_sstfilewriter_put(st->writer, (const char *)key, klen,
                              (const char *)val, vlen, &rerr);
    if (rerr) {
        *err = wrap_rocks_error(st->run_path, rerr);
        return -1;
    }
    return 0;
}

/* Runs are dealt in turn while nothing merges them; a merge only takes
 * runs of one part, so with merges planned they all go to part 0. */
static int next_part(const rocks_store *st)
{
    return st->merges_planned ? 0 : (int)(st->runs % (uint64_t)st->n_parts);
}

int store_run_end(rocks_store *st, char **err)
{
    char *rerr = NULL;
    uint64_t size = 0;
    rocksdb_sstfilewriter_finish(st->writer, &rerr);
    if (!rerr) rocksdb_sstfilewriter_file_size(st->writer, &size);
    rocksdb_sstfilewriter_destroy(st->writer);
    st->writer = NULL;
    if (rerr) {
        *err = wrap_rocks_error(st->run_path, rerr);
        return -1;
    }
    const char *files[1] = { st->run_path };
    int part = next_part(st);
    rocksdb_ingest_external_file_cf(st->db, st->part[part], files, 1, st->ingest, &rerr);
    if (rerr) {
        *err = wrap_rocks_error(st->run_path, rerr);
        return -1;
    }
    st->runs++;
    if (part >= st->parts_used) st->parts_used = part + 1;
    st->bytes_written += size;
    if (!st->compaction_forced && !st->merges_planned &&
        int_property(st, "rocksdb.num-files-at-level0") >= (uint64_t)st->files.max_runs / 2)
        force_compaction(st);
    return 0;
}

static void nap(void)
{
    struct timespec t = { 0, 20 * 1000 * 1000 };
    nanosleep(&t, NULL);
}

static void wait_for_running_merges(rocks_store *st)
{
    while (running_merges(st) > 0) nap();
}

/* Lets the merges set up by start that run until at most target runs are
 * left, or until none has run for a second; then stops merging.  Returns
 * the runs it removed, or -1 if RocksDB refused the options. */
static int merge_until(rocks_store *st, int target, int start)
{
    int before = store_sorted_runs(st);
    if (start < 0) return -1;
    for (int idle = 0; store_sorted_runs(st) > target && idle < 50; idle++) {
        nap();
        if (running_merges(st) > 0) idle = 0;
    }
    set_auto_compaction(st, 0);
    wait_for_running_merges(st);
    int removed = before - store_sorted_runs(st);
    if (removed > 0) st->catch_up_runs += removed + 1;
    return removed;
}

/* The most runs the readout may merge: those the open-file budget lets it
 * keep open, and with background merges planned, 2*sqrt(T) of the T runs
 * written (when above STORE_MERGE_MIN_RUNS). */
static int readout_runs(const rocks_store *st)
{
    int target = st->files.max_runs;
    if (st->merges_planned && st->runs > STORE_MERGE_MIN_RUNS) {
        int budget = (int)floor(2.0 * sqrt((double)st->runs));
        if (budget < target) target = budget;
    }
    return target;
}

/* Background merges fall behind when input arrives faster than one thread
 * can rewrite it (a file on busy cores), and without a plan they merge
 * only what the open-file limit demands.  Merge down to readout_runs():
 * the newest (smallest) runs in one merge when a merge may hold them all
 * open at once, else in merges of similar runs, which rewrite each byte a
 * few times rather than once per merge. */
static void merge_down_to_budget(rocks_store *st)
{
    int target = readout_runs(st), n = store_sorted_runs(st);
    if (n <= target) return;
    int width = n - target + 1;
    if (st->parts_used <= 1 && width <= st->files.merge_width)
        merge_until(st, target, start_merging(st, target + 1, width, width, 1 << 20));
    while (store_sorted_runs(st) > target)
        if (merge_until(st, target, start_merging_to_fit(st, target)) <= 0) return;
}

double store_settle(rocks_store *st)
{
    double t0 = now_seconds();
    set_auto_compaction(st, 0);
    wait_for_running_merges(st);
    merge_down_to_budget(st);
    return now_seconds() - t0;
}

int store_sorted_runs(rocks_store *st)
{
    /* One level (see configure_compaction): every run is a level-0 file. */
    return (int)int_property(st, "rocksdb.num-files-at-level0");
}

uint64_t store_runs_ingested(const rocks_store *st) { return st->runs; }
int store_catch_up_runs(const rocks_store *st) { return st->catch_up_runs; }
uint64_t store_bytes_written(const rocks_store *st) { return st->bytes_written; }
const char *store_path(const rocks_store *st) { return st->dir; }
int store_direct_io(const rocks_store *st) { return st && st->direct_io; }

int store_parts(const rocks_store *st) { return st->parts_used; }

rocksdb_iterator_t *store_iter(rocks_store *st, int part, size_t readahead)
{
    if (!st->read) st->read = rocksdb_readoptions_create();
    rocksdb_readoptions_set_fill_cache(st->read, 0);
    rocksdb_readoptions_set_readahead_size(st->read, readahead);
    return rocksdb_create_iterator_cf(st->db, st->read, st->part[part]);
}

void store_close(rocks_store *st, int keep)
{
    if (!st) return;
    if (st->writer) rocksdb_sstfilewriter_destroy(st->writer);
    for (int i = 0; i < st->n_parts; i++)
        if (st->part[i]) rocksdb_column_family_handle_destroy(st->part[i]);
    if (st->db) rocksdb_close(st->db);
    if (!keep && st->dir) {
        char *rerr = NULL;
        rocksdb_destroy_db(st->opts, st->dir, &rerr);
        free(rerr);
        cleanup_remove_path(st->dir);
    }
    if (st->dir) cleanup_forget(st->dir);
    if (st->read) rocksdb_readoptions_destroy(st->read);
    if (st->ingest) rocksdb_ingestexternalfileoptions_destroy(st->ingest);
    if (st->opts) rocksdb_options_destroy(st->opts);
    if (st->table) rocksdb_block_based_options_destroy(st->table);
    if (st->universal) rocksdb_universal_compaction_options_destroy(st->universal);
    if (st->envopts) rocksdb_envoptions_destroy(st->envopts);
    temp_env_destroy(st->env);
    free(st->run_path);
    free(st->dir);
    free(st);
}
