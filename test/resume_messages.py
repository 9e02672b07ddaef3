"""--resume DIR: lines that must add up (issue #50, item 8).

- A signal while a run is journaled and not yet taken in (its ingestion
  held up by test/fault_inject.c): the line says as many runs stored as
  the journal holds, and the rerun takes back as many.  It said one fewer,
  and the rerun then took in the journaled run and said one more.
- A rerun refused at once (--verify with no input and no checksum of the
  stored records; another stream given to a complete state) never first
  says it is writing the output.

To run only these:  run_tests.py -k 'resume_message*'
"""

import os
import re
import signal

from background import Background, wait_until
from harness import Failure, stderr_lines
from resume import (SPILL, expect_finished, hidden_output, journal_types, kill_when, rerun,
                    resumed_runs, runs_stored, sort_args)
from resume_guards import fault_library
from resume_reruns import expect_kept, kill_stream_in_readout, same_header_other_records

STALL_MS = 1000     # each run's link into the database: time to signal in
KEPT = re.compile(r"kept in '[^']*' \((\d+) runs stored\)")


def test_resume_message_signal_counts_a_journaled_run(case):
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    fault = f"stall:{STALL_MS}:0:{os.path.realpath(state)}"
    asan = case.session.env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    wrap = ["env", f"LD_PRELOAD={fault_library(case)}", f"ROCKSORT_TEST_FAULT={fault}",
            f"ASAN_OPTIONS={asan}"]
    with Background(case, args, wrap=wrap) as bg:
        # The third run's record is in the journal; its link is held up.
        wait_until(lambda: runs_stored(state) >= 3, "3 runs journaled", bg)
        bg.proc.send_signal(signal.SIGTERM)
        status = bg.wait()
        lines = stderr_lines(bg.stderr())
    told = KEPT.search(lines[-1]) if lines else None
    if status != 128 + signal.SIGTERM or not told:
        raise Failure(f"exit {status}, expected 143 and a line saying how many runs are kept",
                      lines)
    journaled = runs_stored(state)
    if int(told[1]) != journaled:
        raise Failure(f"the line says {told[1]} runs stored, the journal holds {journaled}",
                      lines)
    lines = rerun(case, args)
    if resumed_runs(lines) != int(told[1]):
        raise Failure(f"killed with {told[1]} runs stored, the rerun took back "
                      f"{resumed_runs(lines)}", lines)
    expect_finished(case, state, "bulk.bam", [])


def expect_refused_before_writing(lines):
    if any("writing the output" in line for line in lines):
        raise Failure("a line says the output is being written, and the rerun is refused",
                      lines)


def test_resume_message_verify_without_input_refused_first(case):
    """Killed in the readout of a file; `--verify - < /dev/null` cannot
    checksum the stored records: refused, and not after "writing the
    output"."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + [src], lambda: "C" in journal_types(state)
              and hidden_output(case, "out.bam"), "the output being written")
    runs = runs_stored(state)
    refused = case.rocksort(args + ["--verify", "-"])
    expect_refused_before_writing(expect_kept(case, refused, state, runs,
                                              "--verify must read the input again"))


def test_resume_message_other_stream_refused_first(case):
    """A complete stream's state given another stream: checked, refused,
    and no line said the output was being written."""
    state = os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + ["-"]
    kill_stream_in_readout(case, state, args)
    runs = runs_stored(state)
    other = case.rocksort(args, stdin=same_header_other_records(case))
    lines = expect_kept(case, other, state, runs, "standard input differs")
    expect_refused_before_writing(lines)
    if not any("whole input is stored" in line and "checking the input" in line
               for line in lines):
        raise Failure("no line says the stream is checked against the state", lines)
