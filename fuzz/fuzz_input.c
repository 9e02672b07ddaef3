/* fuzz_input.c -- fuzzes rocksort's input handling, end to end.
 *
 * The input bytes become a file that rocksort sorts (the first byte picks the
 * order and whether memory is tiny enough to spill).  Any outcome but a clean
 * success or a clean failure -- a crash, a sanitizer report, temporary data
 * left behind -- is a finding.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine/sort_pipeline.h"
#include "store/temp_space.h"

static char work_dir[128];

static int dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n == 0;
}

static void remove_work_dir(void)
{
    static const char *const parts[] = { "out", "tmp", "in", "" };
    char path[192];
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        snprintf(path, sizeof path, "%s/%s", work_dir, parts[i]);
        remove(path);
    }
}

static void make_work_dir(void)
{
    if (work_dir[0]) return;
    const char *tmp = getenv("TMPDIR");
    snprintf(work_dir, sizeof work_dir, "%s/rocksort-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(work_dir)) abort();
    atexit(remove_work_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    make_work_dir();
    char in_fn[192], out_fn[192], tmp_dir[192];
    snprintf(in_fn, sizeof in_fn, "%s/in", work_dir);
    snprintf(out_fn, sizeof out_fn, "%s/out/out.bam", work_dir);
    snprintf(tmp_dir, sizeof tmp_dir, "%s/tmp", work_dir);
    mkdir(tmp_dir, 0700);
    char out_dir[192];
    snprintf(out_dir, sizeof out_dir, "%s/out", work_dir);
    mkdir(out_dir, 0700);

    FILE *f = fopen(in_fn, "wb");
    if (!f) abort();
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);

    rocksort_opts o;
    memset(&o, 0, sizeof o);
    const char *in_fns[1] = { in_fn };
    o.in_fns = in_fns;
    o.n_in = 1;
    o.out_fn = out_fn;
    strcpy(o.out_mode, "wb1");
    /* Every order; -t RG on top when bit 6 is set. */
    sort_key_spec_init(&o.sort, (sort_order)(data[0] % (ORDER_SHUFFLE + 1)));
    o.sort.seed = data[0];
    o.sort.by_tag = (data[0] & 0x40) != 0;
    memcpy(o.sort.tag, "RG", 2);
    o.mem_per_thread = data[0] & 0x80 ? (1u << 20) : (64u << 20);
    o.tmp_dirs[o.n_tmp_dirs++] = tmp_dir;
    o.temp_compression = TEMP_NONE;
    sort_pipeline_run(&o);

    if (!dir_is_empty(tmp_dir)) abort();      /* temp data left behind */
    unlink(out_fn);
    if (!dir_is_empty(out_dir)) abort();      /* a temp output left behind */
    return 0;
}
