/* util/human_number.c -- see util/human_number.h. */
#include <stdio.h>
#include "util/human_number.h"

void human_number(char *buf, size_t n, double v, const char *unit, human_style style)
{
    static const char *const prefix[] = { "", "k", "M", "G", "T" };
    int i = 0, decimals;
    if (style == HUMAN_MB_GB) {
        i = v >= 1e9 ? 3 : 2;
        v /= i == 3 ? 1e9 : 1e6;
        decimals = v < 10;
    } else {
        while (v >= 1000 && i < 4) {
            v /= 1000;
            i++;
        }
        decimals = i > 0;
    }
    snprintf(buf, n, "%.*f%s%s%s", decimals, v, *unit ? " " : "", prefix[i], unit);
}
