"""Tests of rocksort's extras beyond the sort itself: --write-index,
--max-memory, progress reports, the compaction sizing made without -s (and
how many threads then read the runs), and holding an input that fits in
memory.  How temp runs and the output use the disk and the page cache is
tested in test/disk_io.py.  To run only these:
    run_tests.py -k 'write_index_*' -k 'max_memory_*' -k 'progress_*' -k 'sizing_*' \
        -k 'runs_read_*' -k 'memory_*'
"""

import os
import re
import shutil

from harness import SPILL, TIMEOUT, Failure, Skip, expect_error, run, tail, write_bytes

# Regions that cross bin boundaries, hit the tie hot spot at chr1:1234, ask
# for a whole reference, a reference with few reads, and the unplaced reads.
BULK_REGIONS = ["chr1", "chr1:1-1300", "chr1:1234-1234", "chr2:100000-2500000",
                "chr3:2999000-3000000", "chrM", "chr2:1-10", "*"]
MIXED_REGIONS = ["c1", "c2:1000-5000", "c3:18000-20000", "c1:1-1", "*"]


def query(case, path, index, region, reference=None):
    args = ["-X", path, index, region]
    if reference:
        args[:0] = ["--reference", reference]
    return case.session.oracle_ok("view", args).stdout


def expect_same_queries(case, ours, our_index, theirs, their_index, regions,
                        reference=None):
    """Each region gives the same records through our index as through
    the index samtools builds for the same data, and some give some."""
    hits = 0
    for region in regions:
        got = query(case, ours, our_index, region, reference)
        want = query(case, theirs, their_index, region, reference)
        if got != want:
            raise Failure(f"region {region}: {len(got.splitlines())} records "
                          f"through our index, {len(want.splitlines())} through "
                          "samtools'")
        hits += bool(want)
    if hits < len(regions) // 2:
        raise Failure(f"test is wrong: only {hits} of {len(regions)} regions "
                      "return records")


def indexed_sort(case, source, out_name, index_name, index_flags, regions,
                 extra=(), reference=None, order=()):
    """Sorts with --write-index (and the options `order`, given to the
    oracle too) and checks: the output is the oracle's, the index sits at
    index_name, region queries agree with samtools index's own index of the
    same file, nothing else is left."""
    out = case.out(out_name)
    spec = out if index_name == out_name + ".csi" or index_name.endswith(".crai") \
        else f"{out}##idx##{case.out(index_name)}"
    shared = [*order, *(["--reference", reference] if reference else [])]
    case.rocksort_ok(["--write-index", *shared, *extra, "-T", case.temp_prefix,
                      "-o", spec, case.input(source)])
    expected = case.session.expected(source, shared, out_name)
    case.expect_same(out, expected, reference)
    case.expect_only_files(case.out_dir, [out_name, index_name])
    case.expect_no_temp_left()
    theirs = os.path.join(case.dir, "theirs" + os.path.splitext(out_name)[1])
    shutil.copy(out, theirs)
    their_index = theirs + os.path.splitext(index_name)[1]
    case.session.oracle_ok("index", [*index_flags, "-o", their_index, theirs])
    expect_same_queries(case, out, case.out(index_name), theirs, their_index,
                        regions, reference)


def test_write_index_csi_spilled(case):
    indexed_sort(case, "bulk.bam", "out.bam", "out.bam.csi", ["-c"],
                 BULK_REGIONS, extra=SPILL)


def test_write_index_bai_named(case):
    indexed_sort(case, "bulk.bam", "out.bam", "sorted.bai", ["-b"],
                 BULK_REGIONS, extra=["-@", "2"])


def test_write_index_cram(case):
    indexed_sort(case, "mixed.bam", "out.cram", "out.cram.crai", [],
                 MIXED_REGIONS, reference=case.input("mixed.fa"))


def test_write_index_minimiser(case):
    """1.24 indexes -M output too: its placed reads are in coordinate order."""
    indexed_sort(case, "minimiser.bam", "out.bam", "out.bam.csi", ["-c"], MIXED_REGIONS,
                 order=["-M"])


def test_write_index_refused_for_stdout_and_sam(case):
    for args, mention in ((["-o", "-"], "standard output"),
                          (["-O", "sam", "-o", case.out("out.sam")], "SAM")):
        result = run([*case.session.rocksort_cmd, "--write-index", *args,
                      case.input("mixed.bam")], cwd=case.out_dir,
                     env=case.session.env)
        expect_error(case, result, [mention], None)
        if result.stdout:
            raise Failure(f"{len(result.stdout)} bytes on stdout after the error")
    case.expect_only_files(case.out_dir, [])


def test_write_index_name_order_warns_and_skips(case):
    """samtools writes no index for an order it cannot index; we say so."""
    out = case.out("out.bam")
    result = case.rocksort_ok(["--write-index", "-n", "-T", case.temp_prefix,
                               "-o", out, case.input("mixed.bam")])
    if b"--write-index" not in result.stderr:
        raise Failure("no warning that the index was not written",
                      tail(result.stderr))
    case.expect_same(out, case.session.expected("mixed.bam", ["-n"]))
    case.expect_only_files(case.out_dir, ["out.bam"])


def test_write_index_failure_leaves_nothing(case):
    """An index whose directory does not exist: no output, no index, no
    temp files, the old output untouched."""
    out = case.out("out.bam")
    write_bytes(out, b"old")
    result = run([*case.session.rocksort_cmd, "--write-index", "-T",
                  case.temp_prefix, "-o",
                  f"{out}##idx##{case.out('missing/x.bai')}",
                  case.input("mixed.bam")], cwd=case.out_dir,
                 env=case.session.env)
    expect_error(case, result, ["missing"], None)
    with open(out, "rb") as f:
        if f.read() != b"old":
            raise Failure("the existing output was changed")
    case.expect_only_files(case.out_dir, ["out.bam"])


# --max-memory ------------------------------------------------------------------

def runs_written(stderr):
    found = re.search(rb"runs: (\d+) written", stderr)
    if not found:
        raise Failure("no 'runs: N written' in the -v report", tail(stderr))
    return int(found[1])


def sort_verbose(case, args, source="bulk.bam", shared=()):
    out = case.out("out.bam")
    result = case.rocksort_ok(["-v", *shared, *args, "-T", case.temp_prefix,
                               "-o", out, case.input(source)])
    case.expect_same(out, case.session.expected(source, list(shared)))
    case.expect_no_temp_left()
    os.remove(out)
    return result.stderr


def test_max_memory_is_a_total(case):
    """--max-memory 4M with 4 threads spills like -m 1M with 4 threads
    (the same total), and far more than -m 4M with 4 threads (16M)."""
    total = runs_written(sort_verbose(case, ["--max-memory", "4M", "-@", "4"]))
    quarter = runs_written(sort_verbose(case, ["-m", "1M", "-@", "4"]))
    whole = runs_written(sort_verbose(case, ["-m", "4M", "-@", "4"]))
    if total != quarter:
        raise Failure(f"--max-memory 4M -@4 wrote {total} runs, -m 1M -@4 {quarter}")
    if total < 3 * max(whole, 1):
        raise Failure(f"runs: {total} with --max-memory 4M, {whole} with -m 4M: "
                      "the total was not shared out between the threads")


def test_max_memory_with_m_is_an_error(case):
    result = run([*case.session.rocksort_cmd, "-m", "1M", "--max-memory", "4M",
                  "-o", case.out("out.bam"), case.input("mixed.bam")],
                 cwd=case.out_dir, env=case.session.env)
    expect_error(case, result, ["--max-memory"], case.out("out.bam"))


# Progress -------------------------------------------------------------------------

def progress_run(case, args, stderr_tty=False):
    """Sorts bulk.bam (spilled) to stdout -> (stdout bytes, stderr text).
    With stderr_tty, stderr is a pseudo-terminal."""
    cmd = [*case.session.rocksort_cmd, *args, *SPILL, "-T", case.temp_prefix,
           case.input("bulk.bam")]
    env = dict(case.session.env, TMPDIR=case.tmp)
    if not stderr_tty:
        result = run(cmd, cwd=case.out_dir, env=env)
        if result.returncode != 0:
            raise Failure(f"exit status {result.returncode}", tail(result.stderr))
        return result.stdout, result.stderr.decode(errors="replace")
    import pty
    import subprocess
    try:
        leader, follower = pty.openpty()
    except OSError as error:    # a chroot without /dev/pts: the machine's, not rocksort's
        raise Skip(f"no pseudo-terminal can be opened here ({error}); mount devpts "
                   "(/dev/pts) to run it")
    with open(os.path.join(case.dir, "stdout.bam"), "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=follower, cwd=case.out_dir,
                                env=env)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:   # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    if proc.wait(timeout=TIMEOUT) != 0:
        raise Failure(f"exit status {proc.returncode}", [seen.decode(errors="replace")])
    with open(os.path.join(case.dir, "stdout.bam"), "rb") as f:
        return f.read(), seen.decode(errors="replace")


def expect_sorted_stdout(case, data):
    path = os.path.join(case.dir, "got.bam")
    write_bytes(path, data)
    case.expect_same(path, case.session.expected("bulk.bam", [], to_stdout=True))
    case.expect_no_temp_left()


def test_progress_forced_plain_lines(case):
    """--progress=SECONDS with stderr a pipe: plain lines (no carriage
    returns) during the run, a summary last, the output untouched."""
    out, err = progress_run(case, ["--progress=0.05", "-@", "2"])
    expect_sorted_stdout(case, out)
    lines = err.splitlines()
    if "\r" in err or not lines:
        raise Failure("expected plain lines on stderr", lines[:5])
    if not all(l.startswith("[rocksort] ") for l in lines):
        raise Failure("stray lines on stderr", lines[:5])
    if not re.match(r"\[rocksort\] done: 40\.0k records", lines[-1]):
        raise Failure("the last line is not the summary", lines[-3:])
    phases = {l.split(":")[0][len("[rocksort] "):] for l in lines[:-1]}
    if not phases & {"load", "readout"}:
        raise Failure("no line during the run at a 0.05 s interval", lines)


def test_progress_off_when_stderr_is_not_a_terminal(case):
    out, err = progress_run(case, [])
    expect_sorted_stdout(case, out)
    if err:
        raise Failure("stderr is not empty", err.splitlines()[:5])


def test_progress_on_a_terminal(case):
    """stderr a terminal: one line redrawn in place (CR, erase), ending
    with the summary; stdout, a file, holds only the sorted BAM."""
    out, err = progress_run(case, [], stderr_tty=True)
    expect_sorted_stdout(case, out)
    if "\r\x1b[K" not in err:
        raise Failure("no line redrawn in place", [repr(err[:200])])
    if not re.search(r"\[rocksort\] done: 40\.0k records[^\n]*\r?\n$", err):
        raise Failure("no summary line at the end", [repr(err[-200:])])


# Sizing without -s ----------------------------------------------------------------

def sizing_input(case):
    """bulk.bam twice over (80k records, ~65 runs at -m 1M) and its
    oracle-sorted form."""
    big = os.path.join(case.dir, "big.bam")
    case.session.oracle_ok("cat", ["-o", big, case.input("bulk.bam"),
                                   case.input("bulk.bam")])
    expected = os.path.join(case.dir, "expected.bam")
    case.session.oracle_ok("sort", ["--no-PG", "-o", expected, big])
    return big, expected


def sizing_report(case, big, expected, args, stdin=False, dirs=None):
    """Sorts big with -v, SPILL and args, checks it against expected
    -> the -v report.  dirs: a -T for each instead of the case's prefix,
    each to be left empty."""
    out = case.out("out.bam")
    temp = [a for d in dirs for a in ("-T", d)] if dirs else ["-T", case.temp_prefix]
    cmd = ["-v", *SPILL, *args, *temp, "-o", out]
    result = case.rocksort_ok(cmd + ["-"], stdin=big) if stdin else \
        case.rocksort_ok(cmd + [big])
    case.expect_same(out, expected)
    case.expect_no_temp_left()
    left = [os.path.join(d, n) for d in dirs or [] for n in os.listdir(d)]
    if left:
        raise Failure("temporary data left in the -T directories", left[:5])
    os.remove(out)
    return result.stderr.decode(errors="replace")


def sizing_run(case, big, expected, args, stdin=False):
    err = sizing_report(case, big, expected, args, stdin)
    runs = re.search(r"runs: (\d+) written, (\d+) merged", err)
    size = re.search(r"\[rocksort\] size: (.*)", err)
    decoded = re.search(r"([\d.]+) MB decoded", err)
    if not (runs and size and decoded):
        raise Failure("the -v report lacks runs, size or decoded bytes",
                      err.splitlines()[:12])
    return int(runs[1]), int(runs[2]), size[1], float(decoded[1])


# Records runs (one entry a record): grouped runs (compact, and uncompressed
# ones in plain groups) whose groups alone exceed the readout's memory, as at
# -m 1M, are merged in passes before the readout instead of in the background
# (readout/run_passes.h); records runs still merge in the background.  Only
# RocksDB's block codecs write them since uncompressed runs are grouped.
RECORDS_RUNS = ["--temp-compression", "lz4"]
PLAIN_GROUPS = ["--temp-compression", "none"]


def test_sizing_from_input_file(case):
    """A regular file and no -s: the size is estimated from the file
    (close to the bytes actually decoded) and runs are merged in the
    background, so the readout merges at most 2*sqrt(T) runs, however
    far the background merges fell behind."""
    big, expected = sizing_input(case)
    written, merged, size, decoded = sizing_run(case, big, expected, RECORDS_RUNS)
    estimate = re.match(r"([\d.]+) MB estimated from the input file; "
                        r"at least (\d+) runs per background merge", size)
    if not estimate:
        raise Failure(f"no estimate with merging: size: {size}")
    if not 0.7 * decoded <= float(estimate[1]) <= 1.5 * decoded:
        raise Failure(f"estimate {estimate[1]} MB, but {decoded} MB were decoded")
    # On a loaded machine the background merges lag behind the input;
    # the merges after the load make up for it, so this holds whatever
    # the timing.
    if written <= 32 or merged > int(2 * written ** 0.5):
        raise Failure(f"{merged} of {written} runs merged at readout; "
                      f"2*sqrt(T) = {2 * written ** 0.5:.1f}")


def pass_counts(err):
    """(runs merge passes replaced, runs they wrote), from -v's readout
    memory line (engine/sort_report.c), or None without one."""
    if "no merge passes" in err:
        return 0, 0
    alone = re.search(r"merge passes: (\d+) runs rewritten one at a time", err)
    if alone:
        return int(alone[1]), int(alone[1])
    merged = re.search(r"merge passes: (\d+) runs merged into (\d+)", err)
    return (int(merged[1]), int(merged[2])) if merged else None


def test_sizing_stdin_unknown_and_s_overrides(case):
    """From a pipe there is nothing to estimate from: nothing merges in
    the background, and every run reaches the readout but those merge
    passes rewrote to fit the memory.  -s overrides an estimate."""
    big, expected = sizing_input(case)
    err = sizing_report(case, big, expected, [], stdin=True)
    runs = re.search(r"runs: (\d+) written, (\d+) merged", err)
    passes = pass_counts(err)
    size = re.search(r"\[rocksort\] size: (.*)", err)
    written, merged = int(runs[1]), int(runs[2])
    if not size[1].startswith("unknown") or not passes or \
            merged != written - passes[0] + passes[1]:
        raise Failure(f"from stdin: size: {size[1]}; {merged} of {written} runs merged at "
                      f"readout; merge passes: {passes or 'no line'}")
    _, _, size, _ = sizing_run(case, big, expected, ["-s", "100M"])
    if "given by -s" not in size:
        raise Failure(f"-s did not override the estimate: size: {size}")


def test_sizing_s_far_too_high_still_meets_the_budget(case):
    """-s 100G for 13 MB of records plans merges that never start during
    the load; after it, the newest runs are merged until the readout
    has at most 2*sqrt(T) of them."""
    big, expected = sizing_input(case)
    written, merged, _, _ = sizing_run(case, big, expected, ["-s", "100G"])
    if written <= 32 or merged > int(2 * written ** 0.5):
        raise Failure(f"{merged} of {written} runs merged at readout; "
                      f"2*sqrt(T) = {2 * written ** 0.5:.1f}")


def test_sizing_many_runs_write_smaller_groups(case):
    """Compact runs too many for the readers' memory at 256 KiB groups are
    written in smaller groups (issue #52): -s 1800M plans about 115 runs
    at --max-memory 48M, whose 256 KiB groups (33 MB decoded) would leave
    the readers' 34 MB no room for the merged files, so that a pass would
    rewrite every run.  The runs are written in 128 or 64 KiB groups, -v
    says so, and the records are the oracle's.  Without -s nothing is
    known when the runs are written, and the groups keep 256 KiB."""
    big, expected = sizing_input(case)
    for args, smaller in ((["-s", "1800M"], True), ([], False)):
        out = case.out("out.bam")
        result = case.rocksort_ok(["-v", "--max-memory", "48M", *args, "-T", case.temp_prefix,
                                   "-o", out, "-"], stdin=big)
        case.expect_same(out, expected)
        case.expect_no_temp_left()
        os.remove(out)
        err = result.stderr.decode(errors="replace")
        groups = re.search(r"groups of (\d+) KiB", err)
        runs = re.search(r"runs: (\d+) written", err)
        if not groups or not runs or int(runs[1]) < 1:
            raise Failure(f"with {args or 'no -s'}: no spilled runs or no group size in -v",
                          err.splitlines()[:14])
        if (int(groups[1]) < 256) != smaller:
            raise Failure(f"with {args or 'no -s'}: groups of {groups[1]} KiB")


def test_runs_read_by_two_threads_unless_merged(case):
    """Without background merges the runs are dealt to two parts, each
    read by its own thread at the readout; with -s every run goes to
    the one part the merges work on.  Both give the oracle's records."""
    big, expected = sizing_input(case)
    for args, stdin, want in ((RECORDS_RUNS, True, 2), ([*RECORDS_RUNS, "-s", "100M"], False, 1)):
        err = sizing_report(case, big, expected, args, stdin)
        readers = re.search(r"temp reads: .*; (\d+) reader threads?$", err, re.M)
        if not readers or int(readers[1]) != want:
            raise Failure(f"with {args or 'no -s'}: {readers[0] if readers else 'no -v line'}"
                          f"; expected {want} reader thread(s)")


def test_runs_read_by_more_threads_at_many_threads(case):
    """Each part's reader also decodes its compact runs, so at -@ 16 the
    runs are dealt to four parts (one per four threads, at most four), and
    at -@ 8 to two; a resumable store keeps two whatever -@ is (its parts
    are part of its state), and so do two temp directories, one reader
    each (more parts would leave some empty, and be read), uncompressed
    runs (records runs, and plain groups), which their readers only read,
    and a readout in pieces (-u at -@ 16), whose every piece would hold each
    part's groups decoded ahead.
    All give the oracle's records."""
    big, expected = sizing_input(case)
    state = os.path.join(case.dir, "state")
    dirs = [os.path.join(case.dir, d) for d in ("t1", "t2")]
    for d in dirs:
        os.makedirs(d)
    for args, want in ((["-@", "16"], 4), (["-@", "8"], 2), (["-@", "12"], 3),
                       (["-@", "16", "--resume", state], 2), (["-@", "16", "DIRS"], 2),
                       (["-@", "16", *RECORDS_RUNS], 2), (["-@", "16", *PLAIN_GROUPS], 2),
                       (["-@", "16", "-u"], 2),
                       (["-@", "16", "-s", "100M", "DIRS"], 2)):
        err = sizing_report(case, big, expected, [a for a in args if a != "DIRS"], True,
                            dirs if "DIRS" in args else None)
        readers = re.search(r"temp reads: .*; (\d+) reader threads?$", err, re.M)
        if not readers or int(readers[1]) != want:
            raise Failure(f"with {args}: {readers[0] if readers else 'no -v line'}"
                          f"; expected {want} reader threads")


# Holding every batch in memory ------------------------------------------------------

def memory_run(case, source, order, args):
    """Sorts source with -v, the order's flags and args, and checks the
    output against the oracle -> (the -v memory line, runs written,
    sorted batches merged from memory)."""
    out = case.out("out.bam")
    result = case.rocksort_ok(["-v", *order, *args, "-T", case.temp_prefix, "-o", out,
                               case.input(source)])
    case.expect_same(out, case.session.expected(source, list(order)))
    case.expect_no_temp_left()
    os.remove(out)
    err = result.stderr.decode(errors="replace")
    memory = re.search(r"\[rocksort\] memory: (.*)", err)
    runs = re.search(r"runs: (\d+) written, \d+ merged at readout \(\+(\d+) in memory\)",
                     err)
    if not (memory and runs):
        raise Failure("the -v report lacks the memory or runs line", err.splitlines()[:12])
    return memory[1], int(runs[1]), int(runs[2])


def test_memory_holds_an_input_that_fits(case):
    """bulk.bam fits in -m 16M as three batches: nothing is written to
    temp and the sorted batches are merged from memory, in coordinate
    and name order, and with threads sharing the same total.  Copies
    would not fit beside the two batch arenas, so the batches themselves
    are kept."""
    for order, args in [([], ["-m", "16M"]), (["-n"], ["-m", "16M"]),
                        ([], ["-m", "8M", "-@", "2"])]:
        memory, written, in_memory = memory_run(case, "bulk.bam", order, args)
        if written or in_memory < 3 or not memory.startswith("every batch held in memory (in place)"):
            raise Failure(f"{' '.join(order + args)}: {written} runs written, "
                          f"{in_memory} batches in memory; memory: {memory}")


def test_memory_holds_two_batches_in_place(case):
    """bulk.bam is two batches at -m 32M: the budget has room for a copy
    of the first sorted batch in key order beside the two batch arenas,
    but the copy would take about half as much memory again as holding
    the batch itself (engine/sort_plan.c, packing_pays()), so the batch is
    kept in place, and merged from there with the tail.  Copies pay only
    over many batches of the largest size, beyond what a test can sort."""
    for order, args in [([], ["-m", "32M"]), (["-n"], ["-m", "32M"]),
                        ([], ["-m", "16M", "-@", "2"])]:
        memory, written, in_memory = memory_run(case, "bulk.bam", order, args)
        if written or in_memory != 2 or \
                not memory.startswith("every batch held in memory (in place)"):
            raise Failure(f"{' '.join(order + args)}: {written} runs written, "
                          f"{in_memory} batches in memory; memory: {memory}")


def test_memory_spills_held_batches_when_the_input_outgrows_them(case):
    """bulk_then_uniform.bam's start predicts about two batches at
    -m 12M, but its end expands 100 times more: the batches held so far
    are spilled with the rest, and the output is still the oracle's."""
    memory, written, in_memory = memory_run(case, "bulk_then_uniform.bam", [],
                                            ["-m", "12M"])
    if not memory.startswith("planned to hold") or written < 3 or in_memory != 1:
        raise Failure(f"{written} runs written, {in_memory} batches in memory; "
                      f"memory: {memory}")
