"""--resume DIR: reruns that differ a little from the killed run (issue #39).

A sort is killed at an observed phase (test/resume.py's helpers); the rerun
changes one thing: another stream with the same header, a stream given to a
complete state, --verify or another option that does not change the order,
the file system $TMPDIR is on.  A rerun that can use the state must give the
oracle's records; one that cannot must refuse in one line, keep DIR with its
runs and say so, and the right rerun must then finish.  Every line on
stderr is checked, not only the exit status.

To run only these:  run_tests.py -k resume_
"""

import os
import re
import signal
import subprocess

import tmpfs
from background import Background, wait_until
from harness import PYTHON, Failure, each, run, stderr_lines, tail
from resume import (SPILL, expect_finished, hidden_output, journal_types, kill_when, rerun,
                    resumed_runs, runs_stored, sort_args)

# Another BAM file with the header of the first, byte for byte: "thinned"
# drops every third record, "longer" adds the first 100 again at the end.
OTHER_RECORDS_SCRIPT = """
import sys, pysam
how, src, dst = sys.argv[1:]
with pysam.AlignmentFile(src) as inp, pysam.AlignmentFile(dst, "wb", template=inp) as out:
    records = list(inp)
    for i, rec in enumerate(records):
        if how == "longer" or i % 3:
            out.write(rec)
    for rec in records[:100] if how == "longer" else []:
        out.write(rec)
"""


def same_header_other_records(case, how="thinned"):
    """bulk.bam's header with other records: a stream that only its records
    tell apart."""
    path = os.path.join(case.session.inputs_dir, f"resume-bulk_{how}.bam")
    with case.session.lock_for(("resume-input", how)):
        if not os.path.exists(path):
            result = run([PYTHON, "-c", OTHER_RECORDS_SCRIPT, how, case.input("bulk.bam"),
                          path + ".part"], env=case.session.env)
            if result.returncode != 0:
                raise Failure(f"could not make the {how} stream", tail(result.stderr))
            os.rename(path + ".part", path)
    return path


def expect_kept(case, result, state, runs, because):
    """Exit 1, a line matching `because`, a last line saying DIR (by its
    absolute path) is kept, no line saying it is removed, DIR still holding
    at least `runs` runs, no output and no temporary data."""
    lines = stderr_lines(result.stderr)
    if result.returncode != 1:
        raise Failure(f"exit status {result.returncode}, expected 1", lines[-5:])
    if not any(re.search(because, line) for line in lines):
        raise Failure(f"no line says why ({because})", lines[-5:])
    where = os.path.realpath(state)
    if not lines or "kept" not in lines[-1] or where not in lines[-1]:
        raise Failure(f"the last line does not say that {where} is kept", lines[-5:])
    if any("removed" in line for line in lines):
        raise Failure("a line says the state is removed", lines[-5:])
    if runs_stored(state) < runs:
        raise Failure(f"DIR holds {runs_stored(state)} runs, expected at least {runs}",
                      [journal_types(state)])
    if os.path.exists(case.out("out.bam")):
        raise Failure("an output was written")
    case.expect_no_temp_left()
    return lines


def kill_stream_in_readout(case, state, args):
    kill_when(case, args, lambda: "C" in journal_types(state)
              and hidden_output(case, "out.bam"), "the output being written",
              stdin_path=case.input("bulk.bam"))


# --- item 1: a complete state and the stream it is given ------------------------------

def test_resume_complete_stdin_of_another_stream_refused(case):
    """Killed in the readout of a stream; rerun with another stream of the
    same header: it is checked, refused, DIR kept; the right stream then
    finishes the sort."""
    state = os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + ["-"]
    kill_stream_in_readout(case, state, args)
    runs = runs_stored(state)
    other = case.rocksort(args, stdin=same_header_other_records(case))
    expect_kept(case, other, state, runs, "standard input differs")
    if "C" not in journal_types(state):
        raise Failure("the complete state lost its completion", [journal_types(state)])
    rerun(case, args, stdin=case.input("bulk.bam"))
    expect_finished(case, state, "bulk.bam", [])


def feed_all(case, args, path, **popen):
    """rocksort with the file written to its stdin through a pipe by this
    process: -> (exit status, stderr, whether every byte was taken)."""
    with open(path, "rb") as f:
        data = f.read()
    err_path = os.path.join(case.dir, "fed.stderr")
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([*case.session.rocksort_cmd, *args], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=err, cwd=case.out_dir,
                                env=dict(case.session.env, TMPDIR=case.tmp), **popen)
        taken = True
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except BrokenPipeError:
            taken = False
        status = proc.wait(timeout=300)
    with open(err_path, "rb") as f:
        return status, f.read(), taken


def test_resume_complete_stdin_same_stream_read_to_its_end(case):
    """The same stream given again to a complete state: checked, read to its
    end (an upstream under `set -o pipefail` must not get SIGPIPE), then the
    output is written."""
    state = os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + ["-"]
    kill_stream_in_readout(case, state, args)
    status, stderr, taken = feed_all(case, args, case.input("bulk.bam"))
    if status != 0 or not taken:
        raise Failure(f"exit {status}; every byte of the stream taken: {taken}", tail(stderr))
    expect_finished(case, state, "bulk.bam", [])


def test_resume_complete_stdin_longer_stream_refused(case):
    """The stored stream followed by more records is another stream."""
    state = os.path.join(case.dir, "state")
    args = sort_args(case, state, ["-n"], SPILL) + ["-"]
    kill_stream_in_readout(case, state, args)
    runs = runs_stored(state)
    other = case.rocksort(args, stdin=same_header_other_records(case, "longer"))
    expect_kept(case, other, state, runs, "standard input differs")


def test_resume_complete_state_closed_stdin_goes_to_the_readout(case):
    """A closed standard input reads as an empty one: no input to check."""
    state = os.path.join(case.dir, "state")
    args = sort_args(case, state, ["-n"], SPILL) + ["-"]
    kill_stream_in_readout(case, state, args)
    result = subprocess.run([*case.session.rocksort_cmd, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=case.out_dir, timeout=300,
                            env=dict(case.session.env, TMPDIR=case.tmp),
                            preexec_fn=lambda: os.close(0))
    lines = stderr_lines(result.stderr)
    if result.returncode != 0 or not any("whole input is stored" in line for line in lines):
        raise Failure(f"exit {result.returncode}, expected 0 and the readout", lines)
    expect_finished(case, state, "bulk.bam", ["-n"])


# --- item 3: a partial state and another stream of the same header ---------------------

def test_resume_partial_stdin_same_header_other_records_keeps_state(case):
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + ["-"]
    kill_when(case, args, lambda: runs_stored(state) >= 8, "8 runs stored", stdin_path=src)
    runs = runs_stored(state)
    other = case.rocksort(args, stdin=same_header_other_records(case))
    # A kill between a run's journal record and its ingestion leaves that
    # run to be taken in or forgotten by the next open (store/store_state.c).
    expect_kept(case, other, state, runs - 1, "standard input differs")
    lines = rerun(case, args, stdin=src)
    if (resumed_runs(lines) or 0) < runs - 1:
        raise Failure("the right stream did not take the runs back", lines)
    expect_finished(case, state, "bulk.bam", [])


# --- item 2 and the options that do not change the order --------------------------------

def killed_in(case, state, args, phase, stdin):
    src = case.input("bulk.bam")
    if phase == "load":
        kill_when(case, args, lambda: runs_stored(state) >= 10, "10 runs stored",
                  stdin_path=src if stdin else None)
    else:
        kill_when(case, args, lambda: "C" in journal_types(state)
                  and hidden_output(case, "out.bam"), "the output being written",
                  stdin_path=src if stdin else None)


@each((f"resume_verify_added_{phase}_{kind}", phase, kind == "stdin")
      for phase in ("load", "readout") for kind in ("file", "stdin"))
def test_resume_verify_added(case, phase, stdin):
    """--verify added on the rerun checks every record, stored or new."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + ["-" if stdin else src]
    killed_in(case, state, args, phase, stdin)
    lines = rerun(case, ["--verify", *args], stdin=src if stdin else None)
    if (resumed_runs(lines) or 0) < 9:
        raise Failure("the rerun did not take the runs back", lines)
    if not any(re.search(r"verify: 40000 records in, 40000 out; .*: OK$", line)
               for line in lines):
        raise Failure("no verify line for every record", lines)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_verify_added_minimiser(case):
    """-M rewrites unplaced reads as it loads them: a rerun's --verify
    digests the stored records it reads again as they were written."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, ["-M"], SPILL) + [src]
    killed_in(case, state, args, "load", False)
    lines = rerun(case, ["--verify", *args])
    if not any(re.search(r"verify: 40000 records in, 40000 out; .*: OK$", line)
               for line in lines):
        raise Failure("no verify line saying OK for every record", lines)
    expect_finished(case, state, "bulk.bam", ["-M"])


# Options that change neither the records nor their order: a rerun with
# one of them changed takes the state back.
# (options of the killed run, of the rerun, the rerun's output name)
HARMLESS = {
    "verbose": ([], ["-v"], "out.bam"),
    "threads": ([], ["-@", "2"], "out.bam"),
    "memory": ([], ["-m", "3M"], "out.bam"),
    "level": (["-l", "6"], ["-l", "1"], "out.bam"),
    "output_name": ([], [], "other.bam"),
    "write_index": ([], ["--write-index"], "out.bam"),
    "input_threads": ([], ["--input-fmt-option", "nthreads=2"], "out.bam"),
    "size_hint": ([], ["-s", "60M"], "out.bam"),
    "uncompressed": ([], ["-u"], "out.bam"),
    "temp_prefix": ([], ["-T", "OTHER_TEMP"], "out.bam"),
}


@each((f"resume_rerun_changes_{name}", name) for name in HARMLESS)
def test_resume_rerun_changes_an_option(case, name):
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    before, after, out = HARMLESS[name]
    other_temp = os.path.join(case.dir, "other_tmp")
    os.mkdir(other_temp)
    after = [os.path.join(other_temp, "rs") if a == "OTHER_TEMP" else a for a in after]
    args = sort_args(case, state, [], SPILL + before)
    kill_when(case, args + [src], lambda: runs_stored(state) >= 10, "10 runs stored")
    rerun_args = sort_args(case, state, [], SPILL, out)
    if after[:1] == ["-T"]:     # replaced: a second -T would add a temp directory
        rerun_args[rerun_args.index("-T") + 1], after = after[1], []
    lines = rerun(case, [*rerun_args, *after, src])
    if any("not resuming" in line for line in lines) or (resumed_runs(lines) or 0) < 9:
        raise Failure(f"changing {name} lost the state", lines)
    expect_finished(case, state, "bulk.bam", [], out)
    left = [n for n in os.listdir(case.out_dir) if n.startswith(".")] + os.listdir(other_temp)
    if left:
        raise Failure("hidden or temporary files left", left)


def test_resume_rerun_from_another_directory(case):
    """Every path given in full, the rerun run from elsewhere: the state is
    taken back."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    kill_when(case, args, lambda: runs_stored(state) >= 10, "10 runs stored")
    elsewhere = os.path.join(case.dir, "elsewhere")
    os.mkdir(elsewhere)
    result = case.rocksort(args, cwd=elsewhere)
    lines = stderr_lines(result.stderr)
    if result.returncode != 0 or (resumed_runs(lines) or 0) < 9:
        raise Failure(f"exit {result.returncode}; the runs not taken back", lines)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_sigterm_while_checking_a_stream(case):
    """SIGTERM while a complete state checks the stream it is given: the
    state is kept, complete, and says so; the rerun finishes."""
    state, src = os.path.join(case.dir, "state"), case.input("bulk.bam")
    args = sort_args(case, state, [], SPILL) + ["-"]
    kill_stream_in_readout(case, state, args)
    with open(src, "rb") as f:
        data = f.read()
    with Background(case, args, stdin=True) as bg:
        bg.feed(data[:len(data) // 2])
        wait_until(lambda: any("whole input is stored" in line
                               for line in stderr_lines(bg.stderr())), "the take-back", bg)
        bg.proc.send_signal(signal.SIGTERM)
        status = bg.wait()
        lines = stderr_lines(bg.stderr())
    if status != 128 + signal.SIGTERM or "kept" not in lines[-1] \
            or os.path.realpath(state) not in lines[-1]:
        raise Failure(f"exit {status}, expected 143 and a line saying DIR is kept", lines)
    if "C" not in journal_types(state):
        raise Failure("the complete state was changed", [journal_types(state)])
    rerun(case, args, stdin=src)
    expect_finished(case, state, "bulk.bam", [])
    if hidden_output(case, "out.bam"):
        raise Failure("the killed run's hidden output is still there")


# --- item 4: space and speed measured where the runs go --------------------------------

def probe_dirs(case, args):
    """Runs rocksort under strace: -> (result, directories the disk-speed
    probe wrote its file in)."""
    log = os.path.join(case.dir, "probe.strace")
    env = dict(case.session.env, TMPDIR=case.tmp)
    # LeakSanitizer stops the world with ptrace, which strace holds already.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    result = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat", "-e", "signal=none",
                             "-o", log, *case.session.rocksort_cmd, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=case.out_dir,
                            env=env, timeout=300)
    with open(log) as f:
        found = re.findall(r'openat\([^"]*"([^"]*)/\.rocksort-disk-probe\.', f.read())
    return result, {os.path.realpath(d) for d in found}


def test_resume_disk_probe_measures_the_state_dir(case):
    """At -l 1 the runs' format depends on the disk's speed: the disk
    measured is the one DIR is on, not $TMPDIR's or -T's."""
    src = case.input("bulk.bam")
    parent = os.path.join(case.dir, "scratch")
    os.mkdir(parent)
    state = os.path.join(parent, "state")
    result, dirs = probe_dirs(case, ["-l", "1", *sort_args(case, state, [], SPILL), src])
    if result.returncode != 0:
        raise Failure(f"exit {result.returncode}", tail(result.stderr))
    if not dirs or dirs - {os.path.realpath(parent), os.path.realpath(state)}:
        raise Failure(f"the disk probe wrote in {sorted(dirs)}, not beside or in DIR")


if os.geteuid() == 0:
    def test_resume_small_tmpdir_does_not_refuse(case):
        """$TMPDIR and -T on a file system far too small for the runs, DIR
        on a large one: every run goes to DIR, so the sort goes ahead."""
        src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")

        def body(small):
            args = ["-m", "1M", "--resume", state, "-T", os.path.join(small, "rs"),
                    "-o", case.out("out.bam"), src]
            env = dict(case.session.env, TMPDIR=small)
            result = subprocess.run([*case.session.rocksort_cmd, *args],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    cwd=case.out_dir, env=env, timeout=300)
            if result.returncode != 0:
                raise Failure(f"exit {result.returncode}", tail(result.stderr))
        tmpfs.with_tmpfs(case.dir, "1M", body, Failure)
        expect_finished(case, state, "bulk.bam", [])

    def test_resume_small_state_dir_refused_before_reading(case):
        """DIR on a file system too small for the runs: refused before
        anything is read or stored, with one line naming DIR's file system
        and --resume."""
        src = case.input("bulk.bam")

        def body(small):
            state = os.path.join(small, "state")
            result = case.rocksort(sort_args(case, state, [], SPILL) + [src])
            lines = stderr_lines(result.stderr)
            if result.returncode != 1 or len(lines) != 1:
                raise Failure(f"exit {result.returncode}, expected 1 with one line", lines[-5:])
            if "not enough space" not in lines[0] or small not in lines[0] \
                    or "--resume" not in lines[0]:
                raise Failure("the line does not name DIR's file system and --resume", lines)
            if os.path.exists(state):
                raise Failure("DIR was made for a sort that was refused")
        tmpfs.with_tmpfs(case.dir, "2M", body, Failure)
