/* store/sst_read.cc -- see store/sst_read.h.
 *
 * RocksDB's C API has no SstFileReader; its C++ API does, as its supported
 * way to read one table file.  The options are RocksDB's defaults (any
 * block-based table reads with them: the codec of each block is in the
 * file) but for direct I/O, as the database reads its runs.
 */
#include <memory>
#include <new>
#include <string>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/sst_file_reader.h>
#include "store/sst_read.h"

using ROCKSDB_NAMESPACE::Iterator;
using ROCKSDB_NAMESPACE::Options;
using ROCKSDB_NAMESPACE::ReadOptions;
using ROCKSDB_NAMESPACE::SstFileReader;
using ROCKSDB_NAMESPACE::Status;

struct sst_read {
    std::unique_ptr<SstFileReader> reader;
    std::unique_ptr<Iterator> it;
};

sst_read *sst_read_open(const char *path, int direct, size_t readahead, errmsg *err)
{
    try {
        std::unique_ptr<sst_read> r(new sst_read);
        Options opts;
        opts.use_direct_reads = direct != 0;
        r->reader.reset(new SstFileReader(opts));
        Status s = r->reader->Open(path);
        if (!s.ok()) {
            errmsg_set(err, "%s: %s", path, s.ToString().c_str());
            return nullptr;
        }
        ReadOptions ro;
        ro.fill_cache = false;
        ro.verify_checksums = true;
        ro.readahead_size = readahead;
        r->it.reset(r->reader->NewIterator(ro));
        return r.release();
    } catch (const std::bad_alloc &) {
        errmsg_set(err, "%s: out of memory", path);
        return nullptr;
    }
}

/* On the thread that reads, as the store's iterators do: RocksDB's
 * per-thread perf counting costs a call per key from a shared library. */
void sst_read_first(sst_read *r)
{
    ROCKSDB_NAMESPACE::SetPerfLevel(ROCKSDB_NAMESPACE::PerfLevel::kDisable);
    r->it->SeekToFirst();
}

int sst_read_valid(const sst_read *r) { return r->it->Valid(); }
void sst_read_next(sst_read *r) { r->it->Next(); }

const uint8_t *sst_read_key(const sst_read *r, size_t *len)
{
    ROCKSDB_NAMESPACE::Slice k = r->it->key();
    *len = k.size();
    return reinterpret_cast<const uint8_t *>(k.data());
}

const uint8_t *sst_read_value(const sst_read *r, size_t *len)
{
    ROCKSDB_NAMESPACE::Slice v = r->it->value();
    *len = v.size();
    return reinterpret_cast<const uint8_t *>(v.data());
}

int sst_read_status(const sst_read *r, errmsg *err)
{
    Status s = r->it->status();
    return s.ok() ? 0 : errmsg_set(err, "%s", s.ToString().c_str());
}

void sst_read_close(sst_read *r)
{
    delete r;   /* the iterator first: it is declared after the reader */
}
