"""--resume DIR: what issue #39 found by reading the code (items 5-11), each
shown by a test.

- a state with no run and a header of a few KB, taken back (a use after
  free under ASan);
- SAM read with --input-fmt-option nthreads, whose offsets read ahead;
- each failure after the take-back keeps DIR and says so: the output cannot
  be created, the journal or the disk fills, the input fails with EIO;
- nothing left behind: the index's hidden file, the old hidden output when
  -o changed or the output goes to stdout;
- a state of another version; a same-size edit of the input with its mtime
  put back; a zero-filled journal tail; a directory of someone else's
  `journal` and `db`; the lock; reference paths written two ways.

Faults a file system cannot be made to show on demand (EIO, ENOSPC on the
journal alone) come from test/fault_inject.c, preloaded.

To run only these:  run_tests.py -k resume_
"""

import errno
import fcntl
import os
import shutil
import signal
import struct
import subprocess
import zlib

import tmpfs
from background import Background, wait_until
from harness import Failure, each, run, stderr_lines, tail, write_bytes
from resume import (JOURNAL, SPILL, expect_finished, hidden_output, journal_frames,
                    journal_types, kill_when, oracle_output, rerun, resumed_runs, runs_stored,
                    sort_args, source_path)
from resume_reruns import expect_kept
from faults import instrumented

THREAD_READ = "rocksort-read"    # util/thread.h: the threads that decode runs' groups
THREAD_POOL = "rocksort-pool"    # ... and -@'s, which compress the output

TEST_DIR = os.path.dirname(os.path.abspath(__file__))


def fault_library(case, name="fault_inject"):
    """test/NAME.c, built once per session: -> the .so's path."""
    path = os.path.join(case.session.root, name + ".so")
    with case.session.lock_for((name,)):
        if not os.path.exists(path):
            result = run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O1", "-o",
                          path + ".part", os.path.join(TEST_DIR, name + ".c"), "-ldl"])
            if result.returncode != 0:
                raise Failure(f"cannot build test/{name}.c", tail(result.stderr))
            os.rename(path + ".part", path)
    return path


def rocksort_failing(case, args, op, code, offset, path, stdin=None):
    """rocksort with op (read, pwrite; flock, offset 0) on path, or on the
    files under a directory path, failing with errno code from the file
    offset on; or with allocations of offset bytes or more failing on the
    threads named path (op "alloc")."""
    where = path if op == "alloc" else os.path.realpath(path)
    library = fault_library(case, "alloc_fault" if op == "alloc" else "fault_inject")
    env = dict(case.session.env, TMPDIR=case.tmp, LD_PRELOAD=library,
               ROCKSORT_TEST_FAULT=f"{op}:{code}:{offset}:{where}")
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    return run([*case.session.rocksort_cmd, *args], stdin=stdin, cwd=case.out_dir, env=env)


def copy_input(case, name, new_name):
    path = os.path.join(case.dir, new_name)
    shutil.copy(source_path(case, name), path)
    return path


def kill_after(case, state, args, runs, stdin_path=None):
    kill_when(case, args, lambda: runs_stored(state) >= runs, f"{runs} runs stored",
              stdin_path=stdin_path)
    return runs_stored(state)


# --- 5: a state with no run, a header of a few KB -----------------------------------

def big_header_sam(case):
    """bulk.sam with 300 @CO lines: a header of some 20 KB."""
    path = os.path.join(case.dir, "big_header.sam")
    with open(case.input("bulk.sam")) as f:
        lines = f.readlines()
    head = [line for line in lines if line.startswith("@")]
    body = [line for line in lines if not line.startswith("@")]
    comments = [f"@CO\tcomment {i} " + "x" * 60 + "\n" for i in range(300)]
    with open(path, "w") as f:
        f.writelines(head + comments + body)
    return path, len("".join(head + comments))


def test_resume_state_without_runs_big_header(case):
    """Killed before its first run was stored: the rerun takes back a state
    of only its header and output name, and appends to its journal while
    still holding them (a use after free, under ASan, before #39)."""
    src, header_bytes = big_header_sam(case)
    state = os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + ["-"]
    with open(src, "rb") as f:
        data = f.read()
    with Background(case, args, stdin=True) as bg:
        bg.feed(data[:header_bytes + 2000])     # the header and a few records: no run
        wait_until(lambda: journal_types(state).count("K") >= 2, "the output's name journaled",
                   bg)
        bg.proc.kill()
        bg.wait()
    if runs_stored(state):
        raise Failure("test is wrong: a run was stored", [journal_types(state)])
    rerun(case, args, stdin=src)
    case.expect_same(case.out("out.bam"), oracle_output(case, src, []))
    if os.path.exists(state):
        raise Failure("the state directory is still there after the sort succeeded")


# --- 6: SAM parsed on threads reads ahead of its offsets ------------------------------

@each((f"resume_sam_input_threads_{name}", name) for name in ("sam", "sam_gz"))
def test_resume_sam_input_threads(case, name):
    src = source_path(case, {"sam": "bulk.sam", "sam_gz": "bulk.sam.gz"}[name])
    state = os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL + ["--input-fmt-option", "nthreads=2"]) + [src]
    taken = kill_after(case, state, args, 8)
    lines = rerun(case, args)
    if (resumed_runs(lines) or 0) < taken - 1:
        raise Failure("the rerun did not take back the stored runs", lines)
    case.expect_same(case.out("out.bam"), oracle_output(case, src, []))
    if os.path.exists(state):
        raise Failure("the state directory is still there after the sort succeeded")


# --- 7: failures after the take-back keep DIR ----------------------------------------

def test_resume_input_read_error_keeps_state(case):
    """EIO while reading the rest of the input: one line naming the input,
    DIR kept; the rerun on a mended disk finishes."""
    src, state = copy_input(case, "bulk.bam", "in.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    runs = kill_after(case, state, args, 10)
    failed = rocksort_failing(case, args, "read", errno.EIO, os.path.getsize(src) * 9 // 10, src)
    lines = expect_kept(case, failed, state, runs - 1, "in.bam")
    if not any("Input/output error" in line for line in lines):
        raise Failure("the cause (EIO) is not named", lines)
    rerun(case, args)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_out_of_memory_in_readout_keeps_state(case):
    """Memory running out on the threads that decode the runs' groups (their
    allocations of 512 KiB or more fail): the line says out of memory, not
    that a run is corrupt, and DIR is kept with every run, where it was
    removed as damaged; the rerun finishes.  glibc's allocator is replaced
    for this, which sanitizers and valgrind do not allow."""
    if instrumented(case):
        return
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    failed = rocksort_failing(case, args, "alloc", errno.ENOMEM, 512 << 10, THREAD_READ)
    lines = expect_kept(case, failed, state, 1, "out of memory decoding")
    if any("corrupt" in line for line in lines):
        raise Failure("a line blames a corrupt run for memory running out", lines[-5:])
    rerun(case, args)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_output_block_not_compressed_fails(case):
    """Memory running out on the pool while it compresses the output (its
    allocations of 64 KiB or more fail: libdeflate allocates a compressor
    per block): htslib's threaded writer wrote such blocks as garbage and
    the sort exited 0, removing DIR, with an output that did not read
    (scripts/htslib.sh's fix).  It must fail, write no output and keep DIR."""
    if instrumented(case):
        return
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, ["-@", "2"], SPILL) + [src]
    failed = rocksort_failing(case, args, "alloc", errno.ENOMEM, 64 << 10, THREAD_POOL)
    expect_kept(case, failed, state, 1, "cannot write")
    rerun(case, args)
    expect_finished(case, state, "bulk.bam", ["-@", "2"])


def test_resume_journal_full_keeps_state(case):
    """ENOSPC on the journal: first at the take-back's own record (the
    output's name), then at a run's; DIR kept both times, then the sort
    finishes."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    runs = kill_after(case, state, args, 10)
    journal = os.path.join(state, JOURNAL)
    for skip in (0, 1):
        size = os.path.getsize(journal)
        failed = rocksort_failing(case, args, "pwrite", errno.ENOSPC, size + skip, journal)
        expect_kept(case, failed, state, runs - 1, "journal.*No space left on device")
    rerun(case, args)
    expect_finished(case, state, "bulk.bam", [])


if os.geteuid() == 0:
    def test_resume_full_disk_then_rerun_on_it_keeps_state(case):
        """DIR's disk fills during a stream's load; a rerun on the still
        full disk keeps the state again; once there is room, a rerun takes
        the runs back and finishes."""
        src = case.input("bulk.bam")

        def body(small):
            state = os.path.join(small, "state")
            args = sort_args(case, state, [], SPILL) + ["-"]
            expect_kept(case, case.rocksort(args, stdin=src), state, 1, "No space left on device")
            runs = runs_stored(state)
            expect_kept(case, case.rocksort(args, stdin=src), state, runs - 1,
                        "No space left on device")
            remounted = subprocess.run(["mount", "-o", "remount,size=64M", small],
                                       stderr=subprocess.PIPE, timeout=60)
            if remounted.returncode:
                raise Failure("cannot grow the tmpfs", tail(remounted.stderr))
            lines = rerun(case, args, stdin=src)
            if (resumed_runs(lines) or 0) < runs - 1:
                raise Failure(f"{runs} runs were stored, the rerun took back "
                              f"{resumed_runs(lines)}", lines)
            expect_finished(case, state, "bulk.bam", [])
        tmpfs.with_tmpfs(case.dir, "2M", body, Failure, name="small")

    def test_resume_output_cannot_be_created_keeps_state(case):
        """After the take-back, the output's hidden file cannot be created
        (its file system has no inode left): DIR kept; with room again, the
        sort finishes and the killed run's hidden output is gone.  The
        killed run's hidden file is held locked meanwhile, as a live sort
        would hold it: a stale one would be removed first, freeing an inode."""
        src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")

        def body(outfs):
            out = os.path.join(outfs, "out.bam")
            args = [*SPILL, "--resume", state, "-T", case.temp_prefix, "-o", out, src]
            runs = kill_after(case, state, args, 5)
            held = os.open(hidden_output(case, "out.bam", outfs), os.O_RDWR)
            fcntl.flock(held, fcntl.LOCK_EX)
            fillers = []
            try:
                while True:
                    fillers.append(os.path.join(outfs, f"filler{len(fillers)}"))
                    open(fillers[-1], "x").close()
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
                fillers.pop()
            lines = expect_kept(case, case.rocksort(args), state, runs - 1, "out.bam")
            if not any("No space left on device" in line for line in lines):
                raise Failure("the cause is not named", lines)
            for path in fillers:
                os.remove(path)
            os.close(held)
            rerun(case, args)
            expect_finished(case, state, "bulk.bam", [], out)
            if sorted(os.listdir(outfs)) != ["out.bam"]:
                raise Failure("files left beside the output", sorted(os.listdir(outfs)))
            os.remove(out)
        tmpfs.with_tmpfs(case.dir, "64M,nr_inodes=16", body, Failure, name="outfs")


# --- 8: nothing left behind --------------------------------------------------------

def hidden_files(case):
    return sorted(n for n in os.listdir(case.out_dir) if n.startswith("."))


def test_resume_kill_while_indexing_leaves_nothing(case):
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL + ["--write-index"]) + [src]
    kill_when(case, args, lambda: "C" in journal_types(state)
              and any(n.startswith(".out.bam.csi.rocksort.") for n in hidden_files(case)),
              "the index being written")
    rerun(case, args)
    expect_finished(case, state, "bulk.bam", [])
    if hidden_files(case) or not os.path.exists(case.out("out.bam.csi")):
        raise Failure("hidden files left, or no index", hidden_files(case))


def test_resume_rerun_to_stdout_removes_the_old_hidden_output(case):
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    kill_when(case, sort_args(case, state, [], SPILL) + [src],
              lambda: "C" in journal_types(state) and hidden_output(case, "out.bam"),
              "the output being written")
    result = case.rocksort([*SPILL, "--resume", state, "-T", case.temp_prefix, src])
    if result.returncode != 0:
        raise Failure(f"exit {result.returncode}", tail(result.stderr))
    write_bytes(case.out("stdout.bam"), result.stdout)
    expect_finished(case, state, "bulk.bam", [], "stdout.bam")
    if hidden_files(case):
        raise Failure("the killed run's hidden output is still there", hidden_files(case))


def test_resume_relative_dir_named_by_its_real_path(case):
    """A relative DIR is relative to the working directory: a rerun from
    another one cannot find it, so every line names DIR's real path."""
    src = case.input("bulk.bam")
    args = [*SPILL, "--resume", "state", "-T", case.temp_prefix, "-o", "out.bam", src]
    _, stderr = kill_when(case, args, lambda: runs_stored(case.out("state")) >= 5,
                          "5 runs stored", sig=signal.SIGTERM)
    where = os.path.realpath(case.out("state"))
    lines = stderr_lines(stderr)
    if len(lines) != 1 or f"'{where}'" not in lines[0]:
        raise Failure(f"the line does not name {where}", lines)
    rerun(case, args)
    expect_finished(case, case.out("state"), "bulk.bam", [])


# --- 9 and 11: the journal -----------------------------------------------------------

def rewrite_first_record(state, change):
    frames = journal_frames(state)
    path = os.path.join(state, JOURNAL)
    with open(path, "rb") as f:
        data = f.read()
    first = change(frames[0][1])
    write_bytes(path, struct.pack("<II", len(first), zlib.crc32(first)) + first
                + data[frames[1][0]:])


def test_resume_state_of_the_next_version_starts_afresh(case):
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    kill_after(case, state, args, 5)
    version = struct.unpack_from("<Q", journal_frames(state)[0][1], 8)[0]
    rewrite_first_record(state, lambda p: p[:8] + struct.pack("<Q", version + 1) + p[16:])
    lines = rerun(case, args)
    if not any("not resuming" in line and "another version" in line for line in lines):
        raise Failure("no line says the state is of another version", lines)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_zero_filled_journal_tail_is_cut(case):
    """A crash can leave a journal extended by zeros: they are cut away,
    and the runs before them are taken back."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    runs = kill_after(case, state, args, 10)
    with open(os.path.join(state, JOURNAL), "ab") as f:
        f.write(bytes(4096))
    lines = rerun(case, args)
    if any("not resuming" in line for line in lines) or (resumed_runs(lines) or 0) < runs - 1:
        raise Failure("the zeros cost the state", lines)
    expect_finished(case, state, "bulk.bam", [])


@each((f"resume_refuses_foreign_{name}", name) for name in ("journal_and_db", "empty_journal"))
def test_resume_refuses_foreign_state_shape(case, name):
    """A directory of exactly `journal` and `db` that rocksort did not
    write: refused before reading, every byte left alone."""
    state = os.path.join(case.dir, "theirs")
    os.makedirs(os.path.join(state, "db"))
    mine = {"journal": b"" if name == "empty_journal" else b"2024-01-01 their log line\n" * 50,
            "db/CURRENT": b"MANIFEST-000001\n"}
    for rel, data in mine.items():
        write_bytes(os.path.join(state, rel), data)
    result = case.rocksort(sort_args(case, state, [], SPILL) + [case.input("bulk.bam")])
    lines = stderr_lines(result.stderr)
    if result.returncode != 1 or len(lines) != 1 or "not a rocksort state" not in lines[0]:
        raise Failure(f"exit {result.returncode}, expected 1 with one line refusing DIR", lines)
    for rel, data in mine.items():
        with open(os.path.join(state, rel), "rb") as f:
            if f.read() != data:
                raise Failure(f"{rel} was changed")
    if sorted(os.listdir(state)) != ["db", "journal"] or os.listdir(os.path.join(state, "db")) \
            != ["CURRENT"]:
        raise Failure("files were added or removed", sorted(os.listdir(state)))


def test_resume_second_sort_on_a_state_refused(case):
    """The journal's lock: a second sort on a state in use is refused, and
    leaves it to the first, which finishes."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + ["-"]
    with open(src, "rb") as f:
        data = f.read()
    with Background(case, args, stdin=True) as bg:
        bg.feed(data[:len(data) // 2])
        wait_until(lambda: runs_stored(state) >= 3, "3 runs stored", bg)
        second = case.rocksort(sort_args(case, state, [], SPILL, "second.bam") + [src])
        lines = stderr_lines(second.stderr)
        if second.returncode != 1 or not any("in use by another sort" in line for line in lines) \
                or "kept as it was" not in lines[-1]:
            raise Failure(f"the second sort: exit {second.returncode}", lines)
        bg.feed(data[len(data) // 2:])
        bg.end_input()
        if bg.wait() != 0:
            raise Failure("the first sort failed", bg.stderr_tail())
    expect_finished(case, state, "bulk.bam", [])


# --- 10: a same-size edit with its mtime put back ------------------------------------

def test_resume_same_size_edit_with_mtime_restored(case):
    """The input edited in place, its size kept and its mtime put back to
    the nanosecond: the edit is seen (sampled blocks), the state discarded,
    and the output is the edited file's."""
    src, state = copy_input(case, "bulk.sam", "in.sam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    kill_after(case, state, args, 5)
    before = os.stat(src)
    with open(src, "r+b") as f:
        lines = f.read().split(b"\n")
        swap = bytes.maketrans(b"ACGT", b"TGCA")
        edited = [line if line.startswith(b"@") or not line else
                  b"\t".join(field.translate(swap) if i == 9 else field
                             for i, field in enumerate(line.split(b"\t")))
                  for line in lines]
        f.seek(0)
        f.write(b"\n".join(edited))
    os.utime(src, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(src)
    if (after.st_size, after.st_ino, after.st_mtime_ns) != \
            (before.st_size, before.st_ino, before.st_mtime_ns):
        raise Failure("test is wrong: the edit changed the size, inode or mtime")
    lines = rerun(case, args)
    if not any("not resuming" in line and "another sort" in line for line in lines):
        raise Failure("the edited input was taken for the first", lines)
    case.expect_same(case.out("out.bam"), oracle_output(case, src, []))


# --- 11: reference paths -------------------------------------------------------------

def test_resume_reference_written_two_ways(case):
    """--reference ref.fa and ./ref.fa name one file: the state is taken
    back.  From a directory where ref.fa is not, the sort is refused before
    DIR is touched."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    for name in ("ref.fa", "ref.fa.fai"):
        shutil.copy(case.input("mixed.fa") + name[len("ref.fa"):], case.out(name))
    args = sort_args(case, state, [], SPILL) + [src]
    runs = kill_after(case, state, ["--reference", "ref.fa", *args], 8)
    elsewhere = os.path.join(case.dir, "elsewhere")
    os.mkdir(elsewhere)
    moved = case.rocksort(["--reference", "ref.fa", *args], cwd=elsewhere)
    lines = stderr_lines(moved.stderr)
    if moved.returncode != 1 or "cannot find the reference 'ref.fa'" not in lines[0] \
            or "kept as it was" not in lines[-1] or runs_stored(state) < runs - 1:
        raise Failure(f"from another directory: exit {moved.returncode}", lines)
    lines = rerun(case, ["--reference", "./ref.fa", *args])
    if any("not resuming" in line for line in lines) or (resumed_runs(lines) or 0) < runs - 1:
        raise Failure("./ref.fa lost the state of ref.fa", lines)
    expect_finished(case, state, "bulk.bam", [])
