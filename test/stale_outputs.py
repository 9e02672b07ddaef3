"""Hidden outputs that SIGKILL left behind (issue #45, item 3).

An output and its index are written under hidden names beside their final
ones (".NAME.rocksort.XXXXXX"), and the sort writing them holds an flock on
each.  A later sort with the same -o removes those no live process holds,
and nothing else: not a live sort's, not another output's, not a name of
another form, not a link, a FIFO or a directory.  It finds them without
reading the directory's listing (a directory of a file per cell costs each
sort nothing more), and a resumed sort leaves a held file under the name its
killed run journaled.

Every process here waits at an observed point: a sort reading a stream that
is not closed yet has its hidden files open and stays there; the killed one
is killed once its hidden files are seen.  To run only these:
run_tests.py -k stale_
"""

import errno
import fcntl
import os
import re
import shutil
import stat
import subprocess

from background import Background, wait_until
from harness import Failure, tail
from resume import SPILL, expect_finished, hidden_output, kill_when, rerun, runs_stored, sort_args
from resume_guards import rocksort_failing

OUT, INDEX = ".out.bam.rocksort.", ".out.bam.csi.rocksort."


def hidden(case, prefix):
    """Regular files of the hidden form: prefix, then mkstemp's 6 letters or
    digits."""
    form = re.compile(re.escape(prefix) + r"[A-Za-z0-9]{6}")
    return sorted(n for n in os.listdir(case.out_dir) if form.fullmatch(n)
                  and stat.S_ISREG(os.lstat(case.out(n)).st_mode))


def decoys(case):
    """Names a sweep for out.bam must leave: other forms, another output's,
    and what is not a regular file."""
    kept = [".out.bam.rocksort.abcde", ".out.bam.rocksort.abc_ef", ".out.bam.rocksort.abcdef.x",
            ".other.bam.rocksort.abcdef", "out.bam.rocksort.abcdef"]
    for name in kept:
        open(case.out(name), "w").close()
    os.mkfifo(case.out(".out.bam.rocksort.fifo12"))
    os.mkdir(case.out(".out.bam.rocksort.dir123"))
    os.symlink(case.out(kept[0]), case.out(".out.bam.rocksort.link12"))
    return kept + [".out.bam.rocksort.fifo12", ".out.bam.rocksort.dir123",
                   ".out.bam.rocksort.link12"]


def first_records(case, source, records):
    """The header and the first records of a SAM input, whole lines."""
    with open(case.input(source), "rb") as f:
        lines = f.read().split(b"\n")
    header = [line for line in lines if line.startswith(b"@")]
    body = [line for line in lines if line and not line.startswith(b"@")]
    return b"\n".join(header + body[:records]) + b"\n"


def test_stale_hidden_outputs_removed_live_ones_left(case):
    """A sort with --write-index, killed (SIGKILL) once its hidden output
    and index exist, leaves both; a second sort of the same -o, still
    reading its stream, holds its own.  A third sort of that -o removes the
    killed one's two files and keeps the live one's and every decoy, and
    writes the oracle's output; the live sort then finishes cleanly."""
    kept = decoys(case)
    head = first_records(case, "bulk.sam", 200)
    args = ["-o", case.out("out.bam"), "-"]
    with Background(case, ["-T", case.temp_prefix, *args], stdin=True, name="live") as live:
        live.feed(head)
        wait_until(lambda: hidden(case, OUT), "the live sort's hidden output", live)
        live_files = hidden(case, OUT)
        # SIGKILL leaves its temporary database too: not under the case's -T.
        killed_tmp = os.path.join(case.dir, "killed-tmp")
        os.mkdir(killed_tmp)
        killed_args = ["--write-index", *args, "-T", os.path.join(killed_tmp, "rs")]
        with Background(case, killed_args, stdin=True, name="killed") as killed:
            killed.feed(head)
            wait_until(lambda: len(hidden(case, OUT)) == 2 and hidden(case, INDEX),
                       "the killed sort's hidden output and index", killed)
            killed.proc.kill()
            killed.wait()
        stale = sorted(set(hidden(case, OUT) + hidden(case, INDEX)) - set(live_files))
        if len(stale) != 2:
            raise Failure("test is wrong: the killed sort left no hidden output and index",
                          stale)
        src = case.input("bulk.bam")
        case.rocksort_ok(["--write-index", "-T", case.temp_prefix, "-o", case.out("out.bam"), src])
        case.expect_same(case.out("out.bam"), case.session.expected("bulk.bam", []))
        left = sorted(n for n in os.listdir(case.out_dir) if n not in kept)
        if left != sorted(live_files + ["out.bam", "out.bam.csi"]):
            raise Failure("the stale hidden files were not removed, or more was",
                          [f"stale: {stale}", f"live: {live_files}", f"left: {left}"])
        live.end_input()
        if live.wait() != 0:
            raise Failure("the live sort failed", live.stderr_tail())
    left = sorted(n for n in os.listdir(case.out_dir) if n not in kept)
    if left != ["out.bam", "out.bam.csi"]:
        raise Failure("files left beside the output", left)
    case.expect_no_temp_left()


def killed_with_hidden_output(case, out_name="out.bam"):
    """A sort of -o out_name killed (SIGKILL) once its hidden output is
    there, its temporary database under a -T of its own.  -> the names of
    the hidden files it left."""
    prefix = f".{out_name}.rocksort."
    killed_tmp = os.path.join(case.dir, "killed-tmp")
    os.makedirs(killed_tmp, exist_ok=True)
    args = ["-o", case.out(out_name), "-T", os.path.join(killed_tmp, "rs"), "-"]
    with Background(case, args, stdin=True, name="killed") as killed:
        killed.feed(first_records(case, "bulk.sam", 200))
        wait_until(lambda: hidden(case, prefix), "the killed sort's hidden output", killed)
        killed.proc.kill()
        killed.wait()
    return hidden(case, prefix)


def listings_read(trace, directory):
    """strace -y lines that read directory's listing."""
    real = os.path.realpath(directory)
    with open(trace) as f:
        return [line.strip() for line in f
                if re.search(r"getdents(?:64)?\(\d+<" + re.escape(real) + ">", line)]


def test_stale_sweep_reads_no_directory_listing(case):
    """An output directory may hold hundreds of thousands of files (one per
    cell or region, each sorted by its own run): finding the stale hidden
    files of one -o must not read the directory's listing, which would
    make every sort there cost in proportion to its size (and the whole
    workflow quadratic).  A sort with --write-index into a directory of
    5,000 files, under strace, removes the killed sort's hidden output,
    writes the oracle's output and reads no listing of that directory."""
    strace = shutil.which("strace")
    if not strace:
        raise Failure("strace is missing: scripts/deps.sh test installs it")
    for i in range(5000):
        open(case.out(f"cell_{i:05d}.bam"), "w").close()
    stale = killed_with_hidden_output(case)
    if not stale:
        raise Failure("test is wrong: the killed sort left no hidden output")
    trace = os.path.join(case.dir, "trace")
    cmd = [strace, "-f", "-qq", "-y", "-e", "trace=getdents,getdents64", "-o", trace,
           *case.session.rocksort_cmd, "--write-index", "-T", case.temp_prefix,
           "-o", case.out("out.bam"), case.input("bulk.bam")]
    env = dict(case.session.env, TMPDIR=case.tmp)
    # LeakSanitizer cannot run under ptrace; other tests check leaks on this path.
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=case.out_dir, env=env, timeout=300)
    if result.returncode != 0:
        raise Failure(f"rocksort exited with {result.returncode}", tail(result.stderr))
    case.expect_same(case.out("out.bam"), case.session.expected("bulk.bam", []))
    left = [n for n in stale if os.path.lexists(case.out(n))]
    if left:
        raise Failure("the killed sort's hidden output was not removed", left)
    read = listings_read(trace, case.out_dir)
    if read:
        raise Failure(f"the output directory's listing was read {len(read)} times", read[:3])


def killed_resumable(case, state):
    """A resumable sort of bulk.bam to out.bam killed (SIGKILL) once 2 runs
    are stored.  -> (its arguments, the hidden output it journaled)."""
    args = sort_args(case, state, [], SPILL) + [case.input("bulk.bam")]
    kill_when(case, args, lambda: runs_stored(state) >= 2, "2 runs stored")
    journaled = hidden_output(case, "out.bam")
    if not journaled:
        raise Failure("test is wrong: the killed run left no hidden output")
    return args, journaled


def test_stale_resumed_sort_leaves_a_held_journaled_name(case):
    """A resumed sort removes the hidden output its killed run journaled,
    but not while a live sort holds a file under that name: once the
    killed run's file went stale, the next sort of the same -o may have
    removed it and made its own under the same name.  Here the test holds
    the name's lock, as that sort would; the rerun finishes with the
    oracle's output and leaves the held file."""
    state = os.path.join(case.dir, "state")
    args, journaled = killed_resumable(case, state)
    held = os.open(journaled, os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        rerun(case, args)
        expect_finished(case, state, "bulk.bam", [])
        if not os.path.exists(journaled):
            raise Failure("the rerun removed a hidden file a live sort holds",
                          [os.path.basename(journaled)])
    finally:
        os.close(held)


def test_stale_no_locks_sweep_keeps_resume_still_removes(case):
    """Where the output's file system refuses flock (ENOLCK, as NFS mounted
    without locking), a live sort cannot be told from a dead one: a sweep
    removes no hidden file of the same -o.  A resumed sort still removes
    the one its killed run journaled (no sweep can have freed that name for
    another sort there), and finishes with the oracle's output."""
    state = os.path.join(case.dir, "state")
    args, journaled = killed_resumable(case, state)
    unknown = case.out(".out.bam.rocksort.000009")    # a stale one, or a live one?
    open(unknown, "w").close()
    result = rocksort_failing(case, args, "flock", errno.ENOLCK, 0, case.out_dir)
    if result.returncode != 0:
        raise Failure(f"rocksort exited with {result.returncode}", tail(result.stderr))
    expect_finished(case, state, "bulk.bam", [])
    if os.path.exists(journaled):
        raise Failure("the killed run's journaled hidden output is still there",
                      [os.path.basename(journaled)])
    if not os.path.exists(unknown):
        raise Failure("a sweep removed a hidden file it could not lock")
