/* output/split_set.h -- --split's outputs: one file per value, written one at a time per writer.
 *
 * Contract: a split sort writes one output per group of its keys
 * (keys/split_key.h): each value's records, and the records without one.
 * split_set_open() makes the hidden directory they are written in
 * (output/split_dir.h), before the sort starts; with split by @RG it also
 * names every @RG line's output and refuses, before the sort, an ID that
 * split_key_value_refused() refuses or two IDs with one name.
 * split_set_header() takes the sorted header (its @HD set) before the
 * first output is begun.  A writer then, for each group in turn,
 * split_set_begin()s its output in the hidden directory (the header
 * written, --write-index's index begun), writes the records to f->fp and
 * split_set_end()s it (the index saved, the file closed): one output
 * open per writer, whatever the number of groups.  Writers may run on
 * threads of their own, each with its own groups.  split_set_fill() then
 * writes the outputs that have no record: every @RG line's (samtools split
 * writes them), and --split-other's file.
 * The headers are samtools 1.24 split's (bam_split.c): by @RG, a value's
 * output keeps the @RG lines of its ID alone (sam_hdr_remove_except()),
 * and the other outputs keep every line.
 * split_set_commit() names the outputs (output/split_names.h): %# is, by
 * @RG, the @RG line's number, else the value's rank by its first record in
 * the sort's order (the order in which split, reading the sorted file,
 * meets the values); the records without a value go to --split-other's
 * file, else to FORMAT with SPLIT_NAMES_UNACCOUNTED for %! and %#.  Two
 * outputs (or indexes) that would have one name fail the commit, naming
 * both values, before any is renamed.  Then every output and index is
 * renamed out of the hidden directory with the mode, group and owner of
 * the file it replaces (output/output_attrs.h), with signals held: a
 * rename that fails takes back those done, so that no output is left
 * under its final name; once all are renamed the run is finished
 * (cleanup_mark_finished()).  split_set_free() removes the hidden
 * directory with anything still in it.  Each returns 0, or -1 with the
 * cause in err.
 */
#ifndef SPLIT_SET_H
#define SPLIT_SET_H

#include <stddef.h>
#include <stdint.h>
#include <htslib/sam.h>
#include <htslib/thread_pool.h>
#include "keys/split_key.h"
#include "util/errmsg.h"

typedef struct {
    const char *format;         /* -o's FORMAT */
    const char *index_format;   /* --write-index: the index's FORMAT; NULL: none */
    int index_min_shift;        /* 0: BAI (CRAI for CRAM), 14: CSI */
    const char *other;          /* --split-other FILE, or NULL */
    const char *in_fn;          /* %*'s */
    const char *mode;           /* the htslib mode of every output ("wb6") */
    const hts_opt *opts;        /* --output-fmt-option */
    const char *reference;      /* CRAM's, or NULL */
    const split_spec *spec;
} split_setup;

typedef struct split_set split_set;

typedef struct {
    samFile *fp;
    const sam_hdr_t *hdr;       /* what f->fp's records are written with */
    sam_hdr_t *own_hdr;         /* by @RG, this output's; else NULL */
    size_t group;
    const char *value;          /* the group's (the set's copy); NULL: none */
    int indexed;
    char *idx_path;             /* the index's hidden name: htslib keeps it, not a copy */
    char *name;                 /* for messages */
} split_file;

split_set *split_set_open(const split_setup *s, sam_hdr_t *hdr, errmsg *err);
int split_set_header(split_set *set, const sam_hdr_t *sorted, errmsg *err);

/* group, glen: the group's bytes of its first record's key; first, flen:
 * the rest of that key.  pool: compress on it, or NULL (this thread). */
int split_set_begin(split_set *set, const uint8_t *group, size_t glen, const uint8_t *first,
                    size_t flen, htsThreadPool *pool, split_file *f, errmsg *err);
int split_set_end(split_set *set, split_file *f, uint64_t records, errmsg *err);
/* After a failure: closed, nothing saved (the hidden directory goes). */
void split_set_drop(split_file *f);

int split_set_fill(split_set *set, errmsg *err);
int split_set_commit(split_set *set, errmsg *err);

/* The hidden directory (a resumable sort journals it). */
const char *split_set_path(const split_set *set);

/* The outputs, for -v: how many; each one's name (once committed) and records. */
size_t split_set_outputs(const split_set *set);
const char *split_set_output(const split_set *set, size_t i, uint64_t *records);

void split_set_free(split_set *set);

#endif
