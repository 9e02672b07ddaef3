/* store/store_iter.c -- the store's runs read back: see store/store_iter.h
 * and store/store_db_internal.h.
 */
#include <stdlib.h>
#include <string.h>
#include "store/store_db_internal.h"
#include "store/store_iter.h"
#include "store/sst_read.h"

/* The read options hold pointers to the bounds, which the iterator owns.
 * An iterator over one file of a merge pass reads it with file instead. */
struct store_iter {
    sst_read *file;
    rocks_store *st;            /* an iterator over a part: its store and part */
    int part;
    rocksdb_iterator_t *it;
    rocksdb_readoptions_t *read;
    uint8_t *lo, *hi;
    size_t lo_len, hi_len;
};

static int copy_bound(uint8_t **dst, size_t *dst_len, const uint8_t *key, size_t len)
{
    *dst_len = len;
    if (!key) return 0;
    return (*dst = key_dup(key, len)) ? 0 : -1;
}

/* Runs are read once, in order: no block cache, and read ahead as asked
 * (direct reads are synchronous: no kernel readahead). */
static rocksdb_readoptions_t *read_options(size_t readahead)
{
    rocksdb_readoptions_t *read = rocksdb_readoptions_create();
    if (!read) return NULL;
    rocksdb_readoptions_set_fill_cache(read, 0);
    rocksdb_readoptions_set_readahead_size(read, readahead);
    return read;
}

/* The bounds copied, and the read options pointed at them: RocksDB's
 * iterator reads its bounds through those pointers. */
static int set_bounds(store_iter *si, const uint8_t *lo, size_t lo_len, const uint8_t *hi,
                      size_t hi_len)
{
    uint8_t *new_lo = NULL, *new_hi = NULL;
    size_t new_lo_len, new_hi_len;
    if (copy_bound(&new_lo, &new_lo_len, lo, lo_len) < 0
        || copy_bound(&new_hi, &new_hi_len, hi, hi_len) < 0) {
        free(new_lo);
        return -1;
    }
    rocksdb_readoptions_set_iterate_lower_bound(si->read, (const char *)new_lo, new_lo_len);
    rocksdb_readoptions_set_iterate_upper_bound(si->read, (const char *)new_hi, new_hi_len);
    free(si->lo);
    free(si->hi);
    si->lo = new_lo, si->lo_len = new_lo_len;
    si->hi = new_hi, si->hi_len = new_hi_len;
    return 0;
}

store_iter *store_iter_open_range(rocks_store *st, int part, size_t readahead,
                                  const uint8_t *lo, size_t lo_len,
                                  const uint8_t *hi, size_t hi_len)
{
    store_iter *si = calloc(1, sizeof *si);
    if (!si) return NULL;
    si->st = st;
    si->part = part;
    if (!(si->read = read_options(readahead)) || set_bounds(si, lo, lo_len, hi, hi_len) < 0) {
        store_iter_close(si);
        return NULL;
    }
    si->it = rocksdb_create_iterator_cf(part_db(st, part), si->read, st->part[part]);
    return si;
}

/* RocksDB copies the read options into the iterator, with their pointers
 * to the bounds: a bound that was absent stays absent for it, and one that
 * was there follows what the pointer's slice says.  So the iterator is
 * kept where each bound stays present or absent (changing bounds between
 * seeks is how MyRocks and LogDevice use RocksDB), and made anew where one
 * comes or goes. */
int store_iter_retarget(store_iter *si, const uint8_t *lo, size_t lo_len, const uint8_t *hi,
                        size_t hi_len)
{
    int same_shape = !si->lo == !lo && !si->hi == !hi;
    if (set_bounds(si, lo, lo_len, hi, hi_len) < 0) return -1;
    if (same_shape) return 0;
    rocksdb_iter_destroy(si->it);
    si->it = rocksdb_create_iterator_cf(part_db(si->st, si->part), si->read, si->st->part[si->part]);
    return 0;
}

store_iter *store_iter_over_file(const char *path, int direct, size_t readahead, errmsg *err)
{
    store_iter *si = calloc(1, sizeof *si);
    if (!si) {
        errmsg_set(err, "out of memory");
        return NULL;
    }
    if (!(si->file = sst_read_open(path, direct, readahead, err))) {
        free(si);
        return NULL;
    }
    return si;
}

void store_iter_first(store_iter *si)
{
    if (si->file) {
        sst_read_first(si->file);
        return;
    }
    rocksdb_set_perf_level(rocksdb_disable);
    if (si->lo) rocksdb_iter_seek(si->it, (const char *)si->lo, si->lo_len);
    else rocksdb_iter_seek_to_first(si->it);
}

int store_iter_valid(const store_iter *si)
{
    return si->file ? sst_read_valid(si->file) : rocksdb_iter_valid(si->it);
}

void store_iter_next(store_iter *si)
{
    if (si->file) sst_read_next(si->file);
    else rocksdb_iter_next(si->it);
}

const uint8_t *store_iter_key(const store_iter *si, size_t *len)
{
    if (si->file) return sst_read_key(si->file, len);
    return (const uint8_t *)rocksdb_iter_key(si->it, len);
}

const uint8_t *store_iter_value(const store_iter *si, size_t *len)
{
    if (si->file) return sst_read_value(si->file, len);
    return (const uint8_t *)rocksdb_iter_value(si->it, len);
}

int store_iter_status(const store_iter *si, errmsg *err)
{
    if (si->file) return sst_read_status(si->file, err);
    char *rerr = NULL;
    rocksdb_iter_get_error(si->it, &rerr);
    if (!rerr) return 0;
    errmsg_set(err, "%s", rerr);
    free(rerr);
    return -1;
}

void store_iter_close(store_iter *si)
{
    if (!si) return;
    sst_read_close(si->file);
    if (si->it) rocksdb_iter_destroy(si->it);
    if (si->read) rocksdb_readoptions_destroy(si->read);
    free(si->lo);
    free(si->hi);
    free(si);
}

int store_iter_get(rocks_store *st, int part, const uint8_t *key, size_t klen, size_t readahead,
              uint8_t **val, size_t *vlen, errmsg *err)
{
    rocksdb_readoptions_t *read = read_options(readahead);
    if (!read) return errmsg_set(err, "out of memory");
    char *rerr = NULL;
    rocksdb_set_perf_level(rocksdb_disable);
    *val = (uint8_t *)rocksdb_get_cf(part_db(st, part), read, st->part[part], (const char *)key,
                                     klen, vlen, &rerr);
    rocksdb_readoptions_destroy(read);
    if (rerr) {
        errmsg_set(err, "%s", rerr);
        free(rerr);
        return -1;
    }
    return *val ? 0 : errmsg_set(err, "a group of a temporary run is missing");
}

size_t store_iter_indexed_runs(const rocks_store *st)
{
    return st->index ? run_index_runs(st->index) : 0;
}

size_t store_iter_straddlers(const rocks_store *st, int part, const uint8_t *lo, size_t lo_len,
                        key_sample *out)
{
    return st->index ? run_index_straddlers(st->index, part, lo, lo_len, out) : 0;
}
