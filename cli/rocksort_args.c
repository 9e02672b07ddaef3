/* cli/rocksort_args.c -- see cli/rocksort_args.h. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <htslib/hts.h>
#include "cli/rocksort_args.h"
#include "cli/rocksort_usage.h"
#include "cli/legacy_form.h"
#include "cli/mem_option.h"
#include "cli/output_choice.h"
#include "cli/split_args.h"
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
    SPLIT_ARGS_LONG_OPTIONS,
    { NULL, 0, NULL, 0 }
};

/* Short options taking an argument; 'o' does only in the modern form. */
#define SHORT_WITH_ARG "lmOT@stIKwb"
#define SHORT_OPTS_MODERN "l:m:o:O:T:@:s:nNt:MI:K:Rw:Huvkfhb:"
#define SHORT_OPTS_LEGACY "l:m:oO:T:@:s:nNt:MI:K:Rw:Huvkfhb:"

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
static int resource_option(rocksort_args *c, int ch, const char *arg)
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
static int order_option(rocksort_args *c, int ch, const char *arg)
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

/* -b FILE: one input a line, as samtools merge reads it (htslib's
 * hts_readlines(): empty lines skipped; ":a.bam,b.bam" lists them inline).
 * Read once the options are: a list that cannot be read is a file's
 * failure, in one line, not a usage error. */
static int read_input_list(rocksort_args *c, const char *fn)
{
    int n = 0;
    errno = 0;
    char **names = hts_readlines(fn, &n);
    if (!names) {
        fprintf(stderr, "samtools rocksort: cannot read the list of inputs '%s': %s\n", fn,
                errno ? strerror(errno) : "not a file of names");
        return -1;
    }
    char **all = realloc(c->listed, (size_t)(c->n_listed + n) * sizeof *all);
    if (!all) {
        for (int i = 0; i < n; i++) free(names[i]);
        free(names);
        fprintf(stderr, "samtools rocksort: out of memory reading the list of inputs '%s'\n", fn);
        return -1;
    }
    memcpy(all + c->n_listed, names, (size_t)n * sizeof *names);
    free(names);
    c->listed = all;
    c->n_listed += n;
    c->list_fn = fn;
    return 0;
}

/* -b FILE and -T DIR may each come several times, up to a fixed count. */
static int add_repeated(const char **slots, int *n, int most, char opt, const char *arg)
{
    if (*n == most) {
        fprintf(stderr, "samtools rocksort: -%c given more than %d times\n", opt, most);
        return -1;
    }
    slots[(*n)++] = arg;
    return 0;
}

/* Files, formats and what is reported. */
static int io_option(rocksort_args *c, int ch, const char *arg)
{
    rocksort_opts *r = &c->run;
    char *end;
    switch (ch) {
    case 'o':
        if (c->legacy) c->legacy_stdout = 1;
        else c->out_fn = arg;
        break;
    case 'f': c->legacy_full_name = 1; break;
    case 'b': return add_repeated(c->lists, &c->n_lists, MAX_LISTS, 'b', arg);
    case 'O': c->out_fmt = arg; break;
    case 'T': return add_repeated(r->tmp_dirs, &r->n_tmp_dirs, TEMP_MAX_DIRS, 'T', arg);
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
static int apply_option(rocksort_args *c, int ch, const char *arg)
{
    int r = resource_option(c, ch, arg);
    if (r == NOT_MINE) r = order_option(c, ch, arg);
    if (r == NOT_MINE) r = io_option(c, ch, arg);
    if (r == NOT_MINE) r = split_args_option(&c->run, ch, arg);
    return r == NOT_MINE ? -1 : r;
}

/* --max-memory is a total; the engine budgets per thread, as -m does.
 * "auto" is a --max-memory of what the memory limits leave (cli/mem_option.h). */
static int setup_memory(rocksort_args *c)
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

static int finish_legacy(rocksort_args *c, char **argv)
{
    c->inputs[0] = argv[optind];
    c->run.n_in = 1;
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

/* The inputs: those -b listed, then the arguments, as samtools merge takes
 * them; none is standard input.  At most one may be "-": it has one stream. */
static int finish_positionals(rocksort_args *c, int argc, char **argv)
{
    for (int i = 0; i < c->n_lists; i++)
        if (read_input_list(c, c->lists[i]) < 0) return -1;
    int n = argc - optind, total = c->n_listed + n;
    if (!(c->inputs = calloc((size_t)(total ? total : 1), sizeof *c->inputs))) return -1;
    c->run.in_fns = c->inputs;
    if (c->legacy) return finish_legacy(c, argv);
    if (c->legacy_full_name) {
        fprintf(stderr, "samtools rocksort: -f only applies to the legacy form IN OUT\n");
        return -1;
    }
    if (!total && c->list_fn) {
        fprintf(stderr, "samtools rocksort: no input: the list '%s' names none\n", c->list_fn);
        return -1;
    }
    int dashes = 0;
    for (int i = 0; i < total; i++) {
        c->inputs[i] = i < c->n_listed ? c->listed[i] : argv[optind + i - c->n_listed];
        dashes += !strcmp(c->inputs[i], "-");
    }
    if (dashes > 1) {
        fprintf(stderr, "samtools rocksort: standard input ('-') is given %d times: it can be "
                "one input only\n", dashes);
        return -1;
    }
    if (!total) c->inputs[0] = "-";
    c->run.n_in = total ? total : 1;
    return 0;
}

int rocksort_args_parse(rocksort_args *c, int argc, char **argv)
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
    if (finish_positionals(c, argc, argv) < 0 || split_args_finish(&c->run, &c->out_fn, c->legacy) < 0) return -1;
    c->run.out_fn = c->out_fn;
    if (c->have_in_format) c->run.in_format = &c->in_format;
    if (output_choice_mode(&c->run, c->out_fmt, c->level, c->uncompressed) < 0)
        return bad_value("-O", c->out_fmt);
    if (c->write_index && output_choice_index(&c->run, &c->out_path, &c->index_path) < 0)
        return -1;
    if (setup_memory(c) < 0) return -1;
    if (c->run.resume_dir && c->run.keep_db) {
        fprintf(stderr, "samtools rocksort: -k and --resume cannot be combined: --resume keeps "
                "the state only until the sort succeeds\n");
        return -1;
    }
    if (sort_setup_check_temp(&c->run) < 0) return -1;
    if (output_choice_needs_reference(&c->run)) {
        fprintf(stderr, "samtools rocksort: CRAM output to '%s' needs a reference: use "
                "--reference FILE (or --output-fmt-option embed_ref=2)\n", c->out_fn);
        return -1;
    }
    /* Refused now, not after hours of sorting: the output is opened later. */
    return sort_setup_check_outputs(&c->run);
}

void rocksort_args_init(rocksort_args *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->level = -1;
    c->out_fn = "-";
    c->run.mem_per_thread = DEFAULT_MEM_PER_THREAD;
    sort_key_spec_init(&c->run.sort, ORDER_COORDINATE);
    c->run.temp_compression = TEMP_AUTO;
    c->cmdline = join_cmdline(argc, argv);
    c->run.pg_cmdline = c->cmdline;
}

void rocksort_args_free(rocksort_args *c)
{
    hts_opt_free(c->run.in_opts);
    hts_opt_free(c->run.out_opts);
    hts_opt_free((hts_opt *)c->in_format.specific);
    free(c->legacy_out);
    for (int i = 0; i < c->n_listed; i++) free(c->listed[i]);
    free(c->listed);
    free(c->inputs);
    free(c->out_path);
    free(c->index_path);
    free(c->cmdline);
}
