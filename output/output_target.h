/* output/output_target.h -- what kind of destination an output path is, and
 * whether it can be written at all.
 *
 * Contract: output_target() follows symlinks and sorts a path into one of
 * three kinds.  A new name or a regular file is written under a temporary
 * name beside its final target and renamed there (TARGET_RENAME); the
 * target of a symlink is replaced, never the link.  Anything else (a
 * device, a FIFO, a socket, or one of this process's descriptors such as
 * /dev/stdout) is written in place (TARGET_DIRECT).  A destination that can
 * never be written -- a directory, a missing or non-directory parent, a
 * parent the user may not write in -- is refused with a one-line message,
 * so that the caller can refuse it before reading any input.
 */
#ifndef OUTPUT_TARGET_H
#define OUTPUT_TARGET_H

#include "util/errmsg.h"

typedef enum { TARGET_STDOUT, TARGET_RENAME, TARGET_DIRECT } target_kind;

/* "-" is TARGET_STDOUT.  *path gets the name to rename onto (TARGET_RENAME)
 * or to open (TARGET_DIRECT), malloc'd; NULL for stdout.  Returns the kind,
 * or -1 with the cause, naming fn, in err. */
int output_target(const char *fn, char **path, errmsg *err);

/* Only the check: 0 if fn can be written, else -1 with the cause in err. */
int output_target_check(const char *fn, errmsg *err);

#endif
