/* engine/sort_setup.c -- see engine/sort_setup.h. */
#include <stdio.h>
#include <string.h>
#include "engine/sort_setup.h"
#include "engine/sort_job.h"
#include "output/output_target.h"
#include "store/store.h"
#include "disk/temp_dirs.h"
#include "disk/temp_env.h"
#include "util/cleanup.h"
#include "util/deflate_cache.h"
#include "util/path_within.h"
#include "util/std_fds.h"

int sort_setup_std_fds(void)
{
    return std_fds_keep_open();
}

int sort_setup_check_temp(const rocksort_opts *o)
{
    errmsg err;
    if (temp_dirs_check(o->tmp_dirs, o->n_tmp_dirs, &err) < 0
        || (o->resume_dir && state_dir_usable(o->resume_dir, &err) < 0))
        return sort_job_fail("%s", err.msg);
    return 0;
}

/* A finished --resume sort removes DIR, and a failed one may keep it for a
 * rerun that empties it: a file of the user's inside it would go too. */
static int inside_state_dir(const rocksort_opts *o, const char *what, const char *path)
{
    if (!o->resume_dir || !path || !strcmp(path, "-") || !path_within_dir(path, o->resume_dir))
        return 0;
    return sort_job_fail("%s '%s' lies inside the --resume directory '%s', which holds only the "
                         "sort's state and is removed when the sort ends: put it elsewhere",
                         what, path, o->resume_dir);
}

int sort_setup_check_outputs(const rocksort_opts *o)
{
    errmsg err;
    if (inside_state_dir(o, "the output", o->out_fn) < 0
        || inside_state_dir(o, "the index", o->index_fn) < 0)
        return -1;
    for (int i = 0; i < o->n_tmp_dirs; i++)
        if (inside_state_dir(o, "the -T", o->tmp_dirs[i]) < 0) return -1;
    if (output_target_check(o->out_fn, &err) < 0
        || (o->index_fn && output_target_check(o->index_fn, &err) < 0))
        return sort_job_fail("%s", err.msg);
    return 0;
}

void sort_setup_process(void)
{
    /* Both process-wide: an exception RocksDB throws ends the run as a
     * signal does, with the temporary paths removed. */
    temp_env_install_terminate_handler();
    /* Before any thread compresses: see util/deflate_cache.h. */
    deflate_cache_install();
    if (cleanup_start() < 0)
        fprintf(stderr, "samtools rocksort: cannot watch for signals; an interrupted run may leave temporary data\n");
}
