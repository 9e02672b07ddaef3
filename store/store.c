/* store/store.c -- the store's databases, one per temp directory: made,
 * configured, opened, closed and removed.  See store/store.h and
 * store/store_db_internal.h.
 *
 * Why one database per directory (doc/DESIGN.md, "Several temp
 * directories"): RocksDB's own way to spread files over directories,
 * db_paths and cf_paths, fills the paths in order by target size rather
 * than in turn, always ingests into the first path (a run written on
 * another disk would be copied there), and cf_paths cannot be set through
 * the C API.  A database of its own in each directory keeps every run, and
 * every run its merges write, on the disk it was dealt to, through the C
 * API alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "store/store_db_internal.h"
#include "store/store.h"
#include "store/store_run.h"
#include "store/store_merge.h"
#include "store/store_state.h"
#include "util/cleanup.h"
#include "util/name_fit.h"
#include "disk/temp_env.h"
#include "store/run_readers.h"

/* RocksDB's InfoLogLevel FATAL_LEVEL (c.h has no names for the levels). */
#define STORE_LOG_FATAL 4

/* A merge's output file may grow this large: each merge writes one run. */
#define MERGED_RUN_MAX_BYTES (1ULL << 40)

static int rocks_compression(store_codec c)
{
    switch (c) {
    case STORE_CODEC_LZ4: return rocksdb_lz4_compression;
    case STORE_CODEC_SNAPPY: return rocksdb_snappy_compression;
    case STORE_CODEC_ZSTD: return rocksdb_zstd_compression;
    case STORE_CODEC_NONE: case STORE_CODEC_COLUMNS: case STORE_CODEC_PLAIN:
        break;                          /* groups: codec/group_codec.c */
    }
    return rocksdb_no_compression;
}

/* "PREFIX.rocksort.XXXXXX", its last name shortened where the file system
 * could not hold it (util/name_fit.h): samtools succeeds with such a -T as
 * long as its own shorter names fit, or it writes no temporary file. */
static char *prefix_template(const char *prefix)
{
    static const char tail[] = ".rocksort.XXXXXX";
    const char *slash = strrchr(prefix, '/');
    size_t dir_len = slash ? (size_t)(slash - prefix) + 1 : 0;
    char *dir = slash ? strndup(prefix, dir_len) : strdup(".");
    char *fit = dir ? name_fit(dir, prefix + dir_len, strlen(tail)) : NULL, *tmpl = NULL;
    if (fit && asprintf(&tmpl, "%.*s%s%s", (int)dir_len, prefix, fit, tail) < 0) tmpl = NULL;
    free(dir);
    free(fit);
    return tmpl;
}

static char *make_temp_dir(const char *prefix, errmsg *err)
{
    struct stat st;
    char *tmpl = NULL;
    if (stat(prefix, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (asprintf(&tmpl, "%s/samtools-rocksort.XXXXXX", prefix) < 0) tmpl = NULL;
    } else {
        tmpl = prefix_template(prefix);
    }
    if (!tmpl) {
        errmsg_set(err, "out of memory");
        return NULL;
    }
    if (!cleanup_mkdtemp(tmpl)) {
        errmsg_set(err, "cannot create temporary directory '%s': %s", tmpl, strerror(errno));
        free(tmpl);
        return NULL;
    }
    return tmpl;
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
 * doc/DESIGN.md and bench/RESULTS.md.  Each directory's file system
 * decides for its own database. */
/* Background merges read each run with this readahead: the readout's,
 * unless the merges' memory (each database's share) would then hold fewer
 * than MERGE_WIDTH_WANTED runs; then less, down to the smallest, before
 * the merges narrow (merge_plan_files_fit_memory()). */
#define MERGE_WIDTH_WANTED STORE_MERGE_MIN_RUNS

static void fit_merges_to_memory(store_db *d, const store_options *o, int n_dbs)
{
    d->merge_readahead = STORE_DIRECT_READAHEAD;
    if (!o->merge_memory) return;
    uint64_t memory = o->merge_memory / (uint64_t)n_dbs;
    int blocks = store_codec_in_blocks(o->compression);
    uint64_t each = memory / MERGE_WIDTH_WANTED, fixed = run_readers_per_run(0, blocks);
    uint64_t r = each > fixed ? each - fixed : 0;
    if (r < READERS_MIN_READAHEAD) r = READERS_MIN_READAHEAD;
    if (r < d->merge_readahead) d->merge_readahead = (size_t)r;
    merge_plan_files_fit_memory(&d->files, memory, run_readers_per_run(d->merge_readahead, blocks));
}

static void configure_direct_io(const rocks_store *st, store_db *d)
{
    /* A state's database directory is made by RocksDB's open, after this:
     * the probe needs it now (an empty one is what RocksDB expects). */
    if (st->state_dir) mkdir(d->dir, 0700);
    d->direct_io = direct_io_works(d->dir);
    if (!d->direct_io) return;
    rocksdb_options_set_use_direct_reads(d->opts, 1);
    rocksdb_options_set_use_direct_io_for_flush_and_compaction(d->opts, 1);
    rocksdb_options_compaction_readahead_size(d->opts, d->merge_readahead);
}

/* What one of RocksDB's parallel compression threads holds: blocks in
 * and out of its queue and its codec's context (zstd's the largest). */
#define CODEC_THREAD_BYTES (1ULL << 20)

/* The codec's helper threads (store/temp_space.c picks them), as many as an
 * eighth of the memory beside the batches holds: the spill's run and a
 * background merge's output each have such threads, and the merge's
 * inputs take the rest.  Its level, window bits, strategy and dictionary
 * stay RocksDB's defaults. */
static void configure_codec(store_db *d, const store_options *o)
{
    /* Compact and uncompressed runs leave RocksDB nothing to compress, yet
     * RocksDB 7.8 still starts its parallel threads for every table it
     * writes (three per run and per merge) and passes every block through
     * them: no threads for it. */
    if (!store_codec_in_blocks(o->compression)) return;
    uint64_t threads = (uint64_t)(o->compression_threads > 0 ? o->compression_threads : 0);
    if (o->merge_memory && threads > o->merge_memory / 8 / CODEC_THREAD_BYTES)
        threads = o->merge_memory / 8 / CODEC_THREAD_BYTES;
    if (threads > 1)
        rocksdb_options_set_compression_options_parallel_threads(d->opts, (int)threads);
}

/* What every database shares: the table format, the SST writer's file
 * options and the ingestion's. */
static void configure_shared(rocks_store *st)
{
    st->table = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_size(st->table, STORE_BLOCK_BYTES);
    /* End a block before an entry that would take it past its size, unless
     * the block holds under 1% of it: at RocksDB's default (10) a block under
     * 90% full takes the next entry whole, and a plain group after a short one
     * then makes a block of up to twice the size store/run_readers.h counts.
     * 100 would mean "never end early", so every block would overshoot.  An
     * entry larger than the size (a group of long reads) is still a block of
     * its own, which the readers count at the size (doc/DESIGN.md). */
    rocksdb_block_based_options_set_block_size_deviation(st->table, 99);
    rocksdb_block_based_options_set_no_block_cache(st->table, 1);
    st->envopts = rocksdb_envoptions_create();
    st->ingest = rocksdb_ingestexternalfileoptions_create();
    /* A run is written in the directory it is ingested into: the move is a
     * hard link, never a copy. */
    rocksdb_ingestexternalfileoptions_set_move_files(st->ingest, 1);
}

/* One database's options.  pool: the background threads of all databases,
 * which share the environment's pool.  Returns temp_env_apply()'s result,
 * with its cause in err: without the environment, store_open fails.  The
 * rest is configured either way, as store_close expects. */
static int configure(rocks_store *st, store_db *d, const store_options *o, int pool,
                     errmsg *err)
{
    d->opts = rocksdb_options_create();
    /* RocksDB's own environment, but the database's files are never synced
     * (see disk/temp_env.h).  First, as it replaces the options by a copy. */
    int env = temp_env_apply(&d->opts, pool, err);
    rocksdb_options_set_create_if_missing(d->opts, 1);
    /* A temporary directory is new; a state's database may be resumed. */
    rocksdb_options_set_error_if_exists(d->opts, !o->state_dir);
    rocksdb_options_set_compression(d->opts, rocks_compression(o->compression));
    configure_codec(d, o);
    /* Only fatal messages in RocksDB's LOG file.  Its per-run lines are of
     * no use here, and on a full temp file system a LOG line that failed
     * made RocksDB 7.8 abort on an assertion at the next one (in the
     * ingestion's statistics) instead of returning the error. */
    rocksdb_options_set_info_log_level(d->opts, STORE_LOG_FATAL);
    /* Each level-0 run is an open file during the readout and while merged. */
    rocksdb_options_set_max_open_files(d->opts, d->files.table_cache);
    /* One shard: a sharded cache holds up to its capacity per shard, not
     * in all (64 shards kept 64 runs open under a capacity of 10). */
    rocksdb_options_set_table_cache_numshardbits(d->opts, 0);
    /* Ingested runs all overlap, so they pile up in level 0 by design:
     * never let that count throttle or stop us. */
    rocksdb_options_set_level0_slowdown_writes_trigger(d->opts, ROCKS_NEVER);
    rocksdb_options_set_level0_stop_writes_trigger(d->opts, ROCKS_NEVER);
    rocksdb_options_set_max_background_jobs(d->opts, d->files.merge_threads + 1);
    rocksdb_options_set_target_file_size_base(d->opts, MERGED_RUN_MAX_BYTES);
    rocksdb_options_set_block_based_table_factory(d->opts, st->table);
    uint64_t total = 0;
    for (int i = 0; i < st->n_dbs; i++) total += st->dbs[i].weight;
    store_merge_configure(st, d, o, total ? (double)d->weight / (double)total : 1);
    return env;
}

/* Each database's share of the descriptors and its column families: at
 * least one reader per database, o->parts in all where one database
 * alone could otherwise not be read at once by several.  Returns the
 * background threads of all databases together. */
static int lay_out(rocks_store *st, const store_options *o)
{
    uint64_t total = 0;
    int pool = 0, wanted = o->parts < 1 ? 1 : o->parts;
    int per_db = (wanted + st->n_dbs - 1) / st->n_dbs;
    if (per_db > STORE_DB_MAX_PARTS) per_db = STORE_DB_MAX_PARTS;
    for (int i = 0; i < st->n_dbs; i++) total += st->dbs[i].weight;
    st->n_parts = 0;
    for (int i = 0; i < st->n_dbs; i++) {
        store_db *d = &st->dbs[i];
        double share = total ? (double)d->weight / (double)total : 1.0 / st->n_dbs;
        d->files = merge_plan_files_for(merge_plan_files_share(o->max_open_files, st->n_dbs, share),
                                        o->background_threads);
        fit_merges_to_memory(d, o, st->n_dbs);
        pool += d->files.merge_threads;
        d->first_part = st->n_parts;
        d->n_parts = per_db;
        for (int p = 0; p < per_db; p++) st->part_db[st->n_parts++] = i;
    }
    return pool;
}

/* One column family per part, all with the database's options. */
static void open_parts(rocks_store *st, store_db *d, char **rerr)
{
    const rocksdb_options_t *per_part[STORE_DB_MAX_PARTS];
    for (int i = 0; i < d->n_parts; i++) per_part[i] = d->opts;
    rocksdb_options_set_create_missing_column_families(d->opts, 1);
    d->db = rocksdb_open_column_families(d->opts, d->dir, d->n_parts, store_part_names,
                                         per_part, &st->part[d->first_part], rerr);
}

static void close_parts(rocks_store *st)
{
    for (int i = 0; i < st->n_parts; i++)
        if (st->part[i]) rocksdb_column_family_handle_destroy(st->part[i]);
    memset(st->part, 0, sizeof st->part);
    for (int i = 0; i < st->n_dbs; i++) {
        if (st->dbs[i].db) rocksdb_close(st->dbs[i].db);
        st->dbs[i].db = NULL;
    }
}

/* Opens the database in d->dir; -1 with the cause in err. */
static int open_database(rocks_store *st, store_db *d, errmsg *err)
{
    char *rerr = NULL;
    open_parts(st, d, &rerr);
    if (d->db) return 0;
    if (rerr) return store_fail(err, d->dir, rerr);
    return errmsg_set(err, "%s: out of memory", d->dir);
}

/* A cause outside the stored runs: see store_shows_damage(). */
static int store_cause_outside(const char *msg)
{
    static const int causes[] = { ENOSPC, EDQUOT, EIO, EACCES, EPERM, EROFS, EMFILE, ENFILE,
                                  ENOMEM, EAGAIN, ENOLCK };
    for (size_t i = 0; i < sizeof causes / sizeof *causes; i++)
        if (strstr(msg, strerror(causes[i]))) return 1;
    return 0;
}

int store_shows_damage(const char *msg)
{
    return (strstr(msg, "Corruption") || strstr(msg, STORE_RUN_CORRUPT)) &&
           !store_cause_outside(msg);
}

/* A resumable store, one database: the earlier state taken back, or
 * discarded (a database that does not open, or does not add up) for a
 * fresh one; kept as it was with o->state_other. */
static int open_state(rocks_store *st, const store_options *o, errmsg *err)
{
    enum { DOES_NOT_OPEN = 2 };
    store_db *d = &st->dbs[0];
    errmsg why;
    int r = open_database(st, d, &why) < 0 ? DOES_NOT_OPEN : store_state_restore(st, err);
    if (r == DOES_NOT_OPEN && store_cause_outside(why.msg)) return errmsg_copy(err, &why);
    if (r <= 0) return r;
    if (r == DOES_NOT_OPEN) errmsg_prefix(&why, "its database does not open");
    if (o->state_other)
        return store_state_keep_other(st, o, r == DOES_NOT_OPEN ? why.msg : st->discarded, err);
    if (r == DOES_NOT_OPEN) store_state_discard(st, why.msg);
    close_parts(st);
    if (store_state_wipe(st, o, err) < 0) return -1;
    return open_database(st, d, err);
}

/* store_path()'s text when there are several directories. */
static int name_paths(rocks_store *st, errmsg *err)
{
    size_t len = 1;
    for (int i = 0; st->n_dbs > 1 && i < st->n_dbs; i++) len += strlen(st->dbs[i].dir) + 4;
    if (st->n_dbs < 2) return 0;
    if (!(st->paths = malloc(len))) return errmsg_set(err, "out of memory");
    st->paths[0] = '\0';
    for (int i = 0; i < st->n_dbs; i++) {
        if (i) strcat(st->paths, "', '");
        strcat(st->paths, st->dbs[i].dir);
    }
    return 0;
}

/* A fresh directory in each place. */
static int make_dirs(rocks_store *st, const store_options *o, errmsg *err)
{
    int n = o->n_dirs < 1 ? 1 : o->n_dirs > STORE_MAX_DIRS ? STORE_MAX_DIRS : o->n_dirs;
    uint64_t weights[STORE_MAX_DIRS];
    for (int i = 0; i < n; i++) {
        store_db *d = &st->dbs[i];
        if (!(d->dir = make_temp_dir(o->dirs[i].path, err))) return -1;
        d->weight = weights[i] = o->dirs[i].weight ? o->dirs[i].weight : 1;
        st->n_dbs++;
    }
    temp_dirs_turn_init(&st->turn, weights, n);
    return name_paths(st, err);
}

/* The options, the runs' writer, and each directory's database. */
static int set_up(rocks_store *st, const store_options *o, errmsg *err)
{
    st->run_bytes = o->run_bytes;
    st->codec = o->compression;
    st->readout_memory = o->readout_memory;
    st->group_bytes = STORE_GROUP_BYTES;
    int pool = lay_out(st, o);
    configure_shared(st);
    for (int i = 0; i < st->n_dbs; i++) {
        store_db *d = &st->dbs[i];
        d->bytes_counter = temp_env_count_writes(d->dir);   /* for -v */
        if (configure(st, d, o, pool, err) < 0) return errmsg_prefix(err, "%s", d->dir);
        configure_direct_io(st, d);
    }
    if (store_run_prepare(st, o, err) < 0) return -1;
    if (o->state_dir) return open_state(st, o, err);
    for (int i = 0; i < st->n_dbs; i++)
        if (open_database(st, &st->dbs[i], err) < 0) return -1;
    return 0;
}

rocks_store *store_open(const store_options *o, errmsg *err)
{
    rocks_store *st = calloc(1, sizeof *st);
    if (!st) {
        errmsg_set(err, "out of memory");
        return NULL;
    }
    for (int i = 0; i < STORE_MAX_DIRS; i++) st->dbs[i].bytes_counter = -1;
    st->state_fd = -1;
    cleanup_hold_signals();
    int ok = (o->state_dir ? store_state_prepare(st, o, err) : make_dirs(st, o, err)) == 0;
    if (ok) ok = set_up(st, o, err) == 0;
    cleanup_release_signals();
    if (ok) return st;
    /* A state is the caller's to keep or remove (engine/sort_resume.h): a store
     * that failed to open it leaves it as it is, or as discarded. */
    if (st->discarded) {
        errmsg_prefix(err, "not resuming from '%s' (%s), then", o->state_dir, st->discarded);
        if (o->state_discarded) *o->state_discarded = 1;
    }
    store_close(st, st->state_owned);
    return NULL;
}

int store_dirs_that_fit(int max_open_files)
{
    if (max_open_files < 0) return STORE_MAX_DIRS;
    int n = max_open_files / merge_plan_files_min_per_db();
    return n < 1 ? 1 : n > STORE_MAX_DIRS ? STORE_MAX_DIRS : n;
}

/* A database's directory goes, unless kept; a state's only once known to
 * be a state's. */
static void remove_db(const rocks_store *st, store_db *d, int keep)
{
    temp_env_stop_counting(d->bytes_counter);
    if (!keep && d->dir && (!st->state_dir || st->state_owned)) {
        char *rerr = NULL;
        if (d->opts) rocksdb_destroy_db(d->opts, d->dir, &rerr);
        free(rerr);
        cleanup_remove_path(d->dir);
    }
    if (d->dir) cleanup_forget(d->dir);
}

static void free_db(store_db *d)
{
    if (d->opts) rocksdb_options_destroy(d->opts);
    if (d->universal) rocksdb_universal_compaction_options_destroy(d->universal);
    free(d->dir);
}

void store_close(rocks_store *st, int keep)
{
    if (!st) return;
    store_run_free(st);
    close_parts(st);
    for (int i = 0; i < st->n_dbs; i++) remove_db(st, &st->dbs[i], keep);
    if (st->state_dir) store_state_close(st, keep);
    for (int i = 0; i < st->n_dbs; i++) free_db(&st->dbs[i]);
    if (st->ingest) rocksdb_ingestexternalfileoptions_destroy(st->ingest);
    if (st->table) rocksdb_block_based_options_destroy(st->table);
    if (st->envopts) rocksdb_envoptions_destroy(st->envopts);
    free(st->paths);
    free(st);
}

/* What the store holds: see store/store.h. */
uint64_t store_runs_ingested(const rocks_store *st) { return st->runs; }
uint64_t store_bytes_written(const rocks_store *st) { return st->bytes_written; }
const char *store_path(const rocks_store *st) { return st->paths ? st->paths : st->dbs[0].dir; }
int store_dirs(const rocks_store *st) { return st->n_dbs; }

store_dir_report store_dir_at(const rocks_store *st, int i)
{
    const store_db *d = &st->dbs[i];
    return (store_dir_report){ d->dir, d->runs, temp_env_bytes_written(d->bytes_counter) };
}

int store_direct_io(const rocks_store *st)
{
    int all = st && st->n_dbs > 0;
    for (int i = 0; all && i < st->n_dbs; i++) all = st->dbs[i].direct_io;
    return all;
}

int store_grouped(const rocks_store *st) { return st->groups != NULL; }
size_t store_group_bytes(const rocks_store *st) { return st->group_bytes; }

int store_parts(const rocks_store *st) { return st->parts_used; }

int store_sorted_runs(rocks_store *st)
{
    /* One level (store_merge_configure()): every run is a level-0 file. */
    uint64_t n = 0;
    for (int p = 0; p < st->n_parts; p++)
        n += store_part_property(st, p, "rocksdb.num-files-at-level0");
    return (int)n;
}

size_t store_straddled_runs(rocks_store *st)
{
    size_t files = (size_t)store_sorted_runs(st), written = store_iter_indexed_runs(st);
    return written > files ? written : files;
}

int store_catch_up_runs(const rocks_store *st) { return st->catch_up_runs; }
size_t store_samples(const rocks_store *st) { return st->samples.n; }
const key_sample *store_sample_at(const rocks_store *st, size_t i) { return &st->samples.v[i]; }
