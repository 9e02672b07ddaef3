/* util/mem_limits.h -- the memory limits that apply to this process.
 *
 * Contract: mem_limits_read() reads, under the directory prefix `root`
 * ("" for the live system; a fixture tree in the tests), and through `env`
 * (getenv, or a test's table):
 *   - the cgroup's limit: the smallest memory.max or memory.high (v2) and
 *     memory.limit_in_bytes (v1) from the process's own group up to the
 *     root of the mounted hierarchy, the group named by proc/self/cgroup
 *     and the mount point found in proc/self/mountinfo;
 *   - SLURM's allocation on this node: SLURM_MEM_PER_NODE, else
 *     SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE, in megabytes unless a K, M,
 *     G or T suffix says otherwise (powers of 1024, as sbatch --mem);
 *   - MemAvailable from proc/meminfo, at this moment.
 * Each is in bytes, 0 when absent, unreadable or unlimited ("max", v1's
 * figure near 2^63, SLURM's 0 for "all of the node"): what cannot be read
 * is no limit, so it never fails and never prints.  The names say which
 * file or variables set the cgroup's and SLURM's figures, for messages,
 * and which SLURM variable was set to something that is not a size.
 */
#ifndef MEM_LIMITS_H
#define MEM_LIMITS_H

#include <stdint.h>

typedef struct {
    uint64_t cgroup;            /* bytes; 0: no limit found */
    char cgroup_file[32];       /* "memory.max", "memory.high", "memory.limit_in_bytes" */
    uint64_t slurm;             /* bytes; 0: no allocation given */
    char slurm_vars[64];        /* "SLURM_MEM_PER_NODE", "SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE" */
    char slurm_unread[96];      /* a SLURM variable set but not a size: "NAME='TEXT'"; else "" */
    uint64_t available;         /* MemAvailable; 0: unknown */
} mem_limits;

typedef const char *(*mem_limits_env)(const char *name);

void mem_limits_read(const char *root, mem_limits_env env, mem_limits *out);

#endif
