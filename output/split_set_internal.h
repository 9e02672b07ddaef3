/* output/split_set_internal.h -- what output/split_set.c and output/split_commit.c share.
 *
 * Contract: a split_set's groups, each with its hidden file, and the
 * names they get at the commit.  split_set.c fills them as the writers
 * begin and end their outputs: the array grows as groups begin, so every
 * access while writers run holds set->lock.  split_commit.c, once every
 * writer has ended, names and renames them.
 */
#ifndef SPLIT_SET_INTERNAL_H
#define SPLIT_SET_INTERNAL_H

#include <pthread.h>
#include "output/split_set.h"
#include "output/split_dir.h"
#include "output/split_names.h"

typedef struct {
    char *value;            /* NULL: the records without a value */
    uint8_t *first;         /* its first record's key, after the group (%#'s rank) */
    size_t first_len;
    long number;            /* %#: by @RG its line's, else the rank; -1: no value */
    uint64_t records;
    int indexed;            /* an index beside its file */
    int written;            /* its file is whole */
    char *final, *idx_final;    /* set by the commit: the names FORMAT gives */
    char *target, *idx_target;  /* and the files they name, links followed (renamed onto) */
} split_group;

struct split_set {
    split_setup s;          /* its strings borrowed */
    split_spec spec;
    split_dir dir;
    split_format names;
    char *base, *ext;       /* %* and %. */
    int cram;
    sam_hdr_t *plain;       /* the sorted header: every output's but by @RG's values' */
    pthread_mutex_t lock;
    split_group *g;         /* by @RG, the header's @RG lines' come first, in order */
    size_t n, cap;
    size_t n_rg;            /* by @RG: the @RG lines */
    int committed;
};

/* The hidden file of group i, or its index ("PATH/I", "PATH/I.idx"). */
char *split_set_hidden(const split_set *set, size_t i, int index);

#endif
