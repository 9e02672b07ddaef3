"""--resume DIR: a sort killed at an observed phase, run again, gives
samtools 1.24's output (issue #35).

A run is killed (SIGKILL unless said otherwise) once the state's journal
shows the phase wanted: so many runs stored, the input complete, the output
being written.  The same command then runs again and must give the oracle's
records, leave neither DIR nor temporary data, and, for a file, read only
the rest of the input (counted under strace).  The helpers here are shared
with test/resume_states.py: changed inputs, options and formats, damaged
states, and directories that are not a state.

To run only these:  run_tests.py -k resume_
"""

import os
import re
import signal
import struct
import subprocess
import threading

from background import Background, wait_until
from harness import Failure, each, stderr_lines, tail

SPILL = ["-m", "1M"]                  # bulk.bam: some 40 sorted runs
MERGING = [*SPILL, "-s", "60M"]       # ... merged in the background as they come
JOURNAL = "journal"
RESUMING = re.compile(r"resuming from '[^']*': (?:the whole input is stored \()?(\d+) runs")


# --- the state's journal, read as rocksort writes it (store/store_state.c) -----------

def journal_frames(state):
    """(offset, payload) of each whole record in DIR's journal (disk/run_journal.c:
    a u32 length and a u32 CRC-32, then the payload)."""
    try:
        with open(os.path.join(state, JOURNAL), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    at, frames = 0, []
    while at + 8 <= len(data):
        length, _ = struct.unpack_from("<II", data, at)
        if at + 8 + length > len(data) or length < 8:
            break
        frames.append((at, data[at + 8:at + 8 + length]))
        at += 8 + length
    return frames


def journal_types(state):
    """The record types in DIR's journal, whole records only: 'S', 'K', 'R'
    (a run), 'C' (the input complete)."""
    return "".join(chr(struct.unpack_from("<Q", payload)[0] & 0x7f)
                   for _, payload in journal_frames(state))


def runs_stored(state):
    return journal_types(state).count("R")


def hidden_output(case, name, where=None):
    """The hidden file the output is written under (output/output_file.h), if any,
    in the output directory or `where`."""
    prefix, where = f".{name}.rocksort.", where or case.out_dir
    found = [n for n in os.listdir(where) if n.startswith(prefix)]
    return os.path.join(where, found[0]) if found else None


# --- running, killing, running again -----------------------------------------------

def sort_args(case, state, shared, extra, out="out.bam"):
    return [*shared, *extra, "--resume", state, "-T", case.temp_prefix, "-o", case.out(out)]


def feed_and_close(bg, path):
    """Writes the file to rocksort's stdin and closes it, on a thread."""
    def write():
        with open(path, "rb") as f:
            data = f.read()
        try:
            bg.proc.stdin.write(data)
            bg.proc.stdin.close()
        except (OSError, ValueError):
            pass    # killed meanwhile
    threading.Thread(target=write, daemon=True).start()


def kill_when(case, args, phase, what, sig=signal.SIGKILL, stdin_path=None):
    """Starts rocksort, waits until phase() holds, sends sig.  -> exit status."""
    with Background(case, args, stdin=stdin_path is not None) as bg:
        if stdin_path:
            feed_and_close(bg, stdin_path)
        wait_until(phase, what, bg)
        bg.proc.send_signal(sig)
        status = bg.wait()
        stderr = bg.stderr()
    if sig != signal.SIGKILL and status != 128 + sig:
        raise Failure(f"signal {sig} during {what}: exit status {status}, expected "
                      f"{128 + sig}", tail(stderr))
    return status, stderr


def rerun(case, args, stdin=None):
    result = case.rocksort(["-v", *args], stdin=stdin)
    if result.returncode != 0:
        said = [line for line in stderr_lines(result.stderr) if not line.startswith("[rocksort]")]
        raise Failure(f"the rerun exited with {result.returncode}", said[-5:])
    return stderr_lines(result.stderr)


def expect_finished(case, state, source, shared, out="out.bam"):
    """The oracle's records; DIR gone; no temporary data left."""
    case.expect_same(case.out(out), case.session.expected(source, shared, out))
    if os.path.exists(state):
        raise Failure("the state directory is still there after the sort succeeded",
                      sorted(os.listdir(state))[:5])
    case.expect_no_temp_left()


def expect_fate_told(lines, state):
    """After a failure, the last line says what became of DIR, and it is
    true: kept (by DIR's real path) if DIR is there, removed if not."""
    where = os.path.realpath(state)
    last = lines[-1] if lines else ""
    if os.path.exists(state):
        if "kept" not in last or where not in last or any("removed" in l for l in lines):
            raise Failure(f"DIR is there, but the last line does not say {where} is kept", lines)
    elif "removed" not in last or where not in last:
        raise Failure(f"DIR is gone, but the last line does not say {where} was removed", lines)


def resumed_runs(lines):
    found = [int(m[1]) for line in lines for m in [RESUMING.search(line)] if m]
    return found[0] if found else None


def total_runs(case, source, shared, extra):
    """Runs a whole sort writes, so that kills can aim at a share of them."""
    state = os.path.join(case.dir, "count-state")
    result = case.rocksort(["-v", *sort_args(case, state, shared, extra, "count.bam"),
                            case.input(source)])
    m = re.search(r"runs: (\d+) written", result.stderr.decode(errors="replace"))
    if result.returncode != 0 or not m:
        raise Failure("the sort to count runs failed", tail(result.stderr))
    os.remove(case.out("count.bam"))
    return int(m[1])


def input_bytes_read(case, args, path):
    """Runs rocksort under strace; -> (stderr lines, bytes read from path
    through the descriptor htslib reads it with: the one that reads the
    most, as the temp space check reads the file's first blocks, and the
    identity its sampled blocks, through descriptors of their own; and the
    load reads each batch's bytes again through another, from the page
    cache, for the stored prefix's CRC (engine/resume_recheck.h))."""
    log = os.path.join(case.dir, "strace.log")
    cmd = ["strace", "-f", "-qq", "-y", "-e", "trace=openat,read,pread64", "-e", "signal=none",
           "-o", log, *case.session.rocksort_cmd, "-v", *args, path]
    env = dict(case.session.env, TMPDIR=case.tmp)
    # LeakSanitizer stops the world with ptrace, which strace holds already.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=case.out_dir, env=env, timeout=300)
    if result.returncode != 0:
        raise Failure(f"the rerun exited with {result.returncode}", tail(result.stderr))
    real = re.escape(os.path.realpath(path))
    opened = re.compile(r"openat\(.*\)\s+=\s+(\d+)<" + real + ">")
    reading = re.compile(r"(?:read|pread64)\((\d+)<" + real + r">.*\)\s+=\s+(\d+)")
    by_fd = {}
    with open(log) as f:
        for line in f:
            m = opened.search(line)
            if m:
                by_fd[m[1]] = 0
            m = reading.search(line)
            if m:
                by_fd[m[1]] = by_fd.get(m[1], 0) + int(m[2])
    return stderr_lines(result.stderr), max(by_fd.values(), default=0)


# --- the tests -------------------------------------------------------------------

def test_resume_kill_load_file_reads_only_the_rest(case):
    """SIGKILL after a third of the runs are stored; the rerun takes them
    back and reads (counted by strace) not much more than the rest."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    third = max(2, total_runs(case, "bulk.bam", [], SPILL) // 3)
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + [src], lambda: runs_stored(state) >= third, f"{third} runs stored")
    lines, read = input_bytes_read(case, args, src)
    taken = resumed_runs(lines)
    if not taken or taken < third - 1:     # the last one a kill may cut off
        raise Failure(f"the rerun took back {taken} runs, expected at least {third - 1}", lines)
    size = os.path.getsize(src)
    skipped = [float(m[1]) * 1e6 for line in lines
               for m in [re.search(r"([\d.]+) MB of input skipped", line)] if m]
    # The header, and the BGZF block the resume point falls in, are read again.
    if not skipped or skipped[0] < size / 4 or read > size - skipped[0] + (256 << 10):
        raise Failure(f"the rerun read {read} of the input's {size} bytes after {taken} runs "
                      f"were stored ({skipped} skipped)", lines)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_kill_at_many_threads_rerun_at_two(case):
    """Killed at -@ 16 with runs stored, run again at -@ 2: the state is
    taken back, not discarded as another format (the readout's parts, which
    a plain sort widens with -@, stay two in a resumable one)."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    wide = sort_args(case, state, [], [*SPILL, "-@", "16"])
    kill_when(case, wide + [src], lambda: runs_stored(state) >= 3, "3 runs stored")
    stored = runs_stored(state)
    lines = rerun(case, sort_args(case, state, [], [*SPILL, "-@", "2"]) + [src])
    taken = resumed_runs(lines)
    if not taken or taken < stored - 1 or any("discard" in line for line in lines):
        raise Failure(f"{stored} runs stored at -@ 16; the rerun at -@ 2 took back {taken}", lines)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_kill_load_stdin(case):
    """A stream killed after a third of its runs: the rerun reads it again,
    checks the stored records against it and loads the rest."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    third = max(2, total_runs(case, "bulk.bam", ["-n"], SPILL) // 3)
    args = sort_args(case, state, ["-n"], SPILL) + ["-"]
    kill_when(case, args, lambda: runs_stored(state) >= third, f"{third} runs stored",
              stdin_path=src)
    lines = rerun(case, args, stdin=src)
    if (resumed_runs(lines) or 0) < third - 1:     # the last one a kill may cut off
        raise Failure("the rerun did not take back the stored runs", lines)
    expect_finished(case, state, "bulk.bam", ["-n"])


def test_resume_stdin_of_another_stream_refused(case):
    """Another stream on the rerun: refused with one line, the state kept;
    then the right stream finishes the sort."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + ["-"]
    kill_when(case, args, lambda: runs_stored(state) >= 5, "5 runs stored", stdin_path=src)
    other = case.rocksort(args, stdin=case.input("names_bulk.bam"))
    lines = stderr_lines(other.stderr)
    if other.returncode != 1 or not any("differs" in line for line in lines):
        raise Failure(f"another stream: exit {other.returncode}, expected 1 and 'differs'", lines)
    if "R" not in journal_types(state):
        raise Failure("the state was not kept after refusing another stream")
    expect_fate_told(lines, state)
    rerun(case, args, stdin=src)
    expect_finished(case, state, "bulk.bam", [])


def test_resume_kill_in_background_merges(case):
    """Under -s, runs are merged in the background as they come: SIGKILL
    at one run stored after another, each rerun the oracle's records."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], MERGING)
    for k in (8, 13, 21, 29):
        kill_when(case, args + [src], lambda: runs_stored(state) >= k, f"{k} runs stored")
        lines = rerun(case, args + [src])
        if not any(re.search(r"runs: \d+ written, (\d+) merged", l) for l in lines):
            raise Failure("no run summary from -v", lines)
        expect_finished(case, state, "bulk.bam", [])


def test_resume_rerun_plans_merges_for_every_run(case):
    """A rerun plans its background merges for all the runs, as the first
    run did: the bytes it has read count the runs taken back, and taken for
    one run's bytes they planned about two runs, no merges, and a readout
    of every run, over the memory bound (found by an attack on 9dd4a34).
    The runs keep 256 KiB groups, at which the rerun counts those it took
    back, and the records are the oracle's."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + [src]
    kill_when(case, args, lambda: runs_stored(state) >= 12, "12 runs stored")
    lines = rerun(case, args)
    size = [line for line in lines if "] size: " in line]
    if not size or "runs per background merge" not in size[0]:
        raise Failure("the rerun planned no background merges", size or lines[:8])
    if not any("groups of 256 KiB" in line for line in lines):
        raise Failure("a resumable store's runs not in 256 KiB groups",
                      [line for line in lines if "readout memory" in line])
    expect_finished(case, state, "bulk.bam", [])


def test_resume_kill_in_readout_file(case):
    """Killed while the output is written: the rerun reads no record."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    kill_when(case, args + [src], lambda: "C" in journal_types(state)
              and hidden_output(case, "out.bam"), "the output being written")
    lines = rerun(case, args + [src])
    if not any("whole input is stored" in line for line in lines):
        raise Failure("the rerun did not go straight to the readout", lines)
    expect_finished(case, state, "bulk.bam", [])
    if hidden_output(case, "out.bam"):
        raise Failure("the killed run's hidden output is still there")


def test_resume_kill_in_readout_stdin_given_no_input(case):
    """samtools issue #1206's case: a stream killed in the readout, rerun
    with nothing on stdin."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, ["-n"], SPILL) + ["-"]
    kill_when(case, args, lambda: "C" in journal_types(state), "the input complete",
              stdin_path=src)
    rerun(case, args, stdin=None)
    expect_finished(case, state, "bulk.bam", ["-n"])


def test_resume_sigterm_keeps_the_state(case):
    """SIGTERM during the load: exit 143, one line saying the state is
    kept, DIR there; the rerun finishes and removes it."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL)
    _, stderr = kill_when(case, args + [src], lambda: runs_stored(state) >= 5, "5 runs stored",
                          sig=signal.SIGTERM)
    lines = stderr_lines(stderr)
    if len(lines) != 1 or "kept" not in lines[0] or state not in lines[0]:
        raise Failure("expected one line saying where the state is kept", lines)
    if runs_stored(state) < 5:
        raise Failure("the state was not kept", journal_types(state))
    case.expect_no_temp_left()
    rerun(case, args + [src])
    expect_finished(case, state, "bulk.bam", [])


def test_resume_two_kills_then_rerun(case):
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, ["-n"], SPILL)
    kill_when(case, args + [src], lambda: runs_stored(state) >= 6, "6 runs stored")
    kill_when(case, args + [src], lambda: runs_stored(state) >= 18, "18 runs stored")
    lines = rerun(case, args + [src])
    if (resumed_runs(lines) or 0) < 17:     # the last one a kill may cut off
        raise Failure("the third run did not take back the second's runs", lines)
    expect_finished(case, state, "bulk.bam", ["-n"])


@each((f"resume_kill_load_{name}", name, shared) for name, shared in (
    ("sam_byte_offsets", []), ("sam_gz_threads", ["-@", "2"]), ("cram_record_counts", []),
    ("minimiser", ["-M"])))
def test_resume_kill_formats(case, name, shared):
    """Plain SAM is found again by byte offset, bgzipped SAM by virtual
    offset (read with threads), CRAM by record count; -M's header depends
    on records the rerun does not read again."""
    source = {"sam_byte_offsets": "bulk.sam", "sam_gz_threads": "bulk.sam.gz",
              "cram_record_counts": "bulk_noref.cram", "minimiser": "minimiser_bulk.bam"}[name]
    src, state = source_path(case, source), os.path.join(case.dir, "state")
    args = sort_args(case, state, shared, SPILL)
    kill_when(case, args + [src], lambda: runs_stored(state) >= 8, "8 runs stored")
    lines = rerun(case, args + [src])
    # A kill between the 8th run's journal record and its ingestion may
    # leave it out (store/store_state.c): at least 7 come back.
    if (resumed_runs(lines) or 0) < 7:
        raise Failure("the rerun did not take back the stored runs", lines)
    want = oracle_output(case, src, shared)
    case.expect_same(case.out("out.bam"), want)
    if os.path.exists(state):
        raise Failure("the state directory is still there after the sort succeeded")


def source_path(case, name):
    """Inputs this module makes from the session's: bgzipped SAM and a CRAM
    that needs no reference."""
    path = os.path.join(case.session.inputs_dir, "resume-" + name)
    with case.session.lock_for(("resume-input", name)):
        if not os.path.exists(path):
            if name == "bulk.sam.gz":
                case.session.oracle_ok("view", ["-h", "--no-PG", "-O", "sam.gz", "-o", path + ".part",
                                                case.input("bulk.sam")])
            elif name == "bulk_noref.cram":
                case.session.oracle_ok("view", ["-C", "--no-PG", "--output-fmt-option", "no_ref=1",
                                                "-o", path + ".part", case.input("bulk.sam")])
            else:
                return case.input(name)
            os.rename(path + ".part", path)
    return path


def oracle_output(case, src, shared):
    out = os.path.join(case.dir, "expected.bam")
    case.session.oracle_ok("sort", [*shared, "--no-PG", "-o", out, src])
    return out


def test_resume_kills_at_every_few_runs_stdin(case):
    """SIGKILL at one run count after another, on a stream sorted without
    background merges (runs dealt to two parts): each rerun takes back every
    stored run, or all but a last one a kill cut off, and gives the oracle's
    records.  A kill between a run's journal record and its ingestion (the
    ingestion may already have marked the file) must not discard the state."""
    src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")
    args = sort_args(case, state, [], SPILL) + ["-"]
    total = total_runs(case, "bulk.bam", [], SPILL)
    for k in range(2, total, max(1, total // 12)):
        kill_when(case, args, lambda: runs_stored(state) >= k, f"{k} runs stored", stdin_path=src)
        lines = rerun(case, args, stdin=src)
        if (resumed_runs(lines) or 0) < k - 1:
            raise Failure(f"killed after {k} runs, the rerun took back {resumed_runs(lines)}",
                          lines)
        expect_finished(case, state, "bulk.bam", [])
