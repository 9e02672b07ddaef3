/* output/split_names.h -- the file names of --split's outputs, from -o's FORMAT.
 *
 * Contract: FORMAT takes samtools 1.24 split's expansions (bam_split.c's
 * expand_format_string()): %% a '%', %* the input's name without its
 * directory and last extension, %# the output's number (zero-padded to
 * `pad` digits, as split's -p pads it), %! the value, %. the format's
 * extension; any other character after a '%', or a '%' at the end, is
 * refused.  split_names_check() refuses, before the sort starts, a FORMAT
 * that could name two outputs alike (neither %! nor %# in its file name)
 * and one whose directory part holds an expansion (the outputs share one
 * directory, which exists before the sort starts), and says whether the
 * file name holds the value (value_named) or is nothing but the value
 * (value_alone): such values are refused as met (keys/split_key.h).
 * split_names_expand() gives one output's name; SPLIT_NAMES_UNACCOUNTED is
 * the value and the number of the records without one, when no
 * --split-other names their file.  split_names_base() is %*'s text.
 * Each returns 0, or -1 with the cause in err; the names are malloc'd.
 */
#ifndef SPLIT_NAMES_H
#define SPLIT_NAMES_H

#include "util/errmsg.h"

#define SPLIT_NAMES_UNACCOUNTED "unaccounted"

typedef struct {
    const char *format;
    const char *base;       /* %* */
    const char *ext;        /* %. */
    int pad;                /* %#'s digits; 0: as many as it takes */
} split_format;

typedef struct {
    int value_named, value_alone;
} split_names_shape;

int split_names_check(const char *format, split_names_shape *shape, errmsg *err);

/* value's output, numbered number (-1: SPLIT_NAMES_UNACCOUNTED for %#). */
char *split_names_expand(const split_format *f, const char *value, long number);

/* The input's name without its directory and last extension, as split's
 * %* gives it ("-" for standard input).  Malloc'd; NULL if memory runs out. */
char *split_names_base(const char *in_fn);

#endif
