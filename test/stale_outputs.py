"""Hidden outputs that SIGKILL left behind (issue #45, item 3), and the
hidden names of outputs whose own names are too long to add to (#50, 5).

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


def killed_with_hidden_output(case, out_name="out.bam", find=None):
    """A sort of -o out_name killed (SIGKILL) once its hidden output is
    there (find() lists it; by default the hidden files of out_name), its
    temporary database under a -T of its own.  -> the names of the hidden
    files it left."""
    find = find or (lambda: hidden(case, f".{out_name}.rocksort."))
    killed_tmp = os.path.join(case.dir, "killed-tmp")
    os.makedirs(killed_tmp, exist_ok=True)
    args = ["-o", case.out(out_name), "-T", os.path.join(killed_tmp, "rs"), "-"]
    with Background(case, args, stdin=True, name="killed") as killed:
        killed.feed(first_records(case, "bulk.sam", 200))
        wait_until(find, "the killed sort's hidden output", killed)
        killed.proc.kill()
        killed.wait()
    return find()


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


# Names too long for a hidden name of their own --------------------------------

def long_name(last, length=255):
    """An output name of `length` bytes (255: NAME_MAX), ending in `last` and .bam."""
    return "n" * (length - len(last) - len(".bam")) + last + ".bam"


def hidden_long(case):
    """The hidden files of long_name()s: too long for ".NAME.rocksort.", each
    is ".", NAME's first bytes, "~", 16 hex digits of NAME's hash, then
    ".rocksort." and 6 letters or digits, within 255 bytes."""
    form = re.compile(r"\.n+[a-z]~[0-9a-f]{16}\.rocksort\.[A-Za-z0-9]{6}")
    return sorted(n for n in os.listdir(case.out_dir) if form.fullmatch(n) and len(n) <= 255)


def test_stale_long_name_swept_other_kept(case):
    """Two 255-byte -o names that differ only at their end: their hidden
    names are shortened to fit, each with a hash of the whole name, and
    differ.  Two sorts, one of each, are killed once their hidden output is
    there; a sort of the first name then finds and removes its stale
    file, keeps the other name's, and writes the oracle's output."""
    first, second = long_name("a"), long_name("b")
    other = killed_with_hidden_output(case, second, lambda: hidden_long(case))
    both = killed_with_hidden_output(case, first, lambda: len(hidden_long(case)) == 2
                                     and hidden_long(case))
    if len(other) != 1 or len(both) != 2:
        raise Failure("test is wrong: the killed sorts left no hidden output each", both)
    stale = sorted(set(both) - set(other))
    case.rocksort_ok(["-T", case.temp_prefix, "-o", case.out(first), case.input("bulk.bam")])
    case.expect_same(case.out(first), case.session.expected("bulk.bam", []))
    left = sorted(os.listdir(case.out_dir))
    if left != sorted(other + [first]):
        raise Failure("the stale hidden output was not removed, or more was",
                      [f"stale: {stale}", f"other: {other}", f"left: {left}"])
    case.expect_no_temp_left()


def test_stale_long_names_written_at_once(case):
    """Two 251-byte -o names that differ only at their end (and their
    default indexes of 255 bytes), sorted at once into one directory with
    --write-index: each sort's hidden output and index take the first slot
    (000000) of names of their own, and both end as the oracle's output,
    with nothing else left."""
    names = [long_name("a", 251), long_name("b", 251)]
    with open(case.input("bulk.sam"), "rb") as f:
        data = f.read()
    with Background(case, ["--write-index", "-T", case.temp_prefix, "-o", case.out(names[0]),
                           "-"], stdin=True, name="first") as one, \
            Background(case, ["--write-index", "-T", case.temp_prefix + "2",
                              "-o", case.out(names[1]), "-"], stdin=True, name="second") as two:
        one.feed(data)
        two.feed(data)
        wait_until(lambda: len(hidden_long(case)) == 4 or not two.running(),
                   "both sorts' hidden outputs and indexes", one)
        if not two.running():
            raise Failure(f"the second sort ended (exit status {two.wait()}) before "
                          "its hidden files were seen", two.stderr_tail())
        slots = [n[-6:] for n in hidden_long(case)]
        if slots != ["000000"] * 4:
            raise Failure("the two names' hidden files share names", hidden_long(case))
        for sort in (one, two):
            sort.end_input()
            if sort.wait() != 0:
                raise Failure("a sort failed", sort.stderr_tail())
    for name in names:
        case.expect_same(case.out(name), case.session.expected("bulk.sam", []))
    case.expect_only_files(case.out_dir, names + [n + ".csi" for n in names])
    case.expect_no_temp_left()
