/* output/output_parts.h -- pieces of an output held in memory, appended in order.
 *
 * Contract: output_parts_slot_create() makes an anonymous in-memory file (memfd)
 * that holds one piece of the output at a time; -1 where the system has
 * none (the caller then reads out in one stream).  output_parts_slot_rewind()
 * readies it for the next piece, which is written from its start through
 * a descriptor dup()ed from it (so they share the file offset); the pages
 * stay allocated and are overwritten, not freed and faulted in again.
 * output_parts_slot_length() gives the piece's length once its writer has closed;
 * for BGZF pieces (strip_eof) it checks the EOF marker that closing wrote
 * and leaves it out, so the joined output has one EOF marker, its own.
 * output_parts_append() copies a piece to the output where the output's descriptor
 * stands: the output's data so far must already be flushed out of htslib.
 * Failures return -1 with a cause naming the file in err (util/errmsg.h).
 */
#ifndef OUTPUT_PARTS_H
#define OUTPUT_PARTS_H

#include <stdint.h>
#include <sys/types.h>
#include "output/output_file.h"

int output_parts_slot_create(void);

/* Returns 0, or -1 with errno set. */
int output_parts_slot_rewind(int fd);

/* Returns 0, or -1 (the piece lacks its EOF marker, or the file failed). */
int output_parts_slot_length(int fd, int strip_eof, off_t *len, errmsg *err);

/* Returns 0, or -1 when writing to the output failed. */
int output_parts_append(output_file *o, int fd, off_t len, errmsg *err);

#endif
