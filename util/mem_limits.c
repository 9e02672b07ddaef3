/* util/mem_limits.c -- see util/mem_limits.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/mem_limits.h"

/* Past this a limit is "none": v1 writes its unlimited as LONG_MAX rounded
 * down to a page (9223372036854771712), and no machine has an exbibyte. */
#define UNLIMITED_FROM (1ULL << 60)

/* The whole of a small file under root, NUL-ended; -1 if unreadable. */
static int read_small(const char *root, const char *path, char *buf, size_t n)
{
    char full[PATH_MAX];
    if ((size_t)snprintf(full, sizeof full, "%s%s", root, path) >= sizeof full) return -1;
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t got = 0;
    while (got + 1 < n) {
        ssize_t r = read(fd, buf + got, n - 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return 0;
}

/* A cgroup limit file's figure: digits, or "max" (v2's none). 0: none. */
static uint64_t limit_value(const char *text)
{
    if (!isdigit((unsigned char)*text)) return 0;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || (*end && !isspace((unsigned char)*end)) || v >= UNLIMITED_FROM) return 0;
    return v;
}

/* Takes dir/file's limit into *best (the smallest so far) and names it. */
static void take_limit(const char *dir, const char *file, uint64_t *best, char *name, size_t n)
{
    char path[PATH_MAX], text[64];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path) return;
    if (read_small("", path, text, sizeof text) < 0) return;
    uint64_t v = limit_value(text);
    if (v && (!*best || v < *best)) {
        *best = v;
        snprintf(name, n, "%s", file);
    }
}

/* Walks from base + rel up to base, taking every group's limits: the
 * kernel enforces each ancestor's, so the smallest is the one that bites. */
static void walk_groups(const char *base, const char *rel, int v2, mem_limits *out)
{
    char dir[PATH_MAX];
    size_t base_len = strlen(base);
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", base, strcmp(rel, "/") ? rel : "") >= sizeof dir)
        return;
    for (;;) {
        if (v2) {
            take_limit(dir, "memory.max", &out->cgroup, out->cgroup_file, sizeof out->cgroup_file);
            take_limit(dir, "memory.high", &out->cgroup, out->cgroup_file, sizeof out->cgroup_file);
        } else {
            take_limit(dir, "memory.limit_in_bytes", &out->cgroup, out->cgroup_file,
                       sizeof out->cgroup_file);
        }
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= base_len || !slash || (size_t)(slash - dir) < base_len) break;
        *slash = '\0';
    }
}

/* Whether the comma-separated list holds word. */
static int list_has(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, word, n) && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

/* mountinfo writes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7'
            && r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* One mountinfo line: its root and mount point if it mounts the memory
 * hierarchy asked for (v2: cgroup2; v1: cgroup with the memory option). */
static int memory_mount(char *line, int v2, char **mnt_root, char **mnt_point)
{
    char *sep = strstr(line, " - ");
    if (!sep) return 0;
    *sep = '\0';
    char *fstype = strtok(sep + 3, " \n"), *source = strtok(NULL, " \n");
    char *super = strtok(NULL, " \n");
    if (!fstype || !source) return 0;
    if (v2 ? strcmp(fstype, "cgroup2") != 0
           : strcmp(fstype, "cgroup") != 0 || !super || !list_has(super, "memory"))
        return 0;
    char *save = NULL;
    strtok_r(line, " ", &save);                         /* mount id */
    strtok_r(NULL, " ", &save);                         /* parent id */
    strtok_r(NULL, " ", &save);                         /* major:minor */
    *mnt_root = strtok_r(NULL, " ", &save);
    *mnt_point = strtok_r(NULL, " ", &save);
    if (!*mnt_root || !*mnt_point) return 0;
    unescape(*mnt_root);
    unescape(*mnt_point);
    return 1;
}

/* The group's path relative to a mount of root mnt_root: a mount of a
 * subtree (a container's) shows only what lies below it; a group outside
 * it (a cgroup namespace's view) is taken as the mount's own. */
static const char *relative_group(const char *group, const char *mnt_root)
{
    size_t n = strlen(mnt_root);
    if (!strcmp(mnt_root, "/")) return group;
    if (!strncmp(group, mnt_root, n) && (group[n] == '/' || group[n] == '\0'))
        return group[n] ? group + n : "/";
    return "/";
}

/* Finds the mount of the hierarchy and walks the group's limits. */
static void hierarchy_limits(const char *root, const char *group, int v2, mem_limits *out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/proc/self/mountinfo", root);
    FILE *f = fopen(path, "re");
    if (!f) return;
    char *line = NULL, *mnt_root, *mnt_point;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        if (!memory_mount(line, v2, &mnt_root, &mnt_point)) continue;
        char base[PATH_MAX];
        if ((size_t)snprintf(base, sizeof base, "%s%s", root,
                             strcmp(mnt_point, "/") ? mnt_point : "") < sizeof base)
            walk_groups(base, relative_group(group, mnt_root), v2, out);
        break;
    }
    free(line);
    fclose(f);
}

/* proc/self/cgroup: "0::PATH" for v2, "ID:LIST:PATH" with memory in the
 * LIST for v1.  A hybrid system has both; each is read. */
static void cgroup_limits(const char *root, mem_limits *out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "re");
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/') continue;
        *c2 = '\0';
        int v2 = c1 == line + 1 && line[0] == '0' && c1[1] == '\0';
        if (v2 || list_has(c1 + 1, "memory")) hierarchy_limits(root, c2 + 1, v2, out);
    }
    free(line);
    fclose(f);
}

/* A SLURM memory figure: megabytes, or K, M, G, T (powers of 1024) as
 * sbatch --mem takes them.  0 for none: unset, malformed, or 0, which
 * SLURM uses for "all the node's memory". */
static uint64_t slurm_size(const char *s)
{
    if (!s || !isdigit((unsigned char)*s)) return 0;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 20;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    }
    if (errno || *end || v >= UNLIMITED_FROM >> shift) return 0;
    return (uint64_t)v << shift;
}

/* A variable set, to neither a size nor SLURM's 0, is noted for a warning. */
static uint64_t slurm_var(mem_limits_env env, const char *name, mem_limits *out)
{
    const char *text = env(name);
    uint64_t bytes = slurm_size(text);
    if (!bytes && text && *text && strspn(text, "0") != strlen(text) && !out->slurm_unread[0])
        snprintf(out->slurm_unread, sizeof out->slurm_unread, "%s='%.40s'", name, text);
    return bytes;
}

static void slurm_limit(mem_limits_env env, mem_limits *out)
{
    uint64_t node = slurm_var(env, "SLURM_MEM_PER_NODE", out);
    if (node) {
        out->slurm = node;
        snprintf(out->slurm_vars, sizeof out->slurm_vars, "SLURM_MEM_PER_NODE");
        return;
    }
    uint64_t per_cpu = slurm_var(env, "SLURM_MEM_PER_CPU", out);
    const char *cpus_text = env("SLURM_CPUS_ON_NODE");
    char *end;
    unsigned long cpus = cpus_text && isdigit((unsigned char)*cpus_text)
                       ? strtoul(cpus_text, &end, 10) : 0;
    /* Without the CPUs the allocation is unknown: no limit rather than a guess. */
    if (!per_cpu || !cpus || *end || cpus > 1u << 20 || per_cpu >= UNLIMITED_FROM / cpus) return;
    out->slurm = per_cpu * cpus;
    snprintf(out->slurm_vars, sizeof out->slurm_vars, "SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE");
}

/* proc/meminfo's "MemAvailable:  N kB"; 0 if absent (kernels before 3.14). */
static uint64_t mem_available(const char *root)
{
    char text[8192];
    if (read_small(root, "/proc/meminfo", text, sizeof text) < 0) return 0;
    const char *p = strstr(text, "MemAvailable:");
    unsigned long long kb;
    if (!p || sscanf(p + strlen("MemAvailable:"), "%llu kB", &kb) != 1
        || kb >= UNLIMITED_FROM >> 10)
        return 0;
    return (uint64_t)kb << 10;
}

void mem_limits_read(const char *root, mem_limits_env env, mem_limits *out)
{
    memset(out, 0, sizeof *out);
    cgroup_limits(root, out);
    slurm_limit(env, out);
    out->available = mem_available(root);
}
