/* keys/template_key.h -- samtools' --template-coordinate order as key bytes.
 *
 * Contract: template_key_body() writes a record's template-coordinate key
 * (without the input number) at p, given its read group's library ("" for
 * none), and returns the byte after it; at most TEMPLATE_FIXED_LEN bytes
 * plus the library's length + 1, the record's aux data length + 2 (its CB
 * and MI strings) and the name's length + 1.  It returns NULL for a record
 * template_key_problem() refuses, as samtools 1.24 refuses it: a paired record
 * with a placed mate needs an MC tag holding a string, and CB and MI tags
 * must hold strings (Z or H).  The order is samtools 1.24's, described in
 * the .c file.
 */
#ifndef TEMPLATE_KEY_H
#define TEMPLATE_KEY_H

#include <stdint.h>
#include <htslib/sam.h>

/* tid1, tid2, pos1, pos2, strand1, strand2, ..., upper-of-pair */
#define TEMPLATE_FIXED_LEN (4 + 4 + 8 + 8 + 1 + 1 + 1)

/* The first problem samtools 1.24 checks for wins: MC, then CB, then MI. */
enum { TEMPLATE_OK, TEMPLATE_NO_MC, TEMPLATE_BAD_MC, TEMPLATE_BAD_CB, TEMPLATE_BAD_MI };

/* The tags the key reads. */
typedef struct {
    const char *mate_cigar;     /* MC's CIGAR text; NULL when there is no placed mate */
    const char *cell;           /* CB's text, or "" */
    const char *molecule;       /* MI's text, or "" */
} template_tags;

int template_key_problem(const bam1_t *b, template_tags *t);

uint8_t *template_key_body(const bam1_t *b, const char *library, uint8_t *p);

#endif
