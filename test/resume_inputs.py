"""--resume DIR rerun with an input that cannot go on from the state
(issue #45, item 3): nothing in DIR is discarded until the new input has
been read and shown to be another one.

- A file's sort killed during its load, rerun as README once said with
  `- < /dev/null`: the rest of the input is in the file, so the state is
  kept with every run and the line says to rerun with that file, which
  then finishes.  Standard input that is not SAM, BAM or CRAM, or empty
  with another order, leaves the state as it was.
- Killed in the readout, `- < /dev/null` writes the output from DIR alone,
  for a file's sort as for a stream's; with --verify and no checksum of
  the stored records it asks for the file instead, keeping the state.
- A stream's sort killed in the load, rerun with an empty stdin: kept, and
  the line says to rerun with the stream.
- A readable input of the other kind (the file's bytes as a stream, the
  stream as a file) is another input: afresh, with the oracle's records.
- No state and no input: one line, and no DIR made.
- A damaged state given no input is kept as it was; a stream whose header
  reads but whose first record does not (SAM without its header) is not
  shown readable, and keeps a file's state too.

Every line on stderr is checked: the last one must say truly what became of
DIR.  To run only these:  run_tests.py -k resume_input
"""

import os
import re

from harness import Failure, stderr_lines, write_bytes
from resume import (SPILL, expect_finished, expect_fate_told, hidden_output, journal_types,
                    kill_when, rerun, resumed_runs, runs_stored, sort_args)

# A kill between a run's journal record and RocksDB taking it in leaves a
# run the next open takes in from its file, or forgets.
RUNS = re.compile(r"\((\d+) runs stored\)")


def journal_bytes(state):
    with open(os.path.join(state, "journal"), "rb") as f:
        return f.read()


def expect_untouched(case, result, state, journal, because):
    """Exit 1, a line matching `because`, DIR's journal byte for byte as it
    was, the last line saying so, nothing discarded, no output written."""
    lines = stderr_lines(result.stderr)
    if result.returncode != 1 or not any(re.search(because, line) for line in lines):
        raise Failure(f"exit {result.returncode}, expected 1 with a line matching {because!r}",
                      lines)
    if journal_bytes(state) != journal:
        raise Failure("the state was changed", lines + [journal_types(state)])
    if "kept as it was" not in lines[-1] or os.path.realpath(state) not in lines[-1]:
        raise Failure("the last line does not say the state is kept as it was", lines)
    if any("afresh" in line or "removed" in line for line in lines):
        raise Failure("a line says the state is discarded", lines)
    if os.path.exists(case.out("out.bam")):
        raise Failure("an output was written", lines)
    return lines


def expect_kept_with_runs(case, result, state, minimum, because, resuming=False):
    """Exit 1, a line matching `because`, and a last line saying DIR is
    kept with as many runs as it holds, at least `minimum`; no line says
    the state is resumed unless `resuming` (a complete state is, before
    the failure)."""
    lines = stderr_lines(result.stderr)
    if result.returncode != 1 or not any(re.search(because, line) for line in lines):
        raise Failure(f"exit {result.returncode}, expected 1 with a line matching {because!r}",
                      lines)
    expect_fate_told(lines, state)
    told = RUNS.search(lines[-1])
    held = runs_stored(state)
    if not told or int(told[1]) != held or held < minimum:
        raise Failure(f"DIR holds {held} runs (at least {minimum} expected); the last line "
                      "must say how many", lines)
    if any("afresh" in line or "removed" in line or ("resuming" in line and not resuming)
           for line in lines):
        raise Failure("a line says the state is discarded or resumed", lines)
    if os.path.exists(case.out("out.bam")):
        raise Failure("an output was written", lines)
    return lines


def test_resume_input_file_killed_in_load_then_empty_stdin(case):
    """The issue's sequence: a file's sort killed once 5 runs are stored;
    `- < /dev/null` keeps every run and says to rerun with the file;
    stdin that is no SAM, BAM or CRAM, and an empty one with another
    order, leave the state as it was; the file then finishes the sort."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + [src], lambda: runs_stored(state) >= 5, "5 runs stored")
    empty = case.rocksort(args + ["-"])
    lines = expect_kept_with_runs(case, empty, state, 4, "standard input is empty")
    if not any(os.path.realpath(src) in line and "rerun with that file" in line
               for line in lines):
        raise Failure("no line names the file to rerun with", lines)
    journal = journal_bytes(state)
    garbage = os.path.join(case.dir, "garbage.txt")
    write_bytes(garbage, b"this is not a SAM file\n")
    expect_untouched(case, case.rocksort(args + ["-"], stdin=garbage), state, journal,
                     "not a SAM, BAM or CRAM file")
    expect_untouched(case, case.rocksort(sort_args(case, state, ["-n"], SPILL) + ["-"]), state,
                     journal, "'order' differs")
    runs = runs_stored(state)
    lines = rerun(case, args + [src])
    if resumed_runs(lines) != runs:
        raise Failure(f"the file's rerun did not take back the {runs} runs", lines)
    expect_finished(case, state, "bulk.bam", [])
    if hidden_output(case, "out.bam"):
        raise Failure("the killed run's hidden output is still there")


def test_resume_input_file_killed_in_readout_then_empty_stdin(case):
    """A file's sort killed while its output is written: with --verify and
    no checksum of the stored records, `- < /dev/null` asks for the file
    and keeps the state; without, it writes the oracle's output from DIR
    alone and removes the killed run's hidden output."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + [src], lambda: "C" in journal_types(state)
              and hidden_output(case, "out.bam"), "the output being written")
    runs = runs_stored(state)
    verify = case.rocksort(args + ["--verify", "-"])
    lines = expect_kept_with_runs(case, verify, state, runs, "--verify must read the input",
                                  resuming=True)
    if not any(os.path.realpath(src) in line for line in lines):
        raise Failure("the line does not name the file to rerun with", lines)
    if "C" not in journal_types(state):
        raise Failure("the complete state lost its completion", [journal_types(state)])
    lines = rerun(case, args + ["-"])
    if not any("whole input is stored" in line for line in lines):
        raise Failure("the rerun did not go straight to the readout", lines)
    expect_finished(case, state, "bulk.bam", [])
    if hidden_output(case, "out.bam"):
        raise Failure("the killed run's hidden output is still there")


def test_resume_input_file_state_given_its_bytes_as_a_stream(case):
    """A file's state and the file's bytes on stdin: a stream is another
    input (its records cannot be checked against a file's state), so the
    state is discarded with a line saying why, but only after an empty
    stdin kept it, and the sort gives the oracle's records."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + [src], lambda: runs_stored(state) >= 5, "5 runs stored")
    expect_kept_with_runs(case, case.rocksort(args + ["-"]), state, 4, "standard input is empty")
    lines = rerun(case, args + ["-"], stdin=src)
    if not any("not resuming" in line and "'input' differs" in line and "afresh" in line
               for line in lines):
        raise Failure("no line says the state was another input's", lines[:3])
    expect_finished(case, state, "bulk.bam", [])


def test_resume_input_stream_killed_in_load_then_empty_stdin(case):
    """A stream's sort killed in its load, rerun with an empty stdin: kept,
    and the line says to rerun with the stream; the same bytes given as a
    file are another input, sorted afresh."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + ["-"], lambda: runs_stored(state) >= 5, "5 runs stored",
              stdin_path=src)
    lines = expect_kept_with_runs(case, case.rocksort(args + ["-"]), state, 4,
                                  "standard input is empty")
    if not any("rerun with that stream" in line for line in lines):
        raise Failure("no line says to rerun with the stream", lines)
    lines = rerun(case, args + [src])
    if not any("not resuming" in line and "'input' differs" in line for line in lines):
        raise Failure("no line says the state was another input's", lines[:3])
    expect_finished(case, state, "bulk.bam", [])


def test_resume_input_none_and_no_state(case):
    """No state and an empty stdin: one line, exit 1, and no DIR made."""
    state = os.path.join(case.dir, "state")
    result = case.rocksort(sort_args(case, state, [], SPILL) + ["-"])
    lines = stderr_lines(result.stderr)
    if result.returncode != 1 or len(lines) != 1 or "nothing to sort" not in lines[0]:
        raise Failure(f"exit {result.returncode}, expected 1 and one line", lines)
    if os.path.lexists(state):
        raise Failure("a state directory was made for nothing", sorted(os.listdir(state)))
    case.expect_no_temp_left()


def test_resume_input_none_keeps_a_damaged_state(case):
    """A state whose database no longer opens (its MANIFEST gone), rerun
    with `- < /dev/null`: with no input there is nothing to sort afresh,
    so the state is kept as it was, byte for byte, and the lines say why
    it cannot be finished, not that a state of 0 runs is kept for a rerun
    'with the same input'.  The file then discards it with a line saying
    why and gives the oracle's records."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + [src], lambda: "C" in journal_types(state), "the input stored")
    db = os.path.join(state, "db")
    for name in os.listdir(db):
        if name.startswith("MANIFEST-"):
            os.remove(os.path.join(db, name))
    # RocksDB's own log (LOG, LOG.old.*) turns over at each open attempt.
    before = sorted(n for n in os.listdir(db) if not n.startswith("LOG"))
    journal = journal_bytes(state)
    lines = expect_untouched(case, case.rocksort(args + ["-"]), state, journal,
                             "standard input is empty, and the state .* cannot be finished as "
                             "it is: its database does not open")
    if sorted(n for n in os.listdir(db) if not n.startswith("LOG")) != before:
        raise Failure("the state's database was changed", lines)
    lines = rerun(case, args + [src])
    if not any("not resuming" in line and "does not open" in line and "afresh" in line
               for line in lines):
        raise Failure("no line says why the damaged state was discarded", lines[:3])
    expect_finished(case, state, "bulk.bam", [])


def test_resume_input_first_record_unreadable_keeps_the_state(case):
    """A file's state, rerun with a stream whose header reads but whose
    first record does not: SAM without its header (`samtools view` without
    -h), and a SAM header followed by a line that is no record.  The stream
    is another input, but not one shown readable: DIR is kept as it was,
    byte for byte.  The file then resumes every run."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + [src], lambda: runs_stored(state) >= 5, "5 runs stored")
    expect_kept_with_runs(case, case.rocksort(args + ["-"]), state, 4, "standard input is empty")
    journal = journal_bytes(state)
    with open(case.input("bulk.sam"), "rb") as f:
        lines = f.read().splitlines(keepends=True)
    header = b"".join(line for line in lines if line.startswith(b"@"))
    body = b"".join(line for line in lines if not line.startswith(b"@"))
    for name, data in (("headerless.sam", body), ("bad_first.sam", header + b"not a record\n")):
        path = os.path.join(case.dir, name)
        write_bytes(path, data)
        expect_untouched(case, case.rocksort(args + ["-"], stdin=path), state, journal,
                         "'-' is truncated or corrupt")
    runs = runs_stored(state)
    lines = rerun(case, args + [src])
    if resumed_runs(lines) != runs:
        raise Failure(f"the file's rerun did not take back the {runs} runs", lines)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_input_option_dropped_is_named(case):
    """A state made with --input-fmt-option, rerun without it: the line
    that keeps the state (no input) or discards it (the file) names the
    input option that differs, not the input, which did not change."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    option = ["--input-fmt-option", "decode_md=0"]
    kill_when(case, option + args + [src], lambda: "C" in journal_types(state),
              "the input stored")
    named = r"its 'input option decode_md=0' differs"
    expect_untouched(case, case.rocksort(args + ["-"]), state, journal_bytes(state), named)
    lines = rerun(case, args + [src])
    if not any(re.search(named, line) and "afresh" in line for line in lines):
        raise Failure("no line names the input option that differs", lines[:3])
    expect_finished(case, state, "bulk.bam", [])


def test_resume_input_filter_changed_is_another_sort(case):
    """A state made with --input-fmt-option filter=flag.read1, rerun with
    filter=flag.read2: the stored runs hold other records than this run
    reads, so the state is another sort's, discarded with a line naming
    the option, and the output is the oracle's for the new filter -- not
    read1 records from the killed run beside read2 records from the rest."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    kill_when(case, ["--input-fmt-option", "filter=flag.read1"] + args,
              lambda: runs_stored(state) >= 2, "2 runs stored")
    read2 = ["--input-fmt-option", "filter=flag.read2"]
    lines = rerun(case, read2 + args)
    if not any("not resuming" in line and "'input option filter=flag.read2' differs" in line
               for line in lines):
        raise Failure("no line says the state was made with another filter", lines[:3])
    expect_finished(case, state, "bulk.bam", read2)
