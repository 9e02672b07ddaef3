/* disk/temp_dirs.h -- the temporary directories: where the runs go, and in what shares.
 *
 * Contract: temp_dirs_measure() takes the places the runs may go (the -T
 * values, else $TMPDIR or /tmp) and measures each: the directory whose file
 * system holds it (a lone place may be a prefix "dir/name", as samtools
 * sort's -T), the space free on that file system (statvfs) and its weight,
 * the share of the runs it gets.  A file system's free space is counted
 * once, however many places lie on it: its places share it equally, so
 * runs dealt by weight fill every file system in proportion to its room,
 * and temp_dirs_free() is what all of them can hold together.  A directory
 * named twice is kept once.  temp_dirs_fit_runs() leaves out the places
 * with less room than one run (a full disk among several would fail the
 * sort at its first run, or at the database's open) and weights the rest
 * by their room beyond one run: a place is then never dealt more runs than
 * it holds while all of them together hold the runs.  temp_dirs_check() refuses a list of several
 * places in which one is not a directory (a prefix only makes sense
 * alone).  temp_dirs_keep() keeps the n places with the most room.
 *
 * A dir_turn deals runs to the places in proportion to their weights and
 * in turn (smooth weighted round robin): with weights 1:1 it deals A B A
 * B, with 2:1 A B A A B A, so every disk gets work all along rather than
 * one disk's share in a block.  Pure arithmetic.
 */
#ifndef TEMP_DIRS_H
#define TEMP_DIRS_H

#include <stdint.h>
#include <sys/types.h>
#include "util/errmsg.h"

/* The most -T directories one sort spreads its runs over. */
#define TEMP_MAX_DIRS 16
#define TEMP_PATH_MAX 4096

typedef struct {
    const char *place;          /* as given: a directory, or a lone prefix */
    char dir[TEMP_PATH_MAX];    /* the directory whose file system holds the runs */
    int free_known;             /* statvfs worked */
    uint64_t free_bytes;        /* free on that file system */
    uint64_t weight;            /* its share of the runs, in KiB of room; 0: unused */
    int unused;                 /* too little room for one run: no runs go there */
    dev_t dev;                  /* its file system */
} temp_dir;

typedef struct {
    int n;
    temp_dir dir[TEMP_MAX_DIRS];
} temp_dirs;

/* 0, or -1 with a one-line cause in err: several places of which one is
 * not a directory, or more than TEMP_MAX_DIRS. */
int temp_dirs_check(const char *const *places, int n, errmsg *err);

/* Fills *set from n >= 1 places (n == 0: the default). */
void temp_dirs_measure(temp_dirs *set, const char *const *places, int n);

/* Free bytes on all the set's file systems together (those of unused
 * places left out); *known is 0 if statvfs failed for any of them. */
uint64_t temp_dirs_free(const temp_dirs *set, int *known);

/* Keeps the n places with the largest weight, in their given order. */
void temp_dirs_keep(temp_dirs *set, int n);

/* With several places whose room is known, marks unused those with room
 * for less than one run of run_bytes, unless that is all of them, and
 * weights the others by their room beyond one run.  Returns the places
 * left unused. */
int temp_dirs_fit_runs(temp_dirs *set, uint64_t run_bytes);

typedef struct {
    int n;
    int64_t weight[TEMP_MAX_DIRS], current[TEMP_MAX_DIRS];
} dir_turn;

/* weights: n of them, each > 0 (a zero counts as 1). */
void temp_dirs_turn_init(dir_turn *t, const uint64_t *weights, int n);
/* The place the next run goes to, 0..n-1. */
int temp_dirs_turn_next(dir_turn *t);

#endif
