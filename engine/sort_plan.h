/* engine/sort_plan.h -- how a sort spends its memory and open files.
 *
 * Contract: the memory budget is -m per thread (-@).  A batch takes a
 * third of what each thread's own buffers leave of it (512 KiB a thread,
 * and at -l 8 and 9 a larger compressor), at least a quarter of it, and
 * at most 512 MiB (sort_plan_batch_bytes()).  sort_plan_open_store() creates
 * the temporary store sized for the job: runs of one batch, background
 * merges from -s, the readout's reader threads, and the descriptors the
 * process may still open, after raising its soft RLIMIT_NOFILE to the hard
 * limit.  sort_plan_from_input() runs once, when the first batch is full: from
 * the input files' size and the bytes consumed so far it estimates the
 * total, plans background merges when -s was not given, and lets the spill
 * thread hold every batch in memory when all are expected to fit.
 */
#ifndef SORT_PLAN_H
#define SORT_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include "engine/sort_job.h"

/* The memory budget: -m per thread (-@), or --max-memory's share of it. */
size_t sort_plan_total_memory(const rocksort_opts *o);
/* The -@ threads' own buffers, held beside the batches and readers; where
 * they take more than three quarters of the budget, it cannot hold them
 * (sort_plan_own_memory_fits() is 0), and the batches and readers still
 * get a quarter of it. */
uint64_t sort_plan_own_memory(const rocksort_opts *o);
int sort_plan_own_memory_fits(const rocksort_opts *o);
size_t sort_plan_batch_bytes(const rocksort_opts *o);
/* What the readers of the spilled runs may hold at the readout
 * (store/run_readers.h): the budget less the last batch, at least
 * READOUT_MIN_MEMORY.  During the load, the background merges and the
 * codec's threads share the budget less two batches, at least half that. */
uint64_t sort_plan_readers_memory(const rocksort_opts *o);

/* Before any thread starts: under a small budget, large blocks of memory
 * (readaheads, blocks, decoded groups) go back to the system when freed
 * rather than staying in the allocator's arenas.  Returns 1 where, instead,
 * the arenas should be trimmed while the sort runs (util/heap_trim.h):
 * a larger budget, but a small one for each thread. */
int sort_plan_allocator(const rocksort_opts *o);

/* 0, or -1 once the failure is reported. */
int sort_plan_open_store(sort_job *j);

/* Chooses the runs' format and checks the temp space, before anything is
 * read or created; -1 (reported) if even compact runs cannot fit. */
int sort_plan_temp_space(sort_job *j);

/* Whether the spill thread hands its work to the -@ pool
 * (load/spill.h): with more than two threads.  -@ 2 and below keep
 * sorting and writing on the spill thread, as they always did. */
int sort_plan_spill_pooled(const sort_job *j);

/* The pool the loader hands the first touches of its batches to
 * (load/batch_fill.h), or NULL: from -@ 8, where the load's CPU over the
 * threads comes down to the loader's own.  Below, the staging copy only
 * adds CPU to a load the pool bounds. */
hts_tpool *sort_plan_fill_pool(const sort_job *j);

/* How many spans the loader hands the pool to parse at once
 * (load/record_parse.h), 0 where it parses the records itself: from -@ 8,
 * for one BAM file or stream read neither through a filter nor resumably,
 * in an order whose keys' length does not depend on the record (where it
 * does, the bytes each record's bound leaves unused would cost the batch
 * records).  Their buffers are the threads' own (sort_plan_own_memory()). */
int sort_plan_parse_jobs(const sort_job *j);

/* first: the first batch, full; consumed: bytes of the input files read so
 * far, <= 0 if unknown, which plans nothing, as does a total of 0 (an
 * input is a stream).  Before the first batch goes to the spill thread. */
void sort_plan_from_input(sort_job *j, const batch *first, int64_t consumed, uint64_t total);

#endif
