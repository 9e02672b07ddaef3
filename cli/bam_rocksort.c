/* cli/bam_rocksort.c -- see cli/bam_rocksort.h. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli/bam_rocksort.h"
#include "cli/rocksort_args.h"
#include "engine/resume_fate.h"
#include "engine/sort_pipeline.h"
#include "engine/sort_setup.h"

int bam_rocksort(int argc, char *argv[])
{
    int closed_fds = sort_setup_std_fds();
    rocksort_args c;
    rocksort_args_init(&c, argc, argv);

    int ret = 1;
    int ok = rocksort_args_parse(&c, argc, argv) == 0;
    if (ok && (closed_fds & 1 << STDOUT_FILENO) && !strcmp(c.run.out_fn, "-")) {
        fprintf(stderr, "samtools rocksort: cannot write to standard output: it is closed\n");
        ok = 0;
    }
    if (ok) {
        sort_setup_process();
        ret = sort_pipeline_run(&c.run) == 0 ? 0 : 1;
    } else if (c.run.resume_dir) {
        resume_fate_refused(c.run.resume_dir);
    }
    rocksort_args_free(&c);
    return ret;
}
