/* engine/sort_job.h -- one sort's state, shared by the engine's files.
 *
 * Contract: sort_pipeline_run() (engine/sort_pipeline.c) owns the job and takes it
 * through its phases, each in a file of its own: open (engine/sort_inputs.h,
 * engine/sort_output.h, engine/sort_plan.h), load (engine/sort_load.h, reading
 * through engine/sort_inputs.h and engine/sort_input.h), readout and commit
 * (engine/sort_output.h), accounting and the -v report (engine/sort_report.h).  A phase
 * that fails reports why with sort_job_fail() and returns -1; whatever the
 * phases set up, sort_pipeline_run() releases.  The phases are the only code
 * that prints a failure: the modules they call return the cause in an
 * errmsg (util/errmsg.h), and the phase prints it, once.
 */
#ifndef SORT_JOB_H
#define SORT_JOB_H

#include <stdint.h>
#include <htslib/sam.h>
#include <htslib/thread_pool.h>
#include "engine/rocksort_opts.h"
#include "load/batch.h"
#include "output/output_file.h"
#include "store/store.h"
#include "util/progress.h"
#include "load/spill.h"
#include "readout/range_readout.h"
#include "resume/resume_state.h"
#include "load/sam_lines.h"
#include "util/thread.h"
#include "output/split_set.h"

/* The readout's readers of the spilled runs, for -v: the runs read at
 * once, what their readers hold (store/run_readers.h) against what they may,
 * and each run's readahead. */
typedef struct {
    uint64_t runs, bytes, allowed;
    size_t readahead;
} readout_readers;

/* An input whose header is read, put aside until its turn comes
 * (engine/sort_input.h): a stream, which cannot be opened again, or the
 * first input while the others' headers are read. */
typedef struct {
    samFile *in;
    sam_hdr_t *hdr;
    const char *fn;
    uint64_t file_size;
    int read_lines, n_refs;
} held_input;

/* One of several inputs, as the open phase found it (engine/sort_inputs.h). */
typedef struct {
    uint64_t file_size;         /* 0: a stream */
    uint64_t header_hash;       /* of its header's text: the identity, and a reopen's check */
    uint64_t records;           /* read from it, for -v */
    int taken_back;             /* a resumed sort's state holds it whole: not read */
    held_input held;            /* a stream held open, or nothing */
} sort_job_input;

/* The phases' bounds at which -v notes the threads' CPU times. */
enum { MARK_LOAD, MARK_SETTLE, MARK_READOUT, MARK_END, JOB_MARKS };

typedef struct {
    const rocksort_opts *o;
    samFile *in;                /* the input being read (engine/sort_input.h), */
    const char *in_fn;          /* its name, */
    sam_hdr_t *in_hdr;          /* its own header, its records read with it (hdr for one input), */
    int input;                  /* its place in o->in_fns, */
    uint64_t input_first;       /* the number of its first record, */
    uint64_t in_before;         /* and the bytes of the files before it */
    sort_job_input *inputs;     /* o->n_in of them (engine/sort_inputs.h) */
    sam_hdr_t *hdr;             /* the output's header: the input's, or the inputs' merged */
    htsThreadPool pool;
    output_file out;
    split_set *split;           /* --split's outputs, in place of out (engine/sort_split.h) */
    rocks_store *store;
    spill_queue q;
    uint64_t records_in, bytes_in;
    uint64_t digest_in;         /* --verify's sum of the records read */
    int n_refs;                 /* references a record may name (engine/sort_input.h) */
    batch *tail;           /* the last, unspilled batch, sorted */
    bam1_t *first;              /* the inputs' first record, read ahead (engine/sort_inputs.h) */
    double t_load, t_settle, t_readout;
    readout_result result;      /* what the readout wrote (readout/range_readout.h) */
    readout_readers readers;    /* what its readers of the runs hold (store/run_readers.h) */
    progress *prog;
    uint64_t in_file_size;      /* 0: not a regular file: a stream */
    int read_lines;             /* SAM parsed on this thread (load/sam_lines.h) */
    int threads_started;        /* the input's reader on the pool (sort_input_start_threads()) */
    int in_read_ahead;          /* records decoded ahead on threads: BGZF blocks, CRAM containers */
    sam_lines lines;
    uint64_t size_estimate;     /* without -s: from the input file, 0 if none */
    int merge_width;            /* the fewest runs a background merge takes */
    int size_planned;
    sort_spec sort;             /* o->sort, prepared with the input header */
    temp_plan space;            /* the runs' format, chosen before reading */
    resume_state resume;        /* --resume (engine/sort_resume.h) */
    /* -v: every thread's CPU time at the phases' bounds (engine/sort_report.h) */
    thread_times at[JOB_MARKS];
} sort_job;

/* Prints "samtools rocksort: " and the message as one line on stderr;
 * nothing once a fatal signal has arrived (util/cleanup.h).  Returns -1,
 * so that a phase can `return sort_job_fail(...)`. */
int sort_job_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with "warning: " before the message: the sort goes on. */
void sort_job_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
