"""Tests of the range-partitioned readout (issue #27), continued from
test/readout_ranges.py (whose docstring says what they all hold the readout
to, and whose helpers these use): --write-index gives samtools index's own
index; --verify agrees; -v reports the K used (compact runs read out in K
pieces too, many pieces through few slots, fewer threads under a low
`ulimit -n`, one range for a small input by default); a bad K and a full
disk fail the usual way.  To run only these:  run_tests.py -k 'readout_*'
(with test/readout_ranges.py's).
"""

import os
import re
import shutil

import tmpfs
from harness import PYTHON, Failure, expect_error, run, tail, write_bytes
from readout_ranges import (IN_MEMORY, MERGING, OPTION, READOUT_LINE, READOUT_LINE_TEXT, SPILL,
                            expect_same, index_bytes, merge_threads, oracle_expected,
                            rocksort_k, source)

# many_pieces.bam spilled in two compact runs, with room beside them for
# two merge threads' readers (each merge thread reads every run).  A narrow
# window: at 32M -n spills three runs whose readers fit one thread, since
# each feed counts rANS' tables too; at 36M the coordinate sort is held.
PIECES_SPILL = ["--max-memory", "34M"]


# 4. --write-index: built after the join, the same as samtools index's ----------------

def indexed(case, k, kind, extra):
    """--write-index with K: the output is the oracle's, and its index
    equals what the oracle's samtools index (-b or -c) builds for the
    same file, compared decompressed."""
    out = case.out("out.bam")
    if kind == "bai":
        index, spec, flags = out + ".bai", f"{out}##idx##{out}.bai", ["-b"]
    else:
        index, spec, flags = out + ".csi", out, ["-c"]
    rocksort_k(case, k, ["--write-index", *extra], case.input("bulk.bam"), spec)
    expect_same(case, out, oracle_expected(case, "bulk.bam", []), f"{OPTION} {k}")
    case.expect_only_files(case.out_dir, ["out.bam", os.path.basename(index)])
    case.expect_no_temp_left()
    theirs = os.path.join(case.dir, "theirs.bam")
    shutil.copy(out, theirs)
    their_index = f"{theirs}.{kind}"
    case.session.oracle_ok("index", [*flags, "-o", their_index, theirs])
    ours, want = index_bytes(index), index_bytes(their_index)
    if ours != want:
        at = next((i for i, (a, b) in enumerate(zip(ours, want)) if a != b),
                  min(len(ours), len(want)))
        raise Failure(f"{OPTION} {k}: the {kind.upper()} index differs from samtools "
                      f"index's for the same file: {len(ours)} bytes against "
                      f"{len(want)}, first difference at byte {at}")


def test_readout_index_bai_k2_in_memory(case):
    indexed(case, 2, "bai", ["-@", "2"])


def test_readout_index_bai_k4_spilled_uncompressed(case):
    indexed(case, 4, "bai", ["-u", *SPILL])


def test_readout_index_csi_k2_spilled(case):
    indexed(case, 2, "csi", SPILL)


def test_readout_index_csi_k4_merged_threads(case):
    indexed(case, 4, "csi", [*MERGING, "-@", "2"])


# 5. --verify ---------------------------------------------------------------------

def record_count(case, src):
    count_file = os.path.join(case.dir, "count")
    case.session.oracle_ok("view", ["-c", "-o", count_file, src])
    with open(count_file) as f:
        return int(f.read().strip())


def verified(case, k, shared, extra):
    """--verify with K: one '[rocksort] verify:' line giving the count
    read and written, saying OK; the oracle's output."""
    src = case.input("bulk.bam")
    out = case.out("out.bam")
    result = rocksort_k(case, k, ["--verify", *shared, *extra], src, out)
    expect_same(case, out, oracle_expected(case, "bulk.bam", shared), f"{OPTION} {k}")
    count = record_count(case, src)
    lines = [l for l in result.stderr.decode(errors="replace").splitlines()
             if l.startswith("[rocksort] verify:")]
    if len(lines) != 1:
        raise Failure(f"{len(lines)} '[rocksort] verify:' lines on stderr, expected 1",
                      tail(result.stderr))
    numbers = re.findall(r"(?<![0-9A-Fa-f])\d+(?![0-9A-Fa-f])", lines[0])
    if numbers.count(str(count)) < 2:
        raise Failure(f"the verify line does not give {count} records both in and out",
                      lines)
    if not re.search(r"\bOK\b", lines[0]) or "MISMATCH" in lines[0]:
        raise Failure("the verify line does not say OK", lines)
    case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, ["out.bam"])


def test_readout_verify_in_memory_k4(case):
    verified(case, 4, [], IN_MEMORY)


def test_readout_verify_in_memory_presized_name_k3(case):
    verified(case, 3, ["-n"], [*IN_MEMORY, "-s", "50M"])


def test_readout_verify_spilled_k4(case):
    verified(case, 4, [], SPILL)


def test_readout_verify_spilled_merged_name_k5(case):
    verified(case, 5, ["-n"], MERGING)


# 6. -v reports the K used ----------------------------------------------------------

def readout_report(result):
    text = result.stderr.decode(errors="replace")
    said = READOUT_LINE.findall(text)
    if len(said) != 1:
        raise Failure(f"{len(said)} {READOUT_LINE_TEXT} lines under -v, expected 1",
                      tail(text, 12))
    return int(said[0][0]), int(said[0][1])


def test_readout_verbose_reports_k(case):
    """-v --merge-threads 4 on a spilled sort: one readout line, with
    1 <= K <= 4 ranges; the output is still the oracle's."""
    out = case.out("out.bam")
    result = rocksort_k(case, 4, ["-v", *SPILL], case.input("bulk.bam"), out)
    expect_same(case, out, oracle_expected(case, "bulk.bam", []), f"-v {OPTION} 4")
    k, _ = readout_report(result)
    if not 1 <= k <= 4:
        raise Failure(f"-v says {k} merge threads ran with {OPTION} 4")
    case.expect_no_temp_left()


def test_readout_compact_runs_in_pieces(case):
    """Compact runs (the default) hold records in groups, and a piece starts
    inside them (each run's group that spans the piece's first key is read
    too, store/run_index.h): with --merge-threads 4 the spilled sort reads out on
    two threads or more over more pieces, by coordinate and by -n, and
    gives the oracle's records.  The budget is what lets more than one
    thread run: each merge thread reads every run (readout/readout_plan.h), so at
    -m 1M --merge-threads is held to one.  Held in memory, the same option
    splits too."""
    src = source(case, "many_pieces.bam")
    for shared in ([], ["-n"]):
        out = case.out("out.bam")
        result = case.rocksort(["-v", *shared, *PIECES_SPILL, OPTION, "4", "-T", case.temp_prefix,
                                "-o", out, src])
        if result.returncode != 0:
            raise Failure(f"{' '.join(shared)} {OPTION} 4: exit {result.returncode}",
                          tail(result.stderr))
        expect_same(case, out, oracle_expected(case, "many_pieces.bam", shared),
                    f"compact runs, {' '.join(shared)} {OPTION} 4")
        text = result.stderr.decode(errors="replace")
        if "temp runs: compact" not in text or not re.search(r"runs: [1-9]\d* written", text):
            raise Failure("the runs were not spilled as compact ones", tail(result.stderr))
        threads, pieces = readout_report(result)
        if threads < 2 or pieces <= threads:
            raise Failure(f"compact runs read out by {threads} threads over {pieces} pieces")
        os.remove(out)
    out = case.out("out.bam")
    result = case.rocksort(["-v", *IN_MEMORY, OPTION, "4", "-o", out, case.input("bulk.bam")])
    expect_same(case, out, oracle_expected(case, "bulk.bam", []), f"in memory {OPTION} 4")
    if readout_report(result)[0] < 2:
        raise Failure("held in memory, --merge-threads 4 read out in one stream")
    case.expect_no_temp_left()


def test_readout_slots_reused_many_pieces(case):
    """Some 30 MB of records cut into 4 MiB pieces: with K = 2 and 3,
    more pieces than the K + 2 in flight, so every in-memory slot is
    overwritten by later pieces (a stale tail of a longer piece must
    not leak into the output).  In memory and spilled, by coordinate
    and -n, to a file and down a pipe: the oracle's records, one
    well-formed stream, and -v counts more pieces than K + 2."""
    src = source(case, "many_pieces.bam")
    for k, shared, extra in ((2, [], ["-m", "64M"]), (2, ["-n"], PIECES_SPILL),
                             (3, ["-u"], ["-m", "64M"])):
        want = oracle_expected(case, "many_pieces.bam", shared)
        out = case.out("out.bam")
        result = rocksort_k(case, k, ["-v", *shared, *extra], src, out)
        expect_same(case, out, want, f"{' '.join(shared + extra)} {OPTION} {k}")
        threads, pieces = readout_report(result)
        if threads != k or pieces <= k + 2:
            raise Failure(f"{OPTION} {k} {' '.join(extra)}: -v says {threads} threads over "
                          f"{pieces} pieces; expected {k} threads over more than {k + 2}")
        os.remove(out)
    want = oracle_expected(case, "many_pieces.bam", [], "out", to_stdout=True)
    result = rocksort_k(case, 2, ["-m", "64M"], src)
    piped = case.out("piped.bam")
    write_bytes(piped, result.stdout)
    expect_same(case, piped, want, f"{OPTION} 2 to stdout")
    case.expect_no_temp_left()


def test_readout_low_ulimit_k8(case):
    """--merge-threads 8 on some 40 spilled runs under `ulimit -n` 32
    and 40 (soft and hard): each merge thread needs two descriptors, so
    the readout takes fewer threads rather than run out; exit 0, the
    oracle's records, and -v reports 1 to 8 threads."""
    want = oracle_expected(case, "bulk.bam", [])
    limit_files = ("import resource, os, sys; n = int(sys.argv[1]); "
                   "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
                   "os.execvp(sys.argv[2], sys.argv[2:])")
    for limit in (32, 40):
        out = case.out("out.bam")
        result = run([PYTHON, "-c", limit_files, str(limit), *case.session.rocksort_cmd,
                      "-v", *SPILL, *merge_threads(8), "-T", case.temp_prefix, "-o", out,
                      case.input("bulk.bam")],
                     cwd=case.out_dir, env=dict(case.session.env, TMPDIR=case.tmp))
        if result.returncode != 0:
            raise Failure(f"{OPTION} 8 under ulimit -n {limit}: exit {result.returncode}",
                          tail(result.stderr))
        expect_same(case, out, want, f"{OPTION} 8 under ulimit -n {limit}")
        k, _ = readout_report(result)
        if not 1 <= k <= 8:
            raise Failure(f"-v says {k} merge threads under ulimit -n {limit}")
        os.remove(out)
        case.expect_no_temp_left()


def test_readout_default_k_small_input_one_range(case):
    """Without the option, the rule (readout/readout_model.h, unit-tested in
    test_readout_model) keeps a small input in one range even at -u
    with -@ 8: ranges under 32 MiB of records are not worth a thread.
    The output is the oracle's either way."""
    out = case.out("out.bam")
    result = case.rocksort_ok(["-v", "-u", "-@", "8", *SPILL, "-T", case.temp_prefix,
                               "-o", out, case.input("bulk.bam")])
    expect_same(case, out, oracle_expected(case, "bulk.bam", ["-u"]), "-u -@ 8")
    k, _ = readout_report(result)
    if k != 1:
        raise Failure(f"-u -@ 8 on a small input read out by {k} merge threads")
    case.expect_no_temp_left()


# 7. Failures keep the rules ------------------------------------------------------

def test_readout_bad_merge_threads_refused(case):
    """0, -1, x and 3x are refused: exit status 1, one line naming the
    option (plus the usage hint every bad option value gets, as in
    samtools), no output, nothing in the temp dir.  2 is taken."""
    out = case.out("out.bam")
    for value in ("0", "-1", "x", "3x"):
        result = case.rocksort([OPTION, value, "-T", case.temp_prefix, "-o", out,
                                case.input("mixed.bam")])
        hint = b"\nTry 'samtools rocksort --help'."
        result.stderr = result.stderr.replace(hint, b"")
        try:
            expect_error(case, result, ["merge-threads"], out)
        except Failure as failure:
            raise Failure(f"{OPTION} {value}: {failure.reason}", failure.details)
    case.expect_only_files(case.out_dir, [])
    rocksort_k(case, 2, [], case.input("mixed.bam"), out)
    expect_same(case, out, oracle_expected(case, "mixed.bam", []), f"{OPTION} 2")


def expect_disk_full(case, result, mentions):
    try:
        line = expect_error(case, result, mentions, None)
    except Failure as failure:
        raise Failure(f"disk full with {OPTION} 4: {failure.reason}", failure.details)
    if "No space left" not in line:
        raise Failure("the message does not say 'No space left'", [line])


if os.geteuid() == 0:  # mount needs root
    def test_readout_disk_full_output_k4(case):
        """A spilled -u sort (some 9 MB of output) into a 4 MB tmpfs, read
        out in 4 ranges: exit 1, one line, and no output, part or temp
        file anywhere (the tmpfs, the output dir, the temp dir)."""
        def body(mount_point):
            out = os.path.join(mount_point, "out.bam")
            result = case.rocksort(["-u", *SPILL, "-@", "2", *merge_threads(4),
                                    "-T", case.temp_prefix, "-o", out,
                                    case.input("bulk.bam")])
            expect_disk_full(case, result, ["out.bam", mount_point])
        tmpfs.with_tmpfs(case.dir, "4M", body, Failure, name="tmpfs4m")
        case.expect_no_temp_left()
        case.expect_only_files(case.out_dir, [])

    def test_readout_disk_full_temp_and_output_k4(case):
        """The same sort held in memory, with -T and -o on one 4 MB tmpfs:
        only the readout writes there, wherever it puts its parts."""
        def body(mount_point):
            out = os.path.join(mount_point, "out.bam")
            result = case.rocksort(["-u", *IN_MEMORY, *merge_threads(4),
                                    "-T", os.path.join(mount_point, "rs"), "-o", out,
                                    case.input("bulk.bam")])
            expect_disk_full(case, result, ["out.bam", mount_point])
        tmpfs.with_tmpfs(case.dir, "4M", body, Failure, name="tmpfs4m")
        case.expect_no_temp_left()
        case.expect_only_files(case.out_dir, [])
