/* keys/minimiser.h -- the minimiser hash samtools sort -M computes for reads
 * without a reference (tid -1), and the -I index that turns a hash into a
 * position in a reference FASTA.
 *
 * Contract: minimiser_read_key() gives, for one read, the values samtools 1.24
 * orders such reads by (a 62-bit key, ascending, then a tie value,
 * descending) and whether samtools stores the read reverse-complemented.
 * minimiser_reverse_complement() does that to a record exactly as samtools does.
 */
#ifndef MINIMISER_H
#define MINIMISER_H

#include <stdint.h>
#include <htslib/sam.h>

/* -K's range: a k-mer's 2-bit bases fill at most 62 bits. */
#define MM_KMER_MIN 1
#define MM_KMER_MAX 31
static inline int mm_kmer_clamp(int k)
{
    return k < MM_KMER_MIN ? MM_KMER_MIN : k > MM_KMER_MAX ? MM_KMER_MAX : k;
}

typedef struct {
    int kmer;       /* -K, MM_KMER_MIN..MM_KMER_MAX */
    int window;     /* -w, used only to build the index */
    int squash;     /* -H: runs of one base count as one base */
    int try_rev;    /* not -R: the reverse strand may give the minimum */
} mm_params;

typedef struct mm_index mm_index;

/* Builds the -I index from every sequence of fn (FASTA, or anything htslib
 * reads).  Returns NULL on failure, with errno set when a system call
 * failed. */
mm_index *minimiser_index_build(const char *fn, const mm_params *p);
void minimiser_index_free(mm_index *ix);

typedef struct {
    uint64_t key;   /* sorts ascending */
    int64_t tie;    /* sorts descending (samtools keeps it in isize) */
    int rev;        /* samtools reverse-complements the read */
} mm_result;

/* ix may be NULL (no -I). */
mm_result minimiser_read_key(const bam1_t *b, const mm_params *p, const mm_index *ix);

/* Reverses and complements SEQ (with samtools' base table), reverses QUAL
 * and flips BAM_FREVERSE. */
void minimiser_reverse_complement(bam1_t *b);

#endif
