/* cli/mem_option.c -- see cli/mem_option.h. */
#include <stdio.h>
#include <stdlib.h>
#include "cli/mem_option.h"
#include "engine/mem_budget.h"
#include "util/mem_limits.h"

static const char *env_lookup(const char *name)
{
    return getenv(name);
}

static void warn_over(const mem_limits *lim, int threads, const char *given, uint64_t budget)
{
    char msg[512];
    if (mem_budget_over(lim, threads, budget, given, msg, sizeof msg))
        fprintf(stderr, "samtools rocksort: warning: %s\n", msg);
}

uint64_t mem_option_auto(const char *opt, int threads, int verbose)
{
    mem_limits lim;
    char why[512], given[64];
    mem_limits_read("", env_lookup, &lim);
    uint64_t budget = mem_budget_auto(&lim, threads, why, sizeof why);
    if (lim.slurm_unread[0])
        fprintf(stderr, "samtools rocksort: warning: %s is not a memory size (megabytes, or a "
                "number with K, M, G or T); %s auto takes no SLURM limit from it\n",
                lim.slurm_unread, opt);
    if (verbose) fprintf(stderr, "[rocksort] memory budget: %s\n", why);
    snprintf(given, sizeof given, "%s auto", opt);
    if (budget) warn_over(&lim, threads, given, budget);
    return budget;
}

void mem_option_warn(const char *opt, const char *arg, int threads, int per_thread,
                     uint64_t budget)
{
    mem_limits lim;
    char given[256];
    mem_limits_read("", env_lookup, &lim);
    if (per_thread && threads > 1) snprintf(given, sizeof given, "%s %s x %d threads", opt, arg, threads);
    else snprintf(given, sizeof given, "%s %s", opt, arg);
    warn_over(&lim, threads, given, budget);
}
