/* util/path_within.h -- whether a path names a place inside a directory.
 *
 * Contract: path_within_dir(path, dir) returns 1 if path, its links
 * resolved, is dir itself or lies below it, else 0.  The path need not
 * exist: its deepest existing ancestor is resolved, and the rest is taken
 * as written.  An existing path that is a link counts where it points and
 * where the link itself lies, as a writer may replace either; one whose
 * target does not exist yet counts where that target would be made.  A dir that
 * does not exist holds nothing: 0.  Used to refuse a file that a directory
 * removed at the end would take with it (--resume DIR).
 */
#ifndef PATH_WITHIN_H
#define PATH_WITHIN_H

int path_within_dir(const char *path, const char *dir);

#endif
