/* store/run_readers.c -- see store/run_readers.h. */
#include "store/run_readers.h"
#include "store/store_types.h"

/* A decoded group: its records, their offsets (two words per record of a
 * few hundred bytes) and the allocator's rounding.  Its columns, while it
 * is decoded, take about its records' bytes, and the feed keeps its
 * decoders' state (READERS_FEED_DECODER_BYTES). */
static uint64_t group_decoded_bytes(size_t group_bytes)
{
    return (uint64_t)(group_bytes ? group_bytes : STORE_GROUP_BYTES) * 9 / 8;
}

static uint64_t group_columns_bytes(size_t group_bytes)
{
    return (group_bytes ? group_bytes : STORE_GROUP_BYTES) + READERS_FEED_DECODER_BYTES;
}
#define CHUNK_MIN_BYTES (64u << 10)
#define CHUNK_MAX_BYTES (1u << 20)

size_t run_readers_chunk_bytes(size_t readahead)
{
    size_t c = readahead / 2;
    return c < CHUNK_MIN_BYTES ? CHUNK_MIN_BYTES : c > CHUNK_MAX_BYTES ? CHUNK_MAX_BYTES : c;
}

uint64_t run_readers_per_run(size_t readahead, int block_codec)
{
    uint64_t blocks = block_codec ? 3 : 2;
    return (uint64_t)readahead + blocks * STORE_BLOCK_BYTES;
}

uint64_t run_readers_bytes(const run_readers_shape *s, size_t readahead)
{
    uint64_t b = s->runs * run_readers_per_run(readahead, s->block_codec);
    uint64_t parts = s->parts > 0 ? (uint64_t)s->parts : 0;
    if (s->grouped) {
        uint64_t decoded = group_decoded_bytes(s->group_bytes);
        b += s->groups * decoded
             + parts * ((uint64_t)s->ahead * decoded + group_columns_bytes(s->group_bytes));
    } else {
        b += parts * STREAM_CHUNKS * run_readers_chunk_bytes(readahead);
    }
    return b;
}

size_t run_readers_fit(const run_readers_shape *s, uint64_t memory)
{
    if (run_readers_bytes(s, READERS_MIN_READAHEAD) > memory) return 0;
    size_t lo = READERS_MIN_READAHEAD, hi = STORE_DIRECT_READAHEAD;
    if (run_readers_bytes(s, hi) <= memory) return hi;
    while (hi - lo > (16u << 10)) {     /* the largest that fits, to 16 KiB */
        size_t mid = lo + (hi - lo) / 2;
        if (run_readers_bytes(s, mid) <= memory) lo = mid;
        else hi = mid;
    }
    return lo & ~(size_t)4095;
}

size_t run_readers_group_bytes(uint64_t runs, uint64_t files, int parts, uint64_t memory)
{
    run_readers_shape s = { .runs = files, .groups = runs, .grouped = 1, .parts = parts,
                            .ahead = READERS_FEED_AHEAD, .group_bytes = STORE_GROUP_BYTES };
    if (run_readers_bytes(&s, READERS_MIN_READAHEAD) <= memory) return STORE_GROUP_BYTES;
    /* The runs are an estimate: room to spare first, then just fitting. */
    size_t readahead[2] = { READERS_GROUPS_READAHEAD, READERS_MIN_READAHEAD };
    for (int r = 0; r < 2; r++)
        for (s.group_bytes = STORE_GROUP_BYTES / 2; s.group_bytes >= STORE_GROUP_MIN_BYTES;
             s.group_bytes /= 2)
            if (run_readers_bytes(&s, readahead[r]) <= memory) return s.group_bytes;
    return STORE_GROUP_BYTES;
}

int run_readers_threads(const run_readers_shape *s, size_t readahead, uint64_t memory, int k)
{
    uint64_t each = run_readers_bytes(s, readahead) + READOUT_THREAD_BYTES;
    while (k > 1 && (uint64_t)k * each > memory) k--;
    return k;
}
