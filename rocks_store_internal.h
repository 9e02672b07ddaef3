/* rocks_store_internal.h -- the store's state, for rocks_store.c,
 * rocks_read.c and rocks_merge.c only.
 *
 * Contract: rocks_store.c opens the database, writes runs into it and
 * closes it; rocks_read.c reads them back; rocks_merge.c decides when
 * RocksDB merges runs (universal compaction) and waits for those merges.
 * Nothing outside the three files includes this header: the rest of the
 * program sees rocks_store.h.
 */
#ifndef ROCKS_STORE_INTERNAL_H
#define ROCKS_STORE_INTERNAL_H

#include <rocksdb/c.h>
#include "rocks_store.h"
#include "merge_plan.h"
#include "group_writer.h"
#include "run_index.h"
#include "run_journal.h"

/* For RocksDB's triggers and percentages: a value never reached. */
#define ROCKS_NEVER (1 << 30)

struct rocks_store {
    char *dir;
    rocksdb_t *db;
    rocksdb_column_family_handle_t *part[STORE_MAX_PARTS];
    int n_parts;                /* column families created */
    int parts_used;             /* of those, how many hold runs */
    rocksdb_options_t *opts;
    rocksdb_envoptions_t *envopts;
    rocksdb_block_based_table_options_t *table;
    rocksdb_universal_compaction_options_t *universal;
    rocksdb_ingestexternalfileoptions_t *ingest;
    rocksdb_sstfilewriter_t *writer;
    char *run_path;
    _Atomic uint64_t runs;       /* read by the signal thread too (sort_resume.c) */
    uint64_t bytes_written;
    files_plan files;           /* the open-file budget's split */
    int compaction_forced;
    int merges_planned;         /* a size hint or estimate set up background merges */
    int catch_up_runs;          /* runs merged at settle time, after the load */
    int direct_io;              /* runs are read (and merged) bypassing the page cache */
    uint64_t run_bytes;         /* expected size of one run */
    key_sample *samples;        /* see store_samples(); the store owns their keys */
    size_t n_samples, samples_cap;
    uint64_t unsampled;         /* record bytes of this run since its last sample */
    group_writer *groups;       /* compact runs: records go in groups (group_codec.h) */
    run_index *index;           /* compact runs: each run's groups (run_index.h) */
    /* A resumable store (rocks_state.c). */
    char *state_dir;            /* NULL: a temporary directory */
    int state_owned;            /* the directory is ours to remove */
    run_journal *journal;
    store_resume resume;
    char *discarded;            /* resume.discarded's text */
    uint8_t *kept_blob[STORE_KEEP_SLOTS];   /* resume.kept's copies (of a discarded state's too) */
    size_t kept_blob_len[STORE_KEEP_SLOTS];
    uint8_t *note_blob;         /* resume.note's copy */
    uint64_t run_entries;       /* the run being written: the keys put in it, */
    size_t run_first_sample;    /* and where its samples start */
};

/* rocks_state.c: a resumable store's journal.  state_prepare() checks and
 * locks the directory before the database opens, and sets st->dir; a fresh
 * or discarded state has its identity journaled then, before its database
 * exists.  state_restore() takes the journaled runs back once it is open:
 * 0, -1 with the cause in err, or 1 when the state must be discarded (why
 * in st->discarded): the caller then closes the database, calls
 * state_wipe() (the database removed, the journal holding only the
 * identity again) and opens it afresh.  state_journal_run() journals a
 * run, before RocksDB takes it in.  Each returns 0 or -1 with the cause in
 * err unless said otherwise. */
int state_prepare(rocks_store *st, const store_options *o, errmsg *err);
int state_restore(rocks_store *st, errmsg *err);
int state_wipe(rocks_store *st, const store_options *o, errmsg *err);
void state_discard(rocks_store *st, const char *why);
int state_journal_run(rocks_store *st, int part, uint64_t bytes, const void *note,
                      size_t note_len, errmsg *err);
void state_close(rocks_store *st, int keep);

/* The column families' names, part i as store_part_names[i]. */
extern const char *const store_part_names[STORE_MAX_PARTS];

/* A key sample (store_samples()), with its weight; -1 when out of memory. */
int store_add_sample(rocks_store *st, const uint8_t *key, size_t klen, uint64_t weight);

/* rocks_merge.c: the compaction options at open, and after each run the
 * merges the open-file budget forces when none were planned. */
void merges_configure(rocks_store *st, const store_options *o);
void merges_after_run(rocks_store *st);

#endif
