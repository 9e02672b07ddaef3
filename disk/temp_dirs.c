/* disk/temp_dirs.c -- see disk/temp_dirs.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include "disk/temp_dirs.h"

/* The default place when no -T is given: $TMPDIR, else /tmp. */
static const char *default_place(void)
{
    const char *env = getenv("TMPDIR");
    return env && *env ? env : "/tmp";
}

int temp_dirs_check(const char *const *places, int n, errmsg *err)
{
    if (n > TEMP_MAX_DIRS)
        return errmsg_set(err, "-T given %d times: at most %d temporary directories", n,
                          TEMP_MAX_DIRS);
    for (int i = 0; n > 1 && i < n; i++) {
        struct stat st;
        if (stat(places[i], &st) != 0 || !S_ISDIR(st.st_mode))
            return errmsg_set(err, "-T '%s' is not a directory: with several -T, each must be "
                              "an existing directory", places[i]);
    }
    return 0;
}

/* The directory itself, or a prefix's parent ("." for a bare name). */
static void holding_dir(const char *place, char *dir, size_t size)
{
    struct stat st;
    snprintf(dir, size, "%s", place);
    if (stat(place, &st) == 0 && S_ISDIR(st.st_mode)) return;
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, size, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
}

/* Whether dir is one already in the set (the same inode). */
static int already_in(const temp_dirs *set, const struct stat *st)
{
    for (int i = 0; i < set->n; i++) {
        struct stat other;
        if (stat(set->dir[i].dir, &other) == 0 && other.st_dev == st->st_dev &&
            other.st_ino == st->st_ino)
            return 1;
    }
    return 0;
}

static void add_place(temp_dirs *set, const char *place)
{
    temp_dir *d = &set->dir[set->n];
    struct stat st;
    struct statvfs vfs;
    memset(d, 0, sizeof *d);
    d->place = place;
    holding_dir(place, d->dir, sizeof d->dir);
    int known = stat(d->dir, &st) == 0;
    if (known && already_in(set, &st)) return;
    d->dev = known ? st.st_dev : (dev_t)-1 - (dev_t)set->n;
    set->n++;
    /* One reading per file system: measured twice, a disk that others
     * write to would give its places unequal shares of one room. */
    for (int i = 0; i < set->n - 1; i++)
        if (set->dir[i].dev == d->dev && set->dir[i].free_known) {
            d->free_known = 1;
            d->free_bytes = set->dir[i].free_bytes;
            return;
        }
    d->free_known = statvfs(d->dir, &vfs) == 0;
    if (d->free_known) d->free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
}

static int places_on(const temp_dirs *set, dev_t dev)
{
    int n = 0;
    for (int i = 0; i < set->n; i++) n += set->dir[i].dev == dev;
    return n;
}

/* A place's room: its file system's free space, shared equally by the
 * set's places on it. */
static uint64_t room_of(const temp_dirs *set, const temp_dir *d)
{
    return d->free_bytes / (uint64_t)places_on(set, d->dev);
}

/* Each file system's room, shared by its places; equal shares when the
 * room of any is unknown.  In KiB: even 16 places of 2^64 bytes each sum
 * to less than 2^59, far from dir_turn's int64 limit. */
static void set_weights(temp_dirs *set)
{
    int known;
    temp_dirs_free(set, &known);
    for (int i = 0; i < set->n; i++) {
        temp_dir *d = &set->dir[i];
        d->unused = 0;
        d->weight = known ? room_of(set, d) >> 10 : 1;
        if (d->weight == 0) d->weight = 1;
    }
}

void temp_dirs_measure(temp_dirs *set, const char *const *places, int n)
{
    const char *fallback = default_place();
    if (n <= 0) {
        places = &fallback;
        n = 1;
    }
    set->n = 0;
    for (int i = 0; i < n && i < TEMP_MAX_DIRS; i++) add_place(set, places[i]);
    set_weights(set);
}

uint64_t temp_dirs_free(const temp_dirs *set, int *known)
{
    uint64_t sum = 0;
    *known = 1;
    for (int i = 0; i < set->n; i++) {
        int first = !set->dir[i].unused;
        for (int j = 0; j < i; j++)
            first &= set->dir[j].unused || set->dir[j].dev != set->dir[i].dev;
        if (!set->dir[i].free_known) *known = 0;
        else if (first) sum += set->dir[i].free_bytes;
    }
    return sum;
}

void temp_dirs_keep(temp_dirs *set, int n)
{
    while (set->n > n && set->n > 1) {
        int smallest = 0;
        for (int i = 1; i < set->n; i++)
            if (set->dir[i].weight < set->dir[smallest].weight) smallest = i;
        memmove(&set->dir[smallest], &set->dir[smallest + 1],
                (size_t)(set->n - smallest - 1) * sizeof set->dir[0]);
        set->n--;
    }
    set_weights(set);
}

/* Smooth weighted dealing gives each place within one run of its share:
 * with weights of room beyond one run, a place gets fewer runs than
 * room / run_bytes whenever the runs fit in all the rooms beyond one run. */
int temp_dirs_fit_runs(temp_dirs *set, uint64_t run_bytes)
{
    int known, fit = 0;
    temp_dirs_free(set, &known);
    if (set->n < 2 || !known || run_bytes == 0) return 0;
    for (int i = 0; i < set->n; i++) fit += room_of(set, &set->dir[i]) >= run_bytes;
    if (fit == 0) return 0;
    for (int i = 0; i < set->n; i++) {
        temp_dir *d = &set->dir[i];
        uint64_t room = room_of(set, d);
        d->unused = room < run_bytes;
        d->weight = d->unused ? 0 : (room - run_bytes) >> 10;
        if (!d->unused && d->weight == 0) d->weight = 1;
    }
    return set->n - fit;
}

void temp_dirs_turn_init(dir_turn *t, const uint64_t *weights, int n)
{
    memset(t, 0, sizeof *t);
    t->n = n < 1 ? 1 : n > TEMP_MAX_DIRS ? TEMP_MAX_DIRS : n;
    for (int i = 0; i < t->n; i++)
        t->weight[i] = weights && weights[i] ? (int64_t)weights[i] : 1;
}

/* Each place gains its weight; the one furthest ahead of its share takes
 * the run and gives back the total. */
int temp_dirs_turn_next(dir_turn *t)
{
    int64_t total = 0;
    int best = 0;
    for (int i = 0; i < t->n; i++) {
        t->current[i] += t->weight[i];
        total += t->weight[i];
        if (t->current[i] > t->current[best]) best = i;
    }
    t->current[best] -= total;
    return best;
}
