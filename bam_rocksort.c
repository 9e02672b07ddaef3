/* bam_rocksort.c -- the `samtools rocksort` command line.
 *
 * Contract: accepts samtools sort's command line (and the 2014 rocksort's
 * legacy `IN OUT.prefix` form), validates it, and hands a rocksort_opts to the
 * engine in engine/sort_pipeline.c.  Exit status: 0 on success, 1 on any error.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <htslib/hts.h>
#include <htslib/sam.h>
#include "cli/rocksort_usage.h"
#include "cli/legacy_form.h"
#include "cli/mem_option.h"
#include "engine/resume_fate.h"
#include "engine/sort_pipeline.h"
#include "engine/sort_setup.h"
#include "keys/minimiser.h"

#define DEFAULT_MEM_PER_THREAD (768ULL << 20)
#define MIN_MEM_PER_THREAD (1ULL << 20)

enum {
    OPT_NO_PG = 1000, OPT_REFERENCE, OPT_IN_FMT_OPT, OPT_OUT_FMT_OPT,
    OPT_IN_FMT, OPT_VERBOSITY, OPT_TEMP_COMPRESSION, OPT_VERIFY,
    OPT_WRITE_INDEX, OPT_PROGRESS, OPT_MAX_MEMORY, OPT_TEMPLATE_COORDINATE, OPT_SHUFFLE,
    OPT_MERGE_THREADS, OPT_RESUME
};

static const struct option long_opts[] = {
    { "help", no_argument, NULL, 'h' },
    { "no-PG", no_argument, NULL, OPT_NO_PG },
    { "reference", required_argument, NULL, OPT_REFERENCE },
    { "input-fmt-option", required_argument, NULL, OPT_IN_FMT_OPT },
    { "output-fmt-option", required_argument, NULL, OPT_OUT_FMT_OPT },
    { "input-fmt", required_argument, NULL, OPT_IN_FMT },
    { "output-fmt", required_argument, NULL, 'O' },
    { "verbosity", required_argument, NULL, OPT_VERBOSITY },
    { "threads", required_argument, NULL, '@' },
    { "temp-compression", required_argument, NULL, OPT_TEMP_COMPRESSION },
    { "verify", no_argument, NULL, OPT_VERIFY },
    { "write-index", no_argument, NULL, OPT_WRITE_INDEX },
    { "progress", optional_argument, NULL, OPT_PROGRESS },
    { "max-memory", required_argument, NULL, OPT_MAX_MEMORY },
    { "template-coordinate", no_argument, NULL, OPT_TEMPLATE_COORDINATE },
    { "shuffle", required_argument, NULL, OPT_SHUFFLE },
    { "merge-threads", required_argument, NULL, OPT_MERGE_THREADS },
    { "resume", required_argument, NULL, OPT_RESUME },
    { NULL, 0, NULL, 0 }
};

/* Short options taking an argument; 'o' does only in the modern form. */
#define SHORT_WITH_ARG "lmOT@stIKw"
#define SHORT_OPTS_MODERN "l:m:o:O:T:@:s:nNt:MI:K:Rw:Huvkfh"
#define SHORT_OPTS_LEGACY "l:m:oO:T:@:s:nNt:MI:K:Rw:Huvkfh"

/* "768M", "1.5G", "2000000" -> bytes, powers of 1024.  -1 if malformed. */
static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0 || !isfinite(v)) return -1;
    double mult = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mult = 1024.0; end++; break;
    case 'M': mult = 1024.0 * 1024; end++; break;
    case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    }
    if (toupper((unsigned char)*end) == 'B') end++;
    if (*end) return -1;
    *out = (uint64_t)(v * mult);
    return 0;
}

typedef struct {
    rocksort_opts run;
    const char *out_fn, *out_fmt;
    int level, uncompressed, legacy, legacy_stdout, legacy_full_name;
    htsFormat in_format;
    int have_in_format;
    char *legacy_out;
    int write_index, mem_given;
    int ascii_names;                /* -N seen */
    uint64_t max_memory;
    const char *mem_arg, *mem_auto; /* the size given; "-m" or "--max-memory" given "auto" */
    char *out_path, *index_path;    /* "out.bam##idx##out.bai" split in two */
} cli_state;

static int bad_value(const char *opt, const char *val)
{
    fprintf(stderr, "samtools rocksort: invalid value '%s' for %s\n", val, opt);
    return -1;
}

/* A whole decimal int; out of range values saturate. */
static int parse_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end) return -1;
    *out = v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
    return 0;
}

/* What an option group returns for an option that is not one of its own. */
#define NOT_MINE 1

/* -m, --max-memory, -s, -@, -l, -u: memory, threads and compression. */
static int resource_option(cli_state *c, int ch, const char *arg)
{
    rocksort_opts *r = &c->run;
    uint64_t size;
    char *end;
    switch (ch) {
    case 'l':
        c->level = (int)strtol(arg, &end, 10);
        if (*end || c->level < 0) return bad_value("-l", arg);
        if (c->level > 9) c->level = 9;
        break;
    case 'u': c->uncompressed = 1; break;
    case 'm':
        if (!strcmp(arg, "auto")) { c->mem_auto = "-m"; break; }
        if (parse_size(arg, &size) < 0 || size == 0) return bad_value("-m", arg);
        if (size < MIN_MEM_PER_THREAD) {
            fprintf(stderr, "samtools rocksort: -m %s is below the minimum; using 1M\n", arg);
            size = MIN_MEM_PER_THREAD;
        }
        r->mem_per_thread = (size_t)size;
        c->mem_given = 1;
        c->mem_arg = arg;
        break;
    case OPT_MAX_MEMORY:
        if (!strcmp(arg, "auto")) { c->mem_auto = "--max-memory"; break; }
        if (parse_size(arg, &size) < 0 || size == 0) return bad_value("--max-memory", arg);
        c->max_memory = size;
        c->mem_arg = arg;
        break;
    case 's':
        if (parse_size(arg, &size) < 0) return bad_value("-s", arg);
        r->size_hint = size;
        break;
    case '@':
        r->threads = (int)strtol(arg, &end, 10);
        if (*end || r->threads < 0) return bad_value("-@", arg);
        break;
    case OPT_MERGE_THREADS:
        r->merge_threads = (int)strtol(arg, &end, 10);
        if (*end || end == arg || r->merge_threads < 1) return bad_value("--merge-threads", arg);
        break;
    case OPT_RESUME:
        if (!*arg) return bad_value("--resume", arg);
        r->resume_dir = arg;
        break;
    default:
        return NOT_MINE;
    }
    return 0;
}

/* The sort order.  As in samtools: the last order option wins, -N also
 * makes any name order plain ASCII, and -t turns the order into "TAG,
 * then it". */
static int order_option(cli_state *c, int ch, const char *arg)
{
    sort_spec *o = &c->run.sort;
    char *end;
    switch (ch) {
    case 'n': o->order = ORDER_NAME_NATURAL; break;
    case 'N': o->order = ORDER_NAME_NATURAL; c->ascii_names = 1; break;
    case 't':
        o->by_tag = 1;
        o->tag[0] = arg[0];
        o->tag[1] = arg[0] ? arg[1] : '\0';
        break;
    case OPT_TEMPLATE_COORDINATE: o->order = ORDER_TEMPLATE; break;
    case 'M': o->order = ORDER_MINIMISER; break;
    case 'I':
        o->order = ORDER_MINIMISER;
        o->minimiser_ref = arg;
        break;
    case 'K':
        if (parse_int(arg, &o->kmer) < 0) return bad_value("-K", arg);
        o->kmer = mm_kmer_clamp(o->kmer);   /* as samtools clamps it */
        break;
    case 'w':
        if (parse_int(arg, &o->window) < 0) return bad_value("-w", arg);
        break;
    case 'R': o->try_rev = 0; break;
    case 'H': o->squash = 1; break;
    case OPT_SHUFFLE:
        errno = 0;
        o->seed = strtoull(arg, &end, 10);
        if (!isdigit((unsigned char)arg[0]) || *end || errno) return bad_value("--shuffle", arg);
        o->order = ORDER_SHUFFLE;
        break;
    default:
        return NOT_MINE;
    }
    return 0;
}

/* Files, formats and what is reported. */
static int io_option(cli_state *c, int ch, const char *arg)
{
    rocksort_opts *r = &c->run;
    char *end;
    switch (ch) {
    case 'o':
        if (c->legacy) c->legacy_stdout = 1;
        else c->out_fn = arg;
        break;
    case 'f': c->legacy_full_name = 1; break;
    case 'O': c->out_fmt = arg; break;
    case 'T':
        if (r->n_tmp_dirs == TEMP_MAX_DIRS) {
            fprintf(stderr, "samtools rocksort: -T given more than %d times\n", TEMP_MAX_DIRS);
            return -1;
        }
        r->tmp_dirs[r->n_tmp_dirs++] = arg;
        break;
    case 'k': r->keep_db = 1; break;
    case 'v': r->verbose = 1; break;
    case OPT_VERIFY: r->verify = 1; break;
    case OPT_NO_PG: r->pg_cmdline = NULL; break;
    case OPT_REFERENCE: r->reference = arg; break;
    case OPT_WRITE_INDEX: c->write_index = 1; break;
    case OPT_PROGRESS:
        r->progress = 1;
        if (arg && ((r->progress_interval = strtod(arg, &end)) <= 0 || *end))
            return bad_value("--progress", arg);
        break;
    case OPT_IN_FMT_OPT:
        if (hts_opt_add(&r->in_opts, arg) < 0) return bad_value("--input-fmt-option", arg);
        break;
    case OPT_OUT_FMT_OPT:
        if (hts_opt_add(&r->out_opts, arg) < 0) return bad_value("--output-fmt-option", arg);
        break;
    case OPT_IN_FMT:
        if (hts_parse_format(&c->in_format, arg) < 0) return bad_value("--input-fmt", arg);
        c->have_in_format = 1;
        break;
    case OPT_VERBOSITY:
        hts_verbose = (int)strtol(arg, &end, 10);
        if (*end) return bad_value("--verbosity", arg);
        r->htslib_verbosity_set = 1;
        break;
    case OPT_TEMP_COMPRESSION: {
        int mode = temp_space_parse_mode(arg);
        if (mode < 0) return bad_value("--temp-compression", arg);
        r->temp_compression = (temp_mode)mode;
        break;
    }
    default:
        return NOT_MINE;
    }
    return 0;
}

/* 0, or -1 for an unknown option or a bad value (reported). */
static int apply_option(cli_state *c, int ch, const char *arg)
{
    int r = resource_option(c, ch, arg);
    if (r == NOT_MINE) r = order_option(c, ch, arg);
    if (r == NOT_MINE) r = io_option(c, ch, arg);
    return r == NOT_MINE ? -1 : r;
}

/* samtools sort picks the format from -O, else from the file name, else BAM. */
static int choose_output_mode(cli_state *c)
{
    char *mode = c->run.out_mode;
    const char *fmt = c->out_fmt;
    char fmt_name[16] = "";
    if (fmt) {
        /* "-O bam,level=1"-style options follow the format name. */
        size_t n = strcspn(fmt, ",");
        if (n >= sizeof fmt_name) n = sizeof fmt_name - 1;
        memcpy(fmt_name, fmt, n);
        for (char *p = fmt_name; *p; p++) *p = (char)tolower((unsigned char)*p);
        if (fmt[n] == ',' && hts_opt_add(&c->run.out_opts, fmt + n + 1) < 0)
            return bad_value("-O", fmt);
    }
    strcpy(mode, "w");
    if (sam_open_mode(mode + 1, c->run.out_fn, fmt ? fmt_name : NULL) < 0) {
        if (fmt) return bad_value("-O", fmt);
        strcpy(mode + 1, "b");
    }
    /* As in samtools 1.24, a level given as an output option (even 0)
     * makes SAM output BGZF-compressed; -l does not. */
    for (const hts_opt *o = c->run.out_opts; o; o = o->next)
        if (o->opt == HTS_OPT_COMPRESSION_LEVEL && !strpbrk(mode + 1, "bcz")) strcat(mode, "z");
    int compressed = strpbrk(mode + 1, "bcz") != NULL;
    if (compressed && (c->uncompressed || c->level >= 0)) {
        size_t len = strlen(mode);
        /* "wbu" crashes htslib 1.16's writer; level 0 is the same output. */
        mode[len] = (char)('0' + (c->uncompressed ? 0 : c->level));
        mode[len + 1] = '\0';
    }
    return 0;
}

static int needs_reference_check(const cli_state *c)
{
    if (!strchr(c->run.out_mode, 'c') || c->run.reference) return 0;
    for (const hts_opt *o = c->run.out_opts; o; o = o->next)
        if (o->opt == CRAM_OPT_REFERENCE || o->opt == CRAM_OPT_NO_REF
            || o->opt == CRAM_OPT_EMBED_REF)
            return 0;
    return getenv("REF_PATH") == NULL && getenv("REF_CACHE") == NULL;
}

/* samtools' convention: CSI beside the output (CRAI for CRAM), or the name
 * after "##idx##", a BAI if it ends in .bai. */
static int setup_index(cli_state *c)
{
    rocksort_opts *r = &c->run;
    if (!c->write_index) return 0;
    if (!strcmp(c->out_fn, "-")) {
        fprintf(stderr, "samtools rocksort: --write-index needs an output file, not standard output\n");
        return -1;
    }
    if (!strpbrk(r->out_mode + 1, "bc")) {
        fprintf(stderr, "samtools rocksort: --write-index: cannot index SAM output '%s'\n", c->out_fn);
        return -1;
    }
    if ((r->sort.order != ORDER_COORDINATE && r->sort.order != ORDER_MINIMISER)
        || r->sort.by_tag) {
        fprintf(stderr, "samtools rocksort: warning: --write-index ignored: only "
                "coordinate-sorted output can be indexed\n");
        return 0;
    }
    const char *delim = strstr(c->out_fn, HTS_IDX_DELIM);
    int cram = strchr(r->out_mode + 1, 'c') != NULL;
    if (delim) {
        c->out_path = strndup(c->out_fn, (size_t)(delim - c->out_fn));
        c->index_path = strdup(delim + strlen(HTS_IDX_DELIM));
    } else {
        c->out_path = strdup(c->out_fn);
        if (asprintf(&c->index_path, "%s%s", c->out_fn, cram ? ".crai" : ".csi") < 0)
            c->index_path = NULL;
    }
    if (!c->out_path || !c->index_path) return -1;
    size_t n = strlen(c->index_path);
    int bai = n >= 4 && !strcasecmp(c->index_path + n - 4, ".bai");
    r->out_fn = c->out_path;
    r->index_fn = c->index_path;
    r->index_min_shift = bai || cram ? 0 : 14;
    return 0;
}

/* --max-memory is a total; the engine budgets per thread, as -m does.
 * "auto" is a --max-memory of what the memory limits leave (cli/mem_option.h). */
static int setup_memory(cli_state *c)
{
    rocksort_opts *r = &c->run;
    int threads = r->threads > 1 ? r->threads : 1;
    if (c->mem_auto && (c->mem_given || c->max_memory)) {
        fprintf(stderr, "samtools rocksort: %s auto sets the whole budget: give no other -m or "
                "--max-memory\n", c->mem_auto);
        return -1;
    }
    if (c->mem_auto) c->max_memory = mem_option_auto(c->mem_auto, r->threads, r->verbose);
    else if (c->mem_given && !c->max_memory)
        mem_option_warn("-m", c->mem_arg, r->threads, 1, (uint64_t)r->mem_per_thread * threads);
    if (!c->max_memory) return 0;
    if (c->mem_given) {
        fprintf(stderr, "samtools rocksort: give either -m (per thread) or --max-memory (total), not both\n");
        return -1;
    }
    if (!c->mem_auto) mem_option_warn("--max-memory", c->mem_arg, r->threads, 0, c->max_memory);
    uint64_t per = c->max_memory / (uint64_t)threads;
    if (per < MIN_MEM_PER_THREAD) {
        fprintf(stderr, "samtools rocksort: --max-memory is below the minimum of 1M per thread; "
                "using 1M per thread\n");
        per = MIN_MEM_PER_THREAD;
    }
    r->mem_per_thread = (size_t)per;
    return 0;
}

static char *join_cmdline(int argc, char **argv)
{
    size_t len = strlen("samtools") + 1;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s) return NULL;
    p += sprintf(p, "samtools");
    for (int i = 0; i < argc; i++) p += sprintf(p, " %s", argv[i]);
    return s;
}

static int finish_positionals(cli_state *c, int argc, char **argv)
{
    int n = argc - optind;
    if (c->legacy) {
        c->run.in_fn = argv[optind];
        if (c->legacy_stdout) {
            c->out_fn = "-";
        } else if (c->legacy_full_name) {
            c->out_fn = argv[optind + 1];
        } else {
            if (asprintf(&c->legacy_out, "%s.bam", argv[optind + 1]) < 0) return -1;
            c->out_fn = c->legacy_out;
        }
        return 0;
    }
    if (c->legacy_full_name) {
        fprintf(stderr, "samtools rocksort: -f only applies to the legacy form IN OUT\n");
        return -1;
    }
    if (n > 1) {
        fprintf(stderr, "samtools rocksort: only one input file is accepted (got %d)\n", n);
        return -1;
    }
    c->run.in_fn = n == 1 ? argv[optind] : "-";
    return 0;
}

static int parse_args(cli_state *c, int argc, char **argv)
{
    c->legacy = legacy_form(argc, argv, long_opts, SHORT_WITH_ARG);
    const char *shortopts = c->legacy ? SHORT_OPTS_LEGACY : SHORT_OPTS_MODERN;
    int ch;
    opterr = 1;
    while ((ch = getopt_long(argc, argv, shortopts, long_opts, NULL)) >= 0) {
        if (ch == 'h') { rocksort_usage(stdout); exit(0); }
        if (ch == '?' || apply_option(c, ch, optarg) < 0) {
            fprintf(stderr, "Try 'samtools rocksort --help'.\n");
            return -1;
        }
    }
    sort_spec *order = &c->run.sort;
    if (c->ascii_names && order->order == ORDER_NAME_NATURAL) order->order = ORDER_NAME_ASCII;
    if (order->by_tag && order->order != ORDER_NAME_NATURAL && order->order != ORDER_NAME_ASCII)
        order->order = ORDER_COORDINATE;
    if (finish_positionals(c, argc, argv) < 0) return -1;
    c->run.out_fn = c->out_fn;
    if (c->have_in_format) c->run.in_format = &c->in_format;
    if (choose_output_mode(c) < 0 || setup_index(c) < 0 || setup_memory(c) < 0) return -1;
    if (c->run.resume_dir && c->run.keep_db) {
        fprintf(stderr, "samtools rocksort: -k and --resume cannot be combined: --resume keeps "
                "the state only until the sort succeeds\n");
        return -1;
    }
    if (sort_setup_check_temp(&c->run) < 0) return -1;
    if (needs_reference_check(c)) {
        fprintf(stderr, "samtools rocksort: CRAM output to '%s' needs a reference: use "
                "--reference FILE (or --output-fmt-option embed_ref=2)\n", c->out_fn);
        return -1;
    }
    /* Refused now, not after hours of sorting: the output is opened later. */
    return sort_setup_check_outputs(&c->run);
}

int bam_rocksort(int argc, char *argv[])
{
    int closed_fds = sort_setup_std_fds();
    cli_state c;
    memset(&c, 0, sizeof c);
    c.level = -1;
    c.out_fn = "-";
    c.run.mem_per_thread = DEFAULT_MEM_PER_THREAD;
    sort_key_spec_init(&c.run.sort, ORDER_COORDINATE);
    c.run.temp_compression = TEMP_AUTO;
    char *cmdline = join_cmdline(argc, argv);
    c.run.pg_cmdline = cmdline;

    int ret = 1;
    int ok = parse_args(&c, argc, argv) == 0;
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

    hts_opt_free(c.run.in_opts);
    hts_opt_free(c.run.out_opts);
    hts_opt_free((hts_opt *)c.in_format.specific);
    free(c.legacy_out);
    free(c.out_path);
    free(c.index_path);
    free(cmdline);
    return ret;
}
