/* cli/split_args.h -- --split, --split-other and --split-pad on the command line.
 *
 * Contract: SPLIT_ARGS_LONG_OPTIONS are getopt's entries for the three
 * options, for cli/rocksort_args.c's table.  split_args_option() reads
 * one of them into r (the split's spec in the sort's, keys/split_key.h;
 * --split-other's FILE) and returns 0, -1 for a bad value (reported), or
 * SPLIT_ARGS_NOT_MINE for another option.  split_args_finish() runs once
 * the options and the positional arguments are read, before the output's
 * mode is chosen: it refuses --split-other or --split-pad without
 * --split, --split in the legacy form, a tag that is not two characters,
 * and a FORMAT that output/split_names.h refuses; without -o (or with
 * -o -) FORMAT is samtools split's default ("%*_%#.%." by @RG,
 * "%*_%!.%." by a tag); --split-other must name a file that can be
 * written.  Returns 0, or -1 after printing why.
 */
#ifndef SPLIT_ARGS_H
#define SPLIT_ARGS_H

#include <getopt.h>
#include "engine/rocksort_opts.h"

enum { SPLIT_ARGS_SPLIT = 2000, SPLIT_ARGS_OTHER, SPLIT_ARGS_PAD };
#define SPLIT_ARGS_NOT_MINE 1

#define SPLIT_ARGS_LONG_OPTIONS \
    { "split", required_argument, NULL, SPLIT_ARGS_SPLIT }, \
    { "split-other", required_argument, NULL, SPLIT_ARGS_OTHER }, \
    { "split-pad", required_argument, NULL, SPLIT_ARGS_PAD }

int split_args_option(rocksort_opts *r, int ch, const char *arg);
/* *out_fn: -o's name ("-" if none), replaced by the default FORMAT. */
int split_args_finish(rocksort_opts *r, const char **out_fn, int legacy);

#endif
