/* engine/sort_report.h -- the record accounting, and what -v reports.
 *
 * Contract: sort_report_check_accounting() fails the sort when the records written
 * differ from the records read in number, or with --verify in their
 * order-independent checksum (record_digest()); with --verify it also
 * prints both sums.  sort_report_verbose() prints -v's lines on stderr: how the
 * size was planned, where the batches went, the phases' times, the runs
 * and temp bytes, peak RSS.  It needs the store, open or not yet closed.
 */
#ifndef SORT_REPORT_H
#define SORT_REPORT_H

#include "engine/sort_job.h"

/* 0, or -1 once the failure is reported. */
int sort_report_check_accounting(const sort_job *j);

void sort_report_verbose(const sort_job *j);

/* With -v, notes every thread's CPU time at phase bound `mark` (MARK_*),
 * for sort_report_verbose()'s per-thread lines; releases them with
 * sort_report_marks_free(). */
void sort_report_mark(sort_job *j, int mark);
void sort_report_marks_free(sort_job *j);

#endif
