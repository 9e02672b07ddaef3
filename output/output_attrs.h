/* output/output_attrs.h -- the owner, group and mode a finished output gets.
 *
 * Contract: samtools writes over an existing file in place (O_TRUNC), so
 * the file keeps its inode and with it its owner, group and mode; rocksort
 * renames a new file over it (output/output_file.h).  Just before that
 * rename, output_attrs_carry() gives the new file, open as fd, what the
 * file at final_path has then:
 * - its permission bits (not set-id or sticky bits, which writing to a
 *   file clears anyway for anyone but root);
 * - its group, where this user may set it (a group the user is in, or
 *   root); else the new file keeps the group it was created with, and the
 *   old group's permission bits only as far as a new file's (by the umask)
 *   would allow them, so no other group gains access the old one had;
 * - its owner, only where this process may give a file away (root).
 * With no regular file there, the new file gets what any new file would:
 * 0666 less the umask.  Until then the hidden file keeps mkstemp()'s
 * 0600, so a partial output is never more readable than its final form.
 * Nothing here fails the run: at worst the output stays private (0600).
 * ACLs and extended attributes are not carried over, and hard links to
 * the old file keep the old data (see the man page).
 */
#ifndef OUTPUT_ATTRS_H
#define OUTPUT_ATTRS_H

#include <sys/types.h>

void output_attrs_carry(int fd, const char *final_path);

/* The same for many outputs: the umask read once, by output_attrs_umask(). */
mode_t output_attrs_umask(void);
void output_attrs_carry_umask(int fd, const char *final_path, mode_t mask);

#endif
