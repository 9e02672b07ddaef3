/* engine/sort_plan.c -- see engine/sort_plan.h. */
#include <stdlib.h>
#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include "engine/sort_plan.h"
#include "util/fd_budget.h"
#include "output/output_file.h"
#include "store/store.h"
#include "engine/resume_fate.h"
#include "readout/readout_model.h"
#include "load/record_parse.h"

size_t sort_plan_total_memory(const rocksort_opts *o)
{
    return o->mem_per_thread * (size_t)(o->threads > 1 ? o->threads : 1);
}

/* Two batches are resident while loading (one filling, one spilling), and
 * the readout needs room for its buffers: a third of the budget each (of
 * what the threads' own buffers leave, below).
 * Past 512 MiB a batch only costs more (the kernel's zeroing of pages
 * touched for the first time slowed in-memory loads with larger batches
 * down) and gains nothing at readout. */
#define MAX_BATCH_BYTES (512ULL << 20)

/* Each -@ thread's own buffers, which neither the batches nor the readers
 * hold: htslib's BGZF blocks in flight and their compressors, and with
 * compact runs htscodecs' tables for the qualities, which each pool thread
 * that encoded a group keeps (about 1 MiB; half the threads, on average,
 * over a sort).  At -@ 64 -m 1M they are as much as the budget. */
#define THREAD_OWN_BYTES (512ULL << 10)

#define FILL_POOL_MIN_THREADS 8

/* Spans parsed at once on the pool (sort_plan_parse_jobs()). */
static int parse_jobs_for(int threads)
{
    return threads >= FILL_POOL_MIN_THREADS ? threads / 2 : 0;
}

/* At -l 8 and 9 every thread that compresses the output (each -@ thread,
 * or the one merge thread) also holds a far larger deflate state. */
uint64_t sort_plan_own_memory(const rocksort_opts *o)
{
    int level = output_file_deflate_level(o->out_mode, o->out_opts);
    uint64_t compressing = (uint64_t)(o->threads > 1 ? o->threads : 1);
    return (uint64_t)(o->threads > 1 ? o->threads : 0) * THREAD_OWN_BYTES +
           compressing * output_file_deflate_extra_bytes(level) +
           (uint64_t)parse_jobs_for(o->threads) * RECORD_PARSE_JOB_BYTES;
}

/* The budget less the threads' own buffers, at least a quarter of it: what
 * the batches and the readers share.  Where they take more than three
 * quarters of it, the budget cannot hold them (README says so). */
static uint64_t usable_memory(const rocksort_opts *o)
{
    uint64_t total = sort_plan_total_memory(o), own = sort_plan_own_memory(o);
    return total > own && total - own > total / 4 ? total - own : total / 4;
}

int sort_plan_own_memory_fits(const rocksort_opts *o)
{
    uint64_t total = sort_plan_total_memory(o);
    return sort_plan_own_memory(o) <= total - total / 4;
}

size_t sort_plan_batch_bytes(const rocksort_opts *o)
{
    uint64_t b = usable_memory(o) / 3;
    return b < MAX_BATCH_BYTES ? (size_t)b : MAX_BATCH_BYTES;
}

/* Below this budget the allocator's slack matters: see sort_plan_allocator(). */
#define EXACT_ALLOC_BELOW (256ULL << 20)
#define EXACT_ALLOC_MMAP_BYTES (256 << 10)
/* Above it, but with less than this a thread, the slack of the arenas (a
 * few MB each, and the threads each take one) outgrows the 15% of the
 * budget that README's bound leaves: see heap_trim.h. */
#define TRIM_BELOW_PER_THREAD (64ULL << 20)

/* glibc serves a large block from its arenas once a block of that size
 * was freed (its mmap threshold rises to it), and keeps what is freed
 * there: with a reader thread per run and RocksDB's buffers, the arenas
 * held tens of MB past what was in use, as much as a small budget itself
 * (doc/DESIGN.md, "The readout's memory").  A fixed threshold gives every
 * block of 256 KiB or more its own mapping, unmapped when freed.  The
 * price, fresh pages for each such block, is paid only where the budget
 * is small, so that the default budget's speed stays as it was.  Between
 * the two, the arenas are trimmed now and then instead, which costs next
 * to nothing. */
int sort_plan_allocator(const rocksort_opts *o)
{
#ifdef __GLIBC__
    uint64_t total = sort_plan_total_memory(o);
    if (total < EXACT_ALLOC_BELOW) {
        mallopt(M_MMAP_THRESHOLD, EXACT_ALLOC_MMAP_BYTES);
        return 0;
    }
    return total / (uint64_t)(o->threads > 1 ? o->threads : 1) < TRIM_BELOW_PER_THREAD;
#else
    (void)o;
    return 0;     /* glibc's arenas and malloc_trim() only */
#endif
}

/* The budget less `batches` batches, at least `least`.  With spilled runs
 * no batch is held: the readout keeps the last batch only, the load two
 * (one filling, one being written). */
static uint64_t left_beside(const rocksort_opts *o, int batches, uint64_t least)
{
    uint64_t total = usable_memory(o), held = (uint64_t)batches * sort_plan_batch_bytes(o);
    uint64_t left = total > held ? total - held : 0;
    return left > least ? left : least;
}

uint64_t sort_plan_readers_memory(const rocksort_opts *o)
{
    return left_beside(o, 1, READOUT_MIN_MEMORY);
}

/* Under a small budget the merge passes do the merging; background merges
 * only save the readout some runs, so they get less room at the least. */
static uint64_t sort_plan_merges_memory(const rocksort_opts *o)
{
    return left_beside(o, 2, READOUT_MIN_MEMORY / 2);
}

/* Descriptors opened after the store: the index (its hidden file, held
 * locked from a resumable sort's open, and written at the commit), a CRAM
 * reference and its .fai for the input and for the output (htslib opens
 * them once it needs a sequence), and /dev/null if a failed run on stdout
 * has to divert the BGZF EOF block there. */
#define FD_RESERVE_LATER 7

/* Threads that read the spilled runs at the readout (when nothing merges
 * them in the background), each its own share of the runs: two keep the
 * -u readout from waiting on one reader; see open_streams() in readout/merge_sources.c.
 * Each also decodes its compact runs' groups, so that on many cores two
 * would be single threads that bound a readout the pool otherwise keeps
 * up with: one per READOUT_THREADS_PER_STREAM threads, up to the store's
 * limit.  A resumable store keeps two: its parts are part of its state,
 * which a rerun at another -@ must find as they were.  So do several temp
 * directories, each a database with a reader of its own: the store would
 * give each a share of more parts, rounded up, and with background merges
 * (which fill each database's first part only) read its empty ones too.
 * And so do uncompressed runs, which their readers only read: the disk
 * gave four direct readers less than two.  More parts help only a readout
 * in one stream; one in pieces (readout/readout_model.h: forced, --split,
 * or what the model takes at this level) reads every run on each piece's
 * own threads, and each part adds its groups decoded ahead to every
 * piece's readers, so fewer pieces would fit the budget. */
#define READOUT_STREAMS 2
#define READOUT_THREADS_PER_STREAM 4

static int read_as_one_stream(const rocksort_opts *o, int parts, store_codec codec)
{
    if (o->merge_threads > 1 || o->sort.split.on) return 0;
    double read = codec == STORE_CODEC_COLUMNS ? READOUT_DECODE_S_PER_GB : READOUT_READ_S_PER_GB;
    return readout_model_one_stream(o->threads, output_file_deflate_level(o->out_mode, o->out_opts),
                                    read, parts);
}

static int readout_streams(const rocksort_opts *o, int n_dirs, store_codec codec)
{
    int n = o->threads / READOUT_THREADS_PER_STREAM;
    if (o->resume_dir || n_dirs > 1 || codec != STORE_CODEC_COLUMNS || n < READOUT_STREAMS)
        return READOUT_STREAMS;
    if (n > STORE_DB_MAX_PARTS) n = STORE_DB_MAX_PARTS;
    return read_as_one_stream(o, n, codec) ? n : READOUT_STREAMS;
}

/* A spilling sort keeps many files open: during the readout every run is
 * one.  The soft RLIMIT_NOFILE is only a default below the hard limit that
 * the administrator set, and a process may raise it; tools that hold many
 * files open commonly do.  So, deliberately, rocksort raises it for the
 * whole process, once, before counting what it may use: a low soft limit
 * would otherwise force merges that the hard limit makes needless. */
static void raise_open_file_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max) return;
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static int open_file_budget(void)
{
    raise_open_file_limit();
    return fd_budget_available(FD_RESERVE_LATER);
}

#define SPILL_POOL_MIN_THREADS 3

int sort_plan_spill_pooled(const sort_job *j)
{
    return j->o->threads >= SPILL_POOL_MIN_THREADS && j->pool.pool != NULL;
}

hts_tpool *sort_plan_fill_pool(const sort_job *j)
{
    return sort_plan_spill_pooled(j) && j->o->threads >= FILL_POOL_MIN_THREADS ? j->pool.pool
                                                                               : NULL;
}

int sort_plan_parse_jobs(const sort_job *j)
{
    if (!sort_plan_fill_pool(j) || j->o->n_in != 1 || j->resume.on || j->read_lines) return 0;
    if (j->in->format.format != bam || j->in->filter || !sort_key_max_len_any(&j->sort)) return 0;
    return parse_jobs_for(j->o->threads);
}

/* Descriptors the input and the output take between the temp space check
 * and the store's open: the file itself, an index or reference. */
#define FD_INPUT_OUTPUT 4

/* How many temp directories the descriptors can hold a database in each. */
static int dirs_within_files(void)
{
    int budget = open_file_budget();
    if (budget < 0) return store_dirs_that_fit(-1);
    return store_dirs_that_fit(budget > FD_INPUT_OUTPUT ? budget - FD_INPUT_OUTPUT : 0);
}

int sort_plan_open_store(sort_job *j)
{
    const rocksort_opts *o = j->o;
    store_dir dirs[STORE_MAX_DIRS];
    const temp_dirs *td = &j->space.dirs;
    int n_dirs = 0;
    for (int i = 0; i < td->n; i++)
        if (!td->dir[i].unused) dirs[n_dirs++] = (store_dir){ td->dir[i].place, td->dir[i].weight };
    store_options so = {
        .dirs = dirs,
        .n_dirs = n_dirs,
        .size_hint = o->size_hint,
        .run_bytes = sort_plan_batch_bytes(o),
        .max_open_files = open_file_budget(),
        .background_threads = o->threads > 1 ? o->threads : 1,
        .merge_memory = sort_plan_merges_memory(o),
        .readout_memory = sort_plan_readers_memory(o),
        .state_dir = o->resume_dir,
        .identity = j->resume.identity,
        .state_stale = j->resume.stale,
        .state_discarded = &j->resume.discarded,
        .state_other = j->resume.no_input ? &j->resume.other_state : NULL,
    };
    temp_space_store_options(&j->space, &so);
    so.parts = readout_streams(o, n_dirs, so.compression);
    if (sort_plan_spill_pooled(j)) so.pool = j->pool.pool;
    errmsg err;
    thread_name_scope named;
    thread_name_push(&named, THREAD_STORE);   /* RocksDB's helper threads take the name */
    j->store = store_open(&so, &err);
    thread_name_pop(&named);
    if (!j->store && j->resume.other_state)
        return sort_job_fail("%s, and the state in '%s' cannot be finished as it is: %s",
                             j->resume.no_input, resume_fate_dir_shown(j), err.msg);
    return j->store ? 0 : sort_job_fail("%s", err.msg);
}

/* Before reading: the runs' format, and a refusal if they cannot fit. */
int sort_plan_temp_space(sort_job *j)
{
    const rocksort_opts *o = j->o;
    /* With --resume every run goes to DIR: its disk is the one that counts. */
    temp_request rq = {
        .mode = o->temp_compression, .in_fns = o->in_fns, .n_in = o->n_in,
        .dirs = o->resume_dir ? &o->resume_dir : o->tmp_dirs,
        .n_dirs = o->resume_dir ? 1 : o->n_tmp_dirs,
        .max_dirs = o->resume_dir ? 0 : dirs_within_files(),
        .dir_option = o->resume_dir ? "--resume" : "-T", .size_hint = o->size_hint,
        .memory = sort_plan_total_memory(o), .run_bytes = sort_plan_batch_bytes(o),
        .threads = o->threads > 1 ? o->threads : 1,
        .out_level = output_file_deflate_level(o->out_mode, o->out_opts),
    };
    if (o->resume_dir)
        rq.state_found = state_dir_peek(o->resume_dir, &rq.state_codec, &rq.state_bytes) == 0;
    errmsg err;
    if (temp_space_plan(&rq, &j->space, &err) < 0) return sort_job_fail("%s", err.msg);
    if (j->space.dirs_dropped)
        sort_job_warn("ulimit -n leaves room for the temporary databases of %d of the %d -T "
                      "directories: the runs go to those with the most room", j->space.dirs.n,
                      j->space.dirs.n + j->space.dirs_dropped);
    char left_out[ERRMSG_MAX];
    if (temp_space_left_out(&j->space, left_out, sizeof left_out)) sort_job_warn("%s", left_out);
    return 0;
}


/* Packed copies are held only where they cost at most this much more
 * memory than the batches held in place: they make the in-memory sort
 * faster, for a little memory where the input spans many batches. */
#define PACKED_MEMORY_MARGIN 1.10

/* Peak memory of holding `batches` batches like the first one, full.  In
 * place: each arena with its index (the scratch freed after its sort),
 * and one sort's scratch.  Packed: the copies of all but the last, beside
 * the two batches the loader refills, whole (they are full of records and
 * entries).  With few batches, or records so small that the index and its
 * scratch are a large part of a batch, the copies cost far more. */
static int packing_pays(const spill_queue *q, const batch *first, double batches)
{
    double records = (double)batch_bytes(first), index = (double)batch_index_bytes(first);
    double in_place = batches * (records + index) + index;
    double whole = batches < 2 ? batches : 2;
    double packed = (batches - 1) * records + whole * (double)q->batch_cap;
    return packed <= PACKED_MEMORY_MARGIN * in_place;
}

/* If every batch of the input is expected to fit in the memory budget,
 * the spill thread keeps them (the loader's batch is the last one, the
 * tail); writing runs would only cost time.  Packed copies need room
 * beside the two batch arenas, and must not cost much more memory than
 * the arenas themselves (packing_pays()); else the arenas are kept.  If
 * the input still outgrows the budget, the held batches are spilled then. */
static void plan_holding(sort_job *j, const batch *first, double input_batches)
{
    spill_queue *q = &j->q;
    int fit = (int)(usable_memory(j->o) / q->batch_cap);
    /* A resumable sort stores every batch: nothing held is lost to a kill. */
    if (j->resume.on) return;
    /* Slack for records further on that expand more than the first
     * batch's did; store/temp_space.c counts on the same. */
    double need = input_batches * TEMP_HOLD_SLACK;
    if (fit < 2 || need > fit) return;
    if (need + 1 <= fit && packing_pays(q, first, need) &&
        spill_allow_holding(q, fit - 2, 1) == 0)
        return;
    spill_allow_holding(q, fit - 1, 0);
}

/* Size the background merging and in-memory holding from the input files:
 * their size times the expansion seen over the first batch (BAM expands
 * about 2.5x, but aux tags and read lengths move that).  Done once, when
 * the first batch is full, before the spill thread gets it.  -s overrides
 * the estimate for merging. */
void sort_plan_from_input(sort_job *j, const batch *first, int64_t consumed, uint64_t total)
{
    j->size_planned = 1;
    if (consumed <= 0 || !total) return;
    plan_holding(j, first, (double)total / (double)consumed);
    if (j->o->size_hint) return;
    double expansion = (double)j->bytes_in / (double)consumed;
    j->size_estimate = (uint64_t)(expansion * (double)total);
    /* The first batch's records: what a run holds, fewer than the batch's
     * capacity (keys and index entries share it).  Counting the capacity
     * put 125 runs for the 168 written at -@ 2 -m 32M on the 1 GiB input.
     * A resumed sort's bytes_in counts the runs taken back too, so it is
     * shared among them and the batch. */
    uint64_t run_bytes = j->bytes_in / (store_runs_ingested(j->store) + 1);
    j->merge_width = store_merge_plan(j->store, j->size_estimate, run_bytes);
}
