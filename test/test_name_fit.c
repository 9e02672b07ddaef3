/* test_name_fit.c -- names derived from a user's name, shortened to fit
 * NAME_MAX (util/name_fit.h).
 *
 * The directory is "/" (its limit, read as name_fit() reads it, sets what
 * fits); the end-to-end tests (test/destinations.py, test/stale_outputs.py)
 * check that the names made from it work beside outputs of every long
 * length.  Prints `N passed, M failed` last.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/name_fit.h"
#include "unit_report.h"

#define EXTRA 17    /* "." and ".rocksort.XXXXXX", as for a hidden output */

static size_t name_max;

/* A name of n bytes: `unit` repeated, then `last`. */
static char *make_name(const char *unit, size_t n, const char *last)
{
    char *s = malloc(n + 1);
    size_t u = strlen(unit), l = strlen(last), i = 0;
    for (; i + u <= n - l; i += u) memcpy(s + i, unit, u);
    memset(s + i, 'x', n - l - i);
    memcpy(s + n - l, last, l + 1);
    return s;
}

/* NULL if fit is name's first bytes, NAME_FIT_MARK and 16 hex digits,
 * within what may be added to; else what is wrong. */
static const char *shortened_form(const char *name, const char *fit)
{
    size_t n = strlen(fit);
    if (n + EXTRA > name_max) return "too long still";
    if (n < 17 || fit[n - 17] != NAME_FIT_MARK) return "no mark before the hash";
    for (size_t i = n - 16; i < n; i++)
        if (!isxdigit((unsigned char)fit[i]) || isupper((unsigned char)fit[i]))
            return "the hash is not 16 lowercase hex digits";
    if (strncmp(fit, name, n - 17)) return "not the name's first bytes";
    return NULL;
}

static void test_fitting_name_kept(void)
{
    char *name = make_name("n", name_max - EXTRA, ".bam"), *fit = name_fit("/", name, EXTRA);
    report("name_fit_fitting_name_kept", strcmp(fit, name) ? "a name that fits was changed" : NULL);
    free(name);
    free(fit);
}

static void test_long_names_differ(void)
{
    char *a = make_name("n", name_max, "a.bam"), *b = make_name("n", name_max, "b.bam");
    char *fa = name_fit("/", a, EXTRA), *fb = name_fit("/", b, EXTRA), *again = name_fit("/", a, EXTRA);
    const char *problem = shortened_form(a, fa);
    if (!problem) problem = shortened_form(b, fb);
    if (!problem && !strcmp(fa, fb)) problem = "two names differing at the end give one name";
    if (!problem && strcmp(fa, again)) problem = "one name gives two names";
    report("name_fit_long_names_differ", problem);
    char *all[] = { a, b, fa, fb, again };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* "é" is two bytes: the cut never leaves the first without the second. */
static void test_utf8_kept_whole(void)
{
    const char *problem = NULL;
    for (size_t n = name_max - 3; n <= name_max && !problem; n++) {
        char *name = make_name("\xc3\xa9", n, ".bam"), *fit = name_fit("/", name, EXTRA);
        problem = shortened_form(name, fit);
        size_t kept = strlen(fit) - 17;
        if (!problem && kept % 2) problem = "a two-byte character was cut in two";
        free(name);
        free(fit);
    }
    report("name_fit_utf8_kept_whole", problem);
}

int main(void)
{
    long max = pathconf("/", _PC_NAME_MAX);
    name_max = max > 0 ? (size_t)max : 255;
    test_fitting_name_kept();
    test_long_names_differ();
    test_utf8_kept_whole();
    return report_summary();
}
