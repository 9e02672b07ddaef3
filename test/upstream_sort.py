"""samtools' own sort tests (test/test.pl, `sub test_sort`), run with
`rocksort` in place of `sort`, against the expected files samtools'
maintainers wrote.  The inputs and expected outputs are vendored under
test/upstream/ (origin, version and licence in test/upstream/README.md).

These tests do not compare with the oracle: a file written by the people
who defined the order catches what our generator (test/samdata.py) never
thought to produce.  The oracle_* tests check the other way round that
samtools 1.24 itself still gives every vendored expected file; where one
ever differs, 1.24 wins (test/upstream/README.md).

Each case runs as test.pl runs it: `sort [-@ N] ARGS -O SAM -o -`, stdout
compared with the expected file as text after test.pl's own clean-up
(CRLF to LF, runs of @PG lines removed), exit status 0.  test.pl runs
test_sort twice, without threads and with -@ 2; here that is -@ 0 and
-@ 2.  The minimiser cases read `samtools reset --dupflag
auto_indexed.tmp.bam` through a pipe, and auto_indexed.tmp.bam is made
as test.pl's test_index makes it, in the test's own directory.  To run
only these: run_tests.py -k 'upstream_*'
"""

import os
import re
import subprocess

from harness import (ORACLE_SCRIPT, PYTHON, REPO, TIMEOUT, Failure, each, run,
                     tail)

UPSTREAM = os.path.join(REPO, "test", "upstream")
MPILEUP_REF = os.path.join(UPSTREAM, "dat", "mpileup.ref.fa")
# The minimiser cases' input: made per test, then piped through reset.
RESET_INPUT = "auto_indexed.tmp.bam"

# (name, options as test.pl gives them, input under test/upstream/ or
# RESET_INPUT, expected file under test/upstream/)
CASES = [
    ("pos", ["-m", "10M"], "dat/test_input_1_a.bam", "sort/pos.sort.expected.sam"),
    ("name", ["-n", "-m", "10M"], "dat/test_input_1_a.bam", "sort/name.sort.expected.sam"),
    ("name2", ["-N", "-m", "10M"], "dat/test_input_1_b.bam", "sort/name2.sort.expected.sam"),
    ("name3", ["-n", "-m", "10M"], "dat/sort_name_input_1.sam",
     "sort/name3.sort.expected.sam"),
    ("tag_rg", ["-t", "RG", "-m", "10M"], "dat/test_input_1_a.bam",
     "sort/tag.rg.sort.expected.sam"),
    ("tag_rg_n", ["-n", "-t", "RG", "-m", "10M"], "dat/test_input_1_a.bam",
     "sort/tag.rg.n.sort.expected.sam"),
    ("tag_as", ["-t", "AS", "-m", "10M"], "dat/test_input_1_d.sam",
     "sort/tag.as.sort.expected.sam"),
    ("tag_fi", ["-t", "FI", "-m", "10M"], "dat/test_input_1_d.sam",
     "sort/tag.fi.sort.expected.sam"),
    ("template_coordinate", ["--template-coordinate", "-m", "10M"],
     "sort/template-coordinate.sort.sam", "sort/template-coordinate.sort.expected.sam"),
    ("template_coordinate_cell_barcode", ["--template-coordinate", "-m", "10M"],
     "sort/template-coordinate.cell-barcode.sort.sam",
     "sort/template-coordinate.cell-barcode.sort.expected.sam"),
    ("template_coordinate_hardclip", ["--template-coordinate", "-m", "10M"],
     "sort/template-coordinate-hardclip.sort.sam",
     "sort/template-coordinate-hardclip.sort.expected.sam"),
    ("minimiser_basic", ["-m", "10M", "-M", "-K10"], RESET_INPUT, "sort/minimiser-basic.sam"),
    ("minimiser_indexed", ["-m", "10M", "-M", "-K10", "-I", MPILEUP_REF], RESET_INPUT,
     "sort/minimiser-indexed.sam"),
    ("minimiser_indexed_poly", ["-m", "10M", "-MH", "-K10", "-I", MPILEUP_REF], RESET_INPUT,
     "sort/minimiser-indexed-poly.sam"),
]

# test.pl's three "obsolete invocation must fail" cases do not apply:
# rocksort keeps the legacy form of the 2014 rocksort on purpose (README,
# "The legacy form"), so each of these sorts, where 1.24 refuses them.
# test_upstream_obsolete_forms_are_legacy checks what they do instead.
OBSOLETE_INVOCATIONS = [
    # (test.pl's arguments after `sort`; OUT is in $tmp)   what rocksort writes
    (["dat/test_input_1_a.bam", "sortout"], "sortout.bam"),
    (["-f", "dat/test_input_1_a.bam", "sortout.bam"], "sortout.bam"),
    (["-o", "dat/test_input_1_a.bam", "sorttmp"], "-"),   # -o: standard output
]

THREADS = [("t0", ["-@", "0"]), ("t2", ["-@", "2"])]


def cleaned(sam):
    """test.pl's clean-up before comparing: CRLF to LF, runs of @PG lines
    removed."""
    text = sam.replace(b"\r\n", b"\n")
    return re.sub(rb"(^|\n)(?:@PG\t[^\n]*\n)+", rb"\1", text)


def expect_same_text(actual, expected_name, who):
    with open(os.path.join(UPSTREAM, expected_name), "rb") as f:
        want = cleaned(f.read()).splitlines()
    got = cleaned(actual).splitlines()
    if got == want:
        return
    line = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w),
                min(len(got), len(want)))
    show = [f"expected: {want[line][:150]!r}" if line < len(want) else "expected: (end)",
            f"{who + ':':9} {got[line][:150]!r}" if line < len(got) else f"{who}: (end)"]
    raise Failure(f"{who} differs from {expected_name} at line {line + 1} "
                  f"({len(got)} lines, expected {len(want)})", show)


def oracle_cmd(*args):
    return [PYTHON, "-c", ORACLE_SCRIPT, *args]


def make_auto_indexed(case):
    """As test.pl's test_index: `samtools view --write-index -o
    auto_indexed.tmp.bam dat/mpileup.1.sam`, here in the test's directory."""
    path = os.path.join(case.dir, RESET_INPUT)
    case.session.oracle_ok("view", ["--write-index", "-o", path,
                                    os.path.join(UPSTREAM, "dat", "mpileup.1.sam")])
    return path


def piped_from_reset(case, bam, sort_cmd, env):
    """`samtools reset --dupflag BAM | SORT_CMD` with pipefail -> the
    sorter's result; fails if reset fails."""
    reset_err = os.path.join(case.dir, "reset.err")
    with open(reset_err, "wb") as err, subprocess.Popen(
            oracle_cmd("reset", "--dupflag", bam), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=err, env=case.session.env) as reset:
        try:
            result = subprocess.run(sort_cmd, stdin=reset.stdout, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd=case.out_dir, env=env,
                                    timeout=TIMEOUT)
        finally:
            reset.stdout.close()
        if reset.wait(timeout=TIMEOUT) != 0:
            with open(reset_err, "rb") as f:
                raise Failure(f"samtools reset exited with {reset.returncode}", tail(f.read()))
    return result


def sort_as_test_pl(case, sort_cmd, threads, args, source, env):
    """`SORT_CMD THREADS ARGS INPUT -O SAM -o -` (or reset's output piped
    in) -> its result."""
    cmd = [*sort_cmd, *threads, *args]
    if source == RESET_INPUT:
        return piped_from_reset(case, make_auto_indexed(case), cmd + ["-O", "SAM", "-o", "-"],
                                env)
    return run(cmd + [os.path.join(UPSTREAM, source), "-O", "SAM", "-o", "-"],
               cwd=case.out_dir, env=env)


@each((f"upstream_sort_{name}_{label}", threads, args, source, expected)
      for name, args, source, expected in CASES for label, threads in THREADS)
def test_upstream_sort(case, threads, args, source, expected):
    env = dict(case.session.env, TMPDIR=case.tmp)
    result = sort_as_test_pl(case, case.session.rocksort_cmd, threads, args, source, env)
    if result.returncode != 0:
        raise Failure(f"rocksort exited with {result.returncode}", tail(result.stderr))
    expect_same_text(result.stdout, expected, "rocksort")
    case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, [])


@each((f"upstream_oracle_{name}", args, source, expected)
      for name, args, source, expected in CASES)
def test_upstream_oracle(case, args, source, expected):
    """samtools 1.24 gives the vendored file too, at both thread counts."""
    for _, threads in THREADS:
        result = sort_as_test_pl(case, oracle_cmd("sort"), threads, args, source,
                                 case.session.env)
        if result.returncode != 0:
            raise Failure(f"oracle samtools sort exited with {result.returncode}",
                          tail(result.stderr))
        expect_same_text(result.stdout, expected, "1.24")


def test_upstream_obsolete_forms_are_legacy(case):
    """test.pl's obsolete invocations, which 1.24 refuses, are rocksort's
    legacy form: each writes test_input_1_a.bam sorted by coordinate, the
    records of pos.sort.expected.sam, to OUT.bam, OUT or standard output."""
    for label, threads in THREADS:
        for args, written in OBSOLETE_INVOCATIONS:
            words = [os.path.join(UPSTREAM, a) if a.startswith("dat/") else a for a in args]
            result = case.rocksort([*threads, *words])
            if result.returncode != 0:
                raise Failure(f"{' '.join(args)} ({label}): exit status {result.returncode}",
                              tail(result.stderr))
            out = case.out(written)
            if written == "-":
                out = case.out("stdout.bam")
                with open(out, "wb") as f:
                    f.write(result.stdout)
            case.expect_only_files(case.out_dir, [os.path.basename(out)])
            sam = case.session.oracle_ok("view", ["-h", "--no-PG", out]).stdout
            expect_same_text(sam, "sort/pos.sort.expected.sam", "rocksort")
            os.remove(out)
    case.expect_no_temp_left()
