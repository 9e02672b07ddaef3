/* readout/readout_plan.c -- see readout/readout_plan.h. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "readout/readout_plan.h"
#include "util/fd_budget.h"
#include "output/output_parts.h"
#include "readout/readout_model.h"
#include "readout/run_passes.h"
#include "store/store_iter.h"

/* A readout smaller than this per thread is not worth a thread (auto
 * rule only). */
#define RANGE_MIN_BYTES (32ULL << 20)
#define RANGES_MAX 64

/* The pieces the readout cuts the key space into.  Each run's share of a
 * piece is read with a seek of its own, so a piece holds at least
 * READOUT_RUN_SHARE per run; the pieces in flight (threads + 2, in memory)
 * stay within a quarter of the sort's memory.  When those two cannot both
 * hold, the automatic rule takes fewer threads or half the share a run
 * (fewer_or_smaller()), or one stream. */
#define PIECE_MIN_BYTES (4ULL << 20)
#define PIECE_MAX_BYTES (64ULL << 20)
#define PIECES_MAX 65536

/* What reading the runs back costs the model (readout/readout_model.h). */
static double read_cost(const readout_request *rq)
{
    rocks_store *st = rq->in->store;
    return !st || !store_runs_ingested(st) ? 0
         : store_grouped(st) && store_run_group_layout(st) == GROUP_COLUMNS ? READOUT_DECODE_S_PER_GB
                                                                        : READOUT_READ_S_PER_GB;
}

static int store_parts_of(const readout_request *rq)
{
    return rq->in->store ? store_parts(rq->in->store) : 1;
}

/* The merge threads asked for, before the samples are seen. */
static int readout_width(const readout_request *rq)
{
    if (strchr(rq->out_mode + 1, 'c')) return 1;
    if (rq->indexed && !rq->out->final_path) return 1;
    if (rq->merge_threads > 0) return rq->merge_threads < RANGES_MAX ? rq->merge_threads : RANGES_MAX;
    int level = output_file_deflate_level(rq->out_mode, rq->out_opts);
    return readout_model_ranges_for(rq->threads, level, read_cost(rq), store_parts_of(rq), rq->bytes,
                                    RANGE_MIN_BYTES, RANGES_MAX);
}

/* Samples of a sorted batch: an entry every ~STORE_SAMPLE_BYTES. */
static void sample_batch(key_samples *s, const batch *sb)
{
    size_t n = batch_count(sb), len;
    if (!n) return;
    size_t step = n / (batch_bytes(sb) / STORE_SAMPLE_BYTES + 1) + 1;
    uint64_t weight = (uint64_t)((double)batch_bytes(sb) * (double)step / (double)n);
    for (size_t i = 0; i < n; i += step) {
        const uint8_t *k = batch_key(sb, i, &len);
        key_samples_add(s, k, len, weight);
    }
}

/* Samples of a packed run: its marks, each weighing the bytes to the next. */
static void sample_packed(key_samples *s, const packed_run *pr)
{
    size_t n = batch_packed_marks(pr), len;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *rec = batch_packed_mark(pr, i);
        const uint8_t *next = i + 1 < n ? batch_packed_mark(pr, i + 1) : NULL;
        uint64_t weight = next ? (uint64_t)(next - rec) : STORE_SAMPLE_BYTES / 4;
        const uint8_t *k = packed_key(rec, &len);
        key_samples_add(s, k, len, weight);
    }
}

void readout_plan_samples(const readout_input *in, key_samples *s)
{
    for (size_t i = 0; in->store && i < store_samples(in->store); i++) {
        const key_sample *x = store_sample_at(in->store, i);
        key_samples_add(s, x->key, x->len, x->weight);
    }
    for (int i = 0; in->kept && i < in->n_held; i++) sample_batch(s, in->kept[i]);
    for (int i = 0; in->packed && i < in->n_held; i++) sample_packed(s, in->packed[i]);
    sample_batch(s, in->tail);
}

static uint64_t spilled_runs(const readout_request *rq)
{
    return rq->in->store ? (uint64_t)store_sorted_runs(rq->in->store) : 0;
}

/* A piece's share of its records' bytes while it waits in memory: it is
 * held compressed, at the output's level. */
static double held_share(const readout_request *rq)
{
    return output_file_deflate_level(rq->out_mode, rq->out_opts) > 0 ? READOUT_COMPRESSED_SHARE : 1.0;
}

/* What bounds the pieces: a quarter of the memory for the k + 2 in flight,
 * held compressed at the output's level. */
static readout_room piece_room(const readout_request *rq)
{
    readout_room r = { .runs = rq->in->store ? store_straddled_runs(rq->in->store) : 0,
                       .piece_min = PIECE_MIN_BYTES,
                       .piece_max = PIECE_MAX_BYTES,
                       .room = (uint64_t)((double)(rq->memory / 4) / held_share(rq)) };
    return r;
}

/* The bytes of records in one piece for k threads; 0 when the runs are
 * too many for pieces that fit in memory.  --merge-threads takes the
 * pieces that fit, however small (PIECE_MIN_BYTES at least). */
static uint64_t piece_bytes(const readout_request *rq, int k)
{
    readout_room room = piece_room(rq);
    uint64_t piece = readout_model_piece(&room, k, READOUT_RUN_SHARE);
    if (piece || !rq->merge_threads) return piece;
    uint64_t fits = room.room / (uint64_t)(k + 2);
    if (fits > PIECE_MAX_BYTES) fits = PIECE_MAX_BYTES;
    return fits < PIECE_MIN_BYTES ? PIECE_MIN_BYTES : fits;
}

/* Where the automatic rule's k threads' pieces do not fit: fewer threads,
 * or pieces of half the share a run, whichever the model finds faster, or
 * one stream (0).  Falling back to one stream at once left one chain of
 * single threads bounding the readout on many cores. */
static uint64_t fewer_or_smaller(const readout_request *rq, int *k)
{
    readout_room room = piece_room(rq);
    int level = output_file_deflate_level(rq->out_mode, rq->out_opts);
    readout_shape shape = readout_model_fewer_or_smaller(&room, *k, rq->threads, level,
                                                         read_cost(rq), store_parts_of(rq));
    *k = shape.k;
    return shape.piece;
}

static int pieces_for(const readout_request *rq, uint64_t piece, int threads)
{
    uint64_t n = (rq->bytes + piece - 1) / piece;
    if (n < (uint64_t)threads) n = (uint64_t)threads;
    return n > PIECES_MAX ? PIECES_MAX : (int)n;
}

/* The in-memory files the pieces pass through; none: one stream. */
static int open_slots(range_plan *p)
{
    p->n_slots = p->threads + 2;
    p->slot_fd = malloc((size_t)p->n_slots * sizeof *p->slot_fd);
    if (!p->slot_fd) return -1;
    for (int i = 0; i < p->n_slots; i++) p->slot_fd[i] = -1;
    for (int i = 0; i < p->n_slots; i++)
        if ((p->slot_fd[i] = output_parts_slot_create()) < 0) return -1;
    return 0;
}

/* Each merge thread holds a slot and its writer's descriptor, with two
 * slots more: the readout takes at most half of the descriptors still free
 * under `ulimit -n`, leaving the rest to RocksDB's tables. */
static int within_descriptors(int k)
{
    int spare = fd_budget_available(0);
    while (spare >= 0 && k > 1 && 2 * k + 2 > spare / 2) k--;
    return k;
}

/* Each run's reader fetches at most its share of a piece at a time: more
 * would be read twice, by the next piece's reader too. */
static size_t piece_share(const readout_request *rq, const range_plan *p)
{
    uint64_t runs = spilled_runs(rq);
    uint64_t share = rq->bytes / (uint64_t)p->n / (runs ? runs : 1);
    if (share < READERS_MIN_READAHEAD) share = READERS_MIN_READAHEAD;
    return share > STORE_DIRECT_READAHEAD ? STORE_DIRECT_READAHEAD : (size_t)share;
}

/* The pieces in flight, held compressed in memory: (threads + 2) of them. */
static uint64_t pieces_held(const readout_request *rq, int threads, uint64_t piece)
{
    return (uint64_t)((double)piece * held_share(rq)) * (uint64_t)(threads + 2);
}

/* The most merge threads, k at most, whose readers (at the smallest
 * readahead), writers and pieces in flight fit the readers' memory. */
static int within_memory(const readout_request *rq, const run_readers_shape *s, int k,
                         uint64_t piece)
{
    for (; k > 1; k--) {
        uint64_t held = pieces_held(rq, k, piece);
        if (held < rq->readers && run_readers_threads(s, READERS_MIN_READAHEAD,
                                                      rq->readers - held, k) == k)
            break;
    }
    return k;
}

/* Each run's reader fetches the most that one merge's share of the
 * readers' memory holds (the smallest readahead if even that is too
 * much: the passes did what they could). */
static size_t merge_readahead(const readout_request *rq, const run_readers_shape *s, int threads,
                              uint64_t held)
{
    uint64_t left = rq->readers > held ? rq->readers - held : 0;
    uint64_t each = left / (uint64_t)threads;
    if (threads > 1) each = each > READOUT_THREAD_BYTES ? each - READOUT_THREAD_BYTES : 0;
    size_t r = run_readers_fit(s, each);
    return r ? r : READERS_MIN_READAHEAD;
}

int readout_plan_ranges(const readout_request *rq, range_plan *p, errmsg *err)
{
    memset(p, 0, sizeof *p);
    p->n = p->threads = 1;
    run_readers_shape shape = run_passes_readers(rq->in->store);
    p->readahead = merge_readahead(rq, &shape, 1, 0);
    int k = within_descriptors(readout_width(rq));
    uint64_t piece = k < 2 ? 0 : piece_bytes(rq, k);
    if (k >= 2 && !piece) piece = fewer_or_smaller(rq, &k);
    if (piece) k = within_memory(rq, &shape, k, piece);
    if (!piece || k < 2) return 0;
    int want = pieces_for(rq, piece, k);
    p->splits = malloc((size_t)(want - 1) * sizeof *p->splits);
    if (!p->splits) return errmsg_set(err, "out of memory for the final merge");
    readout_plan_samples(rq->in, &p->samples);
    p->n = 1 + key_samples_split(&p->samples, want, p->splits);
    p->threads = p->n < k ? p->n : k;
    if (p->n > 1 && open_slots(p) < 0) {    /* no memfd here: one stream after all */
        readout_plan_free(p);
        p->n = p->threads = 1;
        p->readahead = merge_readahead(rq, &shape, 1, 0);
        return 0;
    }
    if (p->n > 1) {
        size_t share = piece_share(rq, p);
        p->readahead = merge_readahead(rq, &shape, p->threads, pieces_held(rq, p->threads, piece));
        if (share < p->readahead) p->readahead = share;
    }
    return 0;
}

void readout_plan_free(range_plan *p)
{
    for (int i = 0; p->slot_fd && i < p->n_slots; i++)
        if (p->slot_fd[i] >= 0) close(p->slot_fd[i]);
    free(p->slot_fd);
    free(p->splits);
    key_samples_free(&p->samples);
    memset(p, 0, sizeof *p);
}
