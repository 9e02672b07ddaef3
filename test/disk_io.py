"""How `samtools rocksort` uses the disk and the page cache, seen through
strace and mincore(2): temp runs are read back with O_DIRECT where the file
system allows it, the temporary database is never synced while the output
is, and the output's pages leave the page cache, during the readout as well
as at the end.  Every sort still gives the oracle's output.  strace is
required (scripts/deps.sh test installs it): without it these tests fail.
To run only these:
    run_tests.py -k 'temp_runs_*' -k 'temp_db_*' -k 'output_pages_*'
"""

import ctypes
import mmap
import os
import re
import shutil

from harness import SPILL, Failure, run, tail


# Temp I/O bypasses the page cache ---------------------------------------------------

def direct_io_allowed(directory):
    """What rocksort's own probe finds: may files here be opened O_DIRECT?"""
    probe = os.path.join(directory, "direct-io-probe")
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600))
    except OSError:
        return False
    os.remove(probe)
    return True


def test_temp_runs_read_with_direct_io(case):
    """A spilled sort reads its runs back with O_DIRECT when the temp file
    system allows it (strace shows every run opened for reading that
    way), says so under -v, and still writes the oracle's output."""
    strace = shutil.which("strace")
    if not strace:
        raise Failure("strace is missing: scripts/deps.sh test installs it")
    out, trace = case.out("out.bam"), os.path.join(case.dir, "trace")
    direct = direct_io_allowed(case.tmp)
    cmd = [strace, "-f", "-qq", "-e", "trace=openat", "-o", trace,
           *case.session.rocksort_cmd, "-v", *SPILL, "-T", case.temp_prefix,
           "-o", out, case.input("bulk.bam")]
    env = dict(case.session.env, TMPDIR=case.tmp)
    # LeakSanitizer cannot run under ptrace; other tests check leaks on this path.
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"),
                                                  "detect_leaks=0"]))
    result = run(cmd, env=env)
    if result.returncode != 0:
        raise Failure(f"rocksort exited with {result.returncode}", tail(result.stderr))
    case.expect_same(out, case.session.expected("bulk.bam", []))
    case.expect_no_temp_left()
    said = re.search(r"\[rocksort\] temp reads: (.*)", result.stderr.decode(errors="replace"))
    if not said or said[1].startswith("direct") != direct:
        raise Failure(f"temp reads: {said[1] if said else 'no -v line'}; the probe "
                      f"says direct I/O is {'allowed' if direct else 'refused'}")
    with open(trace) as f:
        reads = [l for l in f if ".sst\"" in l and "O_RDONLY" in l and "= -1" not in l]
    plain = [l.strip() for l in reads if ("O_DIRECT" in l) != direct]
    if len(reads) < 2 or plain:
        raise Failure(f"{len(reads)} runs opened for reading, {len(plain)} of them "
                      f"{'without' if direct else 'with'} O_DIRECT", plain[:3])


# The temp database is never synced; the output is -------------------------------

def traced_syncs(case, extra):
    """Sorts bulk.bam spilled (plus extra) under strace; checks the
    output and the cleanup.  -> (lines of strace's sync calls, -v log)"""
    strace = shutil.which("strace")
    if not strace:
        raise Failure("strace is missing: scripts/deps.sh test installs it")
    out, trace = case.out("out.bam"), os.path.join(case.dir, "trace")
    env = dict(case.session.env)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"),
                                                  "detect_leaks=0"]))
    cmd = [strace, "-f", "-qq", "-y", "-o", trace,
           "-e", "trace=fsync,fdatasync,sync_file_range,syncfs,sync",
           *case.session.rocksort_cmd, "-v", *SPILL, *extra, "-T", case.temp_prefix,
           "-o", out, case.input("bulk.bam")]
    result = run(cmd, env=env)
    if result.returncode != 0:
        raise Failure(f"rocksort exited with {result.returncode}", tail(result.stderr))
    case.expect_same(out, case.session.expected("bulk.bam", []))
    case.expect_no_temp_left()
    os.remove(out)
    with open(trace) as f:
        # sync_file_range(fd, 0, 0, 0) is RocksDB probing for it: no sync.
        return ([l.strip() for l in f
                 if not re.search(r"sync_file_range\(\d+<[^>]*>, 0, 0, 0\b", l)],
                result.stderr.decode(errors="replace"))


def test_temp_db_never_synced(case):
    """RocksDB syncs each run, its manifest and its directory; the temp
    database's environment (disk/temp_env.cc) turns that off for its own
    files only.  Under strace, a spilled sort makes no sync call on
    anything in the temp directory, with background merges (-s) or
    without, while htslib still syncs the output.  Built without that
    environment, the same sorts sync the database's files many times."""
    temp = f"<{os.path.realpath(case.tmp)}/"
    for label, extra in (("spilled", []), ("merged in the background", ["-s", "50M"])):
        calls, log = traced_syncs(case, extra)
        runs = re.search(r"runs: (\d+) written, (\d+) merged at readout", log)
        if not runs or int(runs[1]) < 8 or (extra and int(runs[2]) >= int(runs[1])):
            raise Failure(f"{label}: test is wrong: the sort did not spill"
                          f"{' and merge' if extra else ''}",
                          [runs[0] if runs else "no -v runs line"])
        synced_temp = [l for l in calls if temp in l]
        synced_out = [l for l in calls if ".out.bam.rocksort." in l
                      and re.match(r"\d+ +f(data)?sync\(", l)]
        if synced_temp:
            raise Failure(f"{label}: {len(synced_temp)} syncs in the temp directory",
                          synced_temp[:3])
        if not synced_out:
            raise Failure(f"{label}: the output was never synced", calls[:3])


# The output leaves the page cache --------------------------------------------------

def cached_bytes(path):
    """Bytes of path in the page cache, from mincore(2) over a mapping
    that is never touched (so it faults nothing in)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                          ctypes.c_int, ctypes.c_int, ctypes.c_long]
    size, page = os.path.getsize(path), os.sysconf("SC_PAGE_SIZE")
    if size == 0:
        return 0
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise Failure(f"mmap of {path} failed: {os.strerror(ctypes.get_errno())}")
        pages = (size + page - 1) // page
        vec = (ctypes.c_ubyte * pages)()
        ok = libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) == 0
        libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(size))
    finally:
        os.close(fd)
    if not ok:
        raise Failure(f"mincore of {path} failed")
    return sum(v & 1 for v in vec) * page


def cache_drops_work(directory):
    """Does this file system drop a synced file's pages on request?
    (tmpfs, for one, keeps them.)"""
    probe = os.path.join(directory, "drop-probe")
    with open(probe, "wb") as f:
        f.write(os.urandom(1 << 20))
        f.flush()
        os.fdatasync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    try:
        return cached_bytes(probe) == 0
    finally:
        os.remove(probe)


def test_output_pages_dropped_from_the_cache(case):
    """The output's written pages are handed back to the kernel
    (fadvise DONTNEED on the output file, seen by strace), so none of
    the finished file stays cached where the file system honours that;
    in memory and spilled, the output is still the oracle's."""
    strace = shutil.which("strace")
    if not strace:
        raise Failure("strace is missing: scripts/deps.sh test installs it")
    drops = cache_drops_work(case.dir)
    env = dict(case.session.env)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"),
                                                  "detect_leaks=0"]))
    for label, extra in (("in memory", []), ("spilled", SPILL)):
        out, trace = case.out("out.bam"), os.path.join(case.dir, "trace")
        cmd = [strace, "-f", "-qq", "-y", "-e", "trace=fadvise64", "-o", trace,
               *case.session.rocksort_cmd, *extra, "-T", case.temp_prefix,
               "-o", out, case.input("bulk.bam")]
        result = run(cmd, env=env)
        if result.returncode != 0:
            raise Failure(f"{label}: rocksort exited with {result.returncode}",
                          tail(result.stderr))
        left = cached_bytes(out)    # before the comparison reads it back
        case.expect_same(out, case.session.expected("bulk.bam", []))
        with open(trace) as f:
            dropped = [l for l in f if ".out.bam.rocksort." in l and "DONTNEED" in l]
        if not dropped:
            raise Failure(f"{label}: the output's pages were never dropped")
        if drops and left:
            raise Failure(f"{label}: {left} bytes of the output stay in the page cache")
        os.remove(out)


def test_output_pages_dropped_while_writing(case):
    """Past 64 MiB of records the output's pages are dropped during the
    readout too, not only at the end: ten copies of bulk.bam (about
    87 MB of records) sorted to -u output get at least two DONTNEED
    calls on the output."""
    strace = shutil.which("strace")
    if not strace:
        raise Failure("strace is missing: scripts/deps.sh test installs it")
    big = case.out("ten.bam")
    case.session.oracle_ok("cat", ["-o", big] + [case.input("bulk.bam")] * 10)
    out, trace = case.out("out.bam"), os.path.join(case.dir, "trace")
    env = dict(case.session.env)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"),
                                                  "detect_leaks=0"]))
    cmd = [strace, "-f", "-qq", "-y", "-e", "trace=fadvise64", "-o", trace,
           *case.session.rocksort_cmd, "-u", *SPILL, "-T", case.temp_prefix,
           "-o", out, big]
    result = run(cmd, env=env)
    if result.returncode != 0:
        raise Failure(f"rocksort exited with {result.returncode}", tail(result.stderr))
    with open(trace) as f:
        dropped = [l for l in f if ".out.bam.rocksort." in l and "DONTNEED" in l]
    if len(dropped) < 2:
        raise Failure(f"{len(dropped)} DONTNEED calls on the output; "
                      "expected one per 64 MiB written and one at the end")
    case.expect_no_temp_left()
