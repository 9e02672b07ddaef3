/* store/store_pass.c -- the store's merge passes: see store/store_pass.h
 * and store/store_db_internal.h.
 *
 * A pass rewrites every run of one part, the oldest first, a few at a
 * time: the caller reads each run of a group on its own (store/sst_read.h),
 * merges them and writes one run, which RocksDB takes in as the part's
 * newest; then the runs it replaces are deleted, the oldest first, the one
 * order in which RocksDB lets a level-0 file go (DB::DeleteFile).  Until
 * they go the part holds their keys twice, and RocksDB's iterator would
 * show the newest copy only.  Compact runs' index (store/run_index.h) names each
 * run's groups: the pass's runs are filed as they are written and the
 * part's older runs forgotten at the end, so every part is rewritten
 * whole.  Nothing merges in the background meanwhile (store_merge_settle() has
 * stopped it), and a resumable store is never passed over: its journal
 * names the runs a later run takes back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/store_db_internal.h"
#include "store/store_pass.h"
#include "store/store_run.h"
#include "store/store_iter.h"

struct store_pass {
    rocks_store *st;
    int part;
    char **names;           /* the part's runs, the oldest first: names in the database */
    uint64_t *sizes;
    int n;
    int deleted;            /* runs[0..deleted) are gone */
    size_t first_new;       /* the run index's runs from here are the pass's */
    uint64_t depth, bytes;  /* the part's groups open at once (run index), its bytes */
    group_writer *spill_groups; /* compact runs: the store's writer, set aside meanwhile */
};

/* A pass's groups are encoded on at most this many threads: each thread
 * keeps two groups in flight (codec/group_writer.h), and a pass runs when memory
 * is short. */
#define PASS_ENCODE_THREADS 2

/* A group closes once its records reach the group size, so the last
 * record added takes it past by up to a record: a few hundred bytes for
 * short reads, up to megabytes for long ones, whose groups hold one or two
 * records.  The readers hold a decoded group of every run at once, and
 * those of a region of long reads are all large at once: each is counted
 * at the largest group written (measured: counted at the mean, 1 Mb reads
 * peaked 14 MB over the bound).  Groups taken back by --resume were
 * written before and are not counted. */
static size_t held_group_bytes(const rocks_store *st)
{
    return st->largest_group > st->group_bytes ? (size_t)st->largest_group : st->group_bytes;
}

/* The part's level-0 files, newest first as RocksDB keeps them, into p
 * oldest first.  -1 when out of memory. */
static int list_runs(store_pass *p)
{
    rocks_store *st = p->st;
    rocksdb_column_family_metadata_t *cf =
        rocksdb_get_column_family_metadata_cf(part_db(st, p->part), st->part[p->part]);
    rocksdb_level_metadata_t *level = cf ? rocksdb_column_family_metadata_get_level_metadata(cf, 0)
                                         : NULL;
    size_t n = level ? rocksdb_level_metadata_get_file_count(level) : 0;
    int ok = cf && level && (p->names = calloc(n + 1, sizeof *p->names))
             && (p->sizes = calloc(n + 1, sizeof *p->sizes));
    for (size_t i = 0; ok && i < n; i++) {
        rocksdb_sst_file_metadata_t *f = rocksdb_level_metadata_get_sst_file_metadata(level, i);
        ok = f != NULL;
        if (!ok) break;
        p->names[n - 1 - i] = rocksdb_sst_file_metadata_get_relative_filename(f);
        p->sizes[n - 1 - i] = rocksdb_sst_file_metadata_get_size(f);
        p->bytes += p->sizes[n - 1 - i];
        ok = p->names[n - 1 - i] != NULL;
        rocksdb_sst_file_metadata_destroy(f);
    }
    p->n = (int)n;
    if (level) rocksdb_level_metadata_destroy(level);
    if (cf) rocksdb_column_family_metadata_destroy(cf);
    return ok ? 0 : -1;
}

store_pass *store_pass_begin(rocks_store *st, int part, errmsg *err)
{
    if (st->journal) {
        errmsg_set(err, "a resumable store's runs are not merged in passes");
        return NULL;
    }
    store_pass *p = calloc(1, sizeof *p);
    if (p) {
        p->st = st;
        p->part = part;
    }
    if (!p || list_runs(p) < 0) {
        store_pass_abort(p);
        errmsg_set(err, "out of memory");
        return NULL;
    }
    p->first_new = st->index ? run_index_runs(st->index) : 0;
    p->depth = st->index ? run_index_part_runs(st->index, part) : 0;
    if (st->groups) {
        /* Each encoder holds a group's columns and its blob: groups of long
         * records, many times the group size, are encoded one at a time. */
        int threads = held_group_bytes(st) > 2 * (size_t)st->group_bytes ? 1
                    : st->encode_threads < PASS_ENCODE_THREADS ? st->encode_threads
                                                               : PASS_ENCODE_THREADS;
        group_writer *gw = store_run_group_writer(st, threads);
        if (!gw) {
            store_pass_abort(p);
            errmsg_set(err, "out of memory");
            return NULL;
        }
        p->spill_groups = st->groups;
        st->groups = gw;
    }
    return p;
}

void store_pass_survey(rocks_store *st, store_survey *out)
{
    *out = (store_survey){ .parts = st->parts_used, .grouped = st->groups != NULL,
                           .block_codec = store_codec_in_blocks(st->codec),
                           .resumable = st->journal != NULL,
                           .group_bytes = held_group_bytes(st) };
    for (int p = 0; p < out->parts; p++) {
        /* One level (store_merge_configure()): every run is a level-0 file. */
        out->runs[p] = store_part_property(st, p, "rocksdb.num-files-at-level0");
        out->groups[p] = st->index ? run_index_part_runs(st->index, p) : 0;
    }
}

int store_pass_runs(const store_pass *p) { return p->n; }

int store_pass_merged(const store_pass *p) { return p->depth > (uint64_t)p->n; }

/* A RocksDB merge copies compact runs' groups whole, so a merged file
 * holds one group open per run merged into it: its share of the part's
 * runs, by size. */
uint64_t store_pass_run_depth(const store_pass *p, int i)
{
    if (!p->depth || !p->bytes) return 0;
    uint64_t d = (uint64_t)((double)p->depth * (double)p->sizes[i] / (double)p->bytes + 0.5);
    return d ? d : 1;
}

static char *run_path(const store_pass *p, int i)
{
    char *path = NULL;
    const store_db *d = &p->st->dbs[p->st->part_db[p->part]];
    const char *slash = p->names[i][0] == '/' ? "" : "/";
    return asprintf(&path, "%s%s%s", d->dir, slash, p->names[i]) < 0 ? NULL : path;
}

store_iter *store_pass_iter(store_pass *p, int i, size_t readahead, errmsg *err)
{
    char *path = run_path(p, i);
    if (!path) {
        errmsg_set(err, "out of memory");
        return NULL;
    }
    int db = p->st->part_db[p->part];
    store_iter *it = store_iter_over_file(path, p->st->dbs[db].direct_io, readahead, err);
    free(path);
    return it;
}

int store_pass_run_begin(store_pass *p, errmsg *err)
{
    char name[40];
    snprintf(name, sizeof name, "pass-%06llu.sst", (unsigned long long)p->st->pass_runs_out);
    p->st->passing = 1;
    return store_run_open_writer(p->st, p->st->part_db[p->part], name, err);
}

/* RocksDB says nothing when it keeps a file: the part's count tells. */
static int delete_oldest(store_pass *p, errmsg *err)
{
    rocks_store *st = p->st;
    char *path = run_path(p, p->deleted);
    uint64_t before = 0, after = 0;
    char *v = rocksdb_property_value_cf(part_db(st, p->part), st->part[p->part],
                                        "rocksdb.num-files-at-level0");
    before = v ? strtoull(v, NULL, 10) : 0;
    free(v);
    rocksdb_delete_file(part_db(st, p->part), p->names[p->deleted]);
    v = rocksdb_property_value_cf(part_db(st, p->part), st->part[p->part],
                                  "rocksdb.num-files-at-level0");
    after = v ? strtoull(v, NULL, 10) : before;
    free(v);
    int ok = after + 1 == before;
    if (!ok) errmsg_set(err, "cannot remove merged run '%s'", path ? path : p->names[p->deleted]);
    free(path);
    if (ok) p->deleted++;
    return ok ? 0 : -1;
}

int store_pass_run_end(store_pass *p, int runs, errmsg *err)
{
    rocks_store *st = p->st;
    uint64_t size = 0;
    st->passing = 0;
    if (store_run_ingest(st, p->part, &size, NULL, 0, err) < 0) {
        if (st->index) run_index_drop_run(st->index);
        return -1;
    }
    if (st->index && run_index_end_run(st->index, p->part) < 0)
        return errmsg_set(err, "out of memory indexing a run");
    st->pass_runs_in += (uint64_t)runs;
    st->pass_runs_out++;
    while (runs-- > 0)
        if (delete_oldest(p, err) < 0) return -1;
    return 0;
}

void store_pass_end(store_pass *p)
{
    if (p->st->index && p->deleted == p->n)
        run_index_forget(p->st->index, p->part, p->first_new);
    store_pass_abort(p);
}

void store_pass_abort(store_pass *p)
{
    if (!p) return;
    p->st->passing = 0;
    if (p->spill_groups) {
        group_writer_destroy(p->st->groups);
        p->st->groups = p->spill_groups;
    }
    for (int i = 0; p->names && i < p->n; i++) free(p->names[i]);
    free(p->names);
    free(p->sizes);
    free(p);
}

uint64_t store_pass_runs_replaced(const rocks_store *st) { return st->pass_runs_in; }
uint64_t store_pass_runs_written(const rocks_store *st) { return st->pass_runs_out; }
