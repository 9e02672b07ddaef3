/* cli/legacy_form.h -- is a command line the 2014 rocksort's `IN OUT.prefix`?
 *
 * Contract: legacy_form() looks at the arguments before getopt does and
 * returns 1 for the legacy form: two non-option arguments, IN and
 * OUT.prefix, with -o a bare flag (write to standard output), and no -b
 * (a list of inputs: then every argument is an input).  `-o A B`
 * fits both forms: it is legacy only when A can be read, B cannot, and B
 * looks like a prefix, not an output file (.bam, .sam, .cram, .sam.gz).
 * Options are skipped with their arguments: long ones as long_opts says,
 * short ones when short_with_arg lists them, -o as each form has it.
 */
#ifndef LEGACY_FORM_H
#define LEGACY_FORM_H

#include <getopt.h>

int legacy_form(int argc, char **argv, const struct option *long_opts,
                const char *short_with_arg);

#endif
