/* store/store.h -- the store's interface: one include for the layers above.
 *
 * Contract: the store (store/store_run.h says what it is) declares its
 * functions in one header per file; this one includes them all, with the
 * state directory's checks (store/state_dir.h), for the loader, the
 * readout and the engine.  The store's own files include the precise
 * headers instead.
 */
#ifndef STORE_H
#define STORE_H

#include "store/store_types.h"
#include "store/rocks_open.h"
#include "store/store_run.h"
#include "store/store_merge.h"
#include "store/store_iter.h"
#include "store/store_pass.h"
#include "store/store_state.h"
#include "store/state_dir.h"

#endif
