/* util/progress.c -- see util/progress.h. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "util/progress.h"
#include "util/clock_util.h"
#include "util/human_number.h"
#include "util/thread.h"
#include "util/worker.h"

#define TTY_TICK 1.0
/* Seconds between plain lines when the caller gives no interval. */
#define DEFAULT_INTERVAL 30
/* Past 100 hours an estimate says nothing: it shows as "?". */
#define ETA_MAX_SECONDS 360000

struct progress {
    _Atomic int phase;
    _Atomic uint64_t records_in, bytes_in, temp_bytes, records_out;
    _Atomic int permille;
    int tty;
    double interval, t_start, t_phase;
    int shown_phase;
    worker w;           /* the reporter; w.lock guards t_phase */
};

static void eta(char *buf, size_t n, double seconds)
{
    if (seconds < 0 || seconds > ETA_MAX_SECONDS) { snprintf(buf, n, "?"); return; }
    int s = (int)(seconds + 0.5);
    snprintf(buf, n, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
}

static void describe(progress *p, char *line, size_t n)
{
    double elapsed = now_seconds() - p->t_phase;
    if (elapsed <= 0) elapsed = 1e-9;
    uint64_t rin = atomic_load_explicit(&p->records_in, memory_order_relaxed);
    uint64_t bin = atomic_load_explicit(&p->bytes_in, memory_order_relaxed);
    uint64_t tmp = atomic_load_explicit(&p->temp_bytes, memory_order_relaxed);
    uint64_t rout = atomic_load_explicit(&p->records_out, memory_order_relaxed);
    int permille = atomic_load_explicit(&p->permille, memory_order_relaxed);
    char a[32], b[32], c[32], d[32], e[32];
    human_number(a, sizeof a, (double)rin, "", HUMAN_STEPS);
    human_number(b, sizeof b, (double)bin, "B", HUMAN_STEPS);
    human_number(c, sizeof c, (double)tmp, "B", HUMAN_STEPS);
    switch (atomic_load(&p->phase)) {
    case PHASE_LOAD: {
        char pct[16] = "", until[48] = "";
        human_number(d, sizeof d, bin / elapsed, "B/s", HUMAN_STEPS);
        if (permille >= 0) snprintf(pct, sizeof pct, " (%d%%)", permille / 10);
        if (permille > 0) {
            eta(e, sizeof e, elapsed * (1000 - permille) / permille);
            snprintf(until, sizeof until, ", ETA %s", e);
        }
        snprintf(line, n, "[rocksort] load: %s records, %s read%s, %s, temp %s%s",
                 a, b, pct, d, c, until);
        break;
    }
    case PHASE_SETTLE:
        snprintf(line, n, "[rocksort] merging sorted runs: %s records, temp %s", a, c);
        break;
    case PHASE_READOUT:
        human_number(d, sizeof d, (double)rout, "", HUMAN_STEPS);
        human_number(b, sizeof b, rout / elapsed, "rec/s", HUMAN_STEPS);
        eta(e, sizeof e, rout ? elapsed * (double)(rin - rout) / (double)rout : -1);
        snprintf(line, n, "[rocksort] readout: %s of %s records (%.0f%%), %s, ETA %s",
                 d, a, rin ? 100.0 * (double)rout / (double)rin : 100.0, b, e);
        break;
    default:
        eta(e, sizeof e, now_seconds() - p->t_start);
        snprintf(line, n, "[rocksort] done: %s records sorted in %s, temp %s", a, e, c);
    }
}

static void show(progress *p, int final)
{
    char line[256];
    describe(p, line, sizeof line);
    if (p->tty)
        fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
    else
        fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

static void *reporter(void *arg)
{
    progress *p = arg;
    double tick = p->tty ? TTY_TICK : p->interval;
    pthread_mutex_lock(&p->w.lock);
    while (!p->w.stop) {
        struct timespec until = deadline_after(tick);
        pthread_cond_timedwait(&p->w.changed, &p->w.lock, &until);
        if (!p->w.stop) show(p, 0);
    }
    pthread_mutex_unlock(&p->w.lock);
    thread_cpu_exiting();
    return NULL;
}

progress *progress_start(int forced, double interval)
{
    int tty = isatty(STDERR_FILENO);
    if (!forced && !tty) return NULL;
    progress *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->tty = tty;
    p->interval = interval > 0 ? interval : DEFAULT_INTERVAL;
    p->t_start = p->t_phase = now_seconds();
    atomic_store(&p->permille, -1);
    worker_init(&p->w);
    if (worker_start(&p->w, THREAD_PROGRESS, reporter, p) < 0) {
        worker_free(&p->w);
        free(p);
        return NULL;
    }
    return p;
}

void progress_set_phase(progress *p, progress_phase phase)
{
    if (!p) return;
    pthread_mutex_lock(&p->w.lock);     /* the reporter reads t_phase under it */
    p->t_phase = now_seconds();
    atomic_store(&p->phase, (int)phase);
    pthread_mutex_unlock(&p->w.lock);
}

void progress_set_read(progress *p, uint64_t records, uint64_t bytes, int permille)
{
    if (!p) return;
    atomic_store_explicit(&p->records_in, records, memory_order_relaxed);
    atomic_store_explicit(&p->bytes_in, bytes, memory_order_relaxed);
    atomic_store_explicit(&p->permille, permille, memory_order_relaxed);
}

void progress_set_temp(progress *p, uint64_t bytes)
{
    if (p) atomic_store_explicit(&p->temp_bytes, bytes, memory_order_relaxed);
}

void progress_set_written(progress *p, uint64_t records)
{
    if (p) atomic_store_explicit(&p->records_out, records, memory_order_relaxed);
}

void progress_stop(progress *p, int succeeded)
{
    if (!p) return;
    worker_stop(&p->w);
    if (succeeded) {
        atomic_store(&p->phase, PHASE_DONE);
        show(p, 1);
    } else if (p->tty) {
        fputs("\r\033[K", stderr);  /* the error line replaces ours */
    }
    worker_free(&p->w);
    free(p);
}
