/* readout/merge_writer.h -- a merge's values written as records to one output.
 *
 * Contract: merge_writer_write() takes every value a run_merge returns, in its
 * order, and writes it with sam_write1() to w->fp: the whole output, or
 * one key range's part of it (readout/range_readout.h).  It counts the records,
 * sums their --verify digests, and every PROGRESS_EVERY + 1 records adds
 * them to a count shared by all writers and shows that count as progress.
 * With w->drop set, the pages of the output already written are dropped
 * from the page cache as it goes (output_file_drop_written()).  It returns 0;
 * MERGE_WRITE_STOPPED when *stop was set (another writer failed: nothing
 * to report); or -1 with the cause in err: a stored value that did not
 * decode (naming w->store_name), or the failed write (naming w->out_name,
 * see merge_writer_write_error()).  It prints nothing, so that it can run on
 * any thread.
 */
#ifndef MERGE_WRITER_H
#define MERGE_WRITER_H

#include <stdatomic.h>
#include <stdint.h>
#include <htslib/hfile.h>
#include <htslib/sam.h>
#include "output/output_file.h"
#include "util/progress.h"
#include "readout/run_merge.h"
#include "util/errmsg.h"

typedef struct {
    samFile *fp;
    const char *out_name;       /* for messages: the output as the user named it */
    const char *store_name;     /* for messages: the temporary database, or NULL */
    const sam_hdr_t *hdr;
    int verify;
    output_file *drop;          /* NULL: leave the page cache alone */
    progress *prog;
    _Atomic uint64_t *shown;    /* records written by all writers, for progress */
    _Atomic int *stop;          /* NULL, or set when another writer failed */
    uint64_t records, digest;   /* this writer's */
    int corrupt;                /* the failure was a stored value, not the output */
} merge_writer;

#define MERGE_WRITE_STOPPED 1
int merge_writer_write(merge_writer *w, run_merge *m, errmsg *err);

/* One value written to w->fp, counted as merge_writer_write() counts it:
 * 0, MERGE_WRITE_STOPPED or -1 likewise.  owned: a record to unpack into
 * where the value cannot be written as it is. */
int merge_writer_put(merge_writer *w, const uint8_t *v, size_t vlen, bam1_t *owned, errmsg *err);

/* fp's compression runs on the pool (SAM: compression only, see the .c). */
void merge_writer_share_pool(samFile *fp, htsThreadPool *pool);

/* The file htslib writes fp's data through. */
hFILE *merge_writer_hfile(const samFile *fp);

/* Why writing to fp (named name) failed, as "error writing to 'NAME':
 * CAUSE"; returns -1.  Compression threads do the writing, so errno seldom
 * is theirs: the output's hFILE keeps the cause.  Without one, htslib
 * refused the record itself. */
int merge_writer_write_error(const samFile *fp, const char *name, errmsg *err);

#endif
