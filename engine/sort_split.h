/* engine/sort_split.h -- --split: one sorted output per value, opened, read out and committed.
 *
 * Contract: the output phase's steps (engine/sort_output.h) when the sort
 * splits its output (keys/split_key.h).  sort_split_open() makes the
 * outputs' hidden directory before the load (output/split_set.h), and by
 * @RG refuses a header whose IDs cannot name the outputs.
 * sort_split_readout() sets the header's @HD tags, writes each group's
 * records to its own output (readout/split_readout.h) and then the
 * outputs without records.  sort_split_commit() names and renames them
 * all into place (output/split_commit.h), or none.  sort_split_report()
 * adds -v's line per output (its name and records).  sort_split_free()
 * removes whatever is left in the hidden directory.  Each returns 0, or
 * -1 once the failure is reported.
 */
#ifndef SORT_SPLIT_H
#define SORT_SPLIT_H

#include "engine/sort_job.h"
#include "readout/merge_sources.h"

int sort_split_open(sort_job *j);
int sort_split_readout(sort_job *j, const readout_input *in);
int sort_split_commit(sort_job *j);
void sort_split_report(const sort_job *j);
void sort_split_free(sort_job *j);

#endif
