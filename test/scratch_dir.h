/* scratch_dir.h -- where a C unit test makes its files.
 *
 * Contract: scratch_dir_make(buf, n, name) makes a fresh directory
 * "$TMPDIR/name.XXXXXX" (under /tmp when TMPDIR is unset or empty, as
 * rocksort's own default) and returns buf holding its path, or NULL with
 * errno set.  The test removes it.
 */
#ifndef SCRATCH_DIR_H
#define SCRATCH_DIR_H

#include <stdio.h>
#include <stdlib.h>

static inline char *scratch_dir_make(char *buf, size_t n, const char *name)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, n, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    return mkdtemp(buf);
}

#endif
