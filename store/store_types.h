/* store/store_types.h -- the store's types and constants, without its functions.
 *
 * Contract: what the store's callers pass in and get back (its options, the
 * runs' codecs, the reports) and the constants its files share, so that a
 * module that needs only these (store/state_dir.h, store/run_readers.h,
 * store/temp_space.h) depends on no file of the store.  The functions are
 * declared in each file's own header (store/store.h includes them all);
 * store/store_run.h says what the store is.
 */
#ifndef STORE_TYPES_H
#define STORE_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/thread_pool.h>
#include "disk/temp_dirs.h"

/* How runs hold their records: one entry a record, uncompressed or under
 * RocksDB's block codecs; or one entry a group of records
 * (codec/group_codec.h), in columns (the compact runs) or plain (the
 * uncompressed runs a sort writes now: STORE_CODEC_NONE stays readable for
 * the runs of a state written before them). */
typedef enum {
    STORE_CODEC_NONE, STORE_CODEC_LZ4, STORE_CODEC_SNAPPY, STORE_CODEC_ZSTD,
    STORE_CODEC_COLUMNS, STORE_CODEC_PLAIN
} store_codec;

/* Whether runs hold groups of records, one entry each. */
static inline int store_codec_grouped(store_codec c)
{
    return c == STORE_CODEC_COLUMNS || c == STORE_CODEC_PLAIN;
}

/* Whether RocksDB compresses the runs block by block (and decompresses
 * each block as it reads). */
static inline int store_codec_in_blocks(store_codec c)
{
    return c == STORE_CODEC_LZ4 || c == STORE_CODEC_SNAPPY || c == STORE_CODEC_ZSTD;
}

/* One place the runs may go: an existing directory, or alone a prefix
 * ("dir/name": the database goes in dir/name.rocksort.XXXXXX). */
typedef struct {
    const char *path;
    uint64_t weight;        /* its share of the runs (dir_turn, disk/temp_dirs.h) */
} store_dir;

#define STORE_MAX_DIRS TEMP_MAX_DIRS

typedef struct {
    const store_dir *dirs;  /* where the runs go, 1..STORE_MAX_DIRS; unused with state_dir */
    int n_dirs;
    store_codec compression;
    int compression_threads;/* threads compressing one run's blocks; <= 1: the writer's own */
    hts_tpool *pool;        /* NULL, or the sort's pool: compact runs' groups are encoded
                               on it, not on a pool of the store's own */
    uint64_t size_hint;     /* expected total bytes of all runs; 0: unknown */
    uint64_t run_bytes;     /* expected bytes of one run */
    int max_open_files;     /* descriptors the store may use in all; -1: no limit */
    int background_threads; /* compaction threads of each database */
    uint64_t merge_memory;  /* what the runs a background merge reads may hold, in all
                               (store/run_readers.h); 0: no limit */
    uint64_t readout_memory;/* what the readout's readers may hold; 0: no limit */
    int parts;              /* readers wanted in all, 1..STORE_DB_MAX_PARTS
                               (store/store_run.h) */
    const char *state_dir;  /* --resume: the store lives here and outlives a kill
                               (store/store_state.h) */
    const char *identity;   /* with state_dir: what a later run must match to resume */
    const char *state_stale;/* with state_dir, if not NULL: why a state of this identity
                               is discarded all the same (its input changed where the
                               identity does not look) */
    int *state_discarded;   /* with state_dir, if not NULL: set when store_open() discarded
                               an earlier state, even if it then failed */
    int *state_other;       /* with state_dir, if not NULL: a state of another identity,
                               version or format, or a damaged one, is kept as it was,
                               not discarded: store_open() fails with why in err, and
                               sets it */
} store_options;

/* Column families of one database, and parts of the whole store. */
#define STORE_DB_MAX_PARTS 4
#define STORE_MAX_PARTS STORE_MAX_DIRS

typedef struct rocks_store rocks_store;
/* One part's entries in key order (store/store_iter.h). */
typedef struct store_iter store_iter;
/* A merge pass over one part (store/store_pass.h). */
typedef struct store_pass store_pass;

/* A temp directory's runs are merged in the background only past this many
 * of its own (store/store_merge.h): fewer are merged at the readout. */
#define STORE_MERGE_MIN_RUNS 32

/* Compact runs: record bytes per group.  Larger groups barely compress
 * better, and the readout holds one decoded group per run written: where
 * the runs are many for the memory, groups shrink to as little as
 * STORE_GROUP_MIN_BYTES (run_readers_group_bytes(), store/run_readers.h). */
#define STORE_GROUP_BYTES (256u << 10)
#define STORE_GROUP_MIN_BYTES (64u << 10)

/* The layout of a state (--resume DIR), journaled first: a state of
 * another version is discarded, whatever it holds.  Bump it with any change
 * to what a state stores or how: the journal's records (store/store_state.c) and
 * framing (disk/run_journal.c); the runs' keys (keys/sort_key.c, keys/template_key.c,
 * keys/minimiser.c), values (codec/record.h: htslib's in-memory bam1_core_t and
 * data) and groups (codec/group_codec.c); the run index's spans (store/run_index.c);
 * the caller's notes and kept blobs (resume/resume_state.c, engine/sort_resume.c).
 * test/test_state_layout.c fails on a change to most of these until the
 * version is bumped and the layout's new hash recorded there.
 * 3: 'S' leads with it; notes say whether their digest covers every record.
 * 4: template-coordinate keys hold the cell barcode (CB).
 * 5: notes hold a file's ctime and its stored prefix's CRC-32.
 * 6: notes say which of several inputs they are in, and fold the ctimes and
 *    CRC-32s of the inputs read whole before it. */
#define STORE_STATE_VERSION 6

/* What a resumable store took back at its open (store_state_resumed(),
 * store/store_state.h), with the blobs kept in STORE_KEEP_SLOTS slots. */
#define STORE_KEEP_SLOTS 3
typedef struct {
    uint64_t runs;              /* runs taken back; 0: a fresh start */
    const char *discarded;      /* NULL, or why an earlier state was not used */
    int complete;               /* the whole input is stored (store_state_complete()) */
    const uint8_t *note;        /* the last run's or the completion's note */
    size_t note_len;
    const uint8_t *kept[STORE_KEEP_SLOTS];  /* the last store_state_keep() blob of each slot, or NULL */
    size_t kept_len[STORE_KEEP_SLOTS];
} store_resume;

/* Bytes each run's reader fetches at a time when runs bypass the page
 * cache (direct I/O reads are synchronous: no kernel readahead), unless
 * the readout's memory asks for less (store/run_readers.h). */
#define STORE_DIRECT_READAHEAD (2u << 20)
/* The runs' SST blocks: large, as the data is read once, sequentially.
 * Each run read holds one in memory, besides its readahead. */
#define STORE_BLOCK_BYTES (256u << 10)

/* One database of the store, for -v and -k (store_dir_at()). */
typedef struct {
    const char *path;           /* the database's directory */
    uint64_t runs;              /* runs written there */
    uint64_t bytes_written;     /* every byte RocksDB wrote there: runs, merges, its own files */
} store_dir_report;

/* What the background merges wrote, and how they were planned: for -v, to
 * say why.  With several databases, the narrowest merges of any
 * (store_merge_summary(), store/store_merge.h). */
typedef enum {
    STORE_MERGES_NONE,          /* none planned or needed */
    STORE_MERGES_ONCE,          /* at most one rewrite per byte, about 2*sqrt(T) runs left */
    STORE_MERGES_TIERS          /* the open-file budget allows neither: tiers (store/merge_plan.h) */
} store_merge_kind;
typedef struct {
    store_merge_kind kind;
    uint64_t bytes;             /* written to merged runs, in all databases */
    int width;                  /* the most runs one merge takes */
    int readout_runs;           /* the most runs the readout may keep open */
    int left_to_passes;         /* none planned: compact runs merged in passes instead */
    uint64_t stopped_after;     /* planned merges stopped after this many runs, as groups
                                   of long records outgrew the plan; 0: not stopped */
} store_merge_report;

#endif
