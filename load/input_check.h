/* load/input_check.h -- was the input read to its end?
 *
 * Contract: htslib reports most damage as a read error, but some truncated
 * inputs read as a clean end of file: a BAM or BGZF file cut between two
 * blocks, a CRAM cut between two containers, and (with older htslib) a BAM
 * cut inside a block.  The sort must not take those for complete.
 *
 * input_check_start(), right after the header, refuses a regular file whose
 * end is visibly missing (no EOF marker), before any sorting.
 * input_check_end(), once sam_read1() has returned -1, refuses an input
 * whose end marker never came (files and streams alike) and a regular file
 * whose bytes consumed fall short of the size it had when opened, whatever
 * htslib reported.  file_size is 0 when the input is not a regular file.
 * Both return 0, or -1 with a one-line cause naming the file in err.
 * input_check_hfile() is the hFILE htslib reads the input through.
 *
 * SAM text has no end marker.  A last line without a newline that htslib
 * parsed is taken as complete, as samtools takes it: a line cut elsewhere
 * does not parse (too few fields, SEQ and QUAL of different lengths, a
 * broken tag).  A cut at the end of a field or inside the last tag's value
 * cannot be told from a complete line, so input_check_end() then returns 1
 * with a one-line warning naming the file in err: for a regular file, and
 * for gzipped or bgzipped SAM on a stream, whose compression's end shows
 * the stream whole, as a file's size does (not its text: it may have been
 * cut before it was compressed).  newline says whether the last line read
 * ended with one, if known (else -1): a file's text is then read for its
 * last byte (of gzip, the whole text again; of BGZF, its last block).  On
 * a plain stream the caller refuses such a line as a cut instead.
 */
#ifndef INPUT_CHECK_H
#define INPUT_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/hfile.h>
#include <htslib/sam.h>
#include "util/errmsg.h"

int input_check_start(samFile *in, const char *fn, uint64_t file_size, errmsg *err);
int input_check_end(samFile *in, const char *fn, uint64_t file_size, int newline, errmsg *err);
hFILE *input_check_hfile(samFile *in);

#endif
