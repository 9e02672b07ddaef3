/* keys/minimiser.c -- see keys/minimiser.h.
 *
 * What samtools 1.24 does (bam_sort.c, -M/-K/-R/-H/-I/-w), restated:
 *  - A k-mer's hash is its 2-bit code (A0 C1 G2 T3, other bases 0) XORed
 *    with a fixed constant, masked to 2k bits.  The reverse strand uses the
 *    complement codes, built right to left.  With -H a base equal to the one
 *    before it is skipped.
 *  - Without -I, a read's key is its smallest hash (the reverse strand wins
 *    only if strictly smaller) plus 2^30, and the tie value is 65535 minus
 *    the k-mer's start (0 at least); the bigger tie value sorts first.
 *  - -I walks each reference sequence of at least -w bases in windows and
 *    records each window's smallest hash with its position in the
 *    concatenated reference; a hash seen twice is marked as repeated (and
 *    keeps the later position).  A read then prefers hashes found once in
 *    the index, then repeated ones, then any; the key is the indexed
 *    position (or the bare hash) minus the k-mer's place in the read, and
 *    the tie value is 0.
 *  - samtools stores the key in the pos and mpos fields (31 bits each), so
 *    only its low 62 bits count.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "keys/minimiser.h"

#define HASH_SCRAMBLE 0xdead7878beef7878ULL
#define KEY_BITS_KEPT ((1ULL << 62) - 1)
#define REPEAT_BIT (1ULL << 60)
#define POSITION_BITS (REPEAT_BIT - 1)
#define PLAIN_KEY_OFFSET (1ULL << 30)
#define PLAIN_TIE_BASE 65535

/* 2-bit codes indexed by htslib's 4-bit base codes (=ACMGRSVTWYHKDBN). */
static const uint8_t fwd_code[16] = { 0, 0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0 };
static const uint8_t rev_code[16] = { 0, 3, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };

/* ---- the -I index: a hash table from k-mer hash to position ---- */

struct mm_index {
    uint64_t *keys, *vals;
    uint8_t *used;
    size_t cap, n;      /* cap: a power of two, at most half full */
};

static uint64_t scramble(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static size_t probe(const mm_index *ix, uint64_t key)
{
    size_t i = (size_t)scramble(key) & (ix->cap - 1);
    while (ix->used[i] && ix->keys[i] != key) i = (i + 1) & (ix->cap - 1);
    return i;
}

static const uint64_t *index_find(const mm_index *ix, uint64_t key)
{
    if (!ix || !ix->cap) return NULL;
    size_t i = probe(ix, key);
    return ix->used[i] ? &ix->vals[i] : NULL;
}

static int index_grow(mm_index *ix)
{
    mm_index bigger = { 0 };
    bigger.cap = ix->cap ? ix->cap * 2 : 1024;
    bigger.keys = malloc(bigger.cap * sizeof *bigger.keys);
    bigger.vals = malloc(bigger.cap * sizeof *bigger.vals);
    bigger.used = calloc(bigger.cap, 1);
    if (!bigger.keys || !bigger.vals || !bigger.used) {
        free(bigger.keys);
        free(bigger.vals);
        free(bigger.used);
        return -1;
    }
    for (size_t i = 0; i < ix->cap; i++) {
        if (!ix->used[i]) continue;
        size_t j = probe(&bigger, ix->keys[i]);
        bigger.used[j] = 1;
        bigger.keys[j] = ix->keys[i];
        bigger.vals[j] = ix->vals[i];
    }
    bigger.n = ix->n;
    free(ix->keys);
    free(ix->vals);
    free(ix->used);
    *ix = bigger;
    return 0;
}

/* Records pos for key; a key already present is marked as repeated. */
static int index_put(mm_index *ix, uint64_t key, uint64_t pos)
{
    if (2 * (ix->n + 1) > ix->cap && index_grow(ix) < 0) return -1;
    size_t i = probe(ix, key);
    int repeated = ix->used[i];
    if (!repeated) {
        ix->used[i] = 1;
        ix->keys[i] = key;
        ix->n++;
    }
    ix->vals[i] = pos + (repeated ? REPEAT_BIT : 0);
    return 0;
}

void minimiser_index_free(mm_index *ix)
{
    if (!ix) return;
    free(ix->keys);
    free(ix->vals);
    free(ix->used);
    free(ix);
}

/* ---- hashing ---- */

static uint64_t kmer_mask(int k)
{
    return (1ULL << (2 * k)) - 1;
}

/* The smallest forward hash of the k-mers ending in [from, to).  *at is the
 * index of the chosen k-mer's last base, or from if there is none. */
static uint64_t min_forward(const uint8_t *seq, int64_t from, int64_t to,
                            const mm_params *p, int64_t *at)
{
    const uint64_t mask = kmer_mask(p->kmer);
    uint64_t h = 0, best = UINT64_MAX;
    int64_t i = from, best_at = from;
    int last = -1;
    for (int filled = 0; filled < p->kmer - 1 && i < to; i++) {
        int base = bam_seqi(seq, i);
        if (p->squash && base == last) continue;
        last = base;
        h = (h << 2) | fwd_code[base];
        filled++;
    }
    for (; i < to; i++) {
        int base = bam_seqi(seq, i);
        if (p->squash && base == last) continue;
        last = base;
        h = (h << 2) | fwd_code[base];
        uint64_t x = (h ^ HASH_SCRAMBLE) & mask;
        if (x < best) {
            best = x;
            best_at = i;
        }
    }
    *at = best_at;
    return best;
}

/* The same on the reverse strand of the whole read; *at is where samtools
 * places the k-mer, counted from the read's other end. */
static uint64_t min_reverse(const uint8_t *seq, int64_t len, const mm_params *p, int64_t *at)
{
    const int shift = 2 * (p->kmer - 1);
    const uint64_t scr = HASH_SCRAMBLE & kmer_mask(p->kmer);
    uint64_t h = 0, best = UINT64_MAX;
    int64_t i = 0, best_at = 0;
    int last = -1;
    for (int filled = 0; filled < p->kmer - 1 && i < len; i++) {
        int base = bam_seqi(seq, i);
        if (p->squash && base == last) continue;
        last = base;
        h = (h >> 2) | ((uint64_t)rev_code[base] << shift);
        filled++;
    }
    for (; i < len; i++) {
        int base = bam_seqi(seq, i);
        if (p->squash && base == last) continue;
        last = base;
        h = (h >> 2) | ((uint64_t)rev_code[base] << shift);
        if ((h ^ scr) < best) {
            best = h ^ scr;
            best_at = len - i + p->kmer - 2;
        }
    }
    *at = best_at;
    return best;
}

typedef struct {
    uint64_t hash;
    int64_t at;     /* index of the k-mer's last base on its strand */
    int found;      /* bit 1: a repeated k-mer was seen, bit 2: a unique one */
} indexed_pick;

/* One strand against the index: the smallest k-mer seen once in the index,
 * else the smallest repeated one, else the smallest of all.  The lookups
 * happen exactly when samtools makes them, since what is found changes
 * which later k-mers get looked up. */
static indexed_pick pick_indexed(const uint8_t *seq, int64_t len, const mm_params *p,
                                 const mm_index *ix, int reverse)
{
    const uint64_t mask = kmer_mask(p->kmer), scr = HASH_SCRAMBLE & mask;
    const int shift = 2 * (p->kmer - 1);
    uint64_t h = 0, any = UINT64_MAX, unique = UINT64_MAX, repeated = UINT64_MAX;
    int64_t i = 0, any_at = 0, unique_at = 0, repeated_at = 0;
    int last = -1, found = 0;
    for (int filled = 0; filled < p->kmer - 1 && i < len; i++) {
        int base = bam_seqi(seq, i);
        if (p->squash && base == last) continue;
        last = base;
        h = reverse ? (h >> 2) | ((uint64_t)rev_code[base] << shift) : (h << 2) | fwd_code[base];
        filled++;
    }
    for (; i < len; i++) {
        int base = bam_seqi(seq, i);
        if (p->squash && base == last) continue;
        last = base;
        h = reverse ? (h >> 2) | ((uint64_t)rev_code[base] << shift)
                    : ((h << 2) | fwd_code[base]) & mask;
        uint64_t x = h ^ scr;
        int kind = 0;
        if (unique > x || (found < 2 && repeated > x)) {
            const uint64_t *v = index_find(ix, x);
            if (v) kind = (*v & REPEAT_BIT) ? 1 : 2;
        }
        found |= kind;
        if (kind == 2) {
            unique = x;
            unique_at = i;
        } else if (kind == 1) {
            repeated = x;
            repeated_at = i;
        } else if (any > x) {
            any = x;
            any_at = i;
        }
    }
    if (unique != UINT64_MAX) return (indexed_pick){ unique, unique_at, found };
    if (repeated != UINT64_MAX) return (indexed_pick){ repeated, repeated_at, found };
    return (indexed_pick){ any, any_at, found };
}

static mm_result key_with_index(const bam1_t *b, const mm_params *p, const mm_index *ix)
{
    const uint8_t *seq = bam_get_seq(b);
    int64_t len = b->core.l_qseq;
    mm_result r = { 0, 0, 0 };
    indexed_pick f = pick_indexed(seq, len, p, ix, 0);
    uint64_t hash = f.hash;
    int64_t at = f.at;
    if (p->try_rev) {
        indexed_pick rv = pick_indexed(seq, len, p, ix, 1);
        if ((f.hash > rv.hash || (!f.found && rv.found)) && (!f.found || rv.found)) {
            hash = rv.hash;
            at = len - rv.at + p->kmer - 2;
            r.rev = 1;
        }
    }
    const uint64_t *v = index_find(ix, hash);
    if (v) hash = *v & POSITION_BITS;
    if (hash == UINT64_MAX) hash = 0;
    r.key = (hash - (uint64_t)at) & KEY_BITS_KEPT;
    return r;
}

mm_result minimiser_read_key(const bam1_t *b, const mm_params *p, const mm_index *ix)
{
    if (ix) return key_with_index(b, p, ix);
    const uint8_t *seq = bam_get_seq(b);
    int64_t len = b->core.l_qseq, at;
    mm_result r = { 0, 0, 0 };
    uint64_t best = min_forward(seq, 0, len, p, &at);
    if (p->try_rev) {
        int64_t rat;
        uint64_t rbest = min_reverse(seq, len, p, &rat);
        if (rbest < best) {
            best = rbest;
            at = rat;
            r.rev = 1;
        }
    }
    int64_t start = at - (p->kmer - 1);
    r.tie = PLAIN_TIE_BASE - start >= 0 ? PLAIN_TIE_BASE - start : 0;
    r.key = (best + PLAIN_KEY_OFFSET) & KEY_BITS_KEPT;
    return r;
}

mm_index *minimiser_index_build(const char *fn, const mm_params *p)
{
    mm_index *ix = calloc(1, sizeof *ix);
    samFile *in = sam_open(fn, "r");
    sam_hdr_t *h = in ? sam_hdr_read(in) : NULL;
    bam1_t *b = bam_init1();
    int r = -2;
    uint64_t offset = 0;    /* of this sequence in the concatenated reference */
    if (!ix || !h || !b) goto done;
    while ((r = sam_read1(in, h, b)) >= 0) {
        int64_t len = b->core.l_qseq, pos = 0;
        if (len < p->window) continue;
        for (int last_window = 0; !last_window; ) {
            int64_t from = pos, to = pos + p->window < len ? pos + p->window : len, at;
            uint64_t hash = min_forward(bam_get_seq(b), from, to, p, &at);
            pos = at - (p->kmer - 1);
            last_window = to == len;
            if (index_put(ix, hash, offset + (uint64_t)pos) < 0) {
                r = -2;
                goto done;
            }
            pos = from + p->kmer > pos + 1 ? from + p->kmer : pos + 1;
        }
        offset += (uint64_t)len;
    }
done:
    if (b) bam_destroy1(b);
    if (h) sam_hdr_destroy(h);
    if (in) sam_close(in);
    if (r < -1) {
        if (!errno) errno = EINVAL;
        minimiser_index_free(ix);
        return NULL;
    }
    return ix;
}

void minimiser_reverse_complement(bam1_t *b)
{
    /* samtools' complement table, by 4-bit code: note that it leaves Y as Y
     * (not R) and turns = into N. */
    static const uint8_t comp[16] = { 15, 8, 4, 12, 2, 10, 6, 14, 1, 9, 10, 13, 3, 11, 7, 15 };
    uint8_t *seq = bam_get_seq(b), *qual = bam_get_qual(b);
    int64_t i = 0, j = (int64_t)b->core.l_qseq - 1;
    for (; i < j; i++, j--) {
        int x = bam_seqi(seq, i), y = bam_seqi(seq, j);
        bam_set_seqi(seq, i, comp[y]);
        bam_set_seqi(seq, j, comp[x]);
        uint8_t q = qual[i];
        qual[i] = qual[j];
        qual[j] = q;
    }
    if (i == j) bam_set_seqi(seq, i, comp[bam_seqi(seq, i)]);
    b->core.flag ^= BAM_FREVERSE;
}
