/* util/std_fds.h -- standard input, output and error, open whatever the caller did.
 *
 * Contract: std_fds_keep_open(), first thing, opens /dev/null on each of
 * descriptors 0, 1 and 2 that the caller left closed (read-only for 0,
 * write-only for 1 and 2), and returns a mask of those it opened (bit fd).
 * Why: the next file opened would get a closed standard descriptor's
 * number, and "-" would then read or write that file (a state's journal, a
 * run).  A closed stdin so reads as an empty one; the caller decides what
 * a closed stdout means for its output.
 */
#ifndef STD_FDS_H
#define STD_FDS_H

int std_fds_keep_open(void);

#endif
