/* readout/piece_fault.h -- the first failure among pieces read out in key order.
 *
 * Contract: the readouts in key ranges (readout/range_readout.c,
 * readout/split_readout.c) run their pieces on several threads.  When
 * several fail, the one earliest in key order is the cause: the others
 * failed because it stopped them.  piece_fault_keep() is called under the
 * caller's lock; piece_fault_cause(), once the threads have ended, copies the
 * kept cause into err and returns -1, or returns 0 where no piece failed.
 * Start from PIECE_FAULT_NONE.
 */
#ifndef PIECE_FAULT_H
#define PIECE_FAULT_H

#include <limits.h>
#include "util/errmsg.h"

typedef struct {
    int piece;              /* the earliest piece that failed (INT_MAX: none) */
    errmsg cause;           /* why it failed */
    int store_failed;       /* and whether the stored runs were at fault */
} piece_fault;

#define PIECE_FAULT_NONE ((piece_fault){ .piece = INT_MAX })

static inline void piece_fault_keep(piece_fault *f, int piece, const errmsg *cause,
                                    int store_failed)
{
    if (piece >= f->piece) return;
    f->piece = piece;
    errmsg_copy(&f->cause, cause);
    f->store_failed = store_failed;
}

static inline int piece_fault_cause(const piece_fault *f, errmsg *err)
{
    return f->piece == INT_MAX ? 0 : errmsg_copy(err, &f->cause);
}

#endif
