/* resume/resume_identity.h -- what a rerun must match to resume a state.
 *
 * Contract: resume_identity() writes, one line each, everything that
 * decides which records a state's runs hold and in what order, so that a
 * rerun whose text differs starts afresh (store/store_state.h compares it).
 * - Each input file, in order (several counted first), by its real path,
 *   inode, size, modification time (in nanoseconds), header (a hash of its
 *   text, header_hashes), and a digest of IDENTITY_SAMPLES blocks of
 *   IDENTITY_SAMPLE_BYTES spread over it, first and last included.  An
 *   edit that keeps all of them (the same inode and size, the mtime put
 *   back, no sampled byte changed) is not seen here: it changes the
 *   ctime, which is not here either (a chmod changes it too) but in the
 *   notes, with a CRC-32 of the stored bytes (engine/resume_recheck.h).
 *   The device number is left out: a network file system's differs from
 *   node to node and from mount to mount, so it would lose the state of a
 *   job requeued on another node.
 * - A stream only as such: its header and records are checked as it is
 *   read again (engine/sort_resume.h).
 * - The order and its parameters, --split's tag and padding (only with
 *   --split: the keys start with its values); the reference (--reference, an input
 *   option reference=) and -I's FASTA by their real paths; every other
 *   input option but those that only tune reading (nthreads, block_size).
 * - The host's layout of the stored values (byte order, bam1_core_t's size).
 * Options that change neither the records nor their order (-@, -m, -l, -o,
 * -O, -T, -s, -v, --verify, --write-index) are not in it.
 * Returns the malloc'd text, or NULL with the cause in err: a reference or
 * -I file that does not exist (a relative path from another directory),
 * before any state is touched; an input file that cannot be read.
 */
#ifndef RESUME_IDENTITY_H
#define RESUME_IDENTITY_H

#include <htslib/hts.h>
#include "keys/sort_key.h"
#include "util/errmsg.h"

#define IDENTITY_SAMPLES 16
#define IDENTITY_SAMPLE_BYTES 4096

typedef struct {
    const char *const *in_fns;      /* the input files, or NULL for one stream */
    const uint64_t *header_hashes;  /* each one's header text, hashed */
    int n_in;
    const sort_spec *sort;
    const char *reference;          /* --reference, or NULL */
    const hts_opt *in_opts;         /* --input-fmt-option */
} identity_request;

char *resume_identity(const identity_request *rq, errmsg *err);

/* For a rerun given no input, which can only finish a state as it is:
 * `now` (a stream's identity) with the lines that describe the input taken
 * from `stored`, a state's, so that it matches when only the input
 * differs.  Malloc'd; NULL if either does not parse or memory runs out. */
char *resume_identity_with_input_of(const char *now, const char *stored);

/* How many input files the identity names (0 for a stream's), with their
 * real paths quoted into names, ", " between them, cut to fit size. */
int resume_identity_files(const char *identity, char *names, size_t size);

#endif
