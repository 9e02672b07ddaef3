/* test_mem_limits.c -- the memory limits read from fixture trees, and the
 * budget `--max-memory auto` makes of them.
 *
 * Each case writes a fake proc/self/cgroup, proc/self/mountinfo, cgroup
 * files and proc/meminfo under its own directory in a scratch directory
 * ($TMPDIR or /tmp), and reads them through util/mem_limits.h with that
 * directory as the root; SLURM's variables come from a table, not from the
 * environment.  Prints `N passed, M failed` last.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine/mem_budget.h"
#include "util/mem_limits.h"
#include "scratch_dir.h"
#include "unit_report.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

static char scratch[4096];
static const char *const *env_table;    /* NAME, VALUE, ..., NULL */

static const char *table_env(const char *name)
{
    for (const char *const *p = env_table; p && *p; p += 2)
        if (!strcmp(p[0], name)) return p[1];
    return NULL;
}

/* Writes root/rel, making its directories. */
static void put(const char *root, const char *rel, const char *text)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST) perror(path);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return;
    }
    fputs(text, f);
    fclose(f);
}

/* A fresh case directory; its files are given as REL, TEXT, ..., NULL. */
static const char *fixture(const char *name, const char *const *files)
{
    static char root[4200];
    snprintf(root, sizeof root, "%s/%s", scratch, name);
    mkdir(root, 0755);
    for (const char *const *f = files; *f; f += 2) put(root, f[0], f[1]);
    return root;
}

#define V2_MOUNT "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
#define V1_MOUNTS "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n" \
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" \
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
#define V1_NO_LIMIT "9223372036854771712\n"

/* Reads a fixture; NULL if the cgroup's figure and file are as expected. */
static const char *expect_cgroup(const char *name, const char *const *files, uint64_t bytes,
                                 const char *file)
{
    static char why[300];
    mem_limits lim;
    env_table = NULL;
    mem_limits_read(fixture(name, files), table_env, &lim);
    if (lim.cgroup == bytes && (!bytes || !strcmp(lim.cgroup_file, file))) return NULL;
    snprintf(why, sizeof why, "cgroup limit %llu from '%s', expected %llu from '%s'",
             (unsigned long long)lim.cgroup, lim.cgroup_file, (unsigned long long)bytes,
             bytes ? file : "");
    return why;
}

static const char *check_v2_nested(void)
{
    static const char *const files[] = {
        "proc/self/cgroup", "0::/user.slice/job_7/step_0\n",
        "proc/self/mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n" V2_MOUNT,
        "sys/fs/cgroup/user.slice/job_7/step_0/memory.max", "max\n",
        "sys/fs/cgroup/user.slice/job_7/step_0/memory.high", "max\n",
        "sys/fs/cgroup/user.slice/job_7/memory.max", "4294967296\n",
        "sys/fs/cgroup/user.slice/memory.max", "8589934592\n",
        NULL };
    /* The nearest limited ancestor, two levels up. */
    return expect_cgroup("v2_nested", files, 4 * GIB, "memory.max");
}

static const char *check_v2_high(void)
{
    static const char *const files[] = {
        "proc/self/cgroup", "0::/app\n",
        "proc/self/mountinfo", V2_MOUNT,
        "sys/fs/cgroup/app/memory.max", "2147483648\n",
        "sys/fs/cgroup/app/memory.high", "1073741824\n",
        NULL };
    return expect_cgroup("v2_high", files, GIB, "memory.high");
}

static const char *check_v2_smallest_ancestor(void)
{
    /* A child's larger limit does not lift its parent's. */
    static const char *const files[] = {
        "proc/self/cgroup", "0::/a/b\n",
        "proc/self/mountinfo", V2_MOUNT,
        "sys/fs/cgroup/a/b/memory.max", "8589934592\n",
        "sys/fs/cgroup/a/memory.max", "3221225472\n",
        NULL };
    return expect_cgroup("v2_smallest", files, 3 * GIB, "memory.max");
}

static const char *check_v2_unlimited(void)
{
    static const char *const files[] = {
        "proc/self/cgroup", "0::/a\n",
        "proc/self/mountinfo", V2_MOUNT,
        "sys/fs/cgroup/a/memory.max", "max\n",
        "sys/fs/cgroup/a/memory.high", "max\n",
        NULL };
    return expect_cgroup("v2_unlimited", files, 0, "");
}

static const char *check_v1_nested(void)
{
    static const char *const files[] = {
        "proc/self/cgroup", "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n",
        "proc/self/mountinfo", V1_MOUNTS,
        "sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", V1_NO_LIMIT,
        "sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", "943718400\n",
        "sys/fs/cgroup/memory/memory.limit_in_bytes", V1_NO_LIMIT,
        NULL };
    return expect_cgroup("v1_nested", files, 900 * MIB, "memory.limit_in_bytes");
}

static const char *check_v1_unlimited(void)
{
    static const char *const files[] = {
        "proc/self/cgroup", "4:memory:/process_api/abc\n",
        "proc/self/mountinfo", V1_MOUNTS,
        "sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", V1_NO_LIMIT,
        "sys/fs/cgroup/memory/memory.limit_in_bytes", V1_NO_LIMIT,
        NULL };
    return expect_cgroup("v1_unlimited", files, 0, "");
}

static const char *check_v1_container(void)
{
    /* A container sees only its subtree: the mount's root is its group,
     * and a controller shared with cpu is still the memory hierarchy. */
    static const char *const files[] = {
        "proc/self/cgroup", "5:cpu,memory:/docker/f00d\n",
        "proc/self/mountinfo",
        "40 31 0:32 /docker/f00d /sys/fs/cgroup/cpu\\054memory ro - cgroup cgroup rw,cpu,memory\n",
        "sys/fs/cgroup/cpu,memory/memory.limit_in_bytes", "536870912\n",
        NULL };
    return expect_cgroup("v1_container", files, 512 * MIB, "memory.limit_in_bytes");
}

static const char *check_escaped_mount(void)
{
    static const char *const files[] = {
        "proc/self/cgroup", "0::/j\n",
        "proc/self/mountinfo", "30 23 0:26 / /cg\\040root rw - cgroup2 cgroup2 rw\n",
        "cg root/j/memory.max", "123456789\n",
        NULL };
    return expect_cgroup("escaped", files, 123456789, "memory.max");
}

static const char *check_hybrid(void)
{
    /* systemd's hybrid layout: v2 mounted without the memory controller. */
    static const char *const files[] = {
        "proc/self/cgroup", "4:memory:/m\n0::/m\n",
        "proc/self/mountinfo", V1_MOUNTS
            "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
        "sys/fs/cgroup/unified/m/cgroup.procs", "1\n",
        "sys/fs/cgroup/memory/m/memory.limit_in_bytes", "2147483648\n",
        NULL };
    return expect_cgroup("hybrid", files, 2 * GIB, "memory.limit_in_bytes");
}

static const char *check_nothing(void)
{
    static const char *const files[] = { NULL };
    env_table = NULL;
    mem_limits lim;
    mem_limits_read(fixture("nothing", files), table_env, &lim);
    return lim.cgroup || lim.slurm || lim.available ? "limits read from an empty tree" : NULL;
}

static const char *check_meminfo(void)
{
    static const char *const files[] = {
        "proc/meminfo", "MemTotal:       24684088 kB\nMemFree:        21740732 kB\n"
                        "MemAvailable:   23467000 kB\nBuffers:          180000 kB\n",
        NULL };
    env_table = NULL;
    mem_limits lim;
    mem_limits_read(fixture("meminfo", files), table_env, &lim);
    return lim.available == 23467000ULL * 1024 ? NULL : "MemAvailable misread";
}

/* SLURM's figure for a table of variables; NULL if as expected. */
static const char *expect_slurm(const char *const *vars, uint64_t bytes, const char *names)
{
    static char why[300];
    static const char *const files[] = { NULL };
    mem_limits lim;
    env_table = vars;
    mem_limits_read(fixture("slurm", files), table_env, &lim);
    env_table = NULL;
    if (lim.slurm == bytes && (!bytes || !strcmp(lim.slurm_vars, names))) return NULL;
    snprintf(why, sizeof why, "%s=%s: %llu from '%s', expected %llu", vars[0], vars[1],
             (unsigned long long)lim.slurm, lim.slurm_vars, (unsigned long long)bytes);
    return why;
}

static const char *check_slurm_units(void)
{
    static const char *const mb[] = { "SLURM_MEM_PER_NODE", "300", NULL };
    static const char *const g[] = { "SLURM_MEM_PER_NODE", "2G", NULL };
    static const char *const k[] = { "SLURM_MEM_PER_NODE", "512k", NULL };
    static const char *const t[] = { "SLURM_MEM_PER_NODE", "1T", NULL };
    static const char *const m[] = { "SLURM_MEM_PER_NODE", "64M", NULL };
    const char *node = "SLURM_MEM_PER_NODE", *why;
    if ((why = expect_slurm(mb, 300 * MIB, node))) return why;
    if ((why = expect_slurm(g, 2 * GIB, node))) return why;
    if ((why = expect_slurm(k, 512 << 10, node))) return why;
    if ((why = expect_slurm(t, 1024 * GIB, node))) return why;
    return expect_slurm(m, 64 * MIB, node);
}

static const char *check_slurm_none(void)
{
    /* 0 asks for all of the node's memory: no limit; nonsense is none. */
    static const char *const zero[] = { "SLURM_MEM_PER_NODE", "0", NULL };
    static const char *const junk[] = { "SLURM_MEM_PER_NODE", "12X", NULL };
    static const char *const no_cpus[] = { "SLURM_MEM_PER_CPU", "1000", NULL };
    const char *why;
    if ((why = expect_slurm(zero, 0, ""))) return why;
    if ((why = expect_slurm(junk, 0, ""))) return why;
    return expect_slurm(no_cpus, 0, "");
}

/* A SLURM variable set to what is neither a size nor 0 is named, for
 * --max-memory auto's warning; sizes, 0 and unset ones are not. */
static const char *check_slurm_unread(void)
{
    static const char *const cases[][3] = {
        { "SLURM_MEM_PER_NODE", "1.5G", "SLURM_MEM_PER_NODE='1.5G'" },
        { "SLURM_MEM_PER_CPU", "garbage", "SLURM_MEM_PER_CPU='garbage'" },
        { "SLURM_MEM_PER_NODE", "99999999999999999999", "SLURM_MEM_PER_NODE='9999" },
        { "SLURM_MEM_PER_NODE", "0", "" },
        { "SLURM_MEM_PER_NODE", "2G", "" },
        { "SLURM_MEM_PER_CPU", "1000", "" },
    };
    static const char *const files[] = { NULL };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *vars[] = { cases[i][0], cases[i][1], NULL };
        mem_limits lim;
        env_table = vars;
        mem_limits_read(fixture("slurm_unread", files), table_env, &lim);
        env_table = NULL;
        int named = cases[i][2][0] ? !strncmp(lim.slurm_unread, cases[i][2], strlen(cases[i][2]))
                                   : !lim.slurm_unread[0];
        if (!named) return cases[i][1];
    }
    return NULL;
}

static const char *check_slurm_per_cpu(void)
{
    static const char *const per_cpu[] = {
        "SLURM_MEM_PER_CPU", "1000", "SLURM_CPUS_ON_NODE", "4", NULL };
    static const char *const both[] = {
        "SLURM_MEM_PER_NODE", "3G", "SLURM_MEM_PER_CPU", "1G", "SLURM_CPUS_ON_NODE", "8", NULL };
    const char *why = expect_slurm(per_cpu, 4000 * MIB, "SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE");
    return why ? why : expect_slurm(both, 3 * GIB, "SLURM_MEM_PER_NODE");
}

/* The budget of --max-memory auto for given limits; NULL if as expected,
 * and its -v line names `source`. */
static const char *expect_auto(mem_limits lim, int threads, uint64_t bytes, const char *source)
{
    static char why[700];
    char line[512];
    uint64_t got = mem_budget_auto(&lim, threads, line, sizeof line);
    if (got == bytes && strstr(line, source) && !strchr(line, '\n')) return NULL;
    snprintf(why, sizeof why, "budget %llu, expected %llu naming '%s': %s",
             (unsigned long long)got, (unsigned long long)bytes, source, line);
    return why;
}

/* (limit - reserve) / overhead, whole MiB, as the man page states it. */
static uint64_t fit(uint64_t limit, int threads)
{
    uint64_t reserve = MEM_BUDGET_RESERVE + MEM_BUDGET_RESERVE_PER_THREAD * (uint64_t)threads;
    return (uint64_t)((double)(limit - reserve) / MEM_BUDGET_OVERHEAD) / MIB * MIB;
}

static const char *check_auto_budget(void)
{
    mem_limits cg = { .cgroup = 4 * GIB, .cgroup_file = "memory.max", .available = 22 * GIB };
    mem_limits sl = { .slurm = 300 * MIB, .slurm_vars = "SLURM_MEM_PER_NODE",
                      .available = 22 * GIB };
    mem_limits both = cg;
    both.slurm = 2 * GIB;
    snprintf(both.slurm_vars, sizeof both.slurm_vars, "SLURM_MEM_PER_NODE");
    mem_limits none = { .available = 22 * GIB };
    mem_limits busy = { .cgroup = 16 * GIB, .cgroup_file = "memory.max", .available = 2 * GIB };
    mem_limits tiny = { .slurm = 50 * MIB, .slurm_vars = "SLURM_MEM_PER_NODE" };
    mem_limits blind = { 0 };
    const char *why;
    if ((why = expect_auto(cg, 0, fit(4 * GIB, 1), "memory.max"))) return why;
    if ((why = expect_auto(cg, 8, fit(4 * GIB, 8), "x 8 threads"))) return why;
    if ((why = expect_auto(sl, 1, fit(300 * MIB, 1), "SLURM_MEM_PER_NODE"))) return why;
    if ((why = expect_auto(both, 1, fit(2 * GIB, 1), "SLURM's allocation"))) return why;
    if ((why = expect_auto(none, 1, 11 * GIB, "half of MemAvailable"))) return why;
    if ((why = expect_auto(busy, 1, fit(2 * GIB, 1), "from MemAvailable"))) return why;
    if ((why = expect_auto(tiny, 1, MIB, "SLURM"))) return why;
    return expect_auto(blind, 1, 0, "no MemAvailable");
}

static const char *check_warning(void)
{
    static char why[700];
    char msg[512];
    mem_limits cg = { .cgroup = 8 * GIB, .cgroup_file = "memory.max", .available = 22 * GIB };
    mem_limits none = { .available = 2 * GIB };
    if (!mem_budget_over(&cg, 8, 16 * GIB, "-m 2G x 8 threads", msg, sizeof msg))
        return "no warning for 16 GiB under an 8 GiB cgroup";
    if (!strstr(msg, "-m 2G x 8 threads = 16.0 GiB") || !strstr(msg, "8.0 GiB")
        || !strstr(msg, "memory.max") || strchr(msg, '\n')) {
        snprintf(why, sizeof why, "the warning lacks a figure: %s", msg);
        return why;
    }
    /* Below the limit, but the peak beyond it: still killed. */
    if (!mem_budget_over(&cg, 1, 7 * GIB + 900 * MIB, "--max-memory 7.9G", msg, sizeof msg))
        return "no warning for a budget whose peak passes the limit";
    if (mem_budget_over(&cg, 4, fit(8 * GIB, 4), "--max-memory X", msg, sizeof msg))
        return "a warning for the budget auto picks";
    if (mem_budget_over(&none, 1, 64 * GIB, "--max-memory 64G", msg, sizeof msg))
        return "a warning from MemAvailable alone";
    return NULL;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

int main(void)
{
    if (!scratch_dir_make(scratch, sizeof scratch, "test_mem_limits")) {
        perror(scratch);
        return 1;
    }
    report("mem_limits_v2_nested", check_v2_nested());
    report("mem_limits_v2_high", check_v2_high());
    report("mem_limits_v2_smallest_ancestor", check_v2_smallest_ancestor());
    report("mem_limits_v2_unlimited", check_v2_unlimited());
    report("mem_limits_v1_nested", check_v1_nested());
    report("mem_limits_v1_unlimited", check_v1_unlimited());
    report("mem_limits_v1_container", check_v1_container());
    report("mem_limits_escaped_mount", check_escaped_mount());
    report("mem_limits_hybrid", check_hybrid());
    report("mem_limits_nothing", check_nothing());
    report("mem_limits_meminfo", check_meminfo());
    report("mem_limits_slurm_units", check_slurm_units());
    report("mem_limits_slurm_none", check_slurm_none());
    report("mem_limits_slurm_unread", check_slurm_unread());
    report("mem_limits_slurm_per_cpu", check_slurm_per_cpu());
    report("mem_budget_auto", check_auto_budget());
    report("mem_budget_warning", check_warning());
    nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return report_summary();
}
