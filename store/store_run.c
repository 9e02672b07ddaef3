/* store/store_run.c -- the store's runs: written, sampled, ingested where they were
 * written.  See store/store_run.h; the databases are opened in store/store.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/store_db_internal.h"
#include "store/store_run.h"
#include "store/store_merge.h"
#include "store/store_state.h"
#include "disk/temp_env.h"
#include "util/cleanup.h"


/* RocksDB's own errors are malloc'd strings: put our context before them. */
static int put_group(void *store, const group_span *span, const uint8_t *blob, size_t len,
                     errmsg *err);

group_layout store_run_group_layout(const rocks_store *st)
{
    return st->codec == STORE_CODEC_PLAIN ? GROUP_PLAIN : GROUP_COLUMNS;
}

group_writer *store_run_group_writer(rocks_store *st, int threads)
{
    return group_writer_create_on(st->pool, threads, st->group_bytes, store_run_group_layout(st),
                                  put_group, st);
}

int store_run_prepare(rocks_store *st, const store_options *o, errmsg *err)
{
    st->pool = o->pool;
    st->encode_threads = o->compression_threads;
    /* Groups go in under their first record's keys (see readout/group_feed.h). */
    if (store_codec_grouped(o->compression) &&
        (!(st->groups = store_run_group_writer(st, o->compression_threads))
         || !(st->index = run_index_create())))
        return errmsg_set(err, "out of memory");
    return 0;
}

/* A new SST at `name` in database db, for a run or a merge pass's run. */
int store_run_open_writer(rocks_store *st, int db, const char *name, errmsg *err)
{
    /* RocksDB counts per key in a thread-local perf context, and each count
     * is a __tls_get_addr call through the shared library: a visible share
     * of the writing thread's CPU.  The level is per thread. */
    rocksdb_set_perf_level(rocksdb_disable);
    free(st->run_path);
    st->run_db = db;
    if (asprintf(&st->run_path, "%s/%s", st->dbs[db].dir, name) < 0) {
        st->run_path = NULL;
        return errmsg_set(err, "out of memory");
    }
    char *rerr = NULL;
    st->writer = rocksdb_sstfilewriter_create(st->envopts, st->dbs[db].opts);
    rocksdb_sstfilewriter_open(st->writer, st->run_path, &rerr);
    if (rerr) return store_fail(err, st->run_path, rerr);
    st->run_entries = 0;
    return 0;
}

int store_run_begin(rocks_store *st, errmsg *err)
{
    char name[32];
    snprintf(name, sizeof name, "run-%06llu.sst", (unsigned long long)st->runs);
    /* The run is written where it stays: ingestion then only links it. */
    if (store_run_open_writer(st, st->n_dbs > 1 ? temp_dirs_turn_next(&st->turn) : 0, name, err) < 0)
        return -1;
    st->unsampled = STORE_SAMPLE_BYTES;     /* sample the run's first key */
    st->run_first_sample = st->samples.n;
    return 0;
}

static void sample_record(rocks_store *st, const uint8_t *key, size_t klen, size_t bytes)
{
    /* A merge pass moves records that were sampled as first written. */
    if (st->passing) return;
    key_samples *s = &st->samples;
    /* Sampling is best effort: out of memory, it stops. */
    if (st->unsampled >= STORE_SAMPLE_BYTES && key_samples_add_copy(s, key, klen, 0) == 0)
        st->unsampled = 0;
    if (s->n) s->v[s->n - 1].weight += bytes;
    st->unsampled += bytes;
}

static int put_pair(rocks_store *st, const uint8_t *key, size_t klen,
                    const uint8_t *val, size_t vlen, errmsg *err)
{
    char *rerr = NULL;
    rocksdb_sstfilewriter_put(st->writer, (const char *)key, klen,
                              (const char *)val, vlen, &rerr);
    st->run_entries++;
    return rerr ? store_fail(err, st->run_path, rerr) : 0;
}

/* A group goes in under its first key, and into the run index. */
static int put_group(void *store, const group_span *span, const uint8_t *blob, size_t len,
                     errmsg *err)
{
    rocks_store *st = store;
    if (put_pair(st, span->first, span->first_len, blob, len, err) < 0) return -1;
    if (span->record_bytes > st->largest_group) st->largest_group = span->record_bytes;
    if (run_index_add_group(st->index, span->first, span->first_len, span->last,
                            span->last_len) < 0)
        return errmsg_set(err, "out of memory indexing a run");
    return 0;
}

int store_run_put_group(rocks_store *st, const group_span *span, const uint8_t *blob,
                        size_t len, errmsg *err)
{
    if (put_group(st, span, blob, len, err) < 0) return -1;
    sample_record(st, span->first, span->first_len, span->record_bytes);
    return 0;
}

void store_run_trim(rocks_store *st)
{
    if (st && st->groups) group_writer_trim(st->groups);
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

/* A database's runs are dealt to its parts in turn while nothing merges
 * them; a merge only takes runs of one part, so with merges planned (or
 * tiers: store/store_merge.c, or planned and stopped, where tiers may
 * still start) they all go to its first part. */
static int next_part(const store_db *d)
{
    if (d->merges_planned || d->merges_stopped || d->plan.tiered) return d->first_part;
    return d->first_part + (int)(d->runs % (uint64_t)d->n_parts);
}

/* Finishes the run's SST: its size in *size. */
static int finish_run(rocks_store *st, uint64_t *size, errmsg *err)
{
    char *rerr = NULL;
    if (st->groups && group_writer_finish(st->groups, err) < 0) return -1;
    rocksdb_sstfilewriter_finish(st->writer, &rerr);
    if (!rerr) rocksdb_sstfilewriter_file_size(st->writer, size);
    rocksdb_sstfilewriter_destroy(st->writer);
    st->writer = NULL;
    return rerr ? store_fail(err, st->run_path, rerr) : 0;
}

/* Journals the finished SST (a resumable store), then moves it into the
 * database as part `part`: the journal always knows every run RocksDB
 * holds. */
static int add_run(rocks_store *st, int part, uint64_t size, const void *note, size_t note_len,
                   errmsg *err)
{
    char *rerr = NULL;
    if (st->journal && store_state_journal_run(st, part, size, note, note_len, err) < 0) return -1;
    const char *files[1] = { st->run_path };
    rocksdb_ingest_external_file_cf(part_db(st, part), st->part[part], files, 1, st->ingest,
                                    &rerr);
    return rerr ? store_fail(err, st->run_path, rerr) : 0;
}

int store_run_ingest(rocks_store *st, int part, uint64_t *size, const void *note, size_t note_len,
                      errmsg *err)
{
    return finish_run(st, size, err) < 0 ? -1 : add_run(st, part, *size, note, note_len, err);
}

int store_run_end(rocks_store *st, const void *note, size_t note_len, errmsg *err)
{
    uint64_t size = 0;
    store_db *d = &st->dbs[st->run_db];
    int part = next_part(d), r = finish_run(st, &size, err);
    /* A resumable store's run is journaled, taken in and counted with
     * signals held, so that the runs a signal's line counts
     * (engine/resume_fate.c) are those the journal holds: a rerun takes in
     * a journaled run whose ingestion the signal cut short, and said one
     * more than the line had. */
    int held = r == 0 && st->journal;
    if (held) cleanup_hold_signals();
    if (r == 0) r = add_run(st, part, size, note, note_len, err);
    if (r < 0 && st->index) run_index_drop_run(st->index);
    else if (r == 0 && st->index && run_index_end_run(st->index, part) < 0)
        r = errmsg_set(err, "out of memory indexing a run");
    if (r == 0) {
        st->runs++;
        d->runs++;
    }
    if (held) cleanup_release_signals();
    if (r < 0) return -1;
    if (part >= st->parts_used) st->parts_used = part + 1;
    st->bytes_written += size;
    store_merge_after_run(st, d);
    return 0;
}

const char *store_run_dir(const rocks_store *st) { return st->dbs[st->run_db].dir; }

void store_run_free(rocks_store *st)
{
    if (st->writer) rocksdb_sstfilewriter_destroy(st->writer);
    st->writer = NULL;
    group_writer_destroy(st->groups);
    st->groups = NULL;
    run_index_destroy(st->index);
    st->index = NULL;
    key_samples_free_copies(&st->samples);
    free(st->run_path);
    st->run_path = NULL;
}
