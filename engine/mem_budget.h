/* engine/mem_budget.h -- the budget `--max-memory auto` picks, and the
 * warning for a budget that the process's memory limit will not hold.
 *
 * Contract: a sort of `threads` threads (-@, at least 1) and budget B may
 * peak at MEM_BUDGET_OVERHEAD x B + mem_budget_reserve(threads): the
 * engine's 15 % over its budget, then what it does not count (the program,
 * the kernel's share of the cgroup, each thread's buffers and the free
 * memory glibc's arena for it keeps; doc/DESIGN.md, "Memory limits").
 * From the limits of util/mem_limits.h:
 *   - mem_budget_auto() returns the total budget: under a cgroup or SLURM
 *     limit L, the largest whose peak fits in L, and in MemAvailable too;
 *     with neither limit, half of MemAvailable (and no more than fits in
 *     it); whole MiB, at least 1 MiB; 0 when not even MemAvailable is
 *     known.  It writes the line -v prints into why: the figure, what set
 *     it and the reserve.
 *   - mem_budget_over() returns 1, with the warning in msg, when a cgroup
 *     or SLURM limit is below the peak that `budget` may reach, else 0.
 *     MemAvailable alone never warns: it is not a limit.  `given` says
 *     how the user set the budget ("-m 2G x 8 threads", "--max-memory 9G").
 * Neither prints; both write one line, no newline, truncated to n.
 */
#ifndef MEM_BUDGET_H
#define MEM_BUDGET_H

#include <stddef.h>
#include <stdint.h>
#include "util/mem_limits.h"

#define MEM_BUDGET_OVERHEAD 1.15
#define MEM_BUDGET_RESERVE (64ULL << 20)
#define MEM_BUDGET_RESERVE_PER_THREAD (8ULL << 20)

uint64_t mem_budget_reserve(int threads);
uint64_t mem_budget_auto(const mem_limits *lim, int threads, char *why, size_t n);
int mem_budget_over(const mem_limits *lim, int threads, uint64_t budget, const char *given,
                    char *msg, size_t n);

#endif
