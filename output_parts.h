/* output_parts.h -- an output written in parts, joined in order.
 *
 * Contract: part_create() makes an empty private file for part n of an
 * output: beside the output when that is a regular file, so that the join
 * stays on one file system, else under the temp prefix (-T).  It is
 * registered for cleanup (cleanup.h) and returned malloc'd; the caller
 * opens it with htslib.  part_append() appends a closed part's bytes to the
 * output where the output's descriptor stands: the output's data so far
 * must already be flushed out of htslib.  BGZF parts end with the EOF
 * marker that closing wrote; with strip_eof set, that marker is checked
 * and left out, so the joined file has one EOF marker, the output's own.
 * part_remove() deletes a part and forgets it.  Errors are malloc'd
 * messages naming the file and the cause.
 */
#ifndef OUTPUT_PARTS_H
#define OUTPUT_PARTS_H

#include <stdint.h>
#include "output_file.h"

char *part_create(const output_file *o, const char *tmp_prefix, int n, char **err);

/* Returns 0 with the bytes appended in *appended, or -1. */
int part_append(output_file *o, const char *part, int strip_eof, uint64_t *appended,
                char **err);

void part_remove(char *part);

#endif
