/* resume/resume_state.h -- how far a resumable sort got, as its runs record it.
 *
 * Contract: a resume_note travels with each run into the store's journal
 * (store/store_state.h): where the input's next record starts once the run's
 * batch was full (which of several inputs, and where in it, in one of three
 * kinds of position), and the counts and checksums of every record before
 * it; for a file, its ctime and a CRC-32 of the bytes those records lie in,
 * and of the files read whole before it, for a rerun that finds a ctime
 * changed (engine/resume_recheck.h).  resume_state_note_encode() and resume_state_note_decode()
 * turn it into bytes and back; resume_state_note_decode() returns -1 for bytes that are
 * not a note.  resume_state is what the engine keeps of it during a sort
 * (engine/sort_job.h, engine/sort_resume.h).
 */
#ifndef RESUME_STATE_H
#define RESUME_STATE_H

#include <stddef.h>
#include <stdint.h>
#include "util/byte_io.h"

/* bgzf_tell()'s virtual offset: the block's file offset, shifted left by
 * this many bits, then the offset within the block. */
#define BGZF_WITHIN_BLOCK_BITS 16

/* How a position finds the next record again. */
typedef enum {
    POS_BGZF = 1,       /* a BGZF virtual offset: BAM, bgzipped SAM */
    POS_BYTES,          /* a byte offset: plain SAM, read without threads */
    POS_RECORDS         /* a record count: CRAM, other inputs, and any stream */
} position_kind;

typedef struct {
    uint64_t input;             /* the input (of several) the next record is in */
    uint64_t input_first;       /* the number of that input's first record */
    uint64_t kind, pos;         /* position_kind, and where in that input the next record starts */
    uint64_t records;           /* records before it: the next one's sequence number */
    uint64_t bytes;             /* their decoded bytes */
    uint64_t digest;            /* --verify's sum of their digests, */
    uint64_t digested;          /* if every one of them was digested (else 0) */
    uint64_t stream_hash;       /* a stream's: an order-dependent hash of them */
    uint64_t placed;            /* a placed record was among them (-M) */
    uint64_t micros;            /* loading time spent on them, over every run of the sort */
    uint64_t ctime;             /* a file's: its status change time when the run began (ns) */
    uint64_t prefix_bytes;      /* a file's first bytes, holding every record before pos: */
    uint64_t prefix_crc;        /* their CRC-32; 0 bytes when the kind has no byte offset */
    uint64_t done_ctimes;       /* the inputs before `input`: their ctimes hashed, */
    uint64_t done_crcs;         /* and their whole bytes' CRC-32s (0: not known) */
} resume_note;

void resume_state_note_encode(const resume_note *n, byte_writer *w);
int resume_state_note_decode(const uint8_t *p, size_t len, resume_note *n);

typedef struct {
    int on;                     /* --resume given */
    int input_stored;           /* the state holds the whole input: none is read */
    position_kind kind;         /* of the input's positions (the one being read) */
    uint64_t pos_before;        /* the position before the record being read */
    int hash_stream;            /* a stream: its records are hashed (stream_hash) */
    uint64_t stream_hash;
    int digested;               /* digest_in covers every record read so far */
    int seeked;                 /* the input was moved past its stored records */
    char *header_text;          /* the input's header as read, kept in the state */
    char *identity;             /* what a rerun must match (engine/sort_resume.c) */
    uint64_t runs_taken, records_taken, bytes_skipped;
    double seconds_before;      /* loading time of the earlier runs of the sort */
    double load_started;        /* this run's load phase began (now_seconds()) */
    const char *state_wrong;    /* why the state itself is wrong: it goes (engine/resume_fate.h) */
    int discarded;              /* the store discarded an earlier state, then failed to open */
    char *no_input;             /* NULL, or why there is no input ("standard input is
                                   empty"): only a state of the whole input is finished */
    int other_state;            /* with no input: DIR holds another sort's state, kept */
    char *dir_shown;            /* DIR as messages name it: its real path once it exists */
    int prefix_fd;              /* a file opened again for its prefix's CRC, or -1 */
    int prefix_lost;            /* reading it failed: notes hold no prefix from then on */
    uint64_t ctime, size;       /* the file's, as this run began (ctime in ns) */
    uint64_t prefix_bytes;      /* the prefix checksummed so far, */
    uint32_t prefix_crc;        /* and its CRC-32 */
    uint64_t done_ctimes, done_crcs;    /* of the inputs read whole (resume_note), */
    int done_lost;              /* and a CRC of one of them not known */
    char *stale;                /* why a state of this identity must still go, or NULL */
} resume_state;

#endif
