/* store/run_index.h -- where each compact run's groups of records start and end.
 *
 * Contract: while a run is written, run_index_add_group() records each of
 * its groups (codec/group_codec.h) by the first and the last key of its records,
 * in key order; run_index_end_run() then files the run under the part
 * (column family) it went to, or run_index_drop_run() forgets it when it
 * failed.  Keys are copied.  run_index_straddlers() answers the readout's
 * one question: which groups of a part begin below a key lo and end at or
 * above it.  A run's groups hold disjoint, increasing key ranges, so there
 * is at most one such group per run; they come back by increasing first
 * key, which is also the key each group is stored under.
 *
 * Why: a piece of the readout that starts at lo must also read the group
 * of each run that spans lo, which RocksDB, seeking to lo among the groups'
 * first keys, would pass over.  RocksDB's merges copy groups whole, so the
 * index stays true for the life of the store.  Returns: 0, or -1 when out
 * of memory (then the index is unchanged).
 */
#ifndef RUN_INDEX_H
#define RUN_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include "keys/key_bytes.h"

typedef struct run_index run_index;

run_index *run_index_create(void);
void run_index_destroy(run_index *ix);

int run_index_add_group(run_index *ix, const uint8_t *first, size_t first_len,
                        const uint8_t *last, size_t last_len);
int run_index_end_run(run_index *ix, int part);
void run_index_drop_run(run_index *ix);

/* Runs filed so far. */
size_t run_index_runs(const run_index *ix);
/* Runs filed under `part`. */
size_t run_index_part_runs(const run_index *ix, int part);
/* Forgets the runs of `part` filed before the run_index_runs() count
 * `before`: a merge pass replaced them by the runs filed since. */
void run_index_forget(run_index *ix, int part, size_t before);

/* The groups added to the run being written, for the resume journal:
 * run_index_open_span(ix, i, ...) gives group i's keys (pointing into the
 * index), for i < run_index_open_groups(ix). */
size_t run_index_open_groups(const run_index *ix);
void run_index_open_span(const run_index *ix, size_t i, const uint8_t **first, size_t *first_len,
                         const uint8_t **last, size_t *last_len);

/* Writes to out (room for run_index_runs() entries) the first keys of the
 * groups of `part` that begin below lo and end at or above it, in
 * increasing order; returns how many.  The keys point into the index. */
size_t run_index_straddlers(const run_index *ix, int part, const uint8_t *lo, size_t lo_len,
                            key_sample *out);

#endif
