/* engine/sort_setup.c -- see engine/sort_setup.h. */
#include <stdio.h>
#include "engine/sort_setup.h"
#include "engine/sort_job.h"
#include "readout/output_target.h"
#include "store/state_dir.h"
#include "store/temp_dirs.h"
#include "store/temp_env.h"
#include "util/cleanup.h"
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

int sort_setup_check_outputs(const rocksort_opts *o)
{
    errmsg err;
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
    if (cleanup_start() < 0)
        fprintf(stderr, "samtools rocksort: cannot watch for signals; an interrupted run may leave temporary data\n");
}
