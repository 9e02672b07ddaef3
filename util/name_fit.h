/* util/name_fit.h -- a file name derived from another that still fits the
 * file system's limit on one name.
 *
 * Contract: rocksort makes names from names the user gave: the hidden
 * ".NAME.rocksort.XXXXXX" beside an output (output/output_stale.h), the
 * temporary database "PREFIX.rocksort.XXXXXX" (store/store.c).  A NAME
 * that fits on its own may not fit with those additions, where samtools,
 * which writes the name itself, succeeds.  name_fit() returns the part to
 * use in place of NAME: NAME itself whenever the whole name fits (so the
 * names are as before for every name that worked), else the first bytes of
 * NAME (never a UTF-8 character cut in two), NAME_FIT_MARK and the 16 hex
 * digits of a hash of the whole of NAME.  The result depends on NAME, the
 * length added and the directory's limit only: two long names that differ
 * anywhere get different results, and the same name always the same one.
 */
#ifndef NAME_FIT_H
#define NAME_FIT_H

#include <stddef.h>

#define NAME_FIT_MARK '~'

/* The part to use for name (one name, no '/') in a name that adds `extra`
 * bytes to it, in directory dir (its NAME_MAX: pathconf(), else 255).
 * Malloc'd; NULL if memory runs out.  Where even the shortest form cannot
 * fit, name itself: creating the file then fails with the system's cause. */
char *name_fit(const char *dir, const char *name, size_t extra);

#endif
