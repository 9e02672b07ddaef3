/* engine/mem_budget.c -- see engine/mem_budget.h. */
#include <stdio.h>
#include "engine/mem_budget.h"

#define MIB (1ULL << 20)

/* 850 MiB, 3.2 GiB: the units of the budget's options. */
static const char *size_text(char *buf, size_t n, uint64_t bytes)
{
    double mib = (double)bytes / (double)MIB;
    if (mib < 1024) snprintf(buf, n, mib < 10 && bytes % MIB ? "%.1f MiB" : "%.0f MiB", mib);
    else snprintf(buf, n, "%.1f GiB", mib / 1024);
    return buf;
}

uint64_t mem_budget_reserve(int threads)
{
    return MEM_BUDGET_RESERVE + MEM_BUDGET_RESERVE_PER_THREAD * (uint64_t)(threads > 1 ? threads : 1);
}

/* The largest budget whose peak fits in room, whole MiB; 0 if none does. */
static uint64_t fitting(uint64_t room, int threads)
{
    uint64_t reserve = mem_budget_reserve(threads);
    if (room <= reserve + MIB) return 0;
    uint64_t b = (uint64_t)((double)(room - reserve) / MEM_BUDGET_OVERHEAD);
    return b / MIB * MIB;
}

/* The peak a budget may reach. */
static uint64_t peak_of(uint64_t budget, int threads)
{
    return (uint64_t)((double)budget * MEM_BUDGET_OVERHEAD) + mem_budget_reserve(threads);
}

/* "96 MiB (64 MiB + 4 MiB x 8 threads)" */
static void reserve_text(char *buf, size_t n, int threads)
{
    char total[32], base[32], per[32];
    int t = threads > 1 ? threads : 1;
    snprintf(buf, n, "%s (%s + %s x %d thread%s)", size_text(total, sizeof total,
             mem_budget_reserve(threads)), size_text(base, sizeof base, MEM_BUDGET_RESERVE),
             size_text(per, sizeof per, MEM_BUDGET_RESERVE_PER_THREAD), t, t > 1 ? "s" : "");
}

/* The smaller of the cgroup's limit and SLURM's allocation, 0 if neither,
 * with what it is ("the cgroup's memory limit") and what set it. */
static uint64_t hard_limit(const mem_limits *lim, const char **what, const char **source)
{
    if (lim->cgroup && (!lim->slurm || lim->cgroup <= lim->slurm)) {
        *what = "the cgroup's memory limit";
        *source = lim->cgroup_file;
        return lim->cgroup;
    }
    *what = "SLURM's allocation";
    *source = lim->slurm_vars;
    return lim->slurm;
}

uint64_t mem_budget_auto(const mem_limits *lim, int threads, char *why, size_t n)
{
    const char *what, *source;
    char b[32], l[32], r[128], a[32];
    uint64_t limit = hard_limit(lim, &what, &source);
    uint64_t from_avail = fitting(lim->available, threads), budget;
    reserve_text(r, sizeof r, threads);
    if (!limit && !lim->available) {
        snprintf(why, n, "--max-memory auto: no cgroup or SLURM limit and no MemAvailable "
                 "in /proc/meminfo; the default -m applies");
        return 0;
    }
    if (!limit) {
        /* Not a limit but a snapshot that others share: take half. */
        budget = lim->available / 2 / MIB * MIB;
        if (budget > from_avail) budget = from_avail;
        if (!budget) budget = MIB;
        snprintf(why, n, "--max-memory auto: %s, half of MemAvailable (%s); no cgroup or "
                 "SLURM limit", size_text(b, sizeof b, budget),
                 size_text(a, sizeof a, lim->available));
        return budget;
    }
    budget = fitting(limit, threads);
    int avail_lower = lim->available && from_avail < budget;
    if (avail_lower) budget = from_avail;
    if (!budget) budget = MIB;
    size_text(l, sizeof l, limit);
    if (avail_lower)
        snprintf(why, n, "--max-memory auto: %s from MemAvailable (%s), below %s of %s (%s), "
                 "less a reserve of %s, / %.2f", size_text(b, sizeof b, budget),
                 size_text(a, sizeof a, lim->available), what, l, source, r,
                 MEM_BUDGET_OVERHEAD);
    else
        snprintf(why, n, "--max-memory auto: %s from %s of %s (%s), less a reserve of %s, "
                 "/ %.2f", size_text(b, sizeof b, budget), what, l, source, r,
                 MEM_BUDGET_OVERHEAD);
    return budget;
}

int mem_budget_over(const mem_limits *lim, int threads, uint64_t budget, const char *given,
                    char *msg, size_t n)
{
    const char *what, *source;
    char b[32], p[32], l[32], a[32], why[512];
    uint64_t limit = hard_limit(lim, &what, &source);
    if (!limit || peak_of(budget, threads) <= limit) return 0;
    uint64_t fits = mem_budget_auto(lim, threads, why, sizeof why);
    int suggest = fits < budget;
    snprintf(msg, n, "%s = %s, up to %s at the peak, is more than %s of %s (%s); the sort "
             "may be killed%s%s%s", given, size_text(b, sizeof b, budget),
             size_text(p, sizeof p, peak_of(budget, threads)), what, size_text(l, sizeof l, limit),
             source, suggest ? " (--max-memory auto: " : "",
             suggest ? size_text(a, sizeof a, fits) : "", suggest ? ")" : "");
    return 1;
}
