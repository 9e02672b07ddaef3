/* util/human_number.h -- counts, sizes and rates as people read them.
 *
 * Contract: human_number() writes v, with its unit, into buf (n bytes,
 * truncated as snprintf does) in one of the two styles users see, which
 * stay as they are since scripts and tests read them:
 *   HUMAN_STEPS: steps of 1000 (k, M, G, T), one decimal once scaled,
 *                whole below 1000: 850, 12.3k, 1.2 GB, 45.6 MB/s
 *                (the progress lines);
 *   HUMAN_MB_GB: megabytes below 1e9, else gigabytes, whole from 10 up:
 *                0.4 MB, 4.2 MB, 120 MB, 1.5 GB, 83 GB (temp space: the
 *                -v line and the refusals).
 * The unit follows after a space ("B" -> "1.2 GB"); an empty unit takes no
 * space ("12.3k").
 */
#ifndef HUMAN_NUMBER_H
#define HUMAN_NUMBER_H

#include <stddef.h>

typedef enum { HUMAN_STEPS, HUMAN_MB_GB } human_style;

void human_number(char *buf, size_t n, double v, const char *unit, human_style style);

#endif
