/* rocks_store.c -- see rocks_store.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rocks_store_internal.h"
#include "cleanup.h"
#include "temp_env.h"

/* RocksDB's InfoLogLevel FATAL_LEVEL (c.h has no names for the levels). */
#define STORE_LOG_FATAL 4

/* SST blocks: large, as the data is read once, sequentially. */
#define BLOCK_BYTES (256 << 10)

/* Compact runs: record bytes per group.  Larger groups barely compress
 * better, and the readout holds one decoded group per run. */
#define GROUP_BYTES (256u << 10)

/* A merge's output file may grow this large: each merge writes one run. */
#define MERGED_RUN_MAX_BYTES (1ULL << 40)

const char *const store_part_names[STORE_MAX_PARTS] = { "default", "part1", "part2", "part3" };

/* RocksDB's own errors are malloc'd strings: put our context before them. */
static int rocks_fail(errmsg *err, const char *what, char *rocks_err)
{
    errmsg_set(err, "%s: %s", what, rocks_err);
    free(rocks_err);
    return -1;
}

static int rocks_compression(store_codec c)
{
    switch (c) {
    case STORE_CODEC_LZ4: return rocksdb_lz4_compression;
    case STORE_CODEC_SNAPPY: return rocksdb_snappy_compression;
    case STORE_CODEC_ZSTD: return rocksdb_zstd_compression;
    case STORE_CODEC_NONE: case STORE_CODEC_COLUMNS: break;   /* columns: group_codec.c */
    }
    return rocksdb_no_compression;
}

static char *make_temp_dir(const char *prefix, errmsg *err)
{
    struct stat st;
    char *tmpl = NULL;
    int is_dir = stat(prefix, &st) == 0 && S_ISDIR(st.st_mode);
    if (asprintf(&tmpl, is_dir ? "%s/samtools-rocksort.XXXXXX" : "%s.rocksort.XXXXXX",
                 prefix) < 0) {
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
 * doc/DESIGN.md and bench/RESULTS.md. */
static void configure_direct_io(rocks_store *st)
{
    /* A state's database directory is made by RocksDB's open, after this:
     * the probe needs it now (an empty one is what RocksDB expects). */
    if (st->state_dir) mkdir(st->dir, 0700);
    st->direct_io = direct_io_works(st->dir);
    if (!st->direct_io) return;
    rocksdb_options_set_use_direct_reads(st->opts, 1);
    rocksdb_options_set_use_direct_io_for_flush_and_compaction(st->opts, 1);
    rocksdb_options_compaction_readahead_size(st->opts, STORE_DIRECT_READAHEAD);
}

/* The codec's helper threads (temp_space.c picks them); its level, window
 * bits, strategy and dictionary stay RocksDB's defaults. */
static void configure_codec(rocks_store *st, const store_options *o)
{
    if (o->compression != STORE_CODEC_NONE && o->compression_threads > 1)
        rocksdb_options_set_compression_options_parallel_threads(st->opts, o->compression_threads);
}

/* Returns temp_env_apply()'s result, with its cause in err: without the
 * environment, store_open fails.  The rest is configured either way, as
 * store_close expects. */
static int configure(rocks_store *st, const store_options *o, errmsg *err)
{
    st->opts = rocksdb_options_create();
    /* Each level-0 run is an open file during the readout and while merged. */
    st->files = files_plan_for(o->max_open_files, o->background_threads);
    /* RocksDB's own environment, but the database's files are never synced
     * (see temp_env.h).  First, as it replaces the options by a copy. */
    int env = temp_env_apply(&st->opts, st->files.merge_threads, err);
    rocksdb_options_set_create_if_missing(st->opts, 1);
    /* A temporary directory is new; a state's database may be resumed. */
    rocksdb_options_set_error_if_exists(st->opts, !o->state_dir);
    rocksdb_options_set_compression(st->opts, rocks_compression(o->compression));
    configure_codec(st, o);
    /* Only fatal messages in RocksDB's LOG file.  Its per-run lines are of
     * no use here, and on a full temp file system a LOG line that failed
     * made RocksDB 7.8 abort on an assertion at the next one (in the
     * ingestion's statistics) instead of returning the error. */
    rocksdb_options_set_info_log_level(st->opts, STORE_LOG_FATAL);
    rocksdb_options_set_max_open_files(st->opts, st->files.table_cache);
    /* One shard: a sharded cache holds up to its capacity per shard, not
     * in all (64 shards kept 64 runs open under a capacity of 10). */
    rocksdb_options_set_table_cache_numshardbits(st->opts, 0);
    /* Ingested runs all overlap, so they pile up in level 0 by design:
     * never let that count throttle or stop us. */
    rocksdb_options_set_level0_slowdown_writes_trigger(st->opts, ROCKS_NEVER);
    rocksdb_options_set_level0_stop_writes_trigger(st->opts, ROCKS_NEVER);
    rocksdb_options_set_max_background_jobs(st->opts, st->files.merge_threads + 1);
    rocksdb_options_set_target_file_size_base(st->opts, MERGED_RUN_MAX_BYTES);

    st->table = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_size(st->table, BLOCK_BYTES);
    rocksdb_block_based_options_set_no_block_cache(st->table, 1);
    rocksdb_options_set_block_based_table_factory(st->opts, st->table);

    merges_configure(st, o);

    st->envopts = rocksdb_envoptions_create();

    st->ingest = rocksdb_ingestexternalfileoptions_create();
    rocksdb_ingestexternalfileoptions_set_move_files(st->ingest, 1);
    return env;
}

/* One column family per part, all with the same options. */
static void open_parts(rocks_store *st, int parts, char **rerr)
{
    const rocksdb_options_t *per_part[STORE_MAX_PARTS];
    st->n_parts = parts < 1 ? 1 : parts > STORE_MAX_PARTS ? STORE_MAX_PARTS : parts;
    for (int i = 0; i < st->n_parts; i++) per_part[i] = st->opts;
    rocksdb_options_set_create_missing_column_families(st->opts, 1);
    st->db = rocksdb_open_column_families(st->opts, st->dir, st->n_parts, store_part_names,
                                          per_part, st->part, rerr);
}

static void close_parts(rocks_store *st)
{
    for (int i = 0; i < st->n_parts; i++)
        if (st->part[i]) rocksdb_column_family_handle_destroy(st->part[i]);
    memset(st->part, 0, sizeof st->part);
    if (st->db) rocksdb_close(st->db);
    st->db = NULL;
}

/* Opens the database in st->dir; -1 with the cause in err. */
static int open_database(rocks_store *st, const store_options *o, errmsg *err)
{
    char *rerr = NULL;
    open_parts(st, o->parts, &rerr);
    if (st->db) return 0;
    if (rerr) return rocks_fail(err, st->dir, rerr);
    return errmsg_set(err, "%s: out of memory", st->dir);
}

/* Whether RocksDB failed for a cause outside the state (a full disk, no
 * permission, a lock held, too few files or memory): the state is kept
 * then, for a rerun on a mended machine.  Its IO errors carry strerror()'s
 * text. */
static int cause_outside_state(const char *msg)
{
    static const int causes[] = { ENOSPC, EDQUOT, EIO, EACCES, EPERM, EROFS, EMFILE, ENFILE,
                                  ENOMEM, EAGAIN, ENOLCK };
    for (size_t i = 0; i < sizeof causes / sizeof *causes; i++)
        if (strstr(msg, strerror(causes[i]))) return 1;
    return 0;
}

/* A resumable store: the earlier state taken back, or discarded (a
 * database that does not open, or does not add up) for a fresh one. */
static int open_state(rocks_store *st, const store_options *o, errmsg *err)
{
    enum { DOES_NOT_OPEN = 2 };
    errmsg why;
    int r = open_database(st, o, &why) < 0 ? DOES_NOT_OPEN : state_restore(st, err);
    if (r == DOES_NOT_OPEN && cause_outside_state(why.msg)) return errmsg_copy(err, &why);
    if (r <= 0) return r;
    if (r == DOES_NOT_OPEN) {
        errmsg_prefix(&why, "its database does not open");
        state_discard(st, why.msg);
    }
    close_parts(st);
    if (state_wipe(st, o, err) < 0) return -1;
    return open_database(st, o, err);
}

static int put_group(void *store, const group_span *span, const uint8_t *blob, size_t len,
                     errmsg *err);

/* The options, the codec's writer, and the directory's database. */
static int set_up(rocks_store *st, const store_options *o, errmsg *err)
{
    if (configure(st, o, err) < 0) return errmsg_prefix(err, "%s", st->dir);
    configure_direct_io(st);
    /* Groups go in under their first record's keys (see group_feed.h). */
    if (o->compression == STORE_CODEC_COLUMNS &&
        (!(st->groups = group_writer_create(o->compression_threads, GROUP_BYTES, put_group, st))
         || !(st->index = run_index_create())))
        return errmsg_set(err, "out of memory");
    return o->state_dir ? open_state(st, o, err) : open_database(st, o, err);
}

rocks_store *store_open(const char *tmp_prefix, const store_options *o, errmsg *err)
{
    rocks_store *st = calloc(1, sizeof *st);
    if (!st) {
        errmsg_set(err, "out of memory");
        return NULL;
    }
    cleanup_hold_signals();
    int ok = o->state_dir ? state_prepare(st, o, err) == 0
                          : (st->dir = make_temp_dir(tmp_prefix, err)) != NULL;
    if (ok) ok = set_up(st, o, err) == 0;
    cleanup_release_signals();
    if (ok) return st;
    /* A state is the caller's to keep or remove (sort_resume.h): a store
     * that failed to open it leaves it as it is, or as discarded. */
    if (st->discarded) {
        errmsg_prefix(err, "not resuming from '%s' (%s), then", o->state_dir, st->discarded);
        if (o->state_discarded) *o->state_discarded = 1;
    }
    store_close(st, st->state_owned);
    return NULL;
}

int store_run_begin(rocks_store *st, errmsg *err)
{
    /* RocksDB counts per key in a thread-local perf context, and each count
     * is a __tls_get_addr call through the shared library: a visible share
     * of the writing thread's CPU.  The level is per thread. */
    rocksdb_set_perf_level(rocksdb_disable);
    free(st->run_path);
    if (asprintf(&st->run_path, "%s/run-%06llu.sst", st->dir,
                 (unsigned long long)st->runs) < 0) {
        st->run_path = NULL;
        return errmsg_set(err, "out of memory");
    }
    char *rerr = NULL;
    st->writer = rocksdb_sstfilewriter_create(st->envopts, st->opts);
    rocksdb_sstfilewriter_open(st->writer, st->run_path, &rerr);
    if (rerr) return rocks_fail(err, st->run_path, rerr);
    st->unsampled = STORE_SAMPLE_BYTES;     /* sample the run's first key */
    st->run_entries = 0;
    st->run_first_sample = st->n_samples;
    return 0;
}

int store_add_sample(rocks_store *st, const uint8_t *key, size_t klen, uint64_t weight)
{
    if (st->n_samples == st->samples_cap) {
        size_t cap = st->samples_cap ? 2 * st->samples_cap : 1024;
        key_sample *s = realloc(st->samples, cap * sizeof *s);
        if (!s) return -1;
        st->samples = s;
        st->samples_cap = cap;
    }
    uint8_t *copy = key_dup(key, klen);
    if (!copy) return -1;
    st->samples[st->n_samples++] = (key_sample){ copy, klen, weight };
    st->unsampled = 0;
    return 0;
}

static void sample_record(rocks_store *st, const uint8_t *key, size_t klen, size_t bytes)
{
    /* Sampling is best effort: out of memory, it stops. */
    if (st->unsampled >= STORE_SAMPLE_BYTES) store_add_sample(st, key, klen, 0);
    if (st->n_samples) st->samples[st->n_samples - 1].weight += bytes;
    st->unsampled += bytes;
}

size_t store_samples(const rocks_store *st) { return st->n_samples; }
const key_sample *store_sample_at(const rocks_store *st, size_t i) { return &st->samples[i]; }

static int put_pair(rocks_store *st, const uint8_t *key, size_t klen,
                    const uint8_t *val, size_t vlen, errmsg *err)
{
    char *rerr = NULL;
    rocksdb_sstfilewriter_put(st->writer, (const char *)key, klen,
                              (const char *)val, vlen, &rerr);
    st->run_entries++;
    return rerr ? rocks_fail(err, st->run_path, rerr) : 0;
}

/* A group goes in under its first key, and into the run index. */
static int put_group(void *store, const group_span *span, const uint8_t *blob, size_t len,
                     errmsg *err)
{
    rocks_store *st = store;
    if (put_pair(st, span->first, span->first_len, blob, len, err) < 0) return -1;
    if (run_index_add_group(st->index, span->first, span->first_len, span->last,
                            span->last_len) < 0)
        return errmsg_set(err, "out of memory indexing a run");
    return 0;
}

int store_run_put(rocks_store *st, const uint8_t *key, size_t klen,
                  const uint8_t *val, size_t vlen, errmsg *err)
{
    if (st->groups ? group_writer_add(st->groups, key, klen, val, vlen, err) < 0
                   : put_pair(st, key, klen, val, vlen, err) < 0)
        return -1;
    sample_record(st, key, klen, klen + vlen);
    return 0;
}

/* Runs are dealt in turn while nothing merges them; a merge only takes
 * runs of one part, so with merges planned they all go to part 0. */
static int next_part(const rocks_store *st)
{
    return st->merges_planned ? 0 : (int)(st->runs % (uint64_t)st->n_parts);
}

/* Writes the SST, journals it (a resumable store), and moves it into the
 * database as part `part`: the journal always knows every run RocksDB
 * holds. */
static int ingest_run(rocks_store *st, int part, uint64_t *size, const void *note,
                      size_t note_len, errmsg *err)
{
    char *rerr = NULL;
    if (st->groups && group_writer_finish(st->groups, err) < 0) return -1;
    rocksdb_sstfilewriter_finish(st->writer, &rerr);
    if (!rerr) rocksdb_sstfilewriter_file_size(st->writer, size);
    rocksdb_sstfilewriter_destroy(st->writer);
    st->writer = NULL;
    if (rerr) return rocks_fail(err, st->run_path, rerr);
    if (st->journal && state_journal_run(st, part, *size, note, note_len, err) < 0) return -1;
    const char *files[1] = { st->run_path };
    rocksdb_ingest_external_file_cf(st->db, st->part[part], files, 1, st->ingest, &rerr);
    return rerr ? rocks_fail(err, st->run_path, rerr) : 0;
}

int store_run_end(rocks_store *st, const void *note, size_t note_len, errmsg *err)
{
    uint64_t size = 0;
    int part = next_part(st);
    if (ingest_run(st, part, &size, note, note_len, err) < 0) {
        if (st->index) run_index_drop_run(st->index);
        return -1;
    }
    if (st->index && run_index_end_run(st->index, part) < 0)
        return errmsg_set(err, "out of memory indexing a run");
    st->runs++;
    if (part >= st->parts_used) st->parts_used = part + 1;
    st->bytes_written += size;
    merges_after_run(st);
    return 0;
}

uint64_t store_runs_ingested(const rocks_store *st) { return st->runs; }
uint64_t store_bytes_written(const rocks_store *st) { return st->bytes_written; }
const char *store_path(const rocks_store *st) { return st->dir; }
int store_direct_io(const rocks_store *st) { return st && st->direct_io; }
int store_grouped(const rocks_store *st) { return st->groups != NULL; }

int store_parts(const rocks_store *st) { return st->parts_used; }

void store_close(rocks_store *st, int keep)
{
    if (!st) return;
    if (st->writer) rocksdb_sstfilewriter_destroy(st->writer);
    group_writer_destroy(st->groups);
    run_index_destroy(st->index);
    close_parts(st);
    /* A state directory is removed only once known to be a state's. */
    if (!keep && st->dir && (!st->state_dir || st->state_owned)) {
        char *rerr = NULL;
        rocksdb_destroy_db(st->opts, st->dir, &rerr);
        free(rerr);
        cleanup_remove_path(st->dir);
    }
    if (st->dir) cleanup_forget(st->dir);
    if (st->state_dir) state_close(st, keep);
    for (size_t i = 0; i < st->n_samples; i++) free((uint8_t *)st->samples[i].key);
    free(st->samples);
    if (st->ingest) rocksdb_ingestexternalfileoptions_destroy(st->ingest);
    if (st->opts) rocksdb_options_destroy(st->opts);
    if (st->table) rocksdb_block_based_options_destroy(st->table);
    if (st->universal) rocksdb_universal_compaction_options_destroy(st->universal);
    if (st->envopts) rocksdb_envoptions_destroy(st->envopts);
    free(st->run_path);
    free(st->dir);
    free(st);
}
