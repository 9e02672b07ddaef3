/* load/record_parse.h -- a BAM stream's records parsed, keyed and packed on the -@ pool.
 *
 * Contract: for an order whose keys' length does not depend on the record
 * (sort_key_max_len_any()).  The loader reads the decompressed stream a
 * chunk at a time (record_parse_read()), cut after a whole record, with
 * each whole record's packed size at most (its bound).  It places the
 * chunk's records in batches by their bounds (batch_reserve_span(),
 * load/batch.h), in input order, and hands each span to a pool job
 * (record_parse_span()).  The job reads the span's records with htslib's
 * bam_read1() from its own copy of their bytes, checks their reference ids,
 * keys, finishes and packs them into the span, as batch_add() would.  Which
 * batch a record joins is thus decided on the loader, in input order; what
 * a record leaves unused of its bound (at most a few bytes) is lost to the
 * batch.
 *
 * record_parse_settle() waits for every job and hands each span's key
 * statistics to its batch (batch_span_keys()), span by span: call it before
 * a batch is sorted or handed on, and where its entries must grow
 * (BATCH_UNSETTLED).  It and record_parse_span() return -1 at the first
 * record, in input order, that failed (or when memory ran out), described by
 * record_parse_failed(); no later record's failure is kept.  Only the loader
 * calls these.
 *
 * Why: at -@ 8 and up the loader parsing and keying every record bounded
 * the load; the decompressed bytes it now only copies and walks.
 */
#ifndef RECORD_PARSE_H
#define RECORD_PARSE_H

#include <stdint.h>
#include <htslib/bgzf.h>
#include <htslib/sam.h>
#include <htslib/thread_pool.h>
#include "load/batch.h"
#include "util/errmsg.h"

/* A chunk's bytes when the records are short; a longer record takes a chunk
 * of its own size. */
#define RECORD_PARSE_CHUNK_BYTES ((size_t)256 << 10)
/* What each job in flight holds: its chunk, and the BGZF reader it reads
 * the chunk through (two 64 KiB blocks). */
#define RECORD_PARSE_JOB_BYTES (RECORD_PARSE_CHUNK_BYTES + ((size_t)160 << 10))

typedef struct {
    hts_tpool *pool;
    const sort_spec *spec;
    int n_refs;         /* a record naming a reference id from n_refs on fails */
    int verify;         /* sum record_digest() of the records as written */
    int jobs;           /* spans in flight at most */
} record_parse_setup;

typedef struct {
    size_t n;               /* whole records */
    const uint32_t *bound;  /* each one's packed size at most */
    uint64_t bytes;         /* the records' bytes as htslib holds them */
    int end;                /* 1: the stream ends after them; -1: reading on failed */
} record_parse_chunk;

enum { RECORD_PARSE_READ = 1, RECORD_PARSE_REFS, RECORD_PARSE_KEY, RECORD_PARSE_MEMORY };
typedef struct {
    int kind;
    int read_code;          /* RECORD_PARSE_READ: bam_read1()'s */
    uint64_t seq;           /* the record's number in the input */
    const bam1_t *b;        /* the record as far as it was read */
    errmsg err;             /* RECORD_PARSE_KEY: why the order cannot place it */
} record_parse_failure;

typedef struct record_parse record_parse;

record_parse *record_parse_create(const record_parse_setup *s);   /* NULL: out of memory */
void record_parse_free(record_parse *p);                          /* waits for the jobs */

/* The next chunk: 0, or -1 out of memory.  Every record of the chunk before
 * must have been handed to record_parse_span(). */
int record_parse_read(record_parse *p, BGZF *fp, record_parse_chunk *c);
/* Records [first, first + span->n) of the chunk, numbered from seq, into
 * the span reserved for them in sb. */
int record_parse_span(record_parse *p, batch *sb, const batch_span *span, size_t first,
                      uint64_t seq);
int record_parse_settle(record_parse *p);
const record_parse_failure *record_parse_failed(const record_parse *p);

/* After a chunk that ended the stream: bam_read1()'s result for the bytes
 * after the last whole record, read into b: -1 where there are none. */
int record_parse_tail(record_parse *p, bam1_t *b);
/* Of the settled records: the sum of their digests, and whether one was
 * placed (sort_key_record_rewrite()). */
uint64_t record_parse_digest(const record_parse *p);
int record_parse_placed(const record_parse *p);

#endif
