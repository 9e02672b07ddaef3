/* test_temp_dirs.c -- several temp directories: the turn that deals runs to
 * them, their free space counted once per file system, the refusal that
 * names each, and a prefix refused among several.
 *
 * Directories are made under $TMPDIR (or /tmp): two on one file system, so
 * the free space is a real one.  Prints `N passed, M failed` last.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "disk/temp_dirs.h"
#include "store/temp_space.h"
#include "scratch_dir.h"
#include "unit_report.h"

static char base[4096], one[4200], two[4200];

/* n deals with weights w: each place's count, and the longest streak of
 * deals to one place. */
static void deal(const uint64_t *w, int places, int n, int *count, int *streak)
{
    dir_turn t;
    temp_dirs_turn_init(&t, w, places);
    int last = -1, run = 0;
    memset(count, 0, (size_t)places * sizeof *count);
    *streak = 0;
    for (int i = 0; i < n; i++) {
        int p = temp_dirs_turn_next(&t);
        count[p]++;
        run = p == last ? run + 1 : 1;
        last = p;
        if (run > *streak) *streak = run;
    }
}

static const char *check_turn(void)
{
    static const uint64_t equal[2] = { 5, 5 }, two_to_one[2] = { 200, 100 },
                          uneven[3] = { 70, 20, 10 };
    int count[3], streak;
    deal(equal, 2, 100, count, &streak);
    if (count[0] != 50 || streak != 1) return "equal weights are not dealt A B A B";
    deal(two_to_one, 2, 300, count, &streak);
    if (count[0] != 200 || count[1] != 100 || streak > 2) return "2:1 is not dealt A B A";
    deal(uneven, 3, 1000, count, &streak);
    if (count[0] != 700 || count[1] != 200 || count[2] != 100 || streak > 4)
        return "70:20:10 not dealt in proportion and in turn";
    return NULL;
}

/* A set of places on file systems of their own with the given rooms, in
 * MB, as temp_dirs_measure() would make it; weights for run_mb runs. */
static int fit(temp_dirs *set, const double *room_mb, int n, double run_mb)
{
    memset(set, 0, sizeof *set);
    for (int i = 0; i < n; i++) {
        temp_dir *d = &set->dir[set->n++];
        d->free_known = 1;
        d->free_bytes = (uint64_t)(room_mb[i] * 1e6);
        d->weight = d->free_bytes >> 20 ? d->free_bytes >> 20 : 1;
        d->dev = (dev_t)(i + 1);
    }
    return temp_dirs_fit_runs(set, (uint64_t)(run_mb * 1e6));
}

/* As many runs as the used places hold beyond one run each, dealt by the
 * set's weights: no place may get more than its room holds, a place too
 * small for one run none.  Dealt by room alone, as before, the first
 * case's disk smaller than a run got one, and the second's 18 MB disk two
 * runs of 10 MB. */
static const char *check_runs_fit(void)
{
    static const struct { double room[4]; int n; double run; } cases[] = {
        { { 1000, 5 }, 2, 6 }, { { 79, 18, 55 }, 3, 10 }, { { 300, 8.4, 0.5 }, 3, 9.6 },
        { { 100, 10, 10, 60 }, 4, 6 }, { { 7, 7, 7 }, 3, 3 }, { { 64, 33, 17 }, 3, 16 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        temp_dirs set;
        fit(&set, cases[c].room, cases[c].n, cases[c].run);
        double beyond = 0;
        uint64_t w[TEMP_MAX_DIRS];
        int used[TEMP_MAX_DIRS], count[TEMP_MAX_DIRS] = { 0 }, k = 0;
        for (int i = 0; i < set.n; i++) {
            if (cases[c].room[i] >= cases[c].run) beyond += cases[c].room[i] - cases[c].run;
            if (set.dir[i].weight) used[k] = i, w[k++] = set.dir[i].weight;
        }
        dir_turn t;
        temp_dirs_turn_init(&t, w, k);
        for (int r = 0; r < (int)(beyond / cases[c].run); r++) count[used[temp_dirs_turn_next(&t)]]++;
        for (int i = 0; i < set.n; i++)
            if (count[i] * cases[c].run > cases[c].room[i])
                return "a place dealt more runs than it holds";
    }
    return NULL;
}

/* Two directories on one file system: its room counts once, shared. */
static const char *check_one_file_system(void)
{
    const char *places[2] = { one, two };
    temp_dirs set;
    int known;
    temp_dirs_measure(&set, places, 2);
    uint64_t both = temp_dirs_free(&set, &known);
    if (set.n != 2 || !known) return "two directories not measured";
    if (both > set.dir[0].free_bytes + (64u << 20) || both < set.dir[0].free_bytes / 2)
        return "one file system's room counted twice";
    if (set.dir[0].weight != set.dir[1].weight) return "one file system not shared equally";
    const char *same[3] = { one, two, one };
    temp_dirs_measure(&set, same, 3);
    if (set.n != 2) return "a directory named twice is not kept once";
    temp_dirs_keep(&set, 1);
    return set.n == 1 ? NULL : "temp_dirs_keep";
}

static const char *check_refusal_names_each(void)
{
    const char *places[2] = { one, two }, *in_fns[1] = { "-" };
    temp_request rq = { .mode = TEMP_AUTO, .in_fns = in_fns, .n_in = 1, .dirs = places, .n_dirs = 2,
                        .size_hint = 1ULL << 60, .memory = 3u << 20, .run_bytes = 1u << 20,
                        .threads = 1, .out_level = 6 };
    temp_plan p;
    errmsg err;
    if (temp_space_plan(&rq, &p, &err) == 0) return "an exabyte was not refused";
    int ok = strstr(err.msg, one) && strstr(err.msg, two) && strstr(err.msg, "free in all")
          && strstr(err.msg, "needed") && !strchr(err.msg, '\n');
    return ok ? NULL : "the refusal does not name each directory and the room in all";
}

static const char *check_prefix_among_several(void)
{
    char prefix[4300];
    errmsg err;
    snprintf(prefix, sizeof prefix, "%s/rs", one);
    const char *alone[1] = { prefix }, *several[2] = { one, prefix }, *dirs[2] = { one, two };
    if (temp_dirs_check(alone, 1, &err) < 0) return "a lone prefix refused";
    if (temp_dirs_check(dirs, 2, &err) < 0) return "two directories refused";
    if (temp_dirs_check(several, 2, &err) == 0) return "a prefix among several accepted";
    return strstr(err.msg, prefix) && strstr(err.msg, "not a directory") ? NULL
           : "the refusal does not name the prefix";
}

int main(void)
{
    if (!scratch_dir_make(base, sizeof base, "test_temp_dirs")) {
        perror(base);
        return 1;
    }
    snprintf(one, sizeof one, "%s/one", base);
    snprintf(two, sizeof two, "%s/two", base);
    int made = mkdir(one, 0700) == 0 && mkdir(two, 0700) == 0;
    report("temp_dirs_made", made ? NULL : "cannot make the test's directories");
    report("temp_dirs_turn", check_turn());
    report("temp_dirs_one_file_system", check_one_file_system());
    report("temp_dirs_runs_fit", check_runs_fit());
    report("temp_dirs_refusal_names_each", check_refusal_names_each());
    report("temp_dirs_prefix_among_several", check_prefix_among_several());
    rmdir(one);
    rmdir(two);
    rmdir(base);
    return report_summary();
}
