/* load/batch.h -- records held in memory until they are sorted into a run.
 *
 * Contract: a batch packs each record's sort key and value into one arena,
 * bounded by the byte capacity given at creation (a record larger than an
 * empty batch is still taken, so huge reads never deadlock).  batch_sort()
 * (load/batch_sort.h) orders the entries by key; batch_key()/batch_value() then read them in
 * order.  Not thread-safe: one thread owns a batch at a time.
 */
#ifndef BATCH_H
#define BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/sam.h>
#include "keys/sort_key.h"
#include "codec/packed_record.h"

typedef struct batch batch;

batch *batch_create(size_t capacity);
void batch_destroy(batch *sb);

/* Returns 1 if added, 0 if the batch is full (the record was not added),
 * or -1 with the cause in err: out of memory, or an order that cannot place
 * b ("read 'NAME' ...", see sort_key_error()).  Once added, b holds the
 * record as it will be written (see sort_key_record_finish()). */
int batch_add(batch *sb, const sort_spec *spec, bam1_t *b, uint64_t seq, errmsg *err);

/* The same in two steps, for a batch filled on other threads
 * (load/batch_fill.h).  batch_reserve(), by the batch's owner, takes the
 * place of a record given its finished key and value length: 1, with where
 * in `at`; 0 if the batch is full (nothing taken); -1 if out of memory; or
 * BATCH_UNSETTLED where the entries must grow, which moves them: the owner
 * calls again with `settled` once no batch_place_run() on the batch is
 * running.  Which records a batch takes, and in what order, is decided
 * here, as batch_add() decides it, and places reserved one after another
 * follow each other in the arena.  batch_place_run() then writes n such
 * records, packed one after the other at src (codec/packed_record.h), from
 * place `at` on: on any thread, several runs at once; the batch is read or
 * sorted only once all are written, and the first record (at.index 0) is
 * written before the next reserve, which compares keys with it.
 * batch_warm() says whether the next record, of up to `need` bytes, would
 * go in memory the arena held records in before (it is not empty):
 * there a copy costs no first touch. */
#define BATCH_UNSETTLED 2
typedef struct {
    size_t index;
    uint8_t *rec;
} batch_place_at;
int batch_reserve(batch *sb, const uint8_t *key, size_t key_len, size_t val_len, int settled,
                  batch_place_at *at);
void batch_place_run(batch *sb, batch_place_at at, const uint8_t *src, size_t bytes, size_t n);
int batch_warm(const batch *sb, size_t need);

/* Places for a span of records parsed on other threads (load/record_parse.h):
 * batch_reserve_span() takes, in order, as many of n records as fit, given
 * each one's packed size at most need[i], and returns 1 with them in
 * `span` (an empty batch takes the first however large, as batch_add()
 * does); 0 if the batch is full; -1 if out of memory; or BATCH_UNSETTLED
 * where the entries must grow, as for batch_reserve().  The span's records
 * are then packed one after the other from span.at.rec, each entered with
 * batch_place_entry(); the bytes a record does not use of its bound stay
 * unused.  Once every record of the span is written, its owner hands its
 * keys' statistics to batch_span_keys(), span by span in order, before the
 * batch is sorted: the bytes all its keys share with the span's first,
 * and their shortest and longest lengths. */
typedef struct {
    batch_place_at at;
    size_t n, bytes;
} batch_span;
int batch_reserve_span(batch *sb, const uint32_t *need, size_t n, int settled, batch_span *span);
void batch_place_entry(batch *sb, size_t index, const uint8_t *rec);
void batch_span_keys(batch *sb, size_t index, size_t shared, size_t shortest, size_t longest);

/* A range of a batch's arena, for batch_prefault() on another thread. */
typedef struct {
    uint8_t *p;
    size_t len;
} batch_memory;

/* Up to `most` bytes of the arena from where the last claim ended, below
 * `upto` bytes from its start (and its capacity): each byte is claimed
 * once, to be touched ahead once; len 0 when none is left.  Only the
 * batch's owner calls it.  A new arena (batch_create(), or the arena
 * replaced for a record larger than the empty batch) starts unclaimed.
 * The replaced arena is freed: before it adds to an empty batch, the
 * owner must know that no other thread still touches what it claimed. */
batch_memory batch_claim_ahead(batch *sb, size_t upto, size_t most);

/* Has the kernel back that memory now, without changing its bytes
 * (MADV_POPULATE_WRITE): safe while the owner fills the batch.  A hint:
 * does nothing where the kernel cannot. */
void batch_prefault(batch_memory m);

/* Work split into parts (batch_sort_parallel(), load/batch_sort.h, and
 * batch_pack_parallel()): run(ctx, n, job, arg) must call job(arg, i) for
 * every i in [0, n) and return when all have returned, perhaps on other
 * threads at once (util/pool_jobs.h).  At most BATCH_MAX_PARTS parts; parts
 * of fewer than BATCH_MIN_PART entries cost more in hand-offs than they save. */
#define BATCH_MAX_PARTS 64
#define BATCH_MIN_PART 4096
typedef void (*batch_job_fn)(void *arg, int i);
typedef void (*batch_runner)(void *ctx, int n, batch_job_fn job, void *arg);
void batch_clear(batch *sb);
size_t batch_count(const batch *sb);
size_t batch_bytes(const batch *sb);   /* the records, as packed */
/* Bytes of the index the sort orders (an entry per record); its scratch
 * takes as much again while the batch is sorted. */
size_t batch_index_bytes(const batch *sb);

/* Frees the sort's scratch (load/batch_sort.h) of a sorted batch that is
 * kept to be read: the batch reads as before.  Records are added to it,
 * and it is sorted, only after batch_clear(): batch_add() then makes the
 * scratch again. */
void batch_drop_scratch(batch *sb);

/* A hint that entry i will be read soon (after batch_sort): fetches all of
 * its bytes, and the start of an entry a few further on.  Readers going
 * through entries in order ask for the one BATCH_PREFETCH_DISTANCE ahead. */
#define BATCH_PREFETCH_DISTANCE 8
void batch_prefetch(const batch *sb, size_t i);

const uint8_t *batch_key(const batch *sb, size_t i, size_t *len);
const uint8_t *batch_value(const batch *sb, size_t i, size_t *len);

/* After batch_sort(): the first entry whose key is not below key (RocksDB's
 * bytewise order), batch_count() if none. */
size_t batch_seek(const batch *sb, const uint8_t *key, size_t len);

/* A sorted batch's records copied out in key order, one after the other:
 * read front to back it touches memory in order, and the batch can take
 * new records.  Records are visited with batch_packed_first()/batch_packed_next()
 * (NULL past the last) and read with packed_key()/packed_value()
 * (codec/packed_record.h). */
typedef struct packed_run packed_run;

packed_run *batch_pack(const batch *sb);   /* NULL if out of memory */
/* The same copy made in `parts` ranges of records by run (as for
 * batch_sort_parallel()); fewer than two parts: batch_pack(). */
packed_run *batch_pack_parallel(const batch *sb, batch_runner run, void *ctx, int parts);
void batch_packed_destroy(packed_run *pr);
const uint8_t *batch_packed_first(const packed_run *pr);
const uint8_t *batch_packed_next(const packed_run *pr, const uint8_t *rec);

/* Every PACKED_MARK_EVERY-th record is marked, so that a key can be found
 * without reading the whole run: batch_packed_mark(pr, i) is record number
 * i * PACKED_MARK_EVERY, for i < batch_packed_marks(pr).  batch_packed_seek() returns
 * the first record whose key is not below key, NULL if none. */
#define PACKED_MARK_EVERY 256
size_t batch_packed_marks(const packed_run *pr);
const uint8_t *batch_packed_mark(const packed_run *pr, size_t i);
const uint8_t *batch_packed_seek(const packed_run *pr, const uint8_t *key, size_t len);

#endif
