/* cli/output_choice.c -- see cli/output_choice.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <htslib/hts.h>
#include <htslib/sam.h>
#include "cli/output_choice.h"

/* samtools sort picks the format from -O, else from the file name, else BAM. */
int output_choice_mode(rocksort_opts *r, const char *fmt, int level, int uncompressed)
{
    char *mode = r->out_mode;
    char fmt_name[16] = "";
    if (fmt) {
        /* "-O bam,level=1"-style options follow the format name. */
        size_t n = strcspn(fmt, ",");
        if (n >= sizeof fmt_name) n = sizeof fmt_name - 1;
        memcpy(fmt_name, fmt, n);
        for (char *p = fmt_name; *p; p++) *p = (char)tolower((unsigned char)*p);
        if (fmt[n] == ',' && hts_opt_add(&r->out_opts, fmt + n + 1) < 0) return -1;
    }
    strcpy(mode, "w");
    if (sam_open_mode(mode + 1, r->out_fn, fmt ? fmt_name : NULL) < 0) {
        if (fmt) return -1;
        strcpy(mode + 1, "b");
    }
    /* As in samtools 1.24, a level given as an output option (even 0)
     * makes SAM output BGZF-compressed; -l does not. */
    for (const hts_opt *o = r->out_opts; o; o = o->next)
        if (o->opt == HTS_OPT_COMPRESSION_LEVEL && !strpbrk(mode + 1, "bcz")) strcat(mode, "z");
    int compressed = strpbrk(mode + 1, "bcz") != NULL;
    if (compressed && (uncompressed || level >= 0)) {
        size_t len = strlen(mode);
        /* "wbu" crashes htslib 1.16's writer; level 0 is the same output. */
        mode[len] = (char)('0' + (uncompressed ? 0 : level));
        mode[len + 1] = '\0';
    }
    return 0;
}

int output_choice_needs_reference(const rocksort_opts *r)
{
    if (!strchr(r->out_mode, 'c') || r->reference) return 0;
    for (const hts_opt *o = r->out_opts; o; o = o->next)
        if (o->opt == CRAM_OPT_REFERENCE || o->opt == CRAM_OPT_NO_REF
            || o->opt == CRAM_OPT_EMBED_REF)
            return 0;
    return getenv("REF_PATH") == NULL && getenv("REF_CACHE") == NULL;
}

/* samtools' convention: CSI beside the output (CRAI for CRAM), or the name
 * after "##idx##", a BAI if it ends in .bai. */
int output_choice_index(rocksort_opts *r, char **out_path, char **index_path)
{
    const char *out_fn = r->out_fn;
    if (!strcmp(out_fn, "-")) {
        fprintf(stderr, "samtools rocksort: --write-index needs an output file, not standard output\n");
        return -1;
    }
    if (!strpbrk(r->out_mode + 1, "bc")) {
        fprintf(stderr, "samtools rocksort: --write-index: cannot index SAM output '%s'\n", out_fn);
        return -1;
    }
    if ((r->sort.order != ORDER_COORDINATE && r->sort.order != ORDER_MINIMISER)
        || r->sort.by_tag) {
        fprintf(stderr, "samtools rocksort: warning: --write-index ignored: only "
                "coordinate-sorted output can be indexed\n");
        return 0;
    }
    const char *delim = strstr(out_fn, HTS_IDX_DELIM);
    int cram = strchr(r->out_mode + 1, 'c') != NULL;
    if (delim) {
        *out_path = strndup(out_fn, (size_t)(delim - out_fn));
        *index_path = strdup(delim + strlen(HTS_IDX_DELIM));
    } else {
        *out_path = strdup(out_fn);
        if (asprintf(index_path, "%s%s", out_fn, cram ? ".crai" : ".csi") < 0)
            *index_path = NULL;
    }
    if (!*out_path || !*index_path) return -1;
    size_t n = strlen(*index_path);
    int bai = n >= 4 && !strcasecmp(*index_path + n - 4, ".bai");
    r->out_fn = *out_path;
    r->index_fn = *index_path;
    r->index_min_shift = bai || cram ? 0 : 14;
    return 0;
}
