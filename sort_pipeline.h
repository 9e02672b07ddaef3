/* sort_pipeline.h -- rocksort's engine: read, spill sorted runs, merge out.
 *
 * Contract: rocksort_run() sorts opts->in_fn into opts->out_fn.  The output
 * holds every input record exactly once (as samtools writes it: -M rewrites
 * unplaced reads), in samtools sort's order for opts->sort, under the input
 * header with @HD updated (and @PG added unless opts->pg_cmdline is
 * NULL).  On any failure it prints one line naming the
 * file and the cause, leaves no temporary data and no output file, and
 * returns -1.
 */
#ifndef SORT_PIPELINE_H
#define SORT_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/hts.h>
#include "bam_sort.h"

/* How the spilled runs are compressed: the store's codecs, or groups of
 * records in columns (group_codec.h).  The option --temp-compression is a
 * temp_mode (temp_space.h), resolved to one of these. */
typedef enum {
    TEMP_COMPRESSION_NONE, TEMP_COMPRESSION_LZ4, TEMP_COMPRESSION_SNAPPY, TEMP_COMPRESSION_ZSTD,
    TEMP_COMPRESSION_COLUMNS
} temp_compression;


typedef struct {
    const char *in_fn;          /* "-" for stdin */
    const char *out_fn;         /* "-" for stdout */
    char out_mode[16];          /* htslib mode: "wb6", "w", "wc"... */
    const char *reference;      /* FASTA for CRAM, or NULL */
    hts_opt *in_opts, *out_opts;
    htsFormat *in_format;       /* NULL: detect */
    sort_spec sort;             /* the order; sort_spec_init() sets defaults */
    int threads;                /* -@: extra threads */
    int merge_threads;          /* --merge-threads: key ranges merged at once; 0: auto */
    size_t mem_per_thread;      /* -m */
    const char *tmp_prefix;     /* -T, or NULL for $TMPDIR */
    uint64_t size_hint;         /* -s, 0 if none */
    int temp_compression;       /* --temp-compression: a temp_mode (temp_space.h) */
    int keep_db;                /* -k */
    int verbose;                /* -v */
    int verify;                 /* --verify: checksum records in and out */
    int htslib_verbosity_set;   /* --verbosity given: let htslib speak */
    const char *pg_cmdline;     /* NULL with --no-PG */
    const char *index_fn;       /* --write-index: the index's name, or NULL */
    int index_min_shift;        /* 0: BAI, 14: CSI */
    int progress;               /* --progress: report even if stderr is no tty */
    double progress_interval;   /* seconds between plain progress lines */
} rocksort_opts;

int rocksort_run(const rocksort_opts *opts);

#endif
