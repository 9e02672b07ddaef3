/* engine/rocksort_opts.h -- what the command line asks of one sort.
 *
 * Contract: plain data that cli/rocksort_args.c fills from the command line and
 * sort_pipeline_run() (engine/sort_pipeline.h) reads, never changes.  Only the engine
 * (engine/sort_pipeline.c, its phases and engine/sort_job.h) sees it: the modules below
 * take the few values they need as arguments.
 */
#ifndef ROCKSORT_OPTS_H
#define ROCKSORT_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/hts.h>
#include "keys/sort_key.h"
#include "store/store.h"

typedef struct {
    const char *const *in_fns;  /* the inputs, sorted as one, in this order; "-" for stdin */
    int n_in;                   /* at least 1 */
    const char *out_fn;         /* "-" for stdout; with --split, the outputs' FORMAT */
    const char *split_other;    /* --split-other FILE, or NULL (keys/split_key.h: sort.split) */
    char out_mode[16];          /* htslib mode: "wb6", "w", "wc"... */
    const char *reference;      /* FASTA for CRAM, or NULL */
    hts_opt *in_opts, *out_opts;
    htsFormat *in_format;       /* NULL: detect */
    sort_spec sort;             /* the order; sort_key_spec_init() sets defaults */
    int threads;                /* -@: extra threads */
    int merge_threads;          /* --merge-threads: key ranges merged at once; 0: auto */
    size_t mem_per_thread;      /* -m */
    const char *tmp_dirs[TEMP_MAX_DIRS]; /* -T, each time given; none: $TMPDIR */
    int n_tmp_dirs;
    uint64_t size_hint;         /* -s, 0 if none */
    temp_mode temp_compression; /* --temp-compression */
    int keep_db;                /* -k */
    const char *resume_dir;     /* --resume DIR: the sort's state, kept across kills; or NULL */
    int verbose;                /* -v */
    int verify;                 /* --verify: checksum records in and out */
    int htslib_verbosity_set;   /* --verbosity given: let htslib speak */
    const char *pg_cmdline;     /* NULL with --no-PG */
    const char *index_fn;       /* --write-index: the index's name, or NULL */
    int index_min_shift;        /* 0: BAI, 14: CSI */
    int progress;               /* --progress: report even if stderr is no tty */
    double progress_interval;   /* seconds between plain progress lines */
} rocksort_opts;

#endif
