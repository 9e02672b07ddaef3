"""Tests of `samtools rocksort`'s command line beyond the sort cases of
test/sort_cases.py: -u, an existing output, --no-PG, CRAM output without a
reference, --shuffle, errors of the other orders, empty input, the legacy
`IN OUT.prefix` form, -k, -v and --help; inputs and outputs the oracle
(samtools 1.24) refuses, refused the same way; and the samtools wrapper
around rocksort.
"""

import gzip
import os
import re
import shutil
import sys
import subprocess

import alignments
import samdata
from harness import (REPO, SAM_OUT, SPILL, Failure, SortCase, expect_error,
                     expect_failure_like_oracle, expect_same_outcome, run,
                     run_sort_case, tail, write_bytes, write_text)


def test_output_uncompressed(case):
    run_sort_case(case, SortCase("u", "mixed.bam", ["-u"]))
    with open(case.out("out"), "rb") as f:
        data = f.read()
    if len(data) < len(gzip.decompress(data)):
        raise Failure("-u output is smaller than its content: it is compressed")


def test_overwrites_existing_output(case):
    """An older, longer file at the output path is replaced, not patched."""
    write_bytes(case.out("out"), b"old junk " * 200_000)
    run_sort_case(case, SortCase("o", "mixed.bam"))


def test_stdin_dash_overwrites_existing_output(case):
    """`-o out.bam -` reads stdin even when out.bam exists (a rerun): the
    two non-option words must not be taken for the legacy IN OUT.prefix."""
    write_bytes(case.out("out"), b"from an earlier run\n")
    run_sort_case(case, SortCase("o", "mixed.bam", stdin="-"))


def test_no_pg_keeps_header_exactly(case):
    """With --no-PG the header, @PG lines included, is the oracle's."""
    expected = case.session.expected("mixed.sam", SAM_OUT)
    actual = case.out("out.sam")
    case.rocksort_ok([*SAM_OUT, "--no-PG", "-T", case.temp_prefix,
                      "-o", actual, case.input("mixed.sam")])
    case.expect_same(actual, expected, keep_pg=True)


def test_cram_output_without_reference(case):
    """The issue makes this an error: a CRAM whose reference can't be found
    would otherwise be fetched over the network or silently embedded.
    (samtools 1.24 embeds it, embed_ref=2; see the next test.)"""
    output = case.out("out.cram")
    env = {k: v for k, v in case.session.env.items() if k not in ("REF_PATH", "REF_CACHE")}
    env["TMPDIR"] = case.tmp
    result = run([*case.session.rocksort_cmd, "-O", "cram", "-T", case.temp_prefix,
                  "-o", output, case.input("mixed.bam")], env=env, cwd=case.out_dir)
    expect_error(case, result, ["out.cram"], output)


def test_cram_output_embedded_reference(case):
    """Asking for samtools 1.24's behaviour explicitly gives its output."""
    expect_same_outcome(case, "mixed.bam", ["-O", "cram", "--output-fmt-option", "embed_ref=2"])


# --- --shuffle (rocksort only, so no oracle) -------------------------------

def shuffled(case, source, seed, extra=(), name="out.bam"):
    out = case.out(name)
    case.rocksort_ok(["--shuffle", str(seed), *extra, "-T", case.temp_prefix,
                      "-o", out, case.input(source)])
    case.expect_no_temp_left()
    return case.load(out)


def test_shuffle_same_seed_same_order(case):
    """The order depends on the seed and the input alone, not on spilling
    or threads."""
    one = shuffled(case, "bulk.bam", 7, name="one.bam")
    two = shuffled(case, "bulk.bam", 7, [*SPILL, "-@", "2"], name="two.bam")
    if one.records != two.records:
        raise Failure("--shuffle 7 gave two orders (the second run spilled)")


def test_shuffle_other_seed_other_order(case):
    one = shuffled(case, "mixed.bam", 1, name="one.bam")
    two = shuffled(case, "mixed.bam", 2, name="two.bam")
    if one.records == two.records:
        raise Failure("--shuffle 1 and --shuffle 2 gave the same order")
    if sorted(one.records) != sorted(two.records):
        raise Failure("--shuffle 1 and --shuffle 2 wrote different records")


def test_shuffle_keeps_every_record(case):
    """Every input record, byte for byte, in an order that is neither the
    input's nor a sorted one."""
    source = case.load(case.input("bulk.bam"))
    out = shuffled(case, "bulk.bam", 12345, SPILL)
    if sorted(out.records) != sorted(source.records):
        raise Failure(f"records differ from the input's ({len(out.records)} "
                      f"written, {len(source.records)} read)")
    if out.records == source.records:
        raise Failure("--shuffle kept the input order")
    for order in ([], ["-n"]):
        if out.records == case.load(case.session.expected("bulk.bam", order)).records:
            raise Failure(f"--shuffle wrote the sorted order {order}")


def test_shuffle_header(case):
    """@HD SO:unsorted without SS or GO; the rest of the header as it was."""
    out = shuffled(case, "hd_go_ss.sam", 3, SAM_OUT, name="out.sam")
    source = case.load(case.input("hd_go_ss.sam"))
    hd = [line for line in out.header if line.startswith("@HD")]
    if hd != ["@HD\tVN:1.4\tSO:unsorted"]:
        raise Failure("wrong @HD line", hd)
    rest = [line for line in alignments.without_pg(out.header) if not line.startswith("@HD")]
    if rest != [line for line in source.header if not line.startswith("@HD")]:
        raise Failure("header lines other than @HD changed")


# --- errors of the other orders ------------------------------------------

def test_error_template_coordinate_without_mc(case):
    """mixed.sam's pairs have no MC tags: 1.24 refuses them, so must rocksort."""
    expect_failure_like_oracle(case, case.input("mixed.sam"), case.out("out.bam"),
                               "mixed.sam", extra=["--template-coordinate"])


def test_error_template_coordinate_without_mc_spilled(case):
    """The same after several sorted runs were written: they must go."""
    expect_failure_like_oracle(case, case.input("bulk.bam"), case.out("out.bam"),
                               "bulk.bam", extra=["--template-coordinate", *SPILL])


def test_error_minimiser_reference_missing(case):
    missing = os.path.join(case.dir, "no_such_ref.fa")
    expect_failure_like_oracle(case, case.input("minimiser.sam"), case.out("out.bam"),
                               "no_such_ref.fa", extra=["-I", missing])


def test_error_bad_order_arguments(case):
    """-K and -w take whole numbers (1.24: "Invalid kmer", "Invalid window"),
    --shuffle an unsigned one: exit status 1, the option named, no output."""
    out = case.out("out.bam")
    for opt in (["-M", "-K", "12x"], ["-M", "-w", "many"], ["--shuffle", "-1"],
                ["--shuffle", "1.5"]):
        if opt[0] == "-M" and case.session.oracle(
                "sort", [*opt, "-o", out, case.input("mixed.sam")]).returncode == 0:
            raise Failure(f"test is wrong: the oracle accepted {opt}")
        result = case.rocksort([*opt, "-T", case.temp_prefix, "-o", out,
                                case.input("mixed.sam")])
        text = result.stderr.decode(errors="replace")
        if result.returncode != 1 or opt[-2] not in text or os.path.lexists(out):
            raise Failure(f"{' '.join(opt)}: exit status {result.returncode}, "
                          f"{'a' if os.path.lexists(out) else 'no'} output file",
                          tail(text))
    case.expect_no_temp_left()


def test_big_positions_to_bam(case):
    """BAM cannot hold positions past 2**31: the oracle refuses."""
    expect_same_outcome(case, "bigpos.sam", ["-O", "bam"])


def test_big_positions_to_cram(case):
    """Nor can CRAM 3 (htslib writes a file it cannot read back): the oracle
    refuses any CRAM output once a reference is longer than 2**31-1."""
    expect_same_outcome(case, "bigpos.sam", ["-O", "cram", "--output-fmt-option", "embed_ref=2"])


def test_big_positions_to_sam_with_level(case):
    """A difference on purpose: 1.24 refuses `-l 1 -o x.sam` here too (its
    check reads the level in its mode string as a format); rocksort writes
    the SAM, as 1.24 writes it without -l."""
    out = case.out("out.sam")
    if case.session.oracle("sort", ["-l", "1", "-o", out, case.input("bigpos.sam")]).returncode == 0:
        raise Failure("1.24 now accepts -l with SAM output here: README and DESIGN are stale")
    case.rocksort_ok(["-l", "1", "-T", case.temp_prefix, "-o", out, case.input("bigpos.sam")])
    case.expect_same(out, case.session.expected("bigpos.sam", SAM_OUT))
    case.expect_no_temp_left()


def test_empty_input_file(case):
    expect_same_outcome(case, "empty.sam", [])


def test_empty_stdin(case):
    expect_same_outcome(case, "empty.sam", [], stdin="-")


def test_legacy_prefix_from_stdin(case):
    """cat in.bam | rocksort -@ 2 -m 1M -s 10M - prefix  ->  prefix.bam"""
    expected = case.session.expected("bulk.bam", [])
    case.rocksort_ok(["-@", "2", "-m", "1M", "-s", "10M", "-", "prefix"],
                     stdin=case.input("bulk.bam"))
    case.expect_same(case.out("prefix.bam"), expected)
    case.expect_only_files(case.out_dir, ["prefix.bam"])
    case.expect_no_temp_left()


def test_legacy_prefix_name_order(case):
    expected = case.session.expected("mixed.bam", ["-n"])
    case.rocksort_ok(["-n", case.input("mixed.bam"), "sorted"])
    case.expect_same(case.out("sorted.bam"), expected)
    case.expect_only_files(case.out_dir, ["sorted.bam"])
    case.expect_no_temp_left()


def test_legacy_full_output_name(case):
    """-f: the second argument is the whole output name, not a prefix."""
    expected = case.session.expected("mixed.bam", [])
    case.rocksort_ok(["-f", case.input("mixed.bam"), "whole.bam"])
    case.expect_same(case.out("whole.bam"), expected)
    case.expect_only_files(case.out_dir, ["whole.bam"])
    case.expect_no_temp_left()


def test_legacy_o_to_stdout(case):
    """Legacy -o (no argument): the output goes to stdout, no prefix.bam."""
    expected = case.session.expected("mixed.bam", [], to_stdout=True)
    # A copy: read the modern way, this would overwrite the input.
    src = os.path.join(case.dir, "in.bam")
    shutil.copy(case.input("mixed.bam"), src)
    result = case.rocksort_ok(["-o", src, "prefix"])
    write_bytes(os.path.join(case.dir, "stdout.bam"), result.stdout)
    case.expect_same(os.path.join(case.dir, "stdout.bam"), expected)
    case.expect_only_files(case.out_dir, [])
    case.expect_no_temp_left()


def test_keep_temp_database(case):
    """-k keeps the temporary database under the -T prefix and says where."""
    expected = case.session.expected("mixed.bam", [])
    result = case.rocksort_ok(["-k", "-T", case.temp_prefix, "-o",
                               case.out("out"), case.input("mixed.bam")])
    case.expect_same(case.out("out"), expected)
    kept = [p for p in paths_in(result.stderr, case.out_dir)
            if p.startswith(os.path.realpath(case.tmp) + os.sep)]
    if not kept:
        raise Failure("stderr names no existing path under the -T prefix",
                      tail(result.stderr))
    for name in os.listdir(case.tmp):
        shutil.rmtree(os.path.join(case.tmp, name), ignore_errors=True)


def paths_in(text, cwd):
    """Existing files or directories mentioned in text, as real paths."""
    found = []
    for token in re.split(r"[\s'\"`,;()]+", text.decode(errors="replace")):
        token = token.rstrip(":.")
        if token and os.path.exists(os.path.join(cwd, token)):
            found.append(os.path.realpath(os.path.join(cwd, token)))
    return found


def test_verbose_stats(case):
    """-v prints statistics on stderr and changes nothing in the output."""
    expected = case.session.expected("bulk.bam", ["-n"])
    result = case.rocksort_ok(["-v", "-n", *SPILL, "-T", case.temp_prefix,
                               "-o", case.out("out"), case.input("bulk.bam")])
    case.expect_same(case.out("out"), expected)
    if not result.stderr.strip():
        raise Failure("-v printed nothing on stderr")
    case.expect_no_temp_left()


def test_help(case):
    result = case.rocksort(["--help"])
    text = (result.stdout + result.stderr).decode(errors="replace")
    if result.returncode != 0 or "rocksort" not in text:
        raise Failure(f"--help: exit status {result.returncode}, "
                      f"{'mentions' if 'rocksort' in text else 'no mention of'}"
                      " rocksort", tail(text))


# --- errors ----------------------------------------------------------------

def test_error_missing_input(case):
    src = os.path.join(case.dir, "no_such_file.bam")
    expect_failure_like_oracle(case, src, case.out("out.bam"), "no_such_file.bam")


def test_error_directory_as_input(case):
    src = os.path.join(case.dir, "a_directory.bam")
    os.mkdir(src)
    expect_failure_like_oracle(case, src, case.out("out.bam"), "a_directory.bam")


if os.geteuid() != 0:  # root reads anything: the test would mean nothing
    def test_error_unreadable_input(case):
        src = os.path.join(case.dir, "locked.bam")
        shutil.copy(case.input("mixed.bam"), src)
        os.chmod(src, 0)
        expect_failure_like_oracle(case, src, case.out("out.bam"), "locked.bam")


def test_error_plain_text_input(case):
    src = os.path.join(case.dir, "notes.txt")
    write_text(src, "hello world\nthis is not a SAM file\n")
    expect_failure_like_oracle(case, src, case.out("out.bam"), "notes.txt")


def test_error_bad_sam_record(case):
    src = os.path.join(case.dir, "bad_record.sam")
    good = samdata.sam_line("r1", 0, "c1", 5, 60, "4M", "*", 0, 0, "ACGT", "IIII")
    write_text(src, samdata.header(samdata.MIXED_REFS) + good + "garbage line\n")
    expect_failure_like_oracle(case, src, case.out("out.bam"), "bad_record.sam")


def test_error_truncated_bam(case):
    src = case.input("truncated.bam")
    expect_failure_like_oracle(case, src, case.out("out.bam"), "truncated.bam")


def test_error_truncated_bam_after_spilling(case):
    """The error comes after several sorted runs were written: they must go."""
    src = case.input("truncated.bam")
    expect_failure_like_oracle(case, src, case.out("out.bam"), "truncated.bam",
                               extra=SPILL)


def test_error_unwritable_output(case):
    blocker = os.path.join(case.dir, "plain_file")
    write_text(blocker, "a file, so plain_file/ cannot be a directory\n")
    output = os.path.join(blocker, "out.bam")
    expect_failure_like_oracle(case, case.input("mixed.bam"), output, "out.bam")


# --- the samtools wrapper --------------------------------------------------

def run_binary(case, args):
    return run([case.session.binary, *args], cwd=case.dir, env=case.session.env)


def test_wrapper_version(case):
    result = run_binary(case, ["--version"])
    text = result.stdout.decode(errors="replace")
    missing = [w for w in ("Using htslib 1.24", "Using RocksDB") if w not in text]
    # nf-core and MultiQC record the first line's last word as the version.
    first = text.splitlines()[0] if text else ""
    if result.returncode != 0 or missing or \
            not re.fullmatch(r"samtools 1\.24\+rocksort\.\d+\.\d+\.\d+", first):
        raise Failure(f"--version: exit status {result.returncode}, missing {missing}, "
                      f"first line {first!r}", tail(result.stdout + result.stderr))
    # nf-core modules: `echo $(samtools --version 2>&1) | sed 's/^.*samtools //; s/Using.*$//'`
    nf_core = subprocess.run(
        ["sh", "-c", 'echo $("$0" --version 2>&1) | sed \'s/^.*samtools //; s/Using.*$//\'',
         case.session.binary], capture_output=True, timeout=60)
    version = nf_core.stdout.decode(errors="replace").strip()
    if not re.fullmatch(r"1\.24\+rocksort\.\d+\.\d+\.\d+", version):
        raise Failure(f"the nf-core version parse gives {version!r}")


def test_wrapper_lists_rocksort(case):
    result = run_binary(case, [])
    if b"rocksort" not in result.stdout + result.stderr:
        raise Failure("`samtools` with no arguments does not list rocksort",
                      tail(result.stdout + result.stderr))


def test_wrapper_passes_view_on(case):
    src = case.input("mixed.bam")
    count_file = os.path.join(case.dir, "count")
    case.session.oracle_ok("view", ["-c", "-o", count_file, src])
    with open(count_file) as f:
        expected = f.read().strip()
    result = run_binary(case, ["view", "-c", src])
    got = result.stdout.decode(errors="replace").strip()
    if result.returncode != 0 or got != expected:
        raise Failure(f"view -c: exit status {result.returncode}, "
                      f"printed {got!r}, expected {expected!r}",
                      tail(result.stderr))

