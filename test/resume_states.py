"""--resume DIR: states a rerun takes back, discards or refuses (issue #35).

A run is killed at an observed phase (test/resume.py's helpers), then
something changes before the rerun: the input, an option, the runs'
format, the state's own bytes.  The rerun must take back what is still
valid, or say in one line why it starts afresh, or refuse with one line;
its output is always the oracle's records, never a mix of two sorts.  A
directory of the user's files is refused before anything is read.

To run only these:  run_tests.py -k resume_
"""

import os
import shutil
import struct
import zlib

from harness import Failure, each, stderr_lines, tail, write_bytes
from resume import (JOURNAL, MERGING, SPILL, expect_finished, expect_fate_told, hidden_output,
                    journal_frames, journal_types, kill_when, rerun, resumed_runs, runs_stored,
                    sort_args)


def test_resume_input_replaced_starts_afresh(case):
    """The input file replaced between runs: a fresh sort of the new one."""
    state = os.path.join(case.dir, "state")
    src = os.path.join(case.dir, "in.bam")
    shutil.copy(case.input("bulk.bam"), src)
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + [src], lambda: runs_stored(state) >= 5, "5 runs stored")
    shutil.copy(case.input("names_bulk.bam"), src)
    lines = rerun(case, args + [src])
    if not any("not resuming" in line and "another sort" in line for line in lines):
        raise Failure("no message that the state was of another sort", lines)
    expect_finished(case, state, "names_bulk.bam", [])


def test_resume_option_changed_starts_afresh(case):
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    kill_when(case, sort_args(case, state, [], SPILL) + [src],
              lambda: runs_stored(state) >= 5, "5 runs stored")
    lines = rerun(case, sort_args(case, state, ["-n"], SPILL) + [src])
    if not any("not resuming" in line for line in lines):
        raise Failure("no message that the state was discarded", lines)
    expect_finished(case, state, "bulk.bam", ["-n"])


def test_resume_auto_format_keeps_the_states(case):
    """Without --temp-compression the runs' format is chosen by the disk's
    speed and free space, which a state's own runs change: a rerun keeps
    the state's format instead of discarding its runs."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    kill_when(case, sort_args(case, state, [], SPILL + ["--temp-compression", "none"]) + [src],
              lambda: runs_stored(state) >= 5, "5 runs stored")
    lines = rerun(case, sort_args(case, state, [], SPILL) + [src])
    # the last journaled run a kill may cut off (74f1788): at least 4 come back
    if (resumed_runs(lines) or 0) < 4 or not any("state to resume" in line for line in lines):
        raise Failure("the rerun did not keep the state's uncompressed runs", lines)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_format_changed_removes_the_partial_output(case):
    """A state discarded (here: another --temp-compression) still names the
    output its killed run left half written: that file goes too."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    kill_when(case, sort_args(case, state, [], SPILL + ["--temp-compression", "none"]) + [src],
              lambda: "C" in journal_types(state) and hidden_output(case, "out.bam"),
              "the output being written")
    lines = rerun(case, sort_args(case, state, [], SPILL + ["--temp-compression", "compact"])
                  + [src])
    if not any("another format" in line for line in lines):
        raise Failure("no message that the state's format differs", lines)
    expect_finished(case, state, "bulk.bam", [])
    if hidden_output(case, "out.bam"):
        raise Failure("the killed run's hidden output is still there")


def journal_cut_before_last(state):
    """Cuts the journal's last whole record away, as a kill just before
    that record was written would have left it."""
    last_at, _ = journal_frames(state)[-1]
    with open(os.path.join(state, JOURNAL), "r+b") as f:
        f.truncate(last_at)


def journal_of_version(state, version):
    """Rewrites the journal's first record with another state version, its
    second field; None drops the field, as rocksort 0.3.0 wrote it (the
    type, then the identity)."""
    frames = journal_frames(state)
    path = os.path.join(state, JOURNAL)
    with open(path, "rb") as f:
        data = f.read()
    head, rest_of_first = frames[0][1][:8], frames[0][1][16:]
    version_field = b"" if version is None else struct.pack("<Q", version)
    first = head + version_field + rest_of_first
    rest = data[frames[1][0]:]
    write_bytes(path, struct.pack("<II", len(first), zlib.crc32(first)) + first + rest)


# 0.3.0's states have no version; version 3's template-coordinate keys lack CB;
# version 4's notes lack the file's ctime and prefix CRC (issue #50).
@each([("resume_state_of_another_version_starts_afresh", None),
       ("resume_state_of_version_3_starts_afresh", 3),
       ("resume_state_of_version_4_starts_afresh", 4)])
def test_resume_state_of_another_version(case, version):
    """A state whose journal has another layout is not taken back, whatever
    its runs hold: one line, and a fresh sort."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    kill_when(case, args, lambda: runs_stored(state) >= 5, "5 runs stored")
    journal_of_version(state, version)
    if journal_types(state)[:2] != "SK":
        raise Failure("the rewritten journal does not read", journal_types(state))
    lines = rerun(case, args)
    if not any("not resuming" in line and "another version" in line for line in lines):
        raise Failure("no message that the state is of another version", lines)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_every_record_stored_before_completion(case):
    """Killed after the last run was stored but before the input's end was
    journaled: the rerun reads the input past every stored record and finds
    nothing left, which must not write an empty run."""
    for name, stdin in (("file", False), ("stdin", True)):
        src, state = case.input("bulk.bam"), os.path.join(case.dir, f"state-{name}")
        args = sort_args(case, state, [], SPILL, f"{name}.bam") + ["-" if stdin else src]
        kill_when(case, args, lambda: "C" in journal_types(state), "the input complete",
                  stdin_path=src if stdin else None)
        journal_cut_before_last(state)
        if journal_types(state)[-1] != "R":
            raise Failure("the journal did not end with a run", journal_types(state))
        rerun(case, args, stdin=src if stdin else None)
        expect_finished(case, state, "bulk.bam", [], f"{name}.bam")


def test_resume_header_only_input(case):
    """A resumable sort of an input without records stores no run."""
    state = os.path.join(case.dir, "state")
    rerun(case, sort_args(case, state, [], []) + [case.input("header_only.bam")])
    expect_finished(case, state, "header_only.bam", [])


def damage_truncated_sst(state):
    ssts = sorted(os.path.join(state, "db", n) for n in os.listdir(os.path.join(state, "db"))
                  if n.endswith(".sst") and not n.startswith("run-"))
    with open(ssts[0], "r+b") as f:
        f.truncate(os.path.getsize(ssts[0]) // 2)


def damage_missing_manifest(state):
    for n in os.listdir(os.path.join(state, "db")):
        if n.startswith("MANIFEST-"):
            os.remove(os.path.join(state, "db", n))


def damage_journal_bytes(state):
    path = os.path.join(state, JOURNAL)
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        f.write(os.urandom(64))


DAMAGES = {"truncated_sst": damage_truncated_sst, "missing_manifest": damage_missing_manifest,
           "random_bytes_in_journal": damage_journal_bytes}


def test_resume_damaged_states(case):
    """Each damage: a fresh sort with the oracle's records, or a one-line
    refusal with no output; never wrong output."""
    src = case.input("bulk.bam")
    for name, damage in DAMAGES.items():
        state = os.path.join(case.dir, f"state-{name}")
        args = sort_args(case, state, [], SPILL)
        kill_when(case, args + [src], lambda: runs_stored(state) >= 10, "10 runs stored")
        damage(state)
        result = case.rocksort(args + [src])
        if result.returncode == 0:
            expect_finished(case, state, "bulk.bam", [])
        elif result.returncode != 1 or os.path.exists(case.out("out.bam")):
            raise Failure(f"{name}: exit {result.returncode}", tail(result.stderr))
        else:
            expect_fate_told(stderr_lines(result.stderr), state)
        if os.path.exists(case.out("out.bam")):
            os.remove(case.out("out.bam"))


def test_resume_corrupt_run_refused_never_wrong(case):
    """Random bytes inside a stored run: RocksDB's checksums refuse it in
    the readout, with no output; the next run starts afresh."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + [src], lambda: runs_stored(state) >= 12, "12 runs stored")
    db = os.path.join(state, "db")
    biggest = max((os.path.join(db, n) for n in os.listdir(db) if n.endswith(".sst")),
                  key=os.path.getsize)
    with open(biggest, "r+b") as f:
        f.seek(os.path.getsize(biggest) // 3)
        f.write(os.urandom(200))
    result = case.rocksort(args + [src])
    if result.returncode == 0:
        expect_finished(case, state, "bulk.bam", [])
        return
    if result.returncode != 1 or os.path.exists(case.out("out.bam")):
        raise Failure(f"a corrupt run: exit {result.returncode}, or output written",
                      tail(result.stderr))
    if os.path.exists(state):
        raise Failure("the damaged state was kept")
    expect_fate_told(stderr_lines(result.stderr), state)
    rerun(case, args + [src])
    expect_finished(case, state, "bulk.bam", [])


def test_resume_refuses_a_directory_of_other_files(case):
    """DIR holds the user's files: refused before reading stdin, the files
    and DIR untouched."""
    state = os.path.join(case.dir, "mine")
    os.makedirs(os.path.join(state, "db"))
    write_bytes(os.path.join(state, "notes.txt"), b"my notes\n")
    fifo = os.path.join(case.dir, "in.fifo")
    os.mkfifo(fifo)     # nothing ever writes it: reading it would hang the run
    result = case.rocksort(sort_args(case, state, [], SPILL) + [fifo])
    lines = stderr_lines(result.stderr)
    if result.returncode != 1 or len(lines) != 1 or "mine" not in lines[0]:
        raise Failure(f"exit {result.returncode}, expected 1 with one line naming the directory",
                      lines)
    with open(os.path.join(state, "notes.txt"), "rb") as f:
        if f.read() != b"my notes\n" or sorted(os.listdir(state)) != ["db", "notes.txt"]:
            raise Failure("the user's directory was changed")


def test_resume_fresh_run_succeeds_and_removes_dir(case):
    """Nothing goes wrong: DIR is made, used and removed; the output is the
    oracle's, with -@ 2 and background merges; the runs bypass the page
    cache as a plain sort's do."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "new", "state")
    os.makedirs(os.path.dirname(state))
    lines = rerun(case, sort_args(case, state, [], [*MERGING, "-@", "2"]) + [src])
    expect_finished(case, state, "bulk.bam", [])
    # The state's runs are read as a temporary database's are (direct I/O).
    # Not the reader threads: at -m 1M a plain sort's runs, whose readers
    # would not fit even merged, skip the background merges for passes and
    # are read by two; a resumable store is never passed over, so it keeps
    # its merges, and one part.
    plain = stderr_lines(case.rocksort(["-v", *MERGING, "-T", case.temp_prefix, "-o",
                                        case.out("plain.bam"), src]).stderr)
    reads = [[line.split(";")[0] for line in got if "temp reads" in line]
             for got in (lines, plain)]
    if reads[0] != reads[1]:
        raise Failure("--resume reads its runs otherwise than a plain sort", reads)
