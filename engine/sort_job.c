/* engine/sort_job.c -- see engine/sort_job.h: the engine's one voice for failures. */
#include <stdarg.h>
#include <stdio.h>
#include "engine/sort_job.h"
#include "util/cleanup.h"

static void say(const char *kind, const char *fmt, va_list ap)
{
    fprintf(stderr, "samtools rocksort: %s", kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int sort_job_fail(const char *fmt, ...)
{
    if (cleanup_signal_arrived()) return -1;
    va_list ap;
    va_start(ap, fmt);
    say("", fmt, ap);
    va_end(ap);
    return -1;
}

void sort_job_warn(const char *fmt, ...)
{
    if (cleanup_signal_arrived()) return;
    va_list ap;
    va_start(ap, fmt);
    say("warning: ", fmt, ap);
    va_end(ap);
}
