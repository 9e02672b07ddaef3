/* store/temp_space.h -- how the sorted runs are stored, and whether they fit.
 *
 * Contract: temp_space_plan() runs before any record is read.  It estimates
 * the bytes the sort will hold under its temp directory at the peak (the
 * runs, plus what background merges write before they delete their
 * inputs), for uncompressed and for compact runs: from the input files'
 * sizes (all of them: one that is a stream leaves -s to estimate) and, for
 * BGZF, the expansion of each one's blocks that end within its first
 * TEMP_SAMPLE_BYTES (read by htslib's BGZF reader, which also reads the
 * block that crosses that mark; nothing of a pipe), else from -s.
 * It compares that with the space free in the directories it is given (a
 * list: the -T directories, disk/temp_dirs.h), all of them together, as the
 * runs are dealt to them in proportion to their room; among several, one
 * with room for less than one run (of the chosen format, from the batch
 * size) gets none and its room does not count.  The runs' format
 * is the one --temp-compression forces, else compact (records in columns,
 * codec/group_codec.h), with or without an estimate, except at output levels 0
 * and 1 on a fast disk with room to spare (TEMP_ROOM_FOR_NONE times the
 * uncompressed runs' peak, and temp_space_fast_disk_mb_s() or more by
 * disk/disk_speed.h): there uncompressed runs, which spare the load the
 * encoding, are the faster choice.  A sort that resumes keeps the format
 * of the state it takes back.  When the
 * chosen format will not fit, it returns -1 and a one-line cause
 * naming each directory and its free space, the bytes needed, and
 * suggesting the option that names them (dir_option: -T, or --resume,
 * whose DIR the caller passes as the one directory since every run goes
 * there); it creates nothing.  The estimate is a guess on the safe side: a sort that
 * passes can still fill the disk, and fails then as before.
 */
#ifndef TEMP_SPACE_H
#define TEMP_SPACE_H

#include <stdint.h>
#include <stdio.h>
#include "store/store_types.h"
#include "disk/temp_dirs.h"

typedef enum {
    TEMP_AUTO = 0,      /* the default: compact */
    TEMP_COMPACT,       /* records in columns (codec/group_codec.h), encoded on helper threads */
    TEMP_NONE,
    TEMP_LZ4,
    TEMP_SNAPPY,
    TEMP_ZSTD           /* RocksDB's default zstd level */
} temp_mode;

/* The sort holds every batch in memory, spilling nothing, when its data
 * fits in the memory budget with this slack (plan_holding(), engine/sort_plan.c);
 * then the runs need no temp space. */
#define TEMP_HOLD_SLACK 1.1

/* Uncompressed runs by default at levels 0 and 1: the room and the disk
 * speed they need (bench/RESULTS.md: faster on a fast disk, slower on an
 * HDD-like one).  The speed is per -@ thread, taken as the cores the sort
 * has: the encoding they spare is CPU that fewer threads pay for in more
 * time, so fewer threads break even on a slower disk.  It is at least
 * TEMP_FAST_DISK_MIN_THREADS threads' worth, above a hard disk's sequential
 * writes (the probe cannot see its seeks), and at most TEMP_FAST_DISK_MB_S. */
#define TEMP_ROOM_FOR_NONE 4
#define TEMP_FAST_DISK_MB_S_PER_THREAD 150
#define TEMP_FAST_DISK_MIN_THREADS 2
#define TEMP_FAST_DISK_MB_S 500

/* The start of a regular input file whose BGZF blocks measure its expansion. */
#define TEMP_SAMPLE_BYTES (4u << 20)

typedef struct {
    temp_mode mode;             /* --temp-compression */
    const char *const *in_fns;  /* the inputs; "-": standard input */
    int n_in;
    const char *const *dirs;    /* where the runs may go (-T, or --resume's DIR); none: $TMPDIR or /tmp */
    int n_dirs;
    int max_dirs;               /* keep at most this many, those with most room; 0: all */
    const char *dir_option;     /* the option that names them, for a refusal: "-T" */
    uint64_t size_hint;         /* -s, 0 if none */
    uint64_t memory;            /* the sort's memory budget */
    uint64_t run_bytes;         /* bytes of one run (a batch) */
    int threads;                /* compression helper threads */
    int out_level;              /* the output's deflate level (0: uncompressed) */
    int state_found;            /* --resume finds a state (state_dir_peek()): */
    store_codec state_codec;    /* its runs' format, kept when mode is TEMP_AUTO, */
    uint64_t state_bytes;       /* and its bytes, counted as free: they are the sort's */
} temp_request;

typedef struct {
    temp_mode mode;             /* the runs' format: never TEMP_AUTO */
    store_codec codec;          /* the store's for it; a resumed state's own where it is
                                   of that mode */
    int threads;                /* compression helper threads */
    temp_dirs dirs;             /* the directories the runs go to, measured */
    int dirs_dropped;           /* directories left out for max_dirs */
    int dirs_unused;            /* of dirs, those too small for one run (dir->unused) */
    uint64_t run_estimate;      /* bytes of one run in the chosen format */
    int free_known;             /* statvfs worked for all */
    uint64_t free_bytes;        /* in all of them together */
    const char *source;         /* where the estimate comes from; NULL: none */
    uint64_t data_bytes;        /* estimated bytes of the runs, uncompressed */
    uint64_t need_none, need_compact;   /* estimated peaks; 0 if no estimate */
    const char *why;            /* the reason for the mode, for -v ("as ...") */
    double disk_mb_s;           /* the slowest directory's direct writes, when the mode
                                   hung on them: MB/s; -1: they could not tell; 0: not asked */
} temp_plan;

/* The direct writes, in MB/s, at which uncompressed runs are the faster
 * choice with this many -@ threads: TEMP_FAST_DISK_MB_S_PER_THREAD each,
 * counting at least TEMP_FAST_DISK_MIN_THREADS, at most TEMP_FAST_DISK_MB_S. */
int temp_space_fast_disk_mb_s(int threads);

/* --temp-compression's names: auto, compact, none, lz4, snappy, zstd.
 * Returns a temp_mode, or -1 if unknown. */
int temp_space_parse_mode(const char *name);

/* Returns 0 with *plan filled, or -1 with the cause in err (see above). */
int temp_space_plan(const temp_request *rq, temp_plan *plan, errmsg *err);

/* The directories that get no runs (room for less than one, among several
 * that have room: temp_dirs_fit_runs()), as a sentence naming each with its
 * free space, in buf; returns how many, 0 (buf untouched) if none. */
int temp_space_left_out(const temp_plan *plan, char *buf, size_t n);

/* Sets the store's codec and helper threads for plan->codec. */
void temp_space_store_options(const temp_plan *plan, store_options *so);

/* One -v line: the format, why, the estimates and the free space. */
void temp_space_report(const temp_plan *plan, FILE *fp);

#endif
