/* output_file.h -- all-or-nothing output.
 *
 * Contract: output_open() writes to a hidden temporary name in the
 * destination's directory (or to stdout for "-"); output_commit() closes it
 * and renames it into place only when every write and the close succeeded,
 * so a failed run never leaves a truncated file that looks finished.
 * output_abort() removes the temporary file; on stdout it diverts the BGZF
 * EOF marker to /dev/null, so a reader sees the stream as truncated.
 */
#ifndef OUTPUT_FILE_H
#define OUTPUT_FILE_H

#include <htslib/sam.h>

typedef struct {
    char *final_path;   /* NULL for stdout */
    char *tmp_path;
    samFile *fp;
} output_file;

/* mode is an htslib mode ("wb6", "w", "wc"...).  Returns 0, or -1 with a
 * message in *err. */
int output_open(output_file *o, const char *fn, const char *mode, char **err);
int output_commit(output_file *o, char **err);
void output_abort(output_file *o);

#endif
