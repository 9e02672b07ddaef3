/* store/rocks_store_internal.h -- the store's state, for store/rocks_store.c,
 * store/rocks_read.c and store/rocks_merge.c only.
 *
 * Contract: store/rocks_open.c opens the databases (one per temp directory)
 * and closes them; store/rocks_store.c writes runs into them; store/rocks_read.c reads
 * them back; store/rocks_merge.c decides when RocksDB merges runs (universal
 * compaction) and waits for those merges; store/rocks_state.c journals a
 * resumable store.  Nothing outside these files includes this header: the
 * rest of the program sees store/rocks_store.h.
 */
#ifndef ROCKS_STORE_INTERNAL_H
#define ROCKS_STORE_INTERNAL_H

#include <rocksdb/c.h>
#include "store/rocks_store.h"
#include "store/merge_plan.h"
#include "codec/group_writer.h"
#include "keys/key_ranges.h"
#include "store/run_index.h"
#include "store/run_journal.h"

/* For RocksDB's triggers and percentages: a value never reached. */
#define ROCKS_NEVER (1 << 30)

/* One database: the runs of one directory. */
typedef struct {
    char *dir;                  /* its directory (mkdtemp'd, or the state's) */
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_universal_compaction_options_t *universal;
    files_plan files;           /* its share of the open-file budget, and of the
                                   merges' memory (merge_width) */
    size_t merge_readahead;     /* each run a background merge reads, at a time */
    int first_part, n_parts;    /* its column families: parts first_part, ... */
    uint64_t weight;            /* its share of the runs (store/temp_dirs.h) */
    uint64_t runs;              /* runs written to it */
    int bytes_counter;          /* temp_env_count_writes()'s handle; -1: none */
    int merges_planned;         /* a size hint or estimate set up background merges */
    int compaction_forced;      /* no plan, but more runs than the readout could keep open */
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
    key_samples samples;        /* see store_samples(); the store owns their keys */
    uint64_t unsampled;         /* record bytes of this run since its last sample */
    store_codec codec;          /* the runs' */
    uint64_t readout_memory;    /* store_options' */
    hts_tpool *pool;            /* store_options' */
    int encode_threads;         /* store_options' compression_threads */
    group_writer *groups;       /* compact runs: records go in groups (codec/group_codec.h) */
    run_index *index;           /* compact runs: each run's groups (store/run_index.h) */
    /* A resumable store (store/rocks_state.c). */
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
    /* Merge passes (store/rocks_pass.c). */
    int passing;                /* a pass writes the run: nothing is sampled */
    uint64_t pass_runs_in, pass_runs_out;   /* runs a pass replaced, and by how many */
};

/* store/rocks_store.c: RocksDB's malloc'd error as the cause in err, after
 * `what`; returns -1.  store_runs_prepare() sets up the runs' writer (compact
 * runs' groups and index), store_runs_close() frees it with the samples. */
int store_fail(errmsg *err, const char *what, char *rocks_err);
int store_runs_prepare(rocks_store *st, const store_options *o, errmsg *err);
void store_runs_close(rocks_store *st);
/* store/rocks_store.c: a run's SST, opened as `name` in database db; then,
 * once its entries are in, written, journaled (a resumable store) and
 * moved into part `part`, its size in *size. */
int store_runs_open_writer(rocks_store *st, int db, const char *name, errmsg *err);
/* A writer of compact runs' groups into the run being written, encoding
 * on `threads` of the store's pool; NULL when out of memory. */
group_writer *store_runs_group_writer(rocks_store *st, int threads);
int store_runs_ingest(rocks_store *st, int part, uint64_t *size, const void *note, size_t note_len,
                      errmsg *err);

/* store/rocks_read.c: an iterator over one SST file (a merge pass's input). */
store_iter *store_iter_over_file(const char *path, int direct, size_t readahead, errmsg *err);

/* store/rocks_state.c: a resumable store's journal, in one database.
 * store_state_prepare() checks and locks the directory before the database
 * opens, and sets st->dbs[0].dir; a fresh or discarded state has its
 * identity journaled then, before its database exists.  store_state_restore()
 * takes the journaled runs back once it is open: 0, -1 with the cause in
 * err, or 1 when the state must be discarded (why in st->discarded): the
 * caller then closes the database, calls store_state_wipe() (the database
 * removed, the journal holding only the identity again) and opens it
 * afresh; with o->state_other, store_state_keep_other() fails instead, the
 * state kept as it was (why in err).  store_state_journal_run() journals a run,
 * before RocksDB takes it in.
 * Each returns 0 or -1 with the cause in err unless said otherwise. */
int store_state_prepare(rocks_store *st, const store_options *o, errmsg *err);
int store_state_restore(rocks_store *st, errmsg *err);
int store_state_wipe(rocks_store *st, const store_options *o, errmsg *err);
void store_state_discard(rocks_store *st, const char *why);
int store_state_keep_other(rocks_store *st, const store_options *o, const char *why, errmsg *err);
int store_state_journal_run(rocks_store *st, int part, uint64_t bytes, const void *note,
                      size_t note_len, errmsg *err);
void store_state_close(rocks_store *st, int keep);

/* The column families' names, a database's i-th as store_part_names[i]. */
extern const char *const store_part_names[STORE_DB_MAX_PARTS];

/* The database that holds part p. */
static inline rocksdb_t *part_db(const rocks_store *st, int p)
{
    return st->dbs[st->part_db[p]].db;
}

/* store/rocks_merge.c: a database's compaction options at open (share: its
 * fraction of the runs), and after each run the merges the open-file
 * budget forces when none were planned. */
void store_merges_configure(rocks_store *st, store_db *d, const store_options *o, double share);
void store_merges_after_run(rocks_store *st, store_db *d);

#endif
