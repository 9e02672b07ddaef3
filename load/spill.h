/* load/spill.h -- the spill thread: full batches in, sorted runs out.
 *
 * Contract: two batches alternate.  The loader fills one while the spill
 * thread sorts the other and writes it to the store as one run, or, while
 * the holding plan allows (spill_allow_holding()), keeps it in memory:
 * packed in key order, or as the batch itself.  If the input outgrows the
 * plan, the held batches are written as runs then.  spill_swap() hands a
 * full batch over, with the note the store journals with its run (a
 * resumable store, store/store_state.h; NULL or empty otherwise), whose buffer
 * the queue takes over (*note is left empty), and returns an empty
 * one, or NULL once a spill failed (q->failed is set and q->error says
 * why).  After spill_stop(), packed[0..n_held) or
 * kept[0..n_held) are the held batches, for the readout to merge; the
 * timings are for the -v report.  spill_free() releases everything.
 *
 * Given a thread pool (more than two threads: -@ 2 and below sort and
 * write on the spill thread alone, as they always did), the spill thread
 * hands its work to the pool: a batch's sort in parts (batch_sort_parallel()),
 * a compact run's groups in ranges of records (load/batch_groups.h), and it
 * keeps only what must be done in order, putting the groups into the run
 * and the run into the store, so runs are still stored one after the
 * other, in input order.  The loader's first touch of a batch's memory
 * goes to the pool too (spill_loaded(), load/touch_ahead.h).
 */
#ifndef SPILL_H
#define SPILL_H

#include <stdatomic.h>
#include <stddef.h>
#include "load/batch.h"
#include "store/store.h"
#include "util/progress.h"
#include "util/byte_io.h"
#include "load/batch_groups.h"
#include "load/touch_ahead.h"
#include "util/worker.h"

typedef struct {
    worker w;               /* the spill thread; w.stop: no more batches will come */
    batch *full;       /* waiting for the spill thread */
    byte_writer full_note;  /* its note (empty: none) */
    batch *empty;      /* spilled, ready to refill */
    int failed;             /* a spill failed: no more runs are written */
    errmsg error;           /* the first spill error's cause */
    /* Sorted batches kept in memory, not spilled: as packed copies when the
     * budget has room for them beside the two batch arenas, else as the
     * arenas themselves.  One of the two arrays is used; max_held 0: spill
     * every batch. */
    packed_run **packed;
    batch **kept;
    int n_held, max_held;
    int hold_abandoned;     /* the input outgrew the batches planned to hold */
    size_t batch_cap;
    rocks_store *store;
    progress *prog;
    hts_tpool *pool;        /* NULL: the spill thread does it all */
    int threads;            /* the pool's */
    batch_groups *groups;   /* compact runs written in ranges on the pool */
    touch_ahead ahead;      /* the loading batch's memory, by the loader */
    double sort_seconds, write_seconds, hold_seconds;
    double wait_seconds;    /* the loader, waiting for a spilled batch */
} spill_queue;

/* Before anything else: the lock and condition. */
void spill_init(spill_queue *q);

/* What the spill thread works with: it writes runs to the store and the
 * temp bytes to prog (which may be NULL); pool, or NULL (see above). */
typedef struct {
    rocks_store *store;
    progress *prog;
    size_t batch_cap;
    hts_tpool *pool;
    int threads;
} spill_setup;

/* Creates the idle batch (batch_cap bytes) and starts the thread. */
#define SPILL_NO_MEMORY (-1)
#define SPILL_NO_THREAD (-2)
int spill_start(spill_queue *q, const spill_setup *s);

/* The loader has added a record to sb: the pool backs sb's memory a
 * bounded distance ahead of it (load/touch_ahead.h). */
void spill_loaded(spill_queue *q, batch *sb);

/* The loader has read its last record (or failed): nothing more is
 * touched ahead, and no pool job touches a batch once this returns. */
void spill_input_ended(spill_queue *q);

/* Sorts a batch: on the pool in parts if the queue has one (the loader's
 * last batch too). */
void spill_sort(spill_queue *q, batch *sb);

/* Lets the spill thread hold up to max_held batches, packed or in place.
 * Call before the first batch is handed over.  -1 if out of memory. */
int spill_allow_holding(spill_queue *q, int max_held, int packed);

batch *spill_swap(spill_queue *q, batch *full, byte_writer *note);

/* Lets the thread finish the batch it has, joins it, and frees the idle
 * batch and the encoders of compact runs' ranges (each as large as the
 * largest group it held).  Does nothing if the thread never started or
 * has stopped. */
void spill_stop(spill_queue *q);

void spill_free(spill_queue *q);

#endif
