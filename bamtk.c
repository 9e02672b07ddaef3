/* bamtk.c -- the `samtools` program: rocksort built in, the rest upstream.
 *
 * Contract: subcommands in the table run here; any other subcommand is
 * exec'd in the upstream samtools ($SAMTOOLS_UPSTREAM, else the first
 * `samtools` on PATH that is not this binary), so installing this program
 * as `samtools` breaks no pipeline.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <htslib/hts.h>
#include "cli/bam_rocksort.h"

#if !defined(ROCKSORT_VERSION) || !defined(ROCKSDB_VERSION_STR)
#error "the Makefile defines ROCKSORT_VERSION and ROCKSDB_VERSION_STR"
#endif

static const struct {
    const char *name;
    int (*run)(int argc, char *argv[]);
    const char *summary;
} commands[] = {
    { "rocksort", bam_rocksort, "sort alignment file through a temporary RocksDB (samtools sort's options)" },
};

static void usage(FILE *fp)
{
    fprintf(fp,
"\nProgram: samtools (Tools for alignments in the SAM format), with rocksort\n"
"Version: %s (using htslib %s, RocksDB %s)\n\n"
"Usage:   samtools <command> [options]\n\n"
"Commands built in:\n", ROCKSORT_VERSION, hts_version(), ROCKSDB_VERSION_STR);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(fp, "     %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(fp,
"\nAll other commands (sort, view, index, merge, ...) are run by the upstream\n"
"samtools: $SAMTOOLS_UPSTREAM, or the first other `samtools` on PATH.\n\n"
"     help         this list\n"
"     --version    versions of this program, htslib and RocksDB\n\n");
}

/* Tools that record versions take the first line's last word: nf-core's
 * modules run `echo $(samtools --version) | sed 's/^.*samtools //;
 * s/Using.*$//'`, on all lines joined.  So the first line ends with
 * ROCKSORT_VERSION (1.24+rocksort.X.Y.Z: the samtools release whose sort
 * it matches, which compares right against a minimum samtools version,
 * then rocksort's own), and no later line holds "samtools " for that sed
 * to stop at.  htslib's version is the one linked. */
static void print_version(void)
{
    printf("samtools %s\n"
           "Using htslib %s\n"
           "Using RocksDB %s\n"
           "The rocksort subcommand is built in; the others run the upstream SAMtools.\n",
           ROCKSORT_VERSION, hts_version(), ROCKSDB_VERSION_STR);
}

static int same_file(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/* The first executable `samtools` on PATH that is not this program. */
static char *find_upstream(void)
{
    const char *env = getenv("SAMTOOLS_UPSTREAM");
    if (env && *env) return strdup(env);
    const char *path = getenv("PATH");
    if (!path) return NULL;
    char *dirs = strdup(path), *save = NULL, *found = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *cand = NULL;
        if (asprintf(&cand, "%s/samtools", *d ? d : ".") < 0) break;
        if (access(cand, X_OK) == 0 && !same_file(cand, "/proc/self/exe")) found = cand;
        else free(cand);
    }
    free(dirs);
    return found;
}

static int run_upstream(char *argv[])
{
    char *upstream = find_upstream();
    if (!upstream) {
        fprintf(stderr, "samtools: '%s' is not built into this samtools, and no upstream "
                "samtools was found on PATH (set SAMTOOLS_UPSTREAM to one)\n", argv[1]);
        return 1;
    }
    if (same_file(upstream, "/proc/self/exe")) {
        fprintf(stderr, "samtools: SAMTOOLS_UPSTREAM '%s' is this program itself\n", upstream);
        return 1;
    }
    argv[0] = upstream;
    execv(upstream, argv);
    fprintf(stderr, "samtools: cannot run upstream samtools '%s': %s\n", upstream, strerror(errno));
    free(upstream);
    return 1;
}

int main(int argc, char *argv[])
{
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        if (argc > 2 && strcmp(argv[2], "rocksort") != 0) return run_upstream(argv);
        if (argc > 2) {
            char *help_argv[] = { argv[2], "--help", NULL };
            return bam_rocksort(2, help_argv);
        }
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        print_version();
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    return run_upstream(argv);
}
