/* util/thread.h -- threads named by their role, and the CPU time each spends.
 *
 * Contract: every thread rocksort starts carries a name that says its role
 * (THREAD_* below), which `top -H`, `perf` and /proc/PID/task/TID/comm
 * show; threads that libraries start for us (htslib's pools and BGZF I/O
 * threads) take the name of the thread that creates them, so the creator
 * wears the role's name meanwhile (thread_name_push(), thread_name_pop()).
 * The main thread keeps the program's name.
 *
 * Accounting, off unless thread_cpu_enable() was called: thread_times_take()
 * notes every thread's CPU time (user + system) so far, the live ones from
 * /proc/self/task and those that have ended from what they left with
 * thread_cpu_exiting(), which each thread of ours calls as it ends.
 * thread_phase_times() turns two such notes into one phase's figures: per
 * role the threads, their CPU and the busiest one; the longest single
 * thread; and the process's CPU that no thread accounts for (threads that
 * ended unnoted).  Roles are thread names without the "rocksort-" prefix;
 * the main thread is "main".  Functions that allocate return -1 when out
 * of memory.
 */
#ifndef THREAD_H
#define THREAD_H

#include <stddef.h>
#include <sys/types.h>

/* Linux's names hold 15 characters. */
#define THREAD_NAME_MAX 16
#define THREAD_PREFIX "rocksort-"
#define THREAD_SPILL THREAD_PREFIX "spill"      /* sorts batches, writes runs */
#define THREAD_POOL THREAD_PREFIX "pool"        /* -@: (de)compresses BGZF, decodes groups */
#define THREAD_ENCODE THREAD_PREFIX "enc"       /* encodes compact runs' groups */
#define THREAD_READ THREAD_PREFIX "read"        /* reads runs back (one per part and piece) */
#define THREAD_MERGE THREAD_PREFIX "merge"      /* merges and compresses pieces of the output */
#define THREAD_INPUT THREAD_PREFIX "in"         /* BGZF's reader of the input */
#define THREAD_OUTPUT THREAD_PREFIX "out"       /* BGZF's writer of the output */
#define THREAD_PROGRESS THREAD_PREFIX "prog"    /* the progress line */
#define THREAD_SIGNALS THREAD_PREFIX "signal"   /* removes temp data on a fatal signal */
#define THREAD_TRIM THREAD_PREFIX "trim"        /* gives free heap memory back (util/heap_trim.h) */
#define THREAD_STORE THREAD_PREFIX "db"         /* RocksDB's own, but its named merges */

/* The calling thread, named `name` until thread_name_pop(). */
typedef struct {
    char saved[THREAD_NAME_MAX];
    int ok;
} thread_name_scope;
void thread_name_push(thread_name_scope *s, const char *name);
void thread_name_pop(const thread_name_scope *s);

void thread_cpu_enable(void);
void thread_cpu_exiting(void);

typedef struct {
    pid_t tid;
    char name[THREAD_NAME_MAX];
    double cpu;             /* seconds */
} thread_time;

typedef struct {
    thread_time *t;
    size_t n;
    double process_cpu;     /* the whole process's, getrusage() */
} thread_times;

int thread_times_take(thread_times *s);
void thread_times_free(thread_times *s);

typedef struct {
    char role[THREAD_NAME_MAX];
    int threads;
    double cpu, busiest;
} role_time;

typedef struct {
    role_time *roles;       /* by CPU, most first */
    int n_roles;
    double cpu;             /* the process's, in the phase */
    double unattributed;    /* of which no noted thread's */
    double longest;         /* the busiest single thread's */
    char longest_role[THREAD_NAME_MAX];
} phase_times;

int thread_phase_times(const thread_times *from, const thread_times *to, phase_times *out);
void thread_phase_times_free(phase_times *p);

#endif
