"""--resume DIR holds the sort's state only, and a finished sort removes it:
an output, an index or a -T that would lie inside DIR, its links resolved,
is refused before anything is read or written (#50: `mkdir st; rocksort
--resume st -o st/out.bam in.bam` exited 0, then removed st with the
output and its index in it).  Each way of naming a place inside DIR is
tried, with DIR empty and with DIR holding a killed sort's state: the sort
must exit 1 with one line naming DIR, create nothing, and keep DIR as it
was.
To run only these:  run_tests.py -k 'resume_dir_guard*'
"""

import os
import signal

from harness import Failure, each, stderr_lines, tail
from resume import SPILL, kill_when, runs_stored, sort_args

SOURCE = "bulk.bam"


def links_in(case, state):
    """Links beside the outputs: a directory link to DIR, a file link to a
    file not yet made inside DIR, and a chain of two such links."""
    os.symlink(state, os.path.join(case.dir, "to_state"))
    os.symlink(os.path.join(state, "made_here.bam"), case.out("dangling.bam"))
    os.symlink("dangling.bam", case.out("chain.bam"))


def placements(case, state):
    """-> {name: (options naming the place, the cwd to run in)}"""
    rel = os.path.relpath(state, case.out_dir)
    return {
        "output": (["-o", os.path.join(state, "out.bam")], None),
        "output_relative_from_dir": (["-o", "out.bam"], state),
        "output_dotdot": (["-o", os.path.join(rel, "..", os.path.basename(state), "o.bam")], None),
        "output_through_dir_link": (["-o", os.path.join(case.dir, "to_state", "out.bam")], None),
        "output_dangling_link": (["-o", case.out("dangling.bam")], None),
        "output_link_chain": (["-o", case.out("chain.bam")], None),
        "output_is_dir": (["-o", state], None),
        "index": (["--write-index", "-o", case.out("o.bam") + "##idx##"
                   + os.path.join(state, "o.bam.bai")], None),
        "temp_prefix": (["-T", os.path.join(state, "rs"), "-o", case.out("o.bam")], None),
        "temp_dir_is_dir": (["-T", state, "-o", case.out("o.bam")], None),
        "legacy_prefix": (["-f", "INPUT", os.path.join(state, "legacy.bam")], None),
    }


def snapshot(state):
    return sorted(os.listdir(state))


@each((f"resume_dir_guard_{place}_{'state' if with_state else 'empty'}", place, with_state)
      for place in ("output", "output_relative_from_dir", "output_dotdot",
                    "output_through_dir_link", "output_dangling_link", "output_link_chain",
                    "output_is_dir", "index", "temp_prefix", "temp_dir_is_dir", "legacy_prefix")
      for with_state in (False, True))
def test_resume_dir_guard(case, place, with_state):
    src = case.input(SOURCE)
    state = os.path.join(case.dir, "st")
    if with_state:
        kill_when(case, sort_args(case, state, SPILL, []) + [src],
                  lambda: runs_stored(state) >= 2, "two runs stored", signal.SIGKILL)
    else:
        os.mkdir(state)
    links_in(case, state)
    before, beside = snapshot(state), snapshot(case.out_dir)
    options, cwd = placements(case, state)[place]
    options = [src if o == "INPUT" else o for o in options]
    result = case.rocksort([*SPILL, "--resume", state, *options]
                           + ([] if place == "legacy_prefix" else [src]), cwd=cwd)
    lines = stderr_lines(result.stderr)
    # A refused rerun also says that its state was kept (engine/resume_fate.h).
    kept = with_state and lines and "is kept as it was" in lines[-1]
    if result.returncode != 1 or len(lines) != 1 + kept:
        raise Failure(f"exit status {result.returncode} with {len(lines)} lines, expected "
                      "1 and the error line (and the state's)", tail(result.stderr))
    if "--resume directory" not in lines[0]:
        raise Failure("the line does not say the place lies inside the --resume directory", lines)
    if not os.path.isdir(state) or snapshot(state) != before:
        raise Failure("DIR changed", [f"before: {before}",
                                      f"after: {snapshot(state) if os.path.isdir(state) else 'gone'}"])
    made = sorted(set(snapshot(case.out_dir)) - set(beside))
    if made:
        raise Failure("files were created beside the outputs", made[:5])


def test_resume_dir_guard_outside_still_sorts(case):
    """A sibling of DIR whose name starts with DIR's is not inside it."""
    src = case.input(SOURCE)
    state = os.path.join(case.dir, "st")
    os.mkdir(state)
    out = os.path.join(case.dir, "st2", "out.bam")
    os.mkdir(os.path.dirname(out))
    result = case.rocksort(["--resume", state, "-o", out, src])
    if result.returncode != 0:
        raise Failure(f"exit status {result.returncode}", tail(result.stderr))
    case.expect_same(out, case.session.expected(SOURCE, []))
    if os.path.exists(state):
        raise Failure("the state directory is still there after the sort succeeded")
