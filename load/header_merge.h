/* load/header_merge.h -- the headers of several inputs made into the one header of their sort.
 *
 * Contract: header_merge_add() is given each input's header in input order,
 * with the input's name (kept, not copied: the names must outlive the merge).
 * - The first header is copied whole: @HD and @SQ come from it alone.
 * - Each later header must have the first one's @SQ dictionary: the same
 *   references in the same order, each of the same length, with the same M5
 *   where both lines give one; their other tags (UR, AS, ...) may differ.
 *   Else -1, with a cause naming the input and its first @SQ that differs.
 * - Its @RG and @PG lines join the merged header unless one with the same ID
 *   is there: the same line (the same tags in the same order) is taken once;
 *   another line under that ID, from another input, is a conflict: -1, with
 *   a cause naming both inputs and the ID.  An ID is never renamed: the
 *   records' RG tags, and the @PG lines' PP, name the line they mean.
 * - Its @CO lines, and lines of any other type, join unless the same line
 *   is there already.
 * New lines follow every line merged before them, in input order.  A later
 * input's lines repeating one of its own IDs are kept, as one input's are.
 * header_merge_take() hands the merged header over (the caller destroys
 * it); header_merge_free() frees the rest, and the header if not taken.
 * -1 also for out of memory, or a line htslib cannot take.
 */
#ifndef HEADER_MERGE_H
#define HEADER_MERGE_H

#include <htslib/sam.h>
#include "util/errmsg.h"

typedef struct header_merge header_merge;

header_merge *header_merge_new(void);
int header_merge_add(header_merge *m, sam_hdr_t *h, const char *fn, errmsg *err);
sam_hdr_t *header_merge_take(header_merge *m);
void header_merge_free(header_merge *m);

#endif
