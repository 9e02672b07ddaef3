"""Robustness tests of `samtools rocksort`: what goes wrong around a sort
rather than its order.

They cover output that is all or nothing, record accounting (--verify), a
closed output pipe, a full disk, the safety of the temporary database and
a low open-file limit; signals are in test/signals.py and damaged input in
test/bad_input.py.  Every test still runs the command under test through
the harness (ROCKSORT_CMD is honoured) and, where an input is odd, asks the
oracle what it makes of it first.  To run only these:
    run_tests.py -k atomic_ -k verify_ -k pipe_closed -k disk_full \
        -k temp_database -k temp_prefix_dir -k temp_concurrent -k nofile
(the disk_full tests exist only when running as root: they mount a tmpfs).
"""

import os
import random
import re
import shutil
import stat
import subprocess
import time

import samdata
import tmpfs
from background import WAIT, Background, listing, store_dirs, wait_until
from bgzf import BGZF_EOF
from harness import (ORACLE_SCRIPT, PYTHON, SAM_OUT, SPILL, TIMEOUT, Failure, each, expect_error,
                     run, stderr_lines, tail, write_bytes, write_text)


# --- inputs made for these tests (bad_input.py and destinations.py use some) ---

def late_failure_sam(rng):
    """Valid SAM whose coordinate-sorted output cannot be BAM: one record on
    the first reference lies past 2**31 (SAM takes it, BAM cannot hold it).
    It sorts after some 600 kB of records, so the failure comes during the
    readout, with output already written."""
    refs = [("a", 100000), ("b", 100000)]
    out = [samdata.read(rng, f"r{i}", 0, "a", rng.randint(1, 90000), length=100)
           for i in range(3000)]
    out.append(samdata.read(rng, "too_far", 0, "a", 3_000_000_000, length=100))
    out += [samdata.read(rng, f"s{i}", 0, "b", rng.randint(1, 90000), length=100)
            for i in range(100)]
    rng.shuffle(out)
    return samdata.header(refs) + "".join(out)


def big_header_sam(rng):
    """3000 @SQ lines: the header takes several BGZF blocks."""
    refs = [(f"chr{i}_with_a_rather_long_name", 1000 + i) for i in range(3000)]
    return samdata.header(refs) + "".join(
        samdata.read(rng, f"h{i}", 0, f"chr{i}_with_a_rather_long_name", 5,
                     length=20) for i in range(50))


class Inputs:
    """Inputs made once per session, beside the harness's own."""

    RECIPES = {
        "late_failure.sam": ("text", late_failure_sam),
        "big_header.bam": ("bam", "big_header.sam"),
        "big_header.sam": ("text", big_header_sam),
        # ~60k records: with -m 1M some 50 sorted runs
        "bulk60k.bam": ("bam", "bulk60k.sam"),
        "bulk60k.sam": ("text", lambda rng: samdata.bulk(rng, count=60000)),
    }

    def path(self, session, name):
        path = os.path.join(session.inputs_dir, "robust-" + name)
        with session.lock_for(("robust-input", name)):
            if not os.path.exists(path):
                kind, how = self.RECIPES[name]
                part = path + ".part"
                if kind == "text":
                    rng = random.Random(f"rocksort-robust-{name}")
                    with open(part, "w") as f:
                        f.write(how(rng))
                else:
                    session.oracle_ok("view", ["-b", "--no-PG", "-o", part,
                                               self.path(session, how)])
                os.rename(part, path)
        return path


INPUTS = Inputs()


def robust_input(case, name):
    return INPUTS.path(case.session, name)


# --- what these tests expect -----------------------------------------------------

def expect_one_line(case, result, mentions, what="error"):
    """Exit status 1 (exactly: not a signal), one line on stderr naming
    one of mentions, nothing left in the temp dir.  -> the line"""
    if result.returncode != 1:
        raise Failure(f"exit status {result.returncode}, expected 1",
                      tail(result.stderr))
    lines = stderr_lines(result.stderr)
    if len(lines) != 1:
        raise Failure(f"{len(lines)} lines on stderr, expected 1", lines[:5])
    if mentions and not any(m in lines[0] for m in mentions):
        raise Failure(f"{what} message names none of {mentions}", lines)
    case.expect_no_temp_left()
    return lines[0]


def expect_unchanged(path, before):
    with open(path, "rb") as f:
        after = f.read()
    if after != before:
        raise Failure(f"{os.path.basename(path)} was changed by a failed run "
                      f"({len(before)} bytes before, {len(after)} after)")


def expect_no_eof_block(stdout):
    if stdout.endswith(BGZF_EOF):
        raise Failure(f"a failed run's standard output ({len(stdout)} bytes) "
                      "ends with the BGZF EOF block: it looks complete")


def oracle_must_fail(case, src, args=(), env=None):
    out = os.path.join(case.dir, "oracle_out.bam")
    result = run([PYTHON, "-c", ORACLE_SCRIPT, "sort", "-o", out,
                  *args, src], env=env or case.session.env)
    if result.returncode == 0:
        raise Failure("test is wrong: the oracle accepted this input")


# 1. All or nothing --------------------------------------------------------

PRECIOUS = b"an older file that a failed sort must leave alone\n" * 500


def keeps_existing_output(case, src, mention, extra=()):
    out = case.out("out.bam")
    write_bytes(out, PRECIOUS)
    result = case.rocksort([*extra, "-T", case.temp_prefix, "-o", out, src])
    line = expect_one_line(case, result, [mention])
    expect_unchanged(out, PRECIOUS)
    case.expect_only_files(case.out_dir, ["out.bam"])
    return line


def test_atomic_existing_output_kept_truncated_bam(case):
    """Input cut mid-records, failing after sorted runs were written."""
    keeps_existing_output(case, case.input("truncated.bam"), "truncated.bam",
                          SPILL)


def test_atomic_existing_output_kept_bad_sam_line(case):
    src = os.path.join(case.dir, "bad_line.sam")
    with open(case.input("mixed.sam")) as f:
        write_text(src, f.read() + "garbage line\n")
    keeps_existing_output(case, src, "bad_line.sam")


def test_atomic_existing_output_kept_readout_failure(case):
    """The failure comes while the output is being written (a position
    BAM cannot hold): the file at -o must still be the old one."""
    src = robust_input(case, "late_failure.sam")
    oracle_must_fail(case, src)
    keeps_existing_output(case, src, "out.bam")


def test_atomic_readout_failure_message_gives_cause(case):
    """The one line about a failed write must not blame 'Success'
    (errno 0): it should say what went wrong."""
    src = robust_input(case, "late_failure.sam")
    result = case.rocksort(["-T", case.temp_prefix, "-o", case.out("out.bam"), src])
    line = expect_one_line(case, result, ["out.bam"])
    if re.search(r":\s*Success\s*$", line):
        raise Failure("the error message gives 'Success' as the cause", [line])
    case.expect_only_files(case.out_dir, [])


def test_atomic_stdout_failure_during_load_no_eof(case):
    result = case.rocksort(["-T", case.temp_prefix, case.input("truncated.bam")])
    expect_one_line(case, result, ["truncated.bam"])
    expect_no_eof_block(result.stdout)
    case.expect_only_files(case.out_dir, [])


def test_atomic_stdout_failure_during_readout_no_eof(case):
    """Part of the output is already on stdout when the write fails; it
    must not end like a complete BGZF file."""
    src = robust_input(case, "late_failure.sam")
    result = case.rocksort(["-T", case.temp_prefix, src])
    expect_one_line(case, result, [])
    expect_no_eof_block(result.stdout)
    case.expect_only_files(case.out_dir, [])


# 2. Record accounting ---------------------------------------------------------

def record_count(case, src):
    count_file = os.path.join(case.dir, "count")
    case.session.oracle_ok("view", ["-c", "-o", count_file, src])
    with open(count_file) as f:
        return int(f.read().strip())


def expect_verify_ok(case, stderr, count):
    lines = [l for l in stderr_lines(stderr) if l.startswith("[rocksort] verify:")]
    if len(lines) != 1:
        raise Failure(f"{len(lines)} '[rocksort] verify:' lines on stderr, "
                      "expected 1", tail(stderr))
    numbers = re.findall(r"(?<![0-9A-Fa-f])\d+(?![0-9A-Fa-f])", lines[0])
    if numbers.count(str(count)) < 2:
        raise Failure(f"the verify line does not give {count} records both "
                      "in and out", lines)
    if not re.search(r"\bOK\b", lines[0]) or "MISMATCH" in lines[0]:
        raise Failure("the verify line does not say OK", lines)


def test_verify_in_memory(case):
    src = case.input("mixed.bam")
    expected = case.session.expected("mixed.bam", [])
    result = case.rocksort_ok(["--verify", "-T", case.temp_prefix,
                               "-o", case.out("out"), src])
    expect_verify_ok(case, result.stderr, record_count(case, src))
    case.expect_same(case.out("out"), expected)
    case.expect_no_temp_left()


def test_verify_spilled_name_order(case):
    """Sorted runs in RocksDB merged with the last batch from memory."""
    src = case.input("bulk.bam")
    expected = case.session.expected("bulk.bam", ["-n"])
    result = case.rocksort_ok(["--verify", "-n", *SPILL, "-T",
                               case.temp_prefix, "-o", case.out("out"), src])
    expect_verify_ok(case, result.stderr, record_count(case, src))
    case.expect_same(case.out("out"), expected)
    case.expect_no_temp_left()


def test_verify_sam_from_stdin_to_stdout(case):
    """SAM out unpacks each record (no zero-copy path)."""
    src = case.input("mixed.sam")
    expected = case.session.expected("mixed.sam", SAM_OUT)
    result = case.rocksort_ok(["--verify", *SAM_OUT, "-T", case.temp_prefix],
                              stdin=src)
    write_bytes(os.path.join(case.dir, "stdout.sam"), result.stdout)
    expect_verify_ok(case, result.stderr, record_count(case, src))
    case.expect_same(os.path.join(case.dir, "stdout.sam"), expected)
    case.expect_no_temp_left()


# 3. A closed output pipe --------------------------------------------------------

def reader_goes_away(case, args):
    """`rocksort ... | head -c 100`: read 100 bytes, close the pipe."""
    with Background(case, [*args, "-T", case.temp_prefix], stdout_pipe=True) as bg:
        got = b""
        deadline = time.monotonic() + WAIT
        while len(got) < 100 and time.monotonic() < deadline:
            chunk = bg.proc.stdout.read(100 - len(got))
            if not chunk:
                break
            got += chunk
        if len(got) < 100:
            raise Failure(f"only {len(got)} bytes on stdout", bg.stderr_tail())
        bg.proc.stdout.close()
        status = bg.wait("rocksort writing to a closed pipe")
        if status == 0:
            raise Failure("exit status 0 although the output could not be "
                          "written", bg.stderr_tail())
        if status < 0:
            raise Failure(f"killed by signal {-status}, expected an exit "
                          "status", bg.stderr_tail())
    case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, [])


def test_pipe_closed_bam_uncompressed(case):
    reader_goes_away(case, ["-u", *SPILL, case.input("mixed.bam")])


def test_pipe_closed_sam_spilled(case):
    reader_goes_away(case, [*SAM_OUT, *SPILL, case.input("bulk.bam")])


# 4. A full disk (tmpfs needs root) ----------------------------------------------

def with_small_tmpfs(case, body):
    tmpfs.with_tmpfs(case.dir, "4M", body, Failure, name="tmpfs4m")


def expect_no_space(case, result, place):
    line = expect_one_line(case, result, [place], "disk-full")
    if "No space left" not in line:
        raise Failure("the message does not say 'No space left'", [line])


if os.geteuid() == 0:
    def test_disk_full_temp(case):
        """Temp data (some 6 MB of compact runs) cannot fit a 4 MB -T
        location.  On a pipe the size is unknown, so the sort starts."""
        def body(mount_point):
            out = case.out("out.bam")
            result = case.rocksort([*SPILL, "-T", os.path.join(mount_point, "rs"),
                                    "-o", out, "-"], stdin=case.input("bulk.bam"))
            expect_no_space(case, result, mount_point)
            case.expect_only_files(case.out_dir, [])
        with_small_tmpfs(case, body)

    def test_disk_full_output(case):
        """An uncompressed output of some 10 MB into a 4 MB directory."""
        def body(mount_point):
            out = os.path.join(mount_point, "out.bam")
            result = case.rocksort(["-u", "-T", case.temp_prefix, "-o", out,
                                    case.input("bulk.bam")])
            expect_no_space(case, result, out)
        with_small_tmpfs(case, body)


# 5. The temporary database ------------------------------------------------------

def kept_database(case, prefix):
    """Sorts with -k under umask 0 -> the kept database's path."""
    result = subprocess.run(
        [*case.session.rocksort_cmd, "-k", "-T", prefix, "-o",
         case.out("out.bam"), case.input("mixed.bam")],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=case.out_dir, env=dict(case.session.env, TMPDIR=case.tmp),
        umask=0, timeout=TIMEOUT)
    if result.returncode != 0:
        raise Failure(f"rocksort -k exited with {result.returncode}",
                      tail(result.stderr))
    found = re.search(rb"\[rocksort\] kept the temporary database: (.+)",
                      result.stderr)
    if not found:
        raise Failure("-k did not print the kept database's path",
                      tail(result.stderr))
    return os.path.join(case.out_dir, found[1].decode().strip())


def test_temp_database_mode_0700(case):
    """Even under umask 0 the database directory is private (0700), both
    for a -T prefix and for a -T directory."""
    for prefix in (case.temp_prefix, case.tmp):
        path = kept_database(case, prefix)
        try:
            if os.path.realpath(os.path.dirname(path)) != os.path.realpath(case.tmp):
                raise Failure(f"the kept database {path} is not in the -T "
                              "location")
            mode = stat.S_IMODE(os.stat(path).st_mode)
            if mode != 0o700:
                raise Failure(f"the temporary database {os.path.basename(path)}"
                              f" has mode {mode:04o}, expected 0700 "
                              f"(-T {os.path.basename(prefix)})")
        finally:
            shutil.rmtree(path, ignore_errors=True)
        os.remove(case.out("out.bam"))
    case.expect_no_temp_left()


def test_temp_prefix_directory_missing(case):
    prefix = os.path.join(case.dir, "no_such_dir", "rs")
    out = case.out("out.bam")
    result = case.rocksort(["-T", prefix, "-o", out, case.input("mixed.bam")])
    expect_error(case, result, ["no_such_dir"], out)
    case.expect_only_files(case.out_dir, [])


def test_temp_concurrent_sorts_same_prefix(case):
    """Two sorts share a -T prefix and are both held mid-load (each with
    its database made and a run written) before either may finish."""
    with open(case.input("mixed.sam"), "rb") as f:
        data = f.read()  # SAM: all but the last few records get read
    expected = case.session.expected("mixed.sam", [])
    outs = [case.out("one.bam"), case.out("two.bam")]
    with Background(case, [*SPILL, "-T", case.temp_prefix, "-o", outs[0], "-"],
                    stdin=True, name="one") as one, \
            Background(case, [*SPILL, "-T", case.temp_prefix, "-o", outs[1], "-"],
                       stdin=True, name="two") as two:
        cut = len(data) - 1000
        for bg in (one, two):
            bg.feed(data[:cut])

        def both_spilled():
            dirs = store_dirs(case)
            return len(dirs) == 2 and all(
                any(n.endswith(".sst") for n in listing(d)) for d in dirs)
        wait_until(both_spilled, "both sorts had written a sorted run")
        for bg in (one, two):
            bg.feed(data[cut:])
            bg.end_input()
        for bg, name in ((one, "first"), (two, "second")):
            if bg.wait() != 0:
                raise Failure(f"the {name} sort exited with "
                              f"{bg.proc.returncode}", bg.stderr_tail())
    for out in outs:
        case.expect_same(out, expected)
    case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, ["one.bam", "two.bam"])


# 6. Few open files --------------------------------------------------------------

def test_nofile_limit_64_many_runs(case):
    """ulimit -n 64 (soft and hard) and 50+ sorted runs to merge."""
    src = robust_input(case, "bulk60k.bam")
    expected = os.path.join(case.dir, "expected.bam")
    case.session.oracle_ok("sort", ["--no-PG", "-o", expected, src])
    out = case.out("out.bam")
    limit = ("import resource, os, sys; "
             "resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)); "
             "os.execvp(sys.argv[1], sys.argv[1:])")
    result = run([PYTHON, "-c", limit, *case.session.rocksort_cmd, "-v",
                  *SPILL, "-T", case.temp_prefix, "-o", out, src],
                 cwd=case.out_dir, env=dict(case.session.env, TMPDIR=case.tmp))
    if result.returncode != 0:
        raise Failure(f"exit status {result.returncode} under ulimit -n 64",
                      tail(result.stderr))
    runs = re.search(rb"runs: (\d+) written", result.stderr)
    if runs and int(runs[1]) < 50:
        raise Failure(f"test is wrong: only {int(runs[1])} sorted runs, "
                      "it needs 50 or more")
    case.expect_same(out, expected)
    case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, ["out.bam"])


@each((f"verify_minimiser_{kind}", extra) for kind, extra in
      (("in_memory", []), ("spilled", ["-m", "1M", "-@", "2"])))
def test_verify_minimiser(case, extra):
    """-M writes unplaced reads reverse-complemented where their minimiser
    lies on the reverse strand: --verify checks the records as written
    (before, every -M sort with such reads failed its check)."""
    src = case.input("bulk.bam")
    expected = case.session.expected("bulk.bam", ["-M"])
    result = case.rocksort_ok(["--verify", "-M", *extra, "-T", case.temp_prefix,
                               "-o", case.out("out.bam"), src])
    expect_verify_ok(case, result.stderr, record_count(case, src))
    case.expect_same(case.out("out.bam"), expected)
    case.expect_no_temp_left()
