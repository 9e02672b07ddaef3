/* output/output_file.h -- all-or-nothing output.
 *
 * Contract: for a new name or a regular file (a symlink's target, when the
 * name is a link), output_file_open() writes to a hidden temporary name in the
 * destination's directory; output_file_commit() closes it and renames it into
 * place only when every write and the close succeeded, so a failed run
 * never leaves a truncated file that looks finished.  An index, if asked
 * for, follows the same rule.  Each is private until then, and takes the
 * mode, group and owner of the file it replaces (output/output_attrs.h).  Stdout ("-") and anything that is not a
 * regular file (a device, a FIFO, /dev/stdout; see output/output_target.h) are
 * written in place.
 * A hidden file is locked while this run may rename it, and the stale ones
 * of the same name that killed runs left are removed first (output/output_stale.h).
 * output_file_abort() removes the temporary files; on a destination written in
 * place it diverts the BGZF EOF marker to /dev/null, so a reader sees the
 * stream as truncated.
 * The output does not stay in the page cache: output_file_drop_written() drops
 * the pages already written to disk, and the commit drops the rest.
 */
#ifndef OUTPUT_FILE_H
#define OUTPUT_FILE_H

#include <htslib/sam.h>
#include "util/errmsg.h"

typedef struct {
    char *name, *idx_name;  /* as the user gave them, for messages */
    char *final_path;       /* renamed onto at the commit; NULL: written in place */
    char *tmp_path;
    char *idx_final_path, *idx_tmp_path;    /* NULL: no index, or written in place */
    samFile *fp;
    int indexing;
    int cache_fd;       /* the temporary file, for dropping its pages, and holding its
                           lock (output/output_stale.h) until it is renamed; else -1 */
    int idx_hold_fd;    /* the index's temporary file, holding its lock; else -1 */
    int stream_fd;      /* written in place: its descriptor, to withhold the EOF marker */
    char *idx_write_path;   /* where the index is written */
    int idx_after;          /* output_file_index_after(): built at the commit */
    int idx_min_shift, idx_threads;
} output_file;

/* mode is an htslib mode ("wb6", "w", "wc"...).  Returns 0, or -1 with the
 * cause in err (also for a destination output_target() refuses). */
int output_file_open(output_file *o, const char *fn, const char *mode, errmsg *err);

/* Reserves the index's hidden name (and the name itself) before the
 * records are written, so that a resumable sort can journal it; the two
 * calls below reserve it if this was not called. */
int output_file_index_reserve(output_file *o, const char *idx_fn, errmsg *err);

/* Builds an index while the records are written: call it after the header
 * and before the first record.  The index is written under a temporary name
 * too and renamed to idx_fn right after the output (written in place if
 * idx_fn is not a regular file).  min_shift 0 makes a
 * BAI, 14 a CSI; CRAM always gets a CRAI. */
int output_file_index_begin(output_file *o, sam_hdr_t *h, const char *idx_fn, int min_shift,
                            errmsg *err);

/* The same index, built by samtools index's code (sam_index_build3()) from
 * the closed output at the commit, before the rename: for output that was
 * not written record by record through o->fp (readout/range_readout.h).  Needs an
 * output written beside its final name (a regular file). */
int output_file_index_after(output_file *o, const char *idx_fn, int min_shift, int threads,
                            errmsg *err);

/* Call every few tens of MB written: the pages that reached the disk are
 * dropped from the page cache, so new writes reuse them (see output/output_file.c). */
void output_file_drop_written(output_file *o);

int output_file_commit(output_file *o, errmsg *err);

/* The deflate level an htslib mode ("wb6") and output options write at:
 * the mode's digit, then a level option, else htslib's default (6 for
 * compressed formats); uncompressed SAM counts as 0. */
int output_file_deflate_level(const char *mode, const hts_opt *opts);

/* What one thread compressing the output at this level holds beyond what
 * it holds at the default level: htslib writes -l 8 and 9 at libdeflate's
 * levels 10 and 12, whose near-optimal parser's compressor is many times
 * larger (doc/DESIGN.md, "The readout's memory", has the sizes).  0 at
 * the other levels. */
uint64_t output_file_deflate_extra_bytes(int level);

/* Removes path if it is a regular file under a hidden name of the form
 * outputs and indexes are written under (".NAME.rocksort.XXXXXX", by the
 * real path of its directory), not one of o's own, and no live sort holds
 * it (output/output_stale.h): an earlier run that SIGKILL ended left it, and a
 * resumed sort that journaled it removes it, whatever this run's output
 * is.  1 if removed. */
int output_file_remove_stale_partial(const output_file *o, const char *path);
void output_file_abort(output_file *o);

#endif
