/* util/errmsg.h -- how the modules below the engine say why they failed.
 *
 * Contract: a function that can fail takes an `errmsg *` as its last
 * argument and returns a negative value on failure, with a one-line cause
 * in err->msg: what failed and why, naming the file where there is one
 * ("cannot create '/tmp/x': No space left on device").  On success it
 * leaves err alone.  A caller that knows more may put context in front of
 * the cause (errmsg_prefix()).  Nothing below the engine prints: the engine
 * (engine/sort_job.h) prints the cause once, in the one line users see.
 *
 * Why a fixed buffer rather than a malloc'd string: setting a cause never
 * fails, not even out of memory, and each thread can keep its own without
 * a lock.  This is htslib's "return < 0, the cause is available" with the
 * cause carried by the caller instead of a global.
 */
#ifndef ERRMSG_H
#define ERRMSG_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ERRMSG_MAX 1024

typedef struct {
    char msg[ERRMSG_MAX];
} errmsg;

/* Sets the cause; returns -1, so that `return errmsg_set(err, ...);` fails. */
static inline int errmsg_set(errmsg *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline int errmsg_set(errmsg *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* ": cause" after the first `used` bytes of err's text, cut to fit as
 * snprintf would cut it (copied by hand: GCC's -Wformat-truncation flags
 * the intended cut of a formatted "%s"). */
static inline void errmsg_append_cause(errmsg *err, size_t used, const char *cause)
{
    static const char sep[] = ": ";
    char *end = err->msg + used;
    size_t room = sizeof err->msg - used - 1;
    size_t take_sep = room < sizeof sep - 1 ? room : sizeof sep - 1;
    memcpy(end, sep, take_sep);
    size_t len = strnlen(cause, ERRMSG_MAX - 1), left = room - take_sep;
    size_t take = len < left ? len : left;
    memcpy(end + take_sep, cause, take);
    end[take_sep + take] = '\0';
}

/* Puts context before the cause already set: "context: cause".  Returns -1. */
static inline int errmsg_prefix(errmsg *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline int errmsg_prefix(errmsg *err, const char *fmt, ...)
{
    char cause[ERRMSG_MAX];
    memcpy(cause, err->msg, sizeof cause);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof err->msg) errmsg_append_cause(err, (size_t)n, cause);
    return -1;
}

/* Copies a cause from another errmsg (a thread's, say) and returns -1. */
static inline int errmsg_copy(errmsg *dst, const errmsg *src)
{
    if (dst != src) memcpy(dst->msg, src->msg, sizeof dst->msg);
    return -1;
}

#endif
