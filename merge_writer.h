/* merge_writer.h -- a merge's values written as records to one output.
 *
 * Contract: merge_write() takes every value a run_merge returns, in its
 * order, and writes it with sam_write1() to w->fp: the whole output, or
 * one key range's part of it (range_readout.h).  It counts the records,
 * sums their --verify digests, and every PROGRESS_EVERY + 1 records adds
 * them to a count shared by all writers and shows that count as progress.
 * With w->drop set, the pages of the output already written are dropped
 * from the page cache as it goes (output_drop_written()).  It returns
 * MERGE_WRITE_OK, MERGE_WRITE_CORRUPT (a stored value did not decode),
 * MERGE_WRITE_FAILED (then merge_write_cause() says why) or
 * MERGE_WRITE_STOPPED.  It reports
 * nothing itself, so that it can run on any thread.
 */
#ifndef MERGE_WRITER_H
#define MERGE_WRITER_H

#include <stdatomic.h>
#include <stdint.h>
#include <htslib/hfile.h>
#include <htslib/sam.h>
#include "output_file.h"
#include "progress.h"
#include "run_merge.h"

typedef struct {
    samFile *fp;
    const sam_hdr_t *hdr;
    int verify;
    output_file *drop;          /* NULL: leave the page cache alone */
    progress *prog;
    _Atomic uint64_t *shown;    /* records written by all writers, for progress */
    _Atomic int *stop;          /* NULL, or set when another writer failed */
    uint64_t records, digest;   /* this writer's */
} merge_writer;

enum {
    MERGE_WRITE_OK = 0, MERGE_WRITE_FAILED = -1, MERGE_WRITE_CORRUPT = -2,
    MERGE_WRITE_STOPPED = -3    /* *stop was set: ended early, nothing to report */
};

int merge_write(merge_writer *w, run_merge *m);

/* fp's compression runs on the pool (SAM: compression only, see the .c). */
void samfile_share_pool(samFile *fp, htsThreadPool *pool);

/* The file htslib writes fp's data through. */
hFILE *samfile_hfile(const samFile *fp);

/* Why writing to fp failed: compression threads do the writing, so errno
 * seldom is theirs; the output's hFILE keeps the cause.  Without one,
 * htslib refused the record itself. */
const char *merge_write_cause(const samFile *fp);

#endif
