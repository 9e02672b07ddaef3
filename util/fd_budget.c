/* util/fd_budget.c -- see util/fd_budget.h. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>
#include "util/fd_budget.h"

/* Past this many descriptors there is no budget worth keeping. */
#define FD_BUDGET_CAP (1 << 20)

static long soft_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) return -1;
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > FD_BUDGET_CAP) return -1;
    return (long)rl.rlim_cur;
}

/* Descriptors open now: /proc lists them (less the one reading it); without
 * /proc, each number below the limit is asked. */
static long open_descriptors(long limit)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    if (d) {
        while (readdir(d)) n++;
        closedir(d);
        return n - 3;       /* ".", ".." and the directory's own descriptor */
    }
    for (int fd = 0; fd < limit; fd++)
        if (fcntl(fd, F_GETFD) >= 0) n++;
    return n;
}

int fd_budget_available(int reserve)
{
    long limit = soft_limit();
    if (limit < 0) return -1;
    long left = limit - open_descriptors(limit) - reserve;
    return left > 0 ? (int)left : 0;
}
