/* disk/temp_env.h -- the RocksDB environment of the temporary database.
 *
 * Contract: temp_env_apply() gives *opts an environment that is RocksDB's
 * default one (POSIX files, the default thread pools, whose low-priority
 * pool it sizes to background_threads) except that the files and
 * directories RocksDB opens through it are never synced: their Sync, Fsync
 * and RangeSync return success at once.  Nothing else in the process is
 * affected; the output, written by htslib, syncs as it always does.  It
 * replaces *opts by a copy made through RocksDB's options parser, and
 * destroys the old one: call it first, on options just created, of which
 * the copy differs in nothing but the environment.  Returns 0, or -1 with
 * *opts untouched and the cause in err.
 * The environment lasts as long as the process: nothing to destroy.
 *
 * temp_env_count_writes() starts counting the bytes RocksDB writes, through
 * this environment, to files directly in dir (runs, merged runs, its own
 * files): it returns a handle for temp_env_bytes_written(), or -1 when
 * TEMP_ENV_COUNTED directories are counted already.  Files opened before
 * the call are not counted.  temp_env_merged_bytes_written() gives the part
 * of them written to RocksDB's own tables ("000123.sst"), which only its
 * merges write there.  temp_env_stop_counting() frees the handle.
 *
 * temp_env_install_terminate_handler() makes an exception that nobody
 * catches (RocksDB throws where it cannot go on) end the process with one
 * line on stderr, every util/cleanup.h path removed and status 1.  It is
 * process-wide: call it once at start-up.
 */
#ifndef TEMP_ENV_H
#define TEMP_ENV_H

#include <stdint.h>
#include <rocksdb/c.h>
#include "util/errmsg.h"

#ifdef __cplusplus
extern "C" {
#endif

int temp_env_apply(rocksdb_options_t **opts, int background_threads, errmsg *err);

#define TEMP_ENV_COUNTED 64
int temp_env_count_writes(const char *dir);
uint64_t temp_env_bytes_written(int handle);
uint64_t temp_env_merged_bytes_written(int handle);
void temp_env_stop_counting(int handle);
void temp_env_install_terminate_handler(void);

#ifdef __cplusplus
}
#endif

#endif
