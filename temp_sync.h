/* temp_sync.h -- temporary data is never synced to disk.
 *
 * Contract: temp_sync.c defines fsync() and fdatasync() for the whole
 * process.  On a descriptor for the directory given to temp_sync_skip_under()
 * or anything below it, they return 0 at once; every other call goes to the
 * C library.  One directory at a time: set it before any thread may sync
 * there, clear it (NULL) once none can.
 */
#ifndef TEMP_SYNC_H
#define TEMP_SYNC_H

/* dir: an absolute or relative path, copied; NULL: sync everything again. */
void temp_sync_skip_under(const char *dir);

#endif
