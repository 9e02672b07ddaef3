/* util/name_fit.c -- see util/name_fit.h. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/mix64.h"
#include "util/name_fit.h"

#define HASH_DIGITS 16
#define FALLBACK_NAME_MAX 255   /* Linux's NAME_MAX, for a dir pathconf() cannot ask */

static size_t name_max_in(const char *dir)
{
    long max = pathconf(dir, _PC_NAME_MAX);
    return max > 0 ? (size_t)max : FALLBACK_NAME_MAX;
}

char *name_fit(const char *dir, const char *name, size_t extra)
{
    size_t len = strlen(name), max = name_max_in(dir);
    size_t tail = 1 + HASH_DIGITS;
    if (len + extra <= max || max < extra + tail) return strdup(name);
    size_t keep = max - extra - tail;
    /* A UTF-8 continuation byte (10xxxxxx) would start a character cut in two. */
    while (keep > 0 && ((unsigned char)name[keep] & 0xc0) == 0x80) keep--;
    char *fit = malloc(keep + tail + 1);
    if (!fit) return NULL;
    memcpy(fit, name, keep);
    snprintf(fit + keep, tail + 1, "%c%016llx", NAME_FIT_MARK,
             (unsigned long long)mix64_bytes(0, name, len));
    return fit;
}
