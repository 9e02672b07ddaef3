/* cli/rocksort_args.h -- samtools rocksort's command line, read into one
 * sort's options.
 *
 * Contract: rocksort_args_init() sets samtools sort's defaults and the
 * @PG line's command line.  rocksort_args_parse() reads samtools sort's
 * options, or the 2014 rocksort's legacy `IN OUT.prefix` form
 * (cli/legacy_form.h), into a->run: the inputs (-b FILE's lines, then every
 * argument, as samtools merge takes them; none: standard input; "-" at
 * most once), the order as samtools settles it (the
 * last order option wins, -N makes names ASCII, -t ties by the order),
 * the output's mode and index (cli/output_choice.h), the memory per thread
 * (--max-memory split over the threads, as -m gives it).  It refuses, before
 * anything is read, what cannot work: a bad value, -k with --resume,
 * temp directories or outputs that will fail (engine/sort_setup.h), CRAM
 * without a reference.  Returns 0, or -1 after printing why; --help prints
 * the usage (cli/rocksort_usage.h) and exits.  rocksort_args_free() frees
 * what both allocated.
 */
#ifndef ROCKSORT_ARGS_H
#define ROCKSORT_ARGS_H

#include <stdint.h>
#include <htslib/hts.h>
#include "engine/rocksort_opts.h"

/* -b given at most this many times. */
#define MAX_LISTS 64

typedef struct {
    rocksort_opts run;              /* what the engine is given */
    const char *out_fn, *out_fmt;
    int level, uncompressed, legacy, legacy_stdout, legacy_full_name;
    htsFormat in_format;
    int have_in_format;
    char *legacy_out;
    const char *lists[MAX_LISTS];   /* each -b FILE, in order */
    int n_lists;
    char **listed;                  /* the inputs they list (hts_readlines()'s) */
    int n_listed;
    const char *list_fn;            /* the last -b list */
    const char **inputs;            /* every input: run.in_fns */
    int write_index, mem_given;
    int ascii_names;                /* -N seen */
    uint64_t max_memory;
    const char *mem_arg, *mem_auto; /* the size given; "-m" or "--max-memory" given "auto" */
    char *out_path, *index_path;    /* "out.bam##idx##out.bai" split in two */
    char *cmdline;                  /* the @PG line's, unless --no-PG */
} rocksort_args;

void rocksort_args_init(rocksort_args *c, int argc, char **argv);
int rocksort_args_parse(rocksort_args *c, int argc, char **argv);
void rocksort_args_free(rocksort_args *c);

#endif
