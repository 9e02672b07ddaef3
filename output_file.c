/* output_file.c -- see output_file.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "output_file.h"
#include "cleanup.h"

static char *errmsg(const char *what, const char *path)
{
    char *m = NULL;
    if (asprintf(&m, "%s '%s': %s", what, path, strerror(errno)) < 0) m = NULL;
    return m;
}

/* mkstemp makes the file 0600; a finished output should get the same
 * permissions any other new file would. */
static void apply_umask(int fd)
{
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) < 0) { /* harmless: the file stays private */ }
}

static char *temp_name_beside(const char *path)
{
    char *d = strdup(path), *b = strdup(path), *tmpl = NULL;
    if (d && b && asprintf(&tmpl, "%s/.%s.rocksort.XXXXXX", dirname(d), basename(b)) < 0)
        tmpl = NULL;
    free(d);
    free(b);
    return tmpl;
}

int output_open(output_file *o, const char *fn, const char *mode, char **err)
{
    memset(o, 0, sizeof *o);
    if (!strcmp(fn, "-")) {
        o->fp = sam_open("-", mode);
        if (!o->fp) { *err = errmsg("cannot write to", "-"); return -1; }
        return 0;
    }
    o->final_path = strdup(fn);
    o->tmp_path = temp_name_beside(fn);
    if (!o->final_path || !o->tmp_path) { *err = strdup("out of memory"); return -1; }
    int fd = mkstemp(o->tmp_path);
    if (fd < 0) {
        *err = errmsg("cannot create output file in the directory of", fn);
        free(o->tmp_path);
        o->tmp_path = NULL;
        return -1;
    }
    cleanup_add(o->tmp_path);
    apply_umask(fd);
    close(fd);
    o->fp = sam_open(o->tmp_path, mode);
    if (!o->fp) {
        *err = errmsg("cannot open output file", fn);
        output_abort(o);
        return -1;
    }
    return 0;
}

int output_commit(output_file *o, char **err)
{
    int ret = sam_close(o->fp);
    o->fp = NULL;
    if (ret < 0) {
        *err = errmsg("error closing output file", o->final_path ? o->final_path : "-");
        output_abort(o);
        return -1;
    }
    if (!o->final_path) {
        cleanup_mark_finished();
    } else if (cleanup_commit_rename(o->tmp_path, o->final_path) < 0) {
        *err = errmsg("cannot rename the finished output to", o->final_path);
        output_abort(o);
        return -1;
    }
    cleanup_forget(o->tmp_path);
    free(o->tmp_path);
    free(o->final_path);
    o->tmp_path = o->final_path = NULL;
    return 0;
}

void output_abort(output_file *o)
{
    if (o->fp) {
        if (!o->final_path) {
            /* Closing writes the BGZF EOF block; send it nowhere. */
            fflush(stdout);
            int null = open("/dev/null", O_WRONLY);
            if (null >= 0) {
                dup2(null, STDOUT_FILENO);
                close(null);
            }
        }
        sam_close(o->fp);
        o->fp = NULL;
    }
    if (o->tmp_path) {
        unlink(o->tmp_path);
        cleanup_forget(o->tmp_path);
    }
    free(o->tmp_path);
    free(o->final_path);
    o->tmp_path = o->final_path = NULL;
}
