/* unit_report.h -- how the C unit tests report, for test/run_tests.py.
 *
 * Contract: report() prints "PASS name" when problem is NULL, else
 * "FAIL name: problem"; report_summary() prints the last line,
 * "N passed, M failed", and returns the program's exit status.
 */
#ifndef UNIT_REPORT_H
#define UNIT_REPORT_H

#include <stdio.h>

static int unit_passed, unit_failed;

static void report(const char *name, const char *problem)
{
    if (problem) {
        unit_failed++;
        printf("FAIL %s: %s\n", name, problem);
    } else {
        unit_passed++;
        printf("PASS %s\n", name);
    }
}

static int report_summary(void)
{
    printf("%d passed, %d failed\n", unit_passed, unit_failed);
    return unit_failed != 0;
}

#endif
