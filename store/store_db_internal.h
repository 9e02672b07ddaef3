/* store/store_db_internal.h -- the store's state: its databases and what it keeps
 * of them, shared by the store's RocksDB files.
 *
 * Contract: store/store.c opens the databases (one per temp directory)
 * and closes them; store/store_run.c writes runs into them; store/store_iter.c reads
 * them back; store/store_merge.c decides when RocksDB merges runs (universal
 * compaction) and waits for those merges; store/store_state.c journals a
 * resumable store; store/store_pass.c rewrites a part's runs in merge passes.
 * Each of them declares its functions, those the others call too, in its
 * own header.  Nothing outside store/ includes this one: the rest of the
 * program sees store/store.h.
 */
#ifndef STORE_DB_INTERNAL_H
#define STORE_DB_INTERNAL_H

#include <stdlib.h>
#include <rocksdb/c.h>
#include "util/errmsg.h"
#include "store/store_types.h"
#include "store/merge_plan.h"
#include "codec/group_writer.h"
#include "keys/key_samples.h"
#include "store/run_index.h"
#include "disk/run_journal.h"
#include "disk/temp_dirs.h"

/* For RocksDB's triggers and percentages: a value never reached. */
#define ROCKS_NEVER (1 << 30)

/* One database: the runs of one directory. */
typedef struct store_db {
    char *dir;                  /* its directory (mkdtemp'd, or the state's) */
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_universal_compaction_options_t *universal;
    files_plan files;           /* its share of the open-file budget, and of the
                                   merges' memory (merge_width) */
    size_t merge_readahead;     /* each run a background merge reads, at a time */
    int first_part, n_parts;    /* its column families: parts first_part, ... */
    uint64_t weight;            /* its share of the runs (disk/temp_dirs.h) */
    uint64_t runs;              /* runs written to it */
    int bytes_counter;          /* temp_env_count_writes()'s handle; -1: none */
    int merges_planned;         /* a size hint or estimate set up background merges */
    int compaction_forced;      /* no plan, but more runs than the readout could keep open */
    int merges_stopped;         /* planned merges stopped (store_plan_outgrown()): its runs
                                   still go to its first part, where tiers would merge them */
    merge_plan plan;            /* the merges' (merge_plan_within()) */
    int direct_io;              /* its runs are read (and merged) bypassing the page cache */
} store_db;

struct rocks_store {
    store_db dbs[STORE_MAX_DIRS];
    int n_dbs;
    char *paths;                /* store_path()'s text; NULL: the first directory's */
    rocksdb_column_family_handle_t *part[STORE_MAX_PARTS];
    int part_db[STORE_MAX_PARTS];   /* the database holding each part */
    int n_parts;                /* column families created, in all */
    int parts_used;             /* of those, 0..parts_used-1 may hold runs */
    dir_turn turn;              /* which database the next run goes to */
    int run_db;                 /* the database of the run being written, or the last */
    rocksdb_envoptions_t *envopts;
    rocksdb_block_based_table_options_t *table;
    rocksdb_ingestexternalfileoptions_t *ingest;
    rocksdb_sstfilewriter_t *writer;
    char *run_path;
    _Atomic uint64_t runs;       /* read by the signal thread too (engine/sort_resume.c) */
    uint64_t bytes_written;
    int catch_up_runs;          /* runs merged at settle time, after the load */
    uint64_t run_bytes;         /* expected size of one run */
    uint64_t runs_planned;      /* the runs the merges were planned for; 0: none */
    uint64_t merges_stopped_after; /* runs written when planned merges stopped; 0: never */
    key_samples samples;        /* see store_samples(); the store owns their keys */
    uint64_t unsampled;         /* record bytes of this run since its last sample */
    store_codec codec;          /* the runs' */
    uint64_t readout_memory;    /* store_options' */
    hts_tpool *pool;            /* store_options' */
    int encode_threads;         /* store_options' compression_threads */
    group_writer *groups;       /* compact runs: records go in groups (codec/group_codec.h) */
    size_t group_bytes;         /* compact runs: records per group (store/store_merge.c) */
    uint64_t largest_group;     /* compact runs: the most bytes of records a group put held */
    run_index *index;           /* compact runs: each run's groups (store/run_index.h) */
    /* A resumable store (store/store_state.c). */
    char *state_dir;            /* NULL: a temporary directory */
    int state_owned;            /* the directory is ours to remove */
    int state_fd;               /* the directory, held open to remove it wherever it goes; -1 */
    run_journal *journal;
    store_resume resume;
    char *discarded;            /* resume.discarded's text */
    uint8_t *kept_blob[STORE_KEEP_SLOTS];   /* resume.kept's copies (of a discarded state's too) */
    size_t kept_blob_len[STORE_KEEP_SLOTS];
    uint8_t *note_blob;         /* resume.note's copy */
    uint64_t run_entries;       /* the run being written: the keys put in it, */
    size_t run_first_sample;    /* and where its samples start */
    /* Merge passes (store/store_pass.c). */
    int passing;                /* a pass writes the run: nothing is sampled */
    int merges_left_to_passes;  /* background merges not planned: passes will merge */
    uint64_t pass_runs_in, pass_runs_out;   /* runs a pass replaced, and by how many */
};

/* The column families' names, a database's i-th as store_part_names[i]. */
static const char *const store_part_names[STORE_DB_MAX_PARTS] = { "default", "part1", "part2", "part3" };

/* The database that holds part p. */
static inline rocksdb_t *part_db(const rocks_store *st, int p)
{
    return st->dbs[st->part_db[p]].db;
}

/* A count RocksDB keeps per column family (a property such as
 * "rocksdb.num-files-at-level0") of part p; 0 if it says none. */
static inline uint64_t store_part_property(rocks_store *st, int p, const char *name)
{
    char *v = rocksdb_property_value_cf(part_db(st, p), st->part[p], name);
    uint64_t n = v ? strtoull(v, NULL, 10) : 0;
    free(v);
    return n;
}

/* RocksDB's malloc'd error as the cause in err, after `what`; returns -1. */
static inline int store_fail(errmsg *err, const char *what, char *rocks_err)
{
    errmsg_set(err, "%s: %s", what, rocks_err);
    free(rocks_err);
    return -1;
}

#endif
