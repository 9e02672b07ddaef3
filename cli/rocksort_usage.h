/* cli/rocksort_usage.h -- the text of `samtools rocksort --help`.
 *
 * Contract: rocksort_usage() prints every option with its default, in
 * samtools sort's layout, to fp.  The man page (doc/samtools-rocksort.1)
 * says the same at length.
 */
#ifndef ROCKSORT_USAGE_H
#define ROCKSORT_USAGE_H

#include <stdio.h>

void rocksort_usage(FILE *fp);

#endif
