/* temp_env.h -- the RocksDB environment of the temporary database.
 *
 * Contract: temp_env_create() returns an environment for
 * rocksdb_options_set_env() that is RocksDB's default one (POSIX files, the
 * default thread pools) except that the files and directories RocksDB opens
 * through it are never synced: their Sync, Fsync and RangeSync return
 * success at once.  Nothing else in the process is affected; the output,
 * written by htslib, syncs as it always does.  Destroy the environment with
 * temp_env_destroy(), after every database opened with it is closed (and
 * destroyed).  Both are safe to call from C; NULL on allocation failure.
 *
 * temp_env_install_terminate_handler() makes an exception that nobody
 * catches (RocksDB throws where it cannot go on) end the process with one
 * line on stderr, every cleanup.h path removed and status 1.  It is
 * process-wide: call it once at start-up.
 */
#ifndef TEMP_ENV_H
#define TEMP_ENV_H

#include <rocksdb/c.h>

#ifdef __cplusplus
extern "C" {
#endif

rocksdb_env_t *temp_env_create(void);
void temp_env_destroy(rocksdb_env_t *env);
void temp_env_install_terminate_handler(void);

#ifdef __cplusplus
}
#endif

#endif
