/* disk/disk_speed.h -- how fast a directory's file system takes a sequential write.
 *
 * Contract: disk_speed_write_mb_s() writes DISK_PROBE_BYTES to a file of its own
 * in dir, with direct I/O so that the page cache does not hide the disk,
 * removes it (registered for cleanup meanwhile, util/cleanup.h), and returns the
 * megabytes per second it took; -1 when it cannot tell (direct I/O refused,
 * as on tmpfs: memory, or a failed write).  It costs a fraction of a second
 * on a disk of a few hundred MB/s, and is asked only when a choice depends
 * on it (store/temp_space.c).
 */
#ifndef DISK_SPEED_H
#define DISK_SPEED_H

#define DISK_PROBE_BYTES (16u << 20)

double disk_speed_write_mb_s(const char *dir);

#endif
