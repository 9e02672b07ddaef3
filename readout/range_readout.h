/* readout/range_readout.h -- the readout merged by several threads at once.
 *
 * Contract: range_readout_run() runs p->threads threads (readout/readout_plan.h)
 * that take the pieces in key order; each merges its piece
 * (readout/merge_sources.h) and writes it through htslib in the output's format and
 * level, compressed on its own thread, into an in-memory file
 * (output/output_parts.h).  The calling thread appends the finished pieces to the
 * output in order, without their EOF markers, while the next ones are
 * merged; at most K + 2 pieces are in flight, so memory stays bounded and
 * nothing goes through the temp directory.  The result is one file: the
 * header once, one EOF marker, the records exactly as one merge would
 * write them.  An index is then built from the closed output
 * (output_file_index_after()).  It fills *res and returns 0, or -1 with the
 * cause of the first failing piece in err.
 */
#ifndef RANGE_READOUT_H
#define RANGE_READOUT_H

#include "readout/readout_plan.h"

/* What a readout did, for the record count and the -v report. */
typedef struct {
    uint64_t records, digest;   /* written; the digest with --verify only */
    int ranges, threads;        /* pieces and merge threads */
    uint64_t bytes_through_memory;
    double writer_waited;       /* the writer's wait for the next piece */
    int store_failed;           /* the failure was in the stored runs, not the output */
} readout_result;

int range_readout_run(const readout_request *rq, const range_plan *p, readout_result *res,
                      errmsg *err);

#endif
