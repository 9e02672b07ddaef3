/* output/output_attrs.c -- see output/output_attrs.h. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "output/output_attrs.h"

#define PERMISSION_BITS 0777
#define GROUP_BITS 0070

/* The umask, read from /proc where the kernel shows it (Linux 4.7 on):
 * setting it to read it back would, for that moment, give files that
 * other threads create (RocksDB's) a umask of 0. */
mode_t output_attrs_umask(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    unsigned int mask;
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = sscanf(line, "Umask: %o", &mask) == 1;
    if (f) fclose(f);
    if (found) return (mode_t)mask;
    mode_t old = umask(0);
    umask(old);
    return old;
}

/* Gives fd old's owner (root only) and group (where allowed): 1 if the
 * group is old's now, else 0.  EPERM is the expected refusal of both. */
static int carry_owner_group(int fd, const struct stat *old)
{
    struct stat now;
    if (fstat(fd, &now) < 0) return 0;
    if (now.st_uid != old->st_uid && fchown(fd, old->st_uid, old->st_gid) == 0) return 1;
    if (now.st_gid == old->st_gid) return 1;
    return fchown(fd, (uid_t)-1, old->st_gid) == 0;
}

void output_attrs_carry(int fd, const char *final_path)
{
    output_attrs_carry_umask(fd, final_path, output_attrs_umask());
}

void output_attrs_carry_umask(int fd, const char *final_path, mode_t mask)
{
    mode_t fresh = 0666 & ~mask & PERMISSION_BITS;
    struct stat old;
    mode_t mode = fresh;
    if (lstat(final_path, &old) == 0 && S_ISREG(old.st_mode)) {
        mode = old.st_mode & PERMISSION_BITS;
        if (!carry_owner_group(fd, &old)) mode &= ~GROUP_BITS | (fresh & GROUP_BITS);
    }
    /* Harmless if refused: the file stays private. */
    if (fchmod(fd, mode) < 0) { }
}
