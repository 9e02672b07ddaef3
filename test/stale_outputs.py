"""Hidden outputs that SIGKILL left behind (issue #45, item 3).

An output and its index are written under hidden names beside their final
ones (".NAME.rocksort.XXXXXX"), and the sort writing them holds an flock on
each.  A later sort with the same -o removes those no live process holds,
and nothing else: not a live sort's, not another output's, not a name of
another form, not a link, a FIFO or a directory.

Every process here waits at an observed point: a sort reading a stream that
is not closed yet has its hidden files open and stays there; the killed one
is killed once its hidden files are seen.  To run only these:
run_tests.py -k stale_
"""

import os
import re
import stat

from background import Background, wait_until
from harness import Failure

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
