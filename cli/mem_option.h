/* cli/mem_option.h -- `--max-memory auto` (or `-m auto`), and the warning
 * for a budget over the process's memory limit.
 *
 * Contract: both read this process's limits (util/mem_limits.h) and print
 * at most one line each on stderr.
 *   - mem_option_auto(opt, threads, verbose) returns the total budget that
 *     `opt auto` stands for at -@ threads (engine/mem_budget.h), printing
 *     with -v the line that says what set it, and the warning below if
 *     even that is over a limit; 0 when nothing is known, and the caller
 *     keeps its default.
 *   - mem_option_warn(opt, arg, threads, per_thread, budget) warns, and
 *     the sort goes on, when a budget the user gave (-m ARG x threads with
 *     per_thread, or --max-memory ARG) may outgrow the cgroup's limit or
 *     SLURM's allocation.  Never without one of those: MemAvailable is no
 *     limit.
 */
#ifndef MEM_OPTION_H
#define MEM_OPTION_H

#include <stdint.h>

uint64_t mem_option_auto(const char *opt, int threads, int verbose);
void mem_option_warn(const char *opt, const char *arg, int threads, int per_thread,
                     uint64_t budget);

#endif
