/* util/std_fds.c -- see util/std_fds.h. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "util/std_fds.h"

int std_fds_keep_open(void)
{
    int closed = 0;
    for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
        int null = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
        if (null >= 0 && null != fd) {
            dup2(null, fd);
            close(null);
        }
        closed |= 1 << fd;
    }
    return closed;
}
