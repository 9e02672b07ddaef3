/* output/split_dir.h -- the hidden directory --split's outputs are written in.
 *
 * Contract: every output of a split sort (output/split_set.h) is written
 * into one hidden directory beside them, "DIR/.STEM" SPLIT_DIR_SUFFIX
 * "NNNNNN" (STEM: FORMAT's file name, shortened to fit as util/name_fit.h
 * shortens it), and renamed out of it only once all are written: a failed
 * or killed sort leaves no output under its final name, and however many
 * outputs there are, one directory and one lock stand for them all (a
 * hidden file per output, locked, would hold a descriptor each).
 * split_dir_open() makes it, registered for removal on a fatal signal
 * (util/cleanup.h), and holds an flock() on its lock file ("lock") for as
 * long as it lives, as output/output_stale.h's hidden files are held: a
 * killed sort's directory can be told from a live one's.  First it removes
 * the stale directories of the same STEM (none held by a live sort), as
 * the NNNNNN are first one of OUTPUT_HIDDEN_SLOTS fixed ones, the lowest
 * free: a sweep looks up those few names and never reads DIR's listing.
 * split_dir_file() names a file inside it.  split_dir_remove() removes it
 * with whatever it still holds, and forgets it.
 * split_dir_remove_stale() removes a hidden directory a killed sort left
 * (a resumed sort's journaled one, output_stale_remove()'s rule): 1 if it
 * did.  split_dir_open() returns 0, or -1 with the cause in err.
 */
#ifndef SPLIT_DIR_H
#define SPLIT_DIR_H

#include "util/errmsg.h"

#define SPLIT_DIR_SUFFIX ".rocksort-split."

typedef struct {
    char *dir;      /* the outputs' directory, its real path */
    char *path;     /* the hidden directory in it */
    int lock_fd;    /* its lock file, locked; -1: none */
} split_dir;

/* format: -o's, whose directory part is the outputs' (output/split_names.h). */
int split_dir_open(split_dir *d, const char *format, errmsg *err);

/* "PATH/NUMBER" then suffix.  Malloc'd; NULL if memory runs out. */
char *split_dir_file(const split_dir *d, unsigned long number, const char *suffix);

void split_dir_remove(split_dir *d);

int split_dir_remove_stale(const char *path);

#endif
