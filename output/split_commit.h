/* output/split_commit.h -- --split's outputs named and renamed into place, all or none.
 *
 * Contract: split_commit_run() is output/split_set.h's commit, run once
 * every writer has ended and split_set_fill() has written the outputs
 * without records: it numbers the outputs for %#, names each and its
 * index, refuses two of one name (naming both values) before any rename,
 * then renames every one out of the hidden directory, with signals held,
 * each with the mode, group and owner of the file it replaces; a rename
 * that fails takes back those done.  After the last rename the run is
 * finished (util/cleanup.h's commit point).  Returns 0, or -1 with the
 * cause in err and no output under its final name.
 */
#ifndef SPLIT_COMMIT_H
#define SPLIT_COMMIT_H

#include "output/split_set.h"
#include "util/errmsg.h"

int split_commit_run(split_set *set, errmsg *err);

#endif
