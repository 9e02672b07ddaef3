/* store/sst_read.h -- one SST file of the temporary database, read on its own.
 *
 * Contract: sst_read_open() opens the file at path with RocksDB's
 * SstFileReader (its public API for reading one table outside a
 * database), with direct I/O when direct is set, reading `readahead`
 * bytes at a time, checksums verified, no block cache.  The iterator
 * visits the file's keys in order: sst_read_first(), then
 * sst_read_next() while sst_read_valid(); key and value stay valid until
 * the next move.  After the end, sst_read_status() returns 0, or -1 with
 * RocksDB's cause in err.  sst_read_open() returns NULL with the cause in
 * err.  The database that holds the file must not delete it meanwhile
 * (the store reads its files this way only while nothing merges them).
 *
 * Why: a RocksDB iterator cannot be restricted to some files of a column
 * family, and a merge pass (readout/run_passes.h) reads a few runs at a time.
 */
#ifndef SST_READ_H
#define SST_READ_H

#include <stddef.h>
#include <stdint.h>
#include "util/errmsg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sst_read sst_read;

sst_read *sst_read_open(const char *path, int direct, size_t readahead, errmsg *err);
void sst_read_first(sst_read *r);
int sst_read_valid(const sst_read *r);
void sst_read_next(sst_read *r);
const uint8_t *sst_read_key(const sst_read *r, size_t *len);
const uint8_t *sst_read_value(const sst_read *r, size_t *len);
int sst_read_status(const sst_read *r, errmsg *err);
void sst_read_close(sst_read *r);

#ifdef __cplusplus
}
#endif

#endif
