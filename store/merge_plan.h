/* store/merge_plan.h -- how many sorted runs to merge at once.
 *
 * Contract: pure arithmetic for the store (store/store_run.c, store/store_merge.c),
 * no RocksDB calls.
 * merge_plan_files_for() splits the descriptors the temporary database may use
 * between the runs the readout keeps open (every one) and the background
 * merges (each keeps its inputs and its output open, several at once,
 * beside the runs RocksDB's table cache pins: merge_plan_files_pinned_by_cache()),
 * and sizes the table cache so that they never add up past the budget.
 * merge_plan_for() gives the background merges for T runs; merge_plan_fit_to_files()
 * narrows a plan to a files_plan.  With several databases (one per temp
 * directory), merge_plan_files_share() splits the budget among them.
 */
#ifndef MERGE_PLAN_H
#define MERGE_PLAN_H

#include <stdint.h>

/* RocksDB's own descriptors: LOCK, LOG, MANIFEST, the empty WAL and the
 * directory; the run being written; and short-lived ones: the OPTIONS file
 * rewritten at each change of options, an ingested run opened to be
 * checked and then synced, the directory synced.  And the directory held
 * open to remove it (util/cleanup.h). */
#define STORE_OWN_FILES 12

typedef struct {
    int max_runs;       /* runs that may be open at once: the readout's cap */
    int merge_width;    /* most runs one merge may take */
    int files_width;    /* the same, as the descriptors alone allow */
    int memory_width;   /* most runs the merges' memory holds readers of, in all */
    int merge_threads;  /* merges that may run at once */
    int table_cache;    /* RocksDB's max_open_files */
} files_plan;

/* max_open_files: descriptors the store may use, -1 for no limit;
 * threads: the background threads it was offered. */
files_plan merge_plan_files_for(int max_open_files, int threads);

/* Narrows f's merges to as many runs as `memory` holds readers of, at
 * per_run bytes each (two at least): merge_width, and memory_width, which
 * tiers (one merge at a time) never pass. */
void merge_plan_files_fit_memory(files_plan *f, uint64_t memory, uint64_t per_run);

/* Runs RocksDB may keep open for as long as they live, whatever merges
 * or reads them, under a max_open_files of table_cache: a quarter of its
 * table cache. */
int merge_plan_files_pinned_by_cache(int table_cache);

/* The fewest descriptors one database takes: its own files and room for
 * a few runs. */
int merge_plan_files_min_per_db(void);

/* One database's part of max_open_files (-1: no limit) among n: the
 * minimum each, the rest in proportion to share (0..1). */
int merge_plan_files_share(int max_open_files, int n, double share);

/* Universal compaction merges sorted runs in the background so that the
 * readout merges at most a budget of B = k + T/k runs, k = sqrt(T): about
 * 2*sqrt(T) for T runs in all.  It counts merged and fresh runs alike
 * against its trigger, so the trigger is B, and a merge takes every fresh
 * run at once (at least k, at most B): each byte is rewritten once. */
typedef struct {
    int min_width, max_width, trigger;
    int tiered;         /* tiers instead (merge_plan_within()) */
} merge_plan;

merge_plan merge_plan_for(uint64_t runs);

/* A plan wider than the open-file budget allows is narrowed, at the cost
 * of rewriting runs more often. */
merge_plan merge_plan_fit_to_files(const files_plan *f, merge_plan p);

/* The plan for t runs within f: merge_plan_for()'s when its budget of runs
 * and its narrowest merge fit f's descriptors (narrowed to merge_width where
 * only the memory is short); else tiers, where each merge takes
 * f->merge_width runs of one size (a run of tier i holds width^i fresh
 * ones), so each byte is rewritten once per tier it climbs, log(T) / log
 * (width) times at most.  Narrowing the one-rewrite plan instead let RocksDB
 * merge the newest runs whatever their sizes into one growing run: under
 * ulimit -n 40, 4-15 times the runs' bytes written. */
merge_plan merge_plan_within(const files_plan *f, uint64_t t);

/* Tiers within f, for any number of runs (a stream of unknown size). */
merge_plan merge_plan_tiers(const files_plan *f);

/* Where RocksDB's merges of similar runs would start among n runs of
 * these sizes, newest first: the first `width` runs in a row of which each
 * is within ratio percent of the one before (its similar-size rule);
 * -1 if none. */
int merge_plan_chain_start(const uint64_t *sizes, int n, int width, int ratio);
/* How many of them, from the first, are such runs in a row. */
int merge_plan_chain_length(const uint64_t *sizes, int n, int ratio);

#endif
