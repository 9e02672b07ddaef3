/* cli/bam_rocksort.h -- `samtools rocksort`: the command's entry point.
 *
 * Contract: bam_rocksort() takes the command line after "samtools"
 * (argv[0] is "rocksort"), as samtools' bamtk.c hands each command its
 * own: it reads it (cli/rocksort_args.h) and runs the sort
 * (engine/sort_pipeline.h).  Returns the exit status: 0 on success, 1 on
 * any error, after one line that says why.
 */
#ifndef BAM_ROCKSORT_H
#define BAM_ROCKSORT_H

int bam_rocksort(int argc, char *argv[]);

#endif
