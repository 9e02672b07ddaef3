/* disk/temp_env.cc -- see disk/temp_env.h.
 *
 * Why: RocksDB makes every ingested run durable.  SstFileWriter::Finish
 * syncs the file, and ingestion syncs it and its directory again, so the
 * spill thread would wait for each run to reach the disk.  The runs need
 * no durability: after a crash the sort is lost either way, and the
 * directory is deleted when the sort ends.  The C API cannot turn these
 * syncs off, but RocksDB does all its file I/O through a FileSystem, and a
 * FileSystemWrapper is its supported way to change part of that: here, the
 * files and directories it hands out skip their syncs.  Being RocksDB's
 * own files, this leaves every other descriptor in the process alone.
 *
 * The C API takes no Env of ours: rocksdb_options_set_env() wants one of
 * its own handles, whose struct only RocksDB's c.cc defines.  What it does
 * take is an options string, and the DB option "env" loads an Env by name
 * from RocksDB's object registry, where this file registers one.
 *
 * The same files count the bytes written through them, by directory: the
 * -v report says what each temp directory took, merges included, which
 * the C API has no statistic for.
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/utilities/object_registry.h>
#include <unistd.h>
#include "disk/temp_env.h"
extern "C" {
#include "util/cleanup.h"
}

using ROCKSDB_NAMESPACE::Env;
using ROCKSDB_NAMESPACE::FileOptions;
using ROCKSDB_NAMESPACE::FileSystem;
using ROCKSDB_NAMESPACE::FileSystemWrapper;
using ROCKSDB_NAMESPACE::FSDirectory;
using ROCKSDB_NAMESPACE::FSDirectoryWrapper;
using ROCKSDB_NAMESPACE::FSRandomRWFile;
using ROCKSDB_NAMESPACE::FSRandomRWFileOwnerWrapper;
using ROCKSDB_NAMESPACE::FSWritableFile;
using ROCKSDB_NAMESPACE::FSWritableFileOwnerWrapper;
using ROCKSDB_NAMESPACE::IODebugContext;
using ROCKSDB_NAMESPACE::IOOptions;
using ROCKSDB_NAMESPACE::IOStatus;
using ROCKSDB_NAMESPACE::ObjectLibrary;
using ROCKSDB_NAMESPACE::DirFsyncOptions;
using ROCKSDB_NAMESPACE::DataVerificationInfo;
using ROCKSDB_NAMESPACE::Slice;

/* The environment's name in RocksDB's object registry. */
#define NO_SYNC_ENV "RocksortNoSyncEnv"

namespace {

/* The directories whose writes are counted.  A slot is never freed, only
 * reused: a file keeps a pointer to its counter for as long as it is open. */
struct WriteCounter {
  bool used = false;
  std::string dir;  /* with its trailing '/' */
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> merged{0};  /* of those, to RocksDB's own tables: merged runs */
};
WriteCounter counters[TEMP_ENV_COUNTED];
std::mutex counters_lock;

/* The counter of the directory name lies in, or nullptr. */
WriteCounter* counter_for(const std::string& name)
{
  std::lock_guard<std::mutex> hold(counters_lock);
  size_t slash = name.rfind('/');
  if (slash == std::string::npos) return nullptr;
  for (WriteCounter& c : counters)
    if (c.used && c.dir.size() == slash + 1 && name.compare(0, slash + 1, c.dir) == 0)
      return &c;
  return nullptr;
}

/* Whether name is one of RocksDB's own tables ("000123.sst"): in the
 * temporary database only a merge writes those, as the runs are written
 * under names of the store's own and moved in (store/store_run.c). */
bool merged_run(const std::string& name)
{
  size_t slash = name.rfind('/'), at = slash == std::string::npos ? 0 : slash + 1;
  size_t dot = name.size() >= 4 ? name.size() - 4 : 0;
  if (dot <= at || name.compare(dot, 4, ".sst") != 0) return false;
  return name.find_first_not_of("0123456789", at) == dot;
}

class NoSyncWritableFile : public FSWritableFileOwnerWrapper {
 public:
  NoSyncWritableFile(std::unique_ptr<FSWritableFile>&& file, WriteCounter* counter,
                     bool merged)
      : FSWritableFileOwnerWrapper(std::move(file)),
        written_(counter ? &counter->bytes : nullptr),
        merged_(counter && merged ? &counter->merged : nullptr) {}
  IOStatus Append(const Slice& data, const IOOptions& o, IODebugContext* dbg) override {
    count(data);
    return target()->Append(data, o, dbg);
  }
  IOStatus Append(const Slice& data, const IOOptions& o, const DataVerificationInfo& v,
                  IODebugContext* dbg) override {
    count(data);
    return target()->Append(data, o, v, dbg);
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            IODebugContext* dbg) override {
    count(data);
    return target()->PositionedAppend(data, offset, o, dbg);
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            const DataVerificationInfo& v, IODebugContext* dbg) override {
    count(data);
    return target()->PositionedAppend(data, offset, o, v, dbg);
  }
  IOStatus Sync(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus Fsync(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus RangeSync(uint64_t, uint64_t, const IOOptions&, IODebugContext*) override {
    return IOStatus::OK();
  }

 private:
  void count(const Slice& data) {
    if (written_) written_->fetch_add(data.size(), std::memory_order_relaxed);
    if (merged_) merged_->fetch_add(data.size(), std::memory_order_relaxed);
  }
  std::atomic<uint64_t>* written_;
  std::atomic<uint64_t>* merged_;
};

class NoSyncRandomRWFile : public FSRandomRWFileOwnerWrapper {
 public:
  explicit NoSyncRandomRWFile(std::unique_ptr<FSRandomRWFile>&& file)
      : FSRandomRWFileOwnerWrapper(std::move(file)) {}
  IOStatus Sync(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus Fsync(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
};

class NoSyncDirectory : public FSDirectoryWrapper {
 public:
  explicit NoSyncDirectory(std::unique_ptr<FSDirectory>&& dir)
      : FSDirectoryWrapper(std::move(dir)) {}
  IOStatus Fsync(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus FsyncWithDirOptions(const IOOptions&, IODebugContext*,
                               const DirFsyncOptions&) override {
    return IOStatus::OK();
  }
};

/* Wraps what `opened` put in *result once it succeeded. */
template <class Wrapper, class File>
IOStatus wrap(IOStatus opened, std::unique_ptr<File>* result)
{
  if (opened.ok()) result->reset(new Wrapper(std::move(*result)));
  return opened;
}

/* The same for a writable file, counting its writes under name's directory. */
IOStatus wrap_counted(IOStatus opened, const std::string& name,
                      std::unique_ptr<FSWritableFile>* result)
{
  if (opened.ok())
    result->reset(new NoSyncWritableFile(std::move(*result), counter_for(name), merged_run(name)));
  return opened;
}

/* Every way RocksDB gets a file or directory it may sync.  Ingestion's
 * ReopenWritableFile, for one, exists only to sync the moved run. */
class NoSyncFileSystem : public FileSystemWrapper {
 public:
  explicit NoSyncFileSystem(const std::shared_ptr<FileSystem>& base)
      : FileSystemWrapper(base) {}
  const char* Name() const override { return "RocksortNoSyncFileSystem"; }

  IOStatus NewWritableFile(const std::string& name, const FileOptions& opts,
                           std::unique_ptr<FSWritableFile>* result,
                           IODebugContext* dbg) override {
    return wrap_counted(target()->NewWritableFile(name, opts, result, dbg), name, result);
  }
  IOStatus ReopenWritableFile(const std::string& name, const FileOptions& opts,
                              std::unique_ptr<FSWritableFile>* result,
                              IODebugContext* dbg) override {
    return wrap_counted(target()->ReopenWritableFile(name, opts, result, dbg), name, result);
  }
  IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                             const FileOptions& opts, std::unique_ptr<FSWritableFile>* result,
                             IODebugContext* dbg) override {
    return wrap_counted(target()->ReuseWritableFile(name, old_name, opts, result, dbg), name,
                        result);
  }
  IOStatus NewRandomRWFile(const std::string& name, const FileOptions& opts,
                           std::unique_ptr<FSRandomRWFile>* result,
                           IODebugContext* dbg) override {
    return wrap<NoSyncRandomRWFile>(target()->NewRandomRWFile(name, opts, result, dbg),
                                    result);
  }
  IOStatus NewDirectory(const std::string& name, const IOOptions& opts,
                        std::unique_ptr<FSDirectory>* result, IODebugContext* dbg) override {
    return wrap<NoSyncDirectory>(target()->NewDirectory(name, opts, result, dbg), result);
  }
};

/* One for the process, never destroyed (as Env::Default() is): the "env"
 * option takes only an object nobody owns, a "static" one in the
 * registry's terms, and every options copy keeps a raw pointer to it.  A
 * composite Env keeps Env::Default()'s threads and clock, so its pools are
 * the default ones. */
Env* no_sync_env()
{
  static Env* const env =
      ROCKSDB_NAMESPACE::NewCompositeEnv(
          std::make_shared<NoSyncFileSystem>(FileSystem::Default()))
          .release();
  return env;
}

/* Set when the registry hands out the environment, on the thread that
 * parses.  A name the registry does not know is no error to the parser
 * (it skips "unsupported" values by default), so its success alone would
 * not prove the options got this environment. */
thread_local bool env_handed_out = false;

void register_no_sync_env()
{
  static const bool registered = [] {
    ObjectLibrary::Default()->AddFactory<Env>(
        NO_SYNC_ENV, [](const std::string&, std::unique_ptr<Env>*, std::string*) {
          env_handed_out = true;
          return no_sync_env();
        });
    return true;
  }();
  (void)registered;
}

}  // namespace

/* RocksDB throws where it cannot go on (a thread it cannot start under a
 * low `ulimit -v`, memory it cannot get), and an exception nobody catches
 * would abort with two lines of libstdc++'s and leave the temporary data
 * behind.  Instead: one line with the cause, the temporary paths removed,
 * exit status 1, as for any other failure. */
[[noreturn]] static void on_uncaught_exception()
{
  const char* what = "unknown error";
  std::exception_ptr current = std::current_exception();
  try {
    if (current) std::rethrow_exception(current);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  fprintf(stderr, "samtools rocksort: RocksDB failed: %s (out of memory or threads? "
          "check ulimit -v and -u)\n", what);
  cleanup_remove_all();
  _exit(1);
}

extern "C" void temp_env_install_terminate_handler(void)
{
  std::set_terminate(on_uncaught_exception);
}

extern "C" int temp_env_apply(rocksdb_options_t** opts, int background_threads, errmsg* err)
{
  rocksdb_options_t* with_env = nullptr;
  char* rerr = nullptr;
  try {
    no_sync_env();  /* now, so that the factory, run inside RocksDB, cannot throw */
    register_no_sync_env();
    with_env = rocksdb_options_create();
    env_handed_out = false;
    rocksdb_get_options_from_string(*opts, "env=" NO_SYNC_ENV, with_env, &rerr);
    if (rerr || !env_handed_out) {
      errmsg_set(err, "%s", rerr ? rerr : "RocksDB did not load the environment " NO_SYNC_ENV);
      free(rerr);
      rocksdb_options_destroy(with_env);
      return -1;
    }
    /* Env::Default()'s low-priority pool, which this one forwards to. */
    no_sync_env()->SetBackgroundThreads(background_threads);
  } catch (const std::bad_alloc&) {
    if (with_env) rocksdb_options_destroy(with_env);
    free(rerr);
    return errmsg_set(err, "out of memory");
  }
  rocksdb_options_destroy(*opts);
  *opts = with_env;
  return 0;
}

extern "C" int temp_env_count_writes(const char* dir)
{
  try {
    std::lock_guard<std::mutex> hold(counters_lock);
    for (int i = 0; i < TEMP_ENV_COUNTED; i++) {
      WriteCounter& c = counters[i];
      if (c.used) continue;
      c.dir = std::string(dir) + "/";
      c.bytes = 0;
      c.merged = 0;
      c.used = true;
      return i;
    }
  } catch (const std::bad_alloc&) {
  }
  return -1;
}

extern "C" uint64_t temp_env_bytes_written(int handle)
{
  if (handle < 0 || handle >= TEMP_ENV_COUNTED) return 0;
  return counters[handle].bytes.load(std::memory_order_relaxed);
}

extern "C" uint64_t temp_env_merged_bytes_written(int handle)
{
  if (handle < 0 || handle >= TEMP_ENV_COUNTED) return 0;
  return counters[handle].merged.load(std::memory_order_relaxed);
}

extern "C" void temp_env_stop_counting(int handle)
{
  if (handle < 0 || handle >= TEMP_ENV_COUNTED) return;
  std::lock_guard<std::mutex> hold(counters_lock);
  counters[handle].used = false;
}
