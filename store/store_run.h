/* store/store_run.h -- the temporary RocksDB that holds sorted runs: the
 * store, and its runs written.
 *
 * Contract: store_open() creates a fresh directory (mkdtemp, mode 0700) in
 * each of the directories it is given (or beside a lone prefix) and a
 * database in each: one database per directory, so that a database's runs,
 * and the runs its merges write, stay on that directory's disk.  Sorted
 * runs are bulk-loaded: the caller writes keys in increasing order between
 * store_run_begin() and store_run_end(), which builds an SST file in one of
 * the directories, dealt in turn in proportion to their weights
 * (disk/temp_dirs.h), and ingests it there (no memtable, no write-ahead log, no
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
 * ever synced (disk/temp_env.h): the runs need no durability.  A merge keeps its
 * runs open, and so does the readout: the store stays within
 * max_open_files descriptors (store/merge_plan.h), shared among the databases,
 * merging more, and after the load if it must, when that is low.
 * store_close() removes the directories unless asked to keep them.
 * Failures return -1 (NULL for store_open()) with the cause in an errmsg
 * (util/errmsg.h), naming the directory of the failed write.
 * Each of the store's files declares its own functions: store/store.h
 * (open, close, what the store holds; and it includes the others), this
 * header (runs written), store/store_merge.h (merges), store/store_iter.h
 * (runs read back), store/store_pass.h (merge passes), store/store_state.h
 * (a resumable store); store/store_types.h the types and constants they
 * share.
 */
#ifndef STORE_RUN_H
#define STORE_RUN_H

#include <stddef.h>
#include <stdint.h>
#include "util/errmsg.h"
#include "codec/group_writer.h"
#include "keys/key_bytes.h"
#include "store/store_types.h"

/* note: with a state directory, the caller's bytes journaled with the run
 * (its progress through the input), handed back when the sort resumes;
 * otherwise NULL. */
int store_run_begin(rocks_store *st, errmsg *err);
int store_run_put(rocks_store *st, const uint8_t *key, size_t klen,
                  const uint8_t *val, size_t vlen, errmsg *err);
int store_run_end(rocks_store *st, const void *note, size_t note_len, errmsg *err);

/* Runs in groups (store_grouped()): instead of records, a group already
 * encoded elsewhere (load/batch_groups.h), with the bytes of records it holds
 * in its span, in key order like records.  A run takes records or groups,
 * not both.  Groups hold store_group_bytes() of records (store/store.h),
 * and one record more at most. */
int store_run_put_group(rocks_store *st, const group_span *span, const uint8_t *blob,
                        size_t len, errmsg *err);
/* How the groups are laid out: in columns (compact runs) or plain
 * (codec/group_codec.h). */
group_layout store_run_group_layout(const rocks_store *st);

/* Once the runs are written: what the compact runs' encoders hold goes back
 * (group_writer_trim()), before the readout, whose merge passes write with
 * writers of their own. */
void store_run_trim(rocks_store *st);

/* Keys sampled from the runs as they are written (store_samples(),
 * store/store.h): the first key of every run, then one after every
 * STORE_SAMPLE_BYTES of records.  A sample's weight is the record bytes
 * from it up to the next sample of its run.  Merges move records between
 * runs but do not change the set of keys, so the samples stay valid.
 * Sampling is best effort: out of memory, it stops. */
#define STORE_SAMPLE_BYTES (1u << 20)

/* The directory the last run was written to, or is being written to. */
const char *store_run_dir(const rocks_store *st);

/* For the store's own files (store/store_db_internal.h).
 * store_run_prepare() sets up the runs' writer (compact runs' groups and
 * index), store_run_free() frees it with the samples. */
int store_run_prepare(rocks_store *st, const store_options *o, errmsg *err);
void store_run_free(rocks_store *st);
/* A run's SST, opened as `name` in database db; then, once its entries are
 * in, written, journaled (a resumable store) and moved into part `part`,
 * its size in *size (store_run_ingest()). */
int store_run_open_writer(rocks_store *st, int db, const char *name, errmsg *err);
/* A writer of compact runs' groups into the run being written, encoding
 * on `threads` of the store's pool; NULL when out of memory. */
group_writer *store_run_group_writer(rocks_store *st, int threads);
int store_run_ingest(rocks_store *st, int part, uint64_t *size, const void *note, size_t note_len,
                      errmsg *err);

#endif
