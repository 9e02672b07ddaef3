/* util/fd_budget.h -- how many more files the process may open.
 *
 * Contract: fd_budget_available() counts the descriptors the process holds
 * now (standard streams, the input, the output, any inherited) and returns
 * how many more its soft RLIMIT_NOFILE lets it open, less `reserve` kept
 * for files opened later.  It changes no limit: raising the soft limit is
 * the caller's choice (engine/sort_plan.c makes it).
 * It returns -1 when the limit is unlimited or past what it can count.
 * Every descriptor counts, whoever opened it: a limit of 64 is a limit on
 * the whole process, not on RocksDB.
 */
#ifndef FD_BUDGET_H
#define FD_BUDGET_H

int fd_budget_available(int reserve);

#endif
