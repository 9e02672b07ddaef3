"""--resume DIR at the edges a review of issue #39 found: failures whose
cause lies outside the state must keep it, damage found in any phase must
remove it in one run, and DIR must go whole, whatever path names it.

- A low `ulimit -n` in the readout of a complete state (RocksDB's "Too
  many open files" while opening a run) is no damage: DIR kept, and a rerun
  with room finishes.
- A stored run damaged on disk and found by a background merge during the
  rerun's load: DIR removed at once, not kept for a rerun that must fail.
- DIR named through a symbolic link: after the sort nothing of the state
  is left, neither the link nor the journal in the directory it names.
- An input file that is not there on the rerun (moved, its file system not
  mounted yet, a relative name from another directory): it cannot be
  opened, and the state, whole input and all, is kept as it was, not
  discarded as another sort's.
- A command line refused before the sort begins (an output in a missing
  directory): the last line says the state is kept as it was.
- RocksDB throws (`ulimit -v` too low for its threads): the process ends
  at once, as on a signal, and its last line says what became of DIR.
- The input replaced by a copy of itself (another inode): a fresh sort,
  and the line that says so names what differs.

To run only these:  run_tests.py -k resume_
"""

import os
import shutil
import subprocess

from faults import instrumented
from harness import PYTHON, Failure, run, stderr_lines
from resume import (MERGING, SPILL, expect_fate_told, expect_finished, hidden_output,
                    journal_types, kill_when, rerun, runs_stored, sort_args)

# Sets RLIMIT_NOFILE, soft and hard, as `ulimit -n N` does, then execs.
LIMIT_FILES = ("import resource, os, sys; n = int(sys.argv[1]); "
               "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
               "os.execvp(sys.argv[2], sys.argv[2:])")


def test_resume_low_ulimit_in_the_readout_keeps_the_state(case):
    """Killed in the readout, rerun under one `ulimit -n` after another,
    each on a copy of the state: the sort finishes with the oracle's
    records, or fails with DIR kept and the last line saying so; a cause
    outside the state never removes it."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    kill_when(case, args, lambda: "C" in journal_types(state)
              and hidden_output(case, "out.bam"), "the output being written")
    saved = os.path.join(case.dir, "saved")
    shutil.copytree(state, saved, symlinks=True)
    shutil.rmtree(state)
    failed = 0
    for limit in range(12, 33, 2):
        shutil.copytree(saved, state, symlinks=True)
        result = run([PYTHON, "-c", LIMIT_FILES, str(limit), *case.session.rocksort_cmd, *args],
                     cwd=case.out_dir, env=dict(case.session.env, TMPDIR=case.tmp))
        lines = stderr_lines(result.stderr)
        if result.returncode == 0:
            expect_finished(case, state, "bulk.bam", [])
            os.remove(case.out("out.bam"))
            continue
        if result.returncode != 1 or os.path.exists(case.out("out.bam")):
            raise Failure(f"ulimit -n {limit}: exit {result.returncode}", lines[-5:])
        if not os.path.exists(state):
            raise Failure(f"ulimit -n {limit}: the state was removed", lines[-5:])
        expect_fate_told(lines, state)
        failed += 1
        shutil.rmtree(state)
    if not failed:
        raise Failure("test is wrong: no limit made the rerun fail")
    shutil.copytree(saved, state, symlinks=True)
    rerun(case, args)
    expect_finished(case, state, "bulk.bam", [])


def ingested_runs(state):
    """Every table file in the state's database.  Not only the newest: a
    kill during a background merge leaves its unfinished output, the newest
    file, which no version names and the next open deletes unread."""
    db = os.path.join(state, "db")
    return [os.path.join(db, n) for n in sorted(os.listdir(db))
            if n.endswith(".sst") and not n.startswith("run-")]


def test_resume_damaged_run_found_in_the_load_removes_the_state(case):
    """The stored runs damaged on disk; the rerun's background merges read
    them while the rest of the input loads.  The state is shown wrong: exit 1,
    DIR removed with a line saying why (not kept for a rerun that would
    load the input again only to fail in the readout), and the next run
    sorts afresh."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], MERGING) + [src]
    kill_when(case, args, lambda: runs_stored(state) >= 8, "8 runs stored")
    for damaged in ingested_runs(state):
        with open(damaged, "r+b") as f:
            f.seek(os.path.getsize(damaged) // 3)
            f.write(bytes(b ^ 0x5a for b in f.read(64)))
    result = case.rocksort(args)
    lines = stderr_lines(result.stderr)
    if result.returncode == 0:
        raise Failure("test is wrong: the damaged run was not read", lines[-5:])
    if result.returncode != 1 or os.path.exists(case.out("out.bam")):
        raise Failure(f"exit {result.returncode}, or an output written", lines[-5:])
    if os.path.exists(state):
        raise Failure("the damaged state was kept", lines[-5:])
    expect_fate_told(lines, state)
    rerun(case, args)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_dir_through_a_symlink_goes_whole(case):
    """DIR is a symbolic link to a directory: killed, the rerun resumes
    through the link, and once it succeeds neither the link nor anything
    of the state in the directory it names is left."""
    src = case.input("bulk.bam")
    target, state = os.path.join(case.dir, "target"), os.path.join(case.dir, "state")
    os.mkdir(target)
    os.symlink(target, state)
    args = sort_args(case, state, [], SPILL) + [src]
    kill_when(case, args, lambda: runs_stored(state) >= 5, "5 runs stored")
    rerun(case, args)
    case.expect_same(case.out("out.bam"), case.session.expected("bulk.bam", [], "out.bam"))
    left = os.listdir(target) if os.path.exists(target) else []
    if os.path.lexists(state) or left:
        raise Failure("the state is left behind", [f"link there: {os.path.lexists(state)}",
                                                   f"in its target: {sorted(left)}"])
    case.expect_no_temp_left()


def test_resume_input_missing_keeps_the_state(case):
    """Killed in the readout; the input file is moved away.  The rerun
    fails in one line naming it, and leaves the state exactly as it was;
    with the file back, the next run resumes from it."""
    src = os.path.join(case.dir, "in.bam")
    shutil.copy(case.input("bulk.bam"), src)
    state = os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    kill_when(case, args, lambda: "C" in journal_types(state)
              and hidden_output(case, "out.bam"), "the output being written")
    with open(os.path.join(state, "journal"), "rb") as f:
        journal = f.read()
    os.rename(src, src + ".moved")
    result = case.rocksort(args)
    lines = stderr_lines(result.stderr)
    if result.returncode != 1 or not any("in.bam" in line and "No such file" in line
                                         for line in lines):
        raise Failure(f"exit {result.returncode}, expected 1 with a line naming the input",
                      lines[-5:])
    expect_fate_told(lines, state)
    with open(os.path.join(state, "journal"), "rb") as f:
        if f.read() != journal:
            raise Failure("the state was changed", lines[-5:])
    os.rename(src + ".moved", src)
    lines = rerun(case, args)
    if not any("the whole input is stored" in line for line in lines):
        raise Failure("the rerun did not resume from the state", lines[:3])
    expect_finished(case, state, "bulk.bam", [])
    hidden = [n for n in os.listdir(case.out_dir) if n.startswith(".")]
    if hidden:
        raise Failure("hidden files left beside the output", hidden)


def test_resume_refused_command_line_says_the_state_is_kept(case):
    """Killed in the load; rerun with -o in a directory that does not
    exist: refused before reading, in a line naming it, and the last line
    says the state is kept, which it is."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    kill_when(case, args, lambda: runs_stored(state) >= 5, "5 runs stored")
    stored = journal_types(state)
    missing = os.path.join(case.dir, "missing", "out.bam")
    result = case.rocksort(sort_args(case, state, [], SPILL, out=missing) + [src])
    lines = stderr_lines(result.stderr)
    if result.returncode != 1 or not any("missing" in line for line in lines):
        raise Failure(f"exit {result.returncode}, expected 1 with a line naming the output",
                      lines)
    expect_fate_told(lines, state)
    if journal_types(state) != stored:
        raise Failure("the state was changed", [stored, journal_types(state)])
    rerun(case, args)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_rocksdb_exception_says_the_state_is_kept(case):
    """`ulimit -v` too low for RocksDB's threads: the uncaught exception's
    line, then one saying the state is kept (test_fault_address_space_limit
    without --resume); without the limit the sort then finishes."""
    if instrumented(case):
        return
    import resource
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], ["-@", "4", *SPILL]) + [src]
    for kib in (150_000, 250_000, 400_000):
        def limit(kib=kib):
            resource.setrlimit(resource.RLIMIT_AS, (kib << 10, kib << 10))
        result = subprocess.run([*case.session.rocksort_cmd, *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=case.out_dir, timeout=120, preexec_fn=limit,
                                env=dict(case.session.env, TMPDIR=case.tmp))
        if result.returncode != 0:
            lines = stderr_lines(result.stderr)
            if result.returncode != 1 or not os.path.exists(state):
                raise Failure(f"exit {result.returncode}, or DIR gone", lines[-5:])
            expect_fate_told(lines, state)
            rerun(case, args)
            expect_finished(case, state, "bulk.bam", [])
            return
        shutil.rmtree(state, ignore_errors=True)
        os.remove(case.out("out.bam"))
    raise Failure("test is wrong: every limit let the sort through")


def test_resume_input_copied_over_names_what_differs(case):
    """The input file replaced by a byte-for-byte copy: its inode is part
    of the identity, so the state is discarded; the line must say why
    (the inode), or a user cannot tell this from a changed option."""
    src, state = os.path.join(case.dir, "in.bam"), os.path.join(case.dir, "state")
    shutil.copy(case.input("bulk.bam"), src)
    args = sort_args(case, state, [], SPILL) + [src]
    kill_when(case, args, lambda: runs_stored(state) >= 5, "5 runs stored")
    shutil.copy2(src, src + ".copy")
    os.replace(src + ".copy", src)
    lines = rerun(case, args)
    if not any("not resuming" in line and "'inode' differs" in line for line in lines):
        raise Failure("no line names the inode as what differs", lines[:3])
    expect_finished(case, state, "bulk.bam", [])
