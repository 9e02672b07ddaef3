/* template_key.h -- samtools' --template-coordinate order as key bytes.
 *
 * Contract: template_key_body() writes a record's template-coordinate key
 * (without the input number) at p, given its read group's library ("" for
 * none), and returns the byte after it; at most TEMPLATE_FIXED_LEN bytes
 * plus the library's, the MI tag's and the name's lengths, each + 1.  It
 * returns NULL for a record template_problem() refuses: a paired record
 * with a placed mate needs an MC tag holding a string, and an MI tag must
 * hold one.  The order is samtools 1.24's, described in the .c file.
 */
#ifndef TEMPLATE_KEY_H
#define TEMPLATE_KEY_H

#include <stdint.h>
#include <htslib/sam.h>

/* tid1, tid2, pos1, pos2, strand1, strand2, ..., upper-of-pair */
#define TEMPLATE_FIXED_LEN (4 + 4 + 8 + 8 + 1 + 1 + 1)

enum { TEMPLATE_OK, TEMPLATE_NO_MC, TEMPLATE_BAD_MC, TEMPLATE_BAD_MI };

/* *mc: the MC tag's CIGAR text, or NULL; *mi: the MI tag's text, or "". */
int template_problem(const bam1_t *b, const char **mc, const char **mi);

uint8_t *template_key_body(const bam1_t *b, const char *library, uint8_t *p);

#endif
