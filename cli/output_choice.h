/* cli/output_choice.h -- the output's format, compression and index, chosen
 * as samtools sort chooses them.
 *
 * Contract: each reads and sets the output's fields of r, whose out_fn is
 * set.  output_choice_mode() sets r->out_mode, htslib's mode: the format
 * from -O (fmt, whose ",opt=value" tail goes to r->out_opts), else from
 * the file name, else BAM; a compressed format takes -l's level, or 0
 * with -u; -1 for a format htslib does not know (the caller says so).
 * output_choice_index() names --write-index's index: the name after
 * "##idx##" in out_fn, else out_fn with .csi (.crai for CRAM), a BAI when
 * it ends in .bai; it sets r->out_fn to the output's own name (kept in
 * the malloc'd *out_path, the index's in *index_path), r->index_fn and
 * r->index_min_shift.  An order that cannot be indexed gets a warning and
 * no index; an output that cannot (standard output, SAM) gets -1 after
 * the message.  output_choice_needs_reference() says whether CRAM output
 * lacks the reference that htslib would otherwise fetch from the network.
 */
#ifndef OUTPUT_CHOICE_H
#define OUTPUT_CHOICE_H

#include "engine/rocksort_opts.h"

int output_choice_mode(rocksort_opts *r, const char *fmt, int level, int uncompressed);
int output_choice_index(rocksort_opts *r, char **out_path, char **index_path);
int output_choice_needs_reference(const rocksort_opts *r);

#endif
