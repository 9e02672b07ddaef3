/* store/rocks_store.h -- the temporary RocksDB that holds sorted runs.
 *
 * Contract: store_open() creates a fresh directory (mkdtemp, mode 0700) in
 * each of the directories it is given (or beside a lone prefix) and a
 * database in each: one database per directory, so that a database's runs,
 * and the runs its merges write, stay on that directory's disk.  Sorted
 * runs are bulk-loaded: the caller writes keys in increasing order between
 * store_run_begin() and store_run_end(), which builds an SST file in one of
 * the directories, dealt in turn in proportion to their weights
 * (store/temp_dirs.h), and ingests it there (no memtable, no write-ahead log, no
 * copy: the file is written where it stays).  With a size hint, universal
 * compaction merges each database's runs in the background so that the
 * final readout merges about 2*sqrt(T) of the T runs of each.  The runs are
 * read back in parts, each a column family with a reader of its own: at
 * least one per database, so that every disk is read at once, and with one
 * database, while nothing merges, up to `parts` of them (runs dealt in
 * turn); a merge only combines runs of one part, so with merges planned a
 * database's runs all go to its first part.  Runs bypass the page cache:
 * the SST writer drops what it wrote, and reads and merges use direct I/O
 * where the temp file system allows it.  Nothing in the directories is
 * ever synced (store/temp_env.h): the runs need no durability.  A merge keeps its
 * runs open, and so does the readout: the store stays within
 * max_open_files descriptors (store/merge_plan.h), shared among the databases,
 * merging more, and after the load if it must, when that is low.
 * store_close() removes the directories unless asked to keep them.
 * Failures return -1 (NULL for store_open()) with the cause in an errmsg
 * (util/errmsg.h), naming the directory of the failed write.
 */
#ifndef ROCKS_STORE_H
#define ROCKS_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "util/errmsg.h"
#include <htslib/thread_pool.h>
#include "codec/group_writer.h"
#include "keys/key_bytes.h"
#include "store/temp_dirs.h"

/* How runs hold their records: RocksDB's block codecs, or groups of records
 * in columns (codec/group_codec.h), the compact runs. */
typedef enum {
    STORE_CODEC_NONE, STORE_CODEC_LZ4, STORE_CODEC_SNAPPY, STORE_CODEC_ZSTD,
    STORE_CODEC_COLUMNS
} store_codec;

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
    uint64_t weight;        /* its share of the runs (dir_turn, store/temp_dirs.h) */
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
    int parts;              /* readers wanted in all, 1..STORE_DB_MAX_PARTS (see above) */
    const char *state_dir;  /* --resume: the store lives here and outlives a kill (below) */
    const char *identity;   /* with state_dir: what a later run must match to resume */
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

/* The databases the open-file budget can hold, each with its own files and
 * room for a few runs: the caller spreads the runs over at most this many
 * directories.  max_open_files < 0: no limit. */
int store_dirs_that_fit(int max_open_files);

typedef struct rocks_store rocks_store;

rocks_store *store_open(const store_options *opt, errmsg *err);

/* Without a size hint, the caller may still estimate the total (from the
 * input file's size) once loading has begun: past STORE_MERGE_MIN_RUNS
 * runs, merging starts as a hint would have set it up; below, the readout
 * merges every run itself, which is cheaper than rewriting them.  Compact
 * runs are not merged in the background when their groups alone (one per
 * run, which a RocksDB merge copies whole) would not fit readout_memory:
 * merge passes rewrite them before the readout (readout/run_passes.h), and
 * background merges would only add a rewrite, and files holding more
 * groups open than a pass can read at once.  Call it
 * before the first run ends: runs already dealt to other parts stay there,
 * outside the merges' reach.  Returns the fewest runs a background merge
 * takes, 0 if there will be no merges, -1 if RocksDB refused the change. */
#define STORE_MERGE_MIN_RUNS 32
int store_plan_merges(rocks_store *st, uint64_t size_estimate);

/* The most runs one background merge may take when `size` bytes arrive in
 * runs of run_bytes: the merge budget above, or 0 if no merges would be
 * planned (hinted: the size comes from -s, which plans merges at any
 * size).  For sizing the temp space before a store exists. */
int store_merge_width(uint64_t size, uint64_t run_bytes, int hinted);

/* note: with a state directory, the caller's bytes journaled with the run
 * (its progress through the input), handed back when the sort resumes;
 * otherwise NULL. */
int store_run_begin(rocks_store *st, errmsg *err);
int store_run_put(rocks_store *st, const uint8_t *key, size_t klen,
                  const uint8_t *val, size_t vlen, errmsg *err);
int store_run_end(rocks_store *st, const void *note, size_t note_len, errmsg *err);

/* Compact runs: record bytes per group.  Larger groups barely compress
 * better, and the readout holds one decoded group per run. */
#define STORE_GROUP_BYTES (256u << 10)

/* Compact runs (store_grouped()): instead of records, a group already
 * encoded elsewhere (load/batch_groups.h) with the bytes of records it holds,
 * in key order like records.  A run takes records or groups, not both. */
int store_run_put_group(rocks_store *st, const group_span *span, const uint8_t *blob,
                        size_t len, uint64_t record_bytes, errmsg *err);
/* The layout of a state (--resume DIR), journaled first: a state of
 * another version is discarded, whatever it holds.  Bump it with any change
 * to what a state stores or how: the journal's records (store/rocks_state.c) and
 * framing (store/run_journal.c); the runs' keys (bam_sort.c, keys/template_key.c,
 * keys/minimiser.c), values (codec/record_codec.h: htslib's in-memory bam1_core_t and
 * data) and groups (codec/group_codec.c); the run index's spans (store/run_index.c);
 * the caller's notes and kept blobs (resume/resume_state.c, engine/sort_resume.c).
 * test/test_state_layout.c fails on a change to most of these until the
 * version is bumped and the layout's new hash recorded there.
 * 3: 'S' leads with it; notes say whether their digest covers every record.
 * 4: template-coordinate keys hold the cell barcode (CB). */
#define STORE_STATE_VERSION 4

/* A resumable store (opt->state_dir).  The directory is created if
 * missing; one that holds anything but a store's journal and database is
 * refused, untouched.  The store journals every run before RocksDB takes
 * it in (store/run_journal.h): its key ranges, samples and groups, and the
 * caller's note.  store_open() then takes back the runs of an earlier,
 * interrupted run of the same sort: one whose identity matches and whose
 * journal and database agree (the entries of every run are in the
 * database, or the last run's file is still there to take in).  Anything
 * else (another identity, a state that does not open or does not add up)
 * is discarded, and the sort starts afresh in the same directory; with
 * state_other, none is.
 * store_resumed() says what happened.  store_keep() journals a blob the
 * caller wants back on resuming, in one of STORE_KEEP_SLOTS slots (the
 * header, the output's hidden name); store_complete() journals
 * that the whole input is stored, with a last note.  A discarded state's
 * blobs are still reported in kept[]: what they name (a half-written
 * output) outlives the state.  store_close() removes
 * the whole directory unless asked to keep it. */
#define STORE_KEEP_SLOTS 3
typedef struct {
    uint64_t runs;              /* runs taken back; 0: a fresh start */
    const char *discarded;      /* NULL, or why an earlier state was not used */
    int complete;               /* the whole input is stored (store_complete()) */
    const uint8_t *note;        /* the last run's or the completion's note */
    size_t note_len;
    const uint8_t *kept[STORE_KEEP_SLOTS];  /* the last store_keep() blob of each slot, or NULL */
    size_t kept_len[STORE_KEEP_SLOTS];
} store_resume;
const store_resume *store_resumed(const rocks_store *st);
/* 0, or the errno of the lock on the state that its file system refused
 * (store/run_journal.h): the state is then used unlocked. */
int store_state_unlocked(const rocks_store *st);
/* 1 with the state directory's path now in now (from /proc) when it is no
 * longer at the path given (renamed, or a directory above it), else 0. */
int store_state_moved(const rocks_store *st, char *now, size_t size);
/* Whether a directory could hold a state: missing, or a state's (0), or
 * the user's (-1, with a cause for refusing it in err).  Creates nothing. */
int state_dir_usable(const char *dir, errmsg *err);
/* Whether dir holds a state to resume, before any sort opens it: 0 with
 * the codec its runs are in and the bytes its database holds, else -1.
 * A state that turns out to be another sort's is still discarded at the
 * open; this only lets the caller keep the runs' format and count their
 * space as its own. */
int state_dir_peek(const char *dir, store_codec *codec, uint64_t *bytes);
/* The identity a state in dir was journaled with (malloc'd, in *identity),
 * read without taking its lock: 1; 0 if dir holds no journal, or an empty
 * one; -1 if its journal is not a state of this version, or does not read
 * (store_open() says why). */
int state_dir_identity(const char *dir, char **identity);
int store_keep(rocks_store *st, int slot, const void *blob, size_t len, errmsg *err);
int store_complete(rocks_store *st, const void *note, size_t note_len, errmsg *err);

/* What a failure's cause, as the store gave it (RocksDB's text names the
 * errno), says of the stored runs.  store_cause_outside(): a cause outside
 * them (a full disk, no permission, a lock held, too few descriptors or
 * memory, an I/O error), after which they may read back on a mended
 * machine; a state is kept then.  store_shows_damage(): the runs
 * themselves are damaged, for no such cause (RocksDB's Corruption: a
 * checksum that does not match, a file missing or cut short; a group of
 * records that does not decode); a state is removed then. */
#define STORE_RUN_CORRUPT "a temporary run is corrupt"
int store_cause_outside(const char *msg);
int store_shows_damage(const char *msg);

/* Stops starting new compactions and waits for running ones to end.  If
 * background merges were planned but fell behind, merges the newest runs
 * until at most 2*sqrt(T) remain (T: runs written, when above
 * STORE_MERGE_MIN_RUNS), and in any case until the readout can keep every
 * run open.  Returns the seconds spent. */
double store_settle(rocks_store *st);
/* Runs that store_settle() merged to meet the budget (0: none needed). */
int store_catch_up_runs(const rocks_store *st);

/* Sorted runs the readout will merge: the database's files (all in level 0). */
int store_sorted_runs(rocks_store *st);
uint64_t store_runs_ingested(const rocks_store *st);
uint64_t store_bytes_written(const rocks_store *st);

/* Keys sampled from the runs as they were written, for splitting the key
 * space into ranges of about equal size (readout/range_readout.h): the first key of
 * every run, then one after every STORE_SAMPLE_BYTES of records.  A
 * sample's weight is the record bytes from it up to the next sample of its
 * run.  Merges move records between runs but do not change the set of
 * keys, so the samples stay valid.  Sampling is best effort: out of memory,
 * it stops. */
#define STORE_SAMPLE_BYTES (1u << 20)
size_t store_samples(const rocks_store *st);
const key_sample *store_sample_at(const rocks_store *st, size_t i);

/* Bytes each run's reader fetches at a time when runs bypass the page
 * cache (direct I/O reads are synchronous: no kernel readahead), unless
 * the readout's memory asks for less (store/run_readers.h). */
#define STORE_DIRECT_READAHEAD (2u << 20)
/* The runs' SST blocks: large, as the data is read once, sequentially.
 * Each run read holds one in memory, besides its readahead. */
#define STORE_BLOCK_BYTES (256u << 10)

/* Parts holding runs: the readout merges store_iter_open_range(st, 0..n-1, ...). */
int store_parts(const rocks_store *st);

/* One part's entries in key order: records, or in compact runs the groups
 * under their first keys.  store_iter_first() positions the iterator at the
 * first key, on the thread that will read (it also turns off RocksDB's
 * per-thread perf counting there, see store_run_begin()).  Key and value
 * stay valid until store_iter_next().  After the end, store_iter_status()
 * returns 0, or -1 with the iterator's error in err.  Close every iterator
 * before store_close(). */
typedef struct store_iter store_iter;
/* NULL if out of memory.  store_iter_open_range() sees only the keys from
 * lo (inclusive) to hi (exclusive); a NULL bound is open. */
store_iter *store_iter_open_range(rocks_store *st, int part, size_t readahead,
                                  const uint8_t *lo, size_t lo_len,
                                  const uint8_t *hi, size_t hi_len);
void store_iter_first(store_iter *it);
int store_iter_valid(const store_iter *it);
const uint8_t *store_iter_key(const store_iter *it, size_t *len);
const uint8_t *store_iter_value(const store_iter *it, size_t *len);
void store_iter_next(store_iter *it);
int store_iter_status(const store_iter *it, errmsg *err);
void store_iter_close(store_iter *it);

/* True when runs hold groups of records in columns (compact runs).  An
 * iterator with a lower bound lo then misses, in each run, the group that
 * begins below lo and holds records from lo on: store_straddlers() names
 * those (store/run_index.h), with room in out for store_indexed_runs() keys, and
 * store_get() reads one.  store_get() returns 0 with a malloc'd value, or
 * -1 with the cause in err. */
int store_grouped(const rocks_store *st);
size_t store_indexed_runs(const rocks_store *st);
size_t store_straddlers(const rocks_store *st, int part, const uint8_t *lo, size_t lo_len,
                        key_sample *out);
int store_get(rocks_store *st, int part, const uint8_t *key, size_t klen, size_t readahead,
              uint8_t **val, size_t *vlen, errmsg *err);

/* What the readers of a part will hold (store/run_readers.h): its runs (each
 * an open file), and for compact runs the groups a merge of the part holds
 * decoded at once (a RocksDB merge copies groups whole, so one per run
 * ever written to the part, or written by a merge pass); 0 for records. */
int store_part_runs(rocks_store *st, int part);
uint64_t store_part_groups_open(const rocks_store *st, int part);
/* The runs' codec, and whether the store is resumable (--resume). */
store_codec store_runs_codec(const rocks_store *st);
int store_resumable(const rocks_store *st);

/* Merge passes (store/rocks_pass.c, driven by readout/run_passes.h), once store_settle()
 * has stopped the background merges, never on a resumable store (its
 * journal names the runs a later run takes back).  store_pass_begin()
 * lists a part's runs, the oldest first; the caller reads them, each on its
 * own (store_pass_iter()), in consecutive groups from the oldest, and
 * writes each group as one run: store_pass_run_begin(), store_run_put()
 * for each record in key order, then store_pass_run_end(p, n) with the n
 * runs of the group, which are deleted once the new run is in.  A pass
 * must rewrite every run of the part before store_pass_end(), which frees
 * p; store_pass_abort() frees it after a failure (the sort then fails: the
 * part may hold keys twice).  store_pass_run_depth() is a run's share of
 * the part's store_part_groups_open().  The -v report's counts: runs a pass
 * replaced, and runs passes wrote. */
typedef struct store_pass store_pass;
store_pass *store_pass_begin(rocks_store *st, int part, errmsg *err);
int store_pass_runs(const store_pass *p);
uint64_t store_pass_run_depth(const store_pass *p, int i);
store_iter *store_pass_iter(store_pass *p, int i, size_t readahead, errmsg *err);
int store_pass_run_begin(store_pass *p, errmsg *err);
int store_pass_run_end(store_pass *p, int runs, errmsg *err);
void store_pass_end(store_pass *p);
void store_pass_abort(store_pass *p);
uint64_t store_pass_runs_replaced(const rocks_store *st);
uint64_t store_pass_runs_written(const rocks_store *st);

/* True when runs are read with direct I/O (every temp file system allows it). */
int store_direct_io(const rocks_store *st);
/* The databases' directories, for messages: one, or several as
 * "a/samtools-rocksort.X', 'b/samtools-rocksort.Y" (to be quoted '%s'). */
const char *store_path(const rocks_store *st);
/* The directory the last run was written to, or is being written to. */
const char *store_run_dir(const rocks_store *st);

/* The databases, one per directory: for -v and -k. */
int store_dirs(const rocks_store *st);
typedef struct {
    const char *path;           /* the database's directory */
    uint64_t runs;              /* runs written there */
    uint64_t bytes_written;     /* every byte RocksDB wrote there: runs, merges, its own files */
} store_dir_report;
store_dir_report store_dir_at(const rocks_store *st, int i);

/* What the background merges wrote, and how they were planned: for -v, to
 * say why.  With several databases, the narrowest merges of any. */
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
} store_merge_report;
store_merge_report store_merges(const rocks_store *st);

/* Closes the databases; removes their directories unless keep is set. */
void store_close(rocks_store *st, int keep);

#endif
