/* output/output_stale.h -- hidden outputs that a killed sort left behind.
 *
 * Contract: an output or index is written under a hidden name beside its
 * final one, ".NAME.rocksort.XXXXXX" (output/output_file.h).  The sort writing it
 * holds an flock() on it (output_stale_hold()) from its creation until it
 * is renamed into place or removed; SIGKILL leaves the file, and the lock
 * goes with the process.  So a hidden file whose lock can be taken is
 * stale: output_stale_sweep() removes those of one final name.  Only a
 * regular file of exactly that form is removed, only while this process
 * holds its lock, and only if the name still names the file it locked.
 * Where the file system has no flock (ENOLCK, EOPNOTSUPP), none is: a live
 * writer cannot be told from a dead one.
 * NAME is the final name's, unless that would make the hidden name too long
 * for the directory (a final name of over 238 bytes, where the limit is
 * 255): then its first bytes and a hash of it (util/name_fit.h), the same
 * for the same final name, so that a sweep finds them too.
 * The six characters are first one of OUTPUT_HIDDEN_SLOTS fixed ones, the
 * lowest free: a sweep looks up those few names and never reads the
 * directory's listing, whose size (a file per cell or region, each sorted
 * by its own run) would otherwise be paid by every sort in it.  Only with
 * every slot held are they mkstemp's random ones, which no sweep finds.
 * (A resumed sort removes the names its state journaled, of any form, with
 * output_stale_remove(): the state's own lock shows their writer dead, but
 * a later sort may have taken a slot's name since.)
 */
#ifndef OUTPUT_STALE_H
#define OUTPUT_STALE_H

/* The hidden name's form: "." NAME OUTPUT_HIDDEN_SUFFIX, then
 * OUTPUT_HIDDEN_RANDOM letters or digits: a slot's number, or mkstemp's. */
#define OUTPUT_HIDDEN_SUFFIX ".rocksort."
#define OUTPUT_HIDDEN_RANDOM 6
#define OUTPUT_HIDDEN_SLOTS 16

/* The NAME of the final name base in dir (a real path): base, or base
 * shortened to fit.  Malloc'd; NULL if memory runs out. */
char *output_stale_stem(const char *dir, const char *base);

/* "DIR/.STEM.rocksort." then slot's number in six digits, or mkstemp's
 * template "XXXXXX" for slot -1 (dir "/" gives "/.STEM...").  stem is
 * output_stale_stem()'s.  Malloc'd; NULL if memory runs out. */
char *output_stale_hidden_name(const char *dir, const char *stem, int slot);

/* Whether a file name (no directory) has the hidden form of the final
 * name whose output_stale_stem() is stem; of any final name if stem is NULL. */
int output_stale_hidden_form(const char *name, const char *stem);

/* Locks a hidden file just created under path, descriptor fd, for as long
 * as the descriptor (or a duplicate) stays open: 0, also where the file
 * system has no locks; -1 if a sweeping sort took it first (it removes it:
 * make another). */
int output_stale_hold(int fd, const char *path);

/* Removes path if it is a regular file that no live sort holds, as a sweep
 * does: 1 if removed, else 0.  Where the file system has no locks it is
 * kept, unless the caller knows its writer dead (dead_if_no_locks: a name
 * a resumed sort journaled, which no sweep can have freed there for
 * another sort to take). */
int output_stale_remove(const char *path, int dead_if_no_locks);

/* Removes the stale hidden files of the final name whose
 * output_stale_stem() is stem in dir (a real path), none held by a live
 * sort: those of the slots. */
void output_stale_sweep(const char *dir, const char *stem);

#endif
