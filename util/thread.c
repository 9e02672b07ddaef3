/* util/thread.c -- see util/thread.h.
 *
 * A live thread's CPU time comes from /proc/self/task/TID/schedstat (the
 * scheduler's nanoseconds on a CPU, what CLOCK_THREAD_CPUTIME_ID reads),
 * or from its stat file's clock ticks where the kernel has no schedstat.
 * A thread that ends leaves its own CLOCK_THREAD_CPUTIME_ID reading: its
 * task is gone by the next note.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "util/thread.h"
#include "util/grow_array.h"

static void thread_set_name(const char *name)
{
    pthread_setname_np(pthread_self(), name);
}

void thread_name_push(thread_name_scope *s, const char *name)
{
    s->ok = pthread_getname_np(pthread_self(), s->saved, sizeof s->saved) == 0;
    if (s->ok) thread_set_name(name);
}

void thread_name_pop(const thread_name_scope *s)
{
    if (s->ok) thread_set_name(s->saved);
}

/* ---- threads that ended ---- */

static atomic_int enabled;
static pthread_mutex_t ended_lock = PTHREAD_MUTEX_INITIALIZER;
static thread_time *ended;
static size_t n_ended, ended_cap;

void thread_cpu_enable(void) { atomic_store(&enabled, 1); }

static double timespec_seconds(const struct timespec *t)
{
    return (double)t->tv_sec + (double)t->tv_nsec * 1e-9;
}

void thread_cpu_exiting(void)
{
    if (!atomic_load(&enabled)) return;
    struct timespec t;
    thread_time me = { .tid = gettid() };
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return;
    me.cpu = timespec_seconds(&t);
    if (pthread_getname_np(pthread_self(), me.name, sizeof me.name) != 0) me.name[0] = '\0';
    pthread_mutex_lock(&ended_lock);
    /* Best effort: out of memory, the thread counts as unattributed. */
    if (grow_array((void **)&ended, &ended_cap, n_ended + 1, sizeof *ended) == 0)
        ended[n_ended++] = me;
    pthread_mutex_unlock(&ended_lock);
}

/* ---- live threads ---- */

static int read_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n ? 0 : -1;
}

/* tid's name and CPU seconds; -1 if it has ended meanwhile. */
static int read_task(pid_t tid, thread_time *out)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    if (read_file(path, buf, sizeof buf) < 0) return -1;
    /* "tid (comm) state ...": comm may hold spaces and parentheses. */
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (!open || !close || close < open) return -1;
    size_t len = (size_t)(close - open - 1);
    if (len >= sizeof out->name) len = sizeof out->name - 1;
    memcpy(out->name, open + 1, len);
    out->name[len] = '\0';
    out->tid = tid;
    unsigned long long ns, utime, stime;
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)tid);
    char sched[128];
    if (read_file(path, sched, sizeof sched) == 0 && sscanf(sched, "%llu", &ns) == 1) {
        out->cpu = (double)ns * 1e-9;
        return 0;
    }
    /* utime and stime: fields 14 and 15, the 12th and 13th after comm. */
    if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &utime, &stime) != 2)
        return -1;
    out->cpu = (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
    return 0;
}

static thread_time *find(const thread_times *s, pid_t tid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->t[i].tid == tid) return &s->t[i];
    return NULL;
}

/* Adds t, or keeps the larger reading of a thread noted twice (ended,
 * but its task not yet gone). */
static int note(thread_times *s, size_t *cap, const thread_time *t)
{
    thread_time *old = find(s, t->tid);
    if (old) {
        if (t->cpu > old->cpu) *old = *t;
        return 0;
    }
    if (grow_array((void **)&s->t, cap, s->n + 1, sizeof *s->t) < 0) return -1;
    s->t[s->n++] = *t;
    return 0;
}

static int take_live(thread_times *s, size_t *cap)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;   /* no /proc: every thread unattributed */
    int ret = 0;
    for (struct dirent *e; ret == 0 && (e = readdir(d));) {
        thread_time t;
        if (e->d_name[0] != '.' && read_task((pid_t)atoi(e->d_name), &t) == 0)
            ret = note(s, cap, &t);
    }
    closedir(d);
    return ret;
}

int thread_times_take(thread_times *s)
{
    size_t cap = 0;
    struct rusage ru;
    memset(s, 0, sizeof *s);
    getrusage(RUSAGE_SELF, &ru);
    s->process_cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
                     (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    int ret = take_live(s, &cap);
    pthread_mutex_lock(&ended_lock);
    for (size_t i = 0; ret == 0 && i < n_ended; i++) ret = note(s, &cap, &ended[i]);
    pthread_mutex_unlock(&ended_lock);
    if (ret < 0) thread_times_free(s);
    return ret;
}

void thread_times_free(thread_times *s)
{
    free(s->t);
    memset(s, 0, sizeof *s);
}

/* ---- a phase ---- */

/* Less CPU than this in a phase: the thread only waited through it. */
#define IDLE_SECONDS 0.0005

static const char *role_of(const thread_time *t)
{
    if (t->tid == getpid()) return "main";
    size_t pre = strlen(THREAD_PREFIX);
    return strncmp(t->name, THREAD_PREFIX, pre) == 0 ? t->name + pre : t->name;
}

static role_time *role_entry(phase_times *p, const char *role)
{
    for (int i = 0; i < p->n_roles; i++)
        if (strcmp(p->roles[i].role, role) == 0) return &p->roles[i];
    role_time *r = &p->roles[p->n_roles++];
    memset(r, 0, sizeof *r);
    snprintf(r->role, sizeof r->role, "%s", role);
    return r;
}

static int by_cpu(const void *a, const void *b)
{
    double x = ((const role_time *)a)->cpu, y = ((const role_time *)b)->cpu;
    return (x < y) - (x > y);
}

static void add_thread(phase_times *p, const thread_time *t, double cpu)
{
    role_time *r = role_entry(p, role_of(t));
    r->threads++;
    r->cpu += cpu;
    if (cpu > r->busiest) r->busiest = cpu;
    if (cpu > p->longest) {
        p->longest = cpu;
        snprintf(p->longest_role, sizeof p->longest_role, "%s", r->role);
    }
}

int thread_phase_times(const thread_times *from, const thread_times *to, phase_times *out)
{
    memset(out, 0, sizeof *out);
    out->roles = calloc(to->n ? to->n : 1, sizeof *out->roles);
    if (!out->roles) return -1;
    double seen = 0;
    for (size_t i = 0; i < to->n; i++) {
        const thread_time *before = find(from, to->t[i].tid);
        double cpu = to->t[i].cpu - (before ? before->cpu : 0);
        if (cpu < IDLE_SECONDS) continue;   /* not a worker of this phase */
        add_thread(out, &to->t[i], cpu);
        seen += cpu;
    }
    qsort(out->roles, (size_t)out->n_roles, sizeof *out->roles, by_cpu);
    out->cpu = to->process_cpu - from->process_cpu;
    out->unattributed = out->cpu > seen ? out->cpu - seen : 0;
    if (out->cpu < seen) out->cpu = seen;
    return 0;
}

void thread_phase_times_free(phase_times *p)
{
    free(p->roles);
    memset(p, 0, sizeof *p);
}
