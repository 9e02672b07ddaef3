#!/usr/bin/env python3
"""End-to-end tests of `samtools rocksort`.

Every test sorts an input made here by test/samdata.py with both rocksort and
the oracle (samtools 1.24 as bundled by pysam) and requires the same records,
byte for byte and in the same order, and the same header apart from @PG lines.

Usage, from the repo root:
    .venv/bin/python test/run_tests.py [--binary ./samtools] [-k PATTERN]...

ROCKSORT_CMD, if set, replaces "BINARY rocksort" as the command under test
(split like a shell would), e.g. to try the harness against a stand-in.
"""

import argparse
import fnmatch
import gzip
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import alignments
import samdata
# The test modules' register(test, h) use these as h.NAME, h being this module.
from harness import (ORACLE_SCRIPT, PYTHON, REPO, SAM_OUT, SPILL, TIMEOUT,  # noqa: F401
                     VENV_PYTHON, Case, Failure, Ref, Session, SortCase, both_orders,
                     expect_error, expect_failure_like_oracle, expect_outcome_of,
                     expect_same_outcome, run, run_sort_case, tail, write_bytes, write_text)

UNIT_TESTS = ["test_keys", "test_run_merge", "test_store_stream", "test_batch_sort",
              "test_cleanup", "test_temp_space", "test_readout_model", "test_group_codec"]   # C programs in test/


# --- sorting compared with the oracle -----------------------------------------

MIXED_FA = Ref("mixed.fa")
CRAM_REF = ["--reference", MIXED_FA]

SORT_CASES = [
    # Ordering rules, SAM in and SAM out so that a failure reads easily.
    *both_orders("mixed", "mixed.sam", SAM_OUT),
    *both_orders("unmapped", "unmapped.sam", SAM_OUT),
    *both_orders("placed_unmapped_pos_minus1", "placed_unmapped.bam", SAM_OUT),
    *both_orders("ties_stable", "ties.sam", SAM_OUT),
    *both_orders("tricky_names", "names.sam", SAM_OUT),
    *both_orders("tricky_names_spilled", "names_bulk.bam", extra=SPILL),
    # Names of three shapes, spilled: the batches' keys share a long prefix
    # (Illumina), a short one then a number (SRA), or hardly any (UUIDs).
    *[SortCase(f"name_shape_{shape}_spilled{suffix}", f"names_{shape}.bam", [order], SPILL)
      for shape in ("illumina", "sra", "uuid")
      for order, suffix in (("-n", "_name"), ("-N", "_ascii_name"))],
    *both_orders("no_sq_all_unmapped", "nosq.sam", SAM_OUT),
    *both_orders("one_sq", "onesq.sam", SAM_OUT),
    *both_orders("many_sq_5000", "manysq.bam"),
    *both_orders("pos_past_2g", "bigpos.sam", SAM_OUT),
    *both_orders("pos_past_2g_spilled", "bigpos_bulk.sam", SAM_OUT, SPILL),
    *both_orders("long_reads_bam", "longreads.bam"),
    *both_orders("long_reads_spilled", "longreads.bam", extra=SPILL),
    SortCase("long_reads_sam_coord", "longreads.sam", SAM_OUT),
    *both_orders("header_only", "header_only.sam", SAM_OUT),
    *both_orders("header_only_bam", "header_only.bam"),
    *both_orders("no_hd_line", "no_hd.sam", SAM_OUT),
    *both_orders("hd_go_ss_tags", "hd_go_ss.sam", SAM_OUT),
    # Input formats.
    *both_orders("input_bam", "mixed.bam"),
    *both_orders("input_cram", "mixed.cram", CRAM_REF),
    SortCase("input_cram_fmt_option", "mixed.cram",
             ["--input-fmt-option", Ref("mixed.fa", "reference={}")]),
    SortCase("stdin_dash", "mixed.bam", stdin="-"),
    SortCase("stdin_no_argument_name", "mixed.bam", ["-n"], stdin=""),
    SortCase("stdin_cram", "mixed.cram", CRAM_REF, stdin="-"),
    SortCase("stdin_sam_to_stdout_sam", "mixed.sam", SAM_OUT, stdin="-",
             to_stdout=True),
    # Output formats.
    *both_orders("output_sam", "mixed.bam", SAM_OUT),
    *both_orders("output_bam", "mixed.bam", ["-O", "bam"]),
    *both_orders("output_cram", "mixed.bam", ["-O", "cram", *CRAM_REF]),
    SortCase("output_level1", "mixed.bam", ["-l", "1"]),
    SortCase("output_bam_to_stdout", "mixed.bam", to_stdout=True),
    SortCase("output_sam_from_extension", "mixed.bam", out_name="out.sam"),
    SortCase("output_cram_from_extension", "mixed.bam", CRAM_REF,
             out_name="out.cram"),
    SortCase("output_uncompressed_name", "mixed.bam", ["-n", "-u"]),
    SortCase("output_fmt_option_level", "mixed.bam",
             ["--output-fmt-option", "level=2"]),
    # Memory and threads on ~40k records.
    *both_orders("bulk_in_memory", "bulk.bam"),
    *both_orders("bulk_spilled", "bulk.bam", extra=SPILL),
    *both_orders("bulk_spilled_presized", "bulk.bam", extra=[*SPILL, "-s", "50M"]),
    # Batches whose keys share a prefix of a different length each time.
    *both_orders("prefix_shifts_spilled", "prefix_shifts.bam", extra=SPILL),
    SortCase("bulk_memory_in_kilobytes", "bulk.bam", extra=["-m", "700K"]),
    SortCase("bulk_memory_in_gigabytes_name", "bulk.bam", ["-n"], ["-m", "1G"]),
    SortCase("bulk_spilled_default_tmpdir", "bulk.bam", extra=SPILL,
             temp_prefix=False),
    SortCase("bulk_threads0_coord", "bulk.bam", extra=["-@", "0", *SPILL]),
    SortCase("bulk_threads1_name", "bulk.bam", ["-n"], ["-@", "1", *SPILL]),
    SortCase("bulk_threads2_coord", "bulk.bam", extra=["-@", "2", *SPILL,
                                                      "-s", "50M"]),
    SortCase("bulk_threads2_in_memory_name", "bulk.bam", ["-n"], ["-@", "2"]),
    SortCase("bulk_threads4_name", "bulk.bam", ["-n"], ["-@", "4", *SPILL]),
    SortCase("bulk_spilled_stdin_sam_out_name", "bulk.bam", ["-n", *SAM_OUT],
             ["-@", "2", *SPILL, "--verbosity", "1"], stdin="-"),
    # The other orders of samtools sort: -N, -t TAG (alone, with -n, with -N),
    # --template-coordinate and -M (-K/-R/-H, -I FASTA with -w), each checked
    # against 1.24's output, header included.  Also how 1.24 resolves several
    # order options on one command line (the last wins; -t wins over -M).
    SortCase("ascii_name_tricky", "names.sam", ["-N", *SAM_OUT]),
    SortCase("ascii_name_bulk", "bulk.bam", ["-N"]),
    SortCase("ascii_name_bulk_spilled", "bulk.bam", ["-N"], SPILL),
    SortCase("ascii_name_tricky_spilled", "names_bulk.bam", ["-N"], SPILL),
    SortCase("ascii_name_hd_replaced", "hd_go_ss.sam", ["-N", *SAM_OUT]),
    SortCase("ascii_name_wins_over_later_n", "names.sam", ["-N", "-n", *SAM_OUT]),
    SortCase("tag_int", "tagged.sam", ["-t", "XI", *SAM_OUT]),
    SortCase("tag_int_name", "tagged.sam", ["-t", "XI", "-n", *SAM_OUT]),
    SortCase("tag_int_ascii_name", "tagged.sam", ["-N", "-t", "XI", *SAM_OUT]),
    SortCase("tag_string", "tagged.sam", ["-t", "CB", *SAM_OUT]),
    SortCase("tag_string_name", "tagged.sam", ["-t", "CB", "-n", *SAM_OUT]),
    SortCase("tag_string_ascii_name", "tagged.sam", ["-t", "CB", "-N", *SAM_OUT]),
    SortCase("tag_float", "tagged.sam", ["-t", "XF", *SAM_OUT]),
    SortCase("tag_float_name", "tagged.sam", ["-t", "XF", "-n", *SAM_OUT]),
    SortCase("tag_mixed_types_missing", "tagged.sam", ["-t", "XM", *SAM_OUT]),
    SortCase("tag_mixed_types_name", "tagged.sam", ["-n", "-t", "XM", *SAM_OUT]),
    SortCase("tag_mixed_types_ascii_name", "tagged.sam", ["-t", "XM", "-N", *SAM_OUT]),
    SortCase("tag_mixed_types_bam", "tagged.bam", ["-t", "XM"]),
    SortCase("tag_absent_everywhere", "tagged.sam", ["-t", "ZZ", *SAM_OUT]),
    SortCase("tag_one_letter", "tagged.sam", ["-t", "X", *SAM_OUT]),
    SortCase("tag_read_group", "mixed.sam", ["-t", "RG", *SAM_OUT]),
    SortCase("tag_hd_replaced", "hd_go_ss.sam", ["-t", "XN", *SAM_OUT]),
    SortCase("tag_wins_over_minimiser", "tagged.sam", ["-t", "XI", "-M", *SAM_OUT]),
    SortCase("tag_wins_over_template", "tagged.sam",
             ["--template-coordinate", "-t", "CB", *SAM_OUT]),
    SortCase("tag_int_spilled", "tagged_bulk.bam", ["-t", "XI"], SPILL),
    SortCase("tag_mixed_name_spilled", "tagged_bulk.bam", ["-t", "XM", "-n"], SPILL),
    SortCase("tag_string_ascii_name_spilled", "tagged_bulk.bam", ["-t", "CB", "-N"],
             [*SPILL, "-@", "2"]),
    SortCase("tag_float_spilled", "tagged_bulk.bam", ["-t", "XF"], SPILL),
    SortCase("template_coordinate", "templates.sam", ["--template-coordinate", *SAM_OUT]),
    SortCase("template_coordinate_bam", "templates.bam", ["--template-coordinate"]),
    SortCase("template_coordinate_spilled", "templates_bulk.bam",
             ["--template-coordinate"], SPILL),
    SortCase("template_coordinate_spilled_threads", "templates_bulk.bam",
             ["--template-coordinate"], [*SPILL, "-@", "2"]),
    SortCase("template_coordinate_single_end_hd", "hd_go_ss.sam",
             ["--template-coordinate", *SAM_OUT]),
    SortCase("template_coordinate_no_hd", "no_hd.sam", ["--template-coordinate", *SAM_OUT]),
    SortCase("template_coordinate_then_n", "templates.sam",
             ["--template-coordinate", "-n", *SAM_OUT]),
    SortCase("minimiser", "minimiser.sam", ["-M", *SAM_OUT]),
    SortCase("minimiser_kmer_squash", "minimiser.sam", ["-M", "-K", "13", "-H", *SAM_OUT]),
    SortCase("minimiser_forward_only", "minimiser.sam", ["-M", "-R", "-K", "25", *SAM_OUT]),
    SortCase("minimiser_kmer_clamped_low", "minimiser.sam", ["-M", "-K", "0", *SAM_OUT]),
    SortCase("minimiser_kmer_clamped_high", "minimiser.sam", ["-M", "-K", "99", *SAM_OUT]),
    SortCase("minimiser_unplaced_only", "minimiser_unplaced.sam", ["-M", *SAM_OUT]),
    SortCase("minimiser_header_only", "header_only.sam", ["-M", *SAM_OUT]),
    SortCase("minimiser_index", "minimiser.sam", ["-I", MIXED_FA, *SAM_OUT]),
    SortCase("minimiser_index_window", "minimiser.sam",
             ["-M", "-I", MIXED_FA, "-w", "40", "-K", "15", *SAM_OUT]),
    SortCase("minimiser_index_squash_forward", "minimiser.sam",
             ["-I", MIXED_FA, "-H", "-R", *SAM_OUT]),
    SortCase("minimiser_bam_threads", "minimiser.bam", ["-M"], ["-@", "2"]),
    SortCase("minimiser_spilled", "minimiser_bulk.bam", ["-M"], SPILL),
    SortCase("minimiser_index_spilled", "minimiser_bulk.bam", ["-I", MIXED_FA, "-K", "17"],
             SPILL),
    SortCase("minimiser_then_n", "minimiser.sam", ["-M", "-n", *SAM_OUT]),
    SortCase("n_then_minimiser", "minimiser.sam", ["-n", "-M", *SAM_OUT]),
    SortCase("index_then_n", "minimiser.sam", ["-I", MIXED_FA, "-n", *SAM_OUT]),
]


# --- other behaviour -------------------------------------------------------

SPECIAL_TESTS = []


def test(func):
    """Registers a test function; its name without "test_" names the test."""
    SPECIAL_TESTS.append((func.__name__[len("test_"):], func))
    return func


@test
def test_output_uncompressed(case):
    run_sort_case(case, SortCase("u", "mixed.bam", ["-u"]))
    with open(case.out("out"), "rb") as f:
        data = f.read()
    if len(data) < len(gzip.decompress(data)):
        raise Failure("-u output is smaller than its content: it is compressed")


@test
def test_overwrites_existing_output(case):
    """An older, longer file at the output path is replaced, not patched."""
    write_bytes(case.out("out"), b"old junk " * 200_000)
    run_sort_case(case, SortCase("o", "mixed.bam"))


@test
def test_stdin_dash_overwrites_existing_output(case):
    """`-o out.bam -` reads stdin even when out.bam exists (a rerun): the
    two non-option words must not be taken for the legacy IN OUT.prefix."""
    write_bytes(case.out("out"), b"from an earlier run\n")
    run_sort_case(case, SortCase("o", "mixed.bam", stdin="-"))


@test
def test_no_pg_keeps_header_exactly(case):
    """With --no-PG the header, @PG lines included, is the oracle's."""
    expected = case.session.expected("mixed.sam", SAM_OUT)
    actual = case.out("out.sam")
    case.rocksort_ok([*SAM_OUT, "--no-PG", "-T", case.temp_prefix,
                      "-o", actual, case.input("mixed.sam")])
    case.expect_same(actual, expected, keep_pg=True)


@test
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


@test
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


@test
def test_shuffle_same_seed_same_order(case):
    """The order depends on the seed and the input alone, not on spilling
    or threads."""
    one = shuffled(case, "bulk.bam", 7, name="one.bam")
    two = shuffled(case, "bulk.bam", 7, [*SPILL, "-@", "2"], name="two.bam")
    if one.records != two.records:
        raise Failure("--shuffle 7 gave two orders (the second run spilled)")


@test
def test_shuffle_other_seed_other_order(case):
    one = shuffled(case, "mixed.bam", 1, name="one.bam")
    two = shuffled(case, "mixed.bam", 2, name="two.bam")
    if one.records == two.records:
        raise Failure("--shuffle 1 and --shuffle 2 gave the same order")
    if sorted(one.records) != sorted(two.records):
        raise Failure("--shuffle 1 and --shuffle 2 wrote different records")


@test
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


@test
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

@test
def test_error_template_coordinate_without_mc(case):
    """mixed.sam's pairs have no MC tags: 1.24 refuses them, so must rocksort."""
    expect_failure_like_oracle(case, case.input("mixed.sam"), case.out("out.bam"),
                               "mixed.sam", extra=["--template-coordinate"])


@test
def test_error_template_coordinate_without_mc_spilled(case):
    """The same after several sorted runs were written: they must go."""
    expect_failure_like_oracle(case, case.input("bulk.bam"), case.out("out.bam"),
                               "bulk.bam", extra=["--template-coordinate", *SPILL])


@test
def test_error_minimiser_reference_missing(case):
    missing = os.path.join(case.dir, "no_such_ref.fa")
    expect_failure_like_oracle(case, case.input("minimiser.sam"), case.out("out.bam"),
                               "no_such_ref.fa", extra=["-I", missing])


@test
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


@test
def test_big_positions_to_bam(case):
    """BAM cannot hold positions past 2**31: the oracle refuses."""
    expect_same_outcome(case, "bigpos.sam", ["-O", "bam"])


@test
def test_empty_input_file(case):
    expect_same_outcome(case, "empty.sam", [])


@test
def test_empty_stdin(case):
    expect_same_outcome(case, "empty.sam", [], stdin="-")


@test
def test_legacy_prefix_from_stdin(case):
    """cat in.bam | rocksort -@ 2 -m 1M -s 10M - prefix  ->  prefix.bam"""
    expected = case.session.expected("bulk.bam", [])
    case.rocksort_ok(["-@", "2", "-m", "1M", "-s", "10M", "-", "prefix"],
                     stdin=case.input("bulk.bam"))
    case.expect_same(case.out("prefix.bam"), expected)
    case.expect_only_files(case.out_dir, ["prefix.bam"])
    case.expect_no_temp_left()


@test
def test_legacy_prefix_name_order(case):
    expected = case.session.expected("mixed.bam", ["-n"])
    case.rocksort_ok(["-n", case.input("mixed.bam"), "sorted"])
    case.expect_same(case.out("sorted.bam"), expected)
    case.expect_only_files(case.out_dir, ["sorted.bam"])
    case.expect_no_temp_left()


@test
def test_legacy_full_output_name(case):
    """-f: the second argument is the whole output name, not a prefix."""
    expected = case.session.expected("mixed.bam", [])
    case.rocksort_ok(["-f", case.input("mixed.bam"), "whole.bam"])
    case.expect_same(case.out("whole.bam"), expected)
    case.expect_only_files(case.out_dir, ["whole.bam"])
    case.expect_no_temp_left()


@test
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


@test
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


@test
def test_verbose_stats(case):
    """-v prints statistics on stderr and changes nothing in the output."""
    expected = case.session.expected("bulk.bam", ["-n"])
    result = case.rocksort_ok(["-v", "-n", *SPILL, "-T", case.temp_prefix,
                               "-o", case.out("out"), case.input("bulk.bam")])
    case.expect_same(case.out("out"), expected)
    if not result.stderr.strip():
        raise Failure("-v printed nothing on stderr")
    case.expect_no_temp_left()


@test
def test_help(case):
    result = case.rocksort(["--help"])
    text = (result.stdout + result.stderr).decode(errors="replace")
    if result.returncode != 0 or "rocksort" not in text:
        raise Failure(f"--help: exit status {result.returncode}, "
                      f"{'mentions' if 'rocksort' in text else 'no mention of'}"
                      " rocksort", tail(text))


# --- errors ----------------------------------------------------------------

@test
def test_error_missing_input(case):
    src = os.path.join(case.dir, "no_such_file.bam")
    expect_failure_like_oracle(case, src, case.out("out.bam"), "no_such_file.bam")


@test
def test_error_directory_as_input(case):
    src = os.path.join(case.dir, "a_directory.bam")
    os.mkdir(src)
    expect_failure_like_oracle(case, src, case.out("out.bam"), "a_directory.bam")


if os.geteuid() != 0:  # root reads anything: the test would mean nothing
    @test
    def test_error_unreadable_input(case):
        src = os.path.join(case.dir, "locked.bam")
        shutil.copy(case.input("mixed.bam"), src)
        os.chmod(src, 0)
        expect_failure_like_oracle(case, src, case.out("out.bam"), "locked.bam")


@test
def test_error_plain_text_input(case):
    src = os.path.join(case.dir, "notes.txt")
    write_text(src, "hello world\nthis is not a SAM file\n")
    expect_failure_like_oracle(case, src, case.out("out.bam"), "notes.txt")


@test
def test_error_bad_sam_record(case):
    src = os.path.join(case.dir, "bad_record.sam")
    good = samdata.sam_line("r1", 0, "c1", 5, 60, "4M", "*", 0, 0, "ACGT", "IIII")
    write_text(src, samdata.header(samdata.MIXED_REFS) + good + "garbage line\n")
    expect_failure_like_oracle(case, src, case.out("out.bam"), "bad_record.sam")


@test
def test_error_truncated_bam(case):
    src = case.input("truncated.bam")
    expect_failure_like_oracle(case, src, case.out("out.bam"), "truncated.bam")


@test
def test_error_truncated_bam_after_spilling(case):
    """The error comes after several sorted runs were written: they must go."""
    src = case.input("truncated.bam")
    expect_failure_like_oracle(case, src, case.out("out.bam"), "truncated.bam",
                               extra=SPILL)


@test
def test_error_unwritable_output(case):
    blocker = os.path.join(case.dir, "plain_file")
    write_text(blocker, "a file, so plain_file/ cannot be a directory\n")
    output = os.path.join(blocker, "out.bam")
    expect_failure_like_oracle(case, case.input("mixed.bam"), output, "out.bam")


# --- the samtools wrapper --------------------------------------------------

def run_binary(case, args):
    return run([case.session.binary, *args], cwd=case.dir, env=case.session.env)


@test
def test_wrapper_version(case):
    result = run_binary(case, ["--version"])
    text = result.stdout.decode(errors="replace")
    missing = [w for w in ("Using htslib 1.24", "Using RocksDB") if w not in text]
    # nf-core and MultiQC record the first line's last word as the version.
    first = text.splitlines()[0] if text else ""
    if result.returncode != 0 or missing or not re.fullmatch(r"samtools rocksort-\d+\.\d+\.\d+", first):
        raise Failure(f"--version: exit status {result.returncode}, missing {missing}, "
                      f"first line {first!r}", tail(result.stdout + result.stderr))


@test
def test_wrapper_lists_rocksort(case):
    result = run_binary(case, [])
    if b"rocksort" not in result.stdout + result.stderr:
        raise Failure("`samtools` with no arguments does not list rocksort",
                      tail(result.stdout + result.stderr))


@test
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


# Signals, full disks, damaged input and the like: test/robustness.py.
import robustness  # noqa: E402
robustness.register(test, sys.modules[__name__])

# Temp space: the runs' format and refusals before reading: test/tempspace.py.
import tempspace  # noqa: E402
tempspace.register(test, sys.modules[__name__])

# Odd SAM text parsed as samtools 1.24 parses it: test/parsing.py.
import parsing  # noqa: E402
parsing.register(test, sys.modules[__name__])
# Damage made the way it happens outside a test suite: test/faults.py.
import faults  # noqa: E402
faults.register(test, sys.modules[__name__])
import workflows  # noqa: E402  (Snakemake and CWL examples: test/workflows.py)
workflows.register(test, sys.modules[__name__])
# --write-index, --max-memory, progress, sizing: test/features.py.
import features  # noqa: E402
features.register(test, sys.modules[__name__])
# -o on devices, FIFOs, links and unwritable paths; make install: test/destinations.py.
import destinations  # noqa: E402
destinations.register(test, sys.modules[__name__])
# --merge-threads: the readout split into key ranges (issue #27): test/readout_ranges.py.
import readout_ranges  # noqa: E402
readout_ranges.register(test, sys.modules[__name__])


# --- the harness -----------------------------------------------------------

def all_tests():
    tests = [(sc.name, lambda case, sc=sc: run_sort_case(case, sc))
             for sc in SORT_CASES]
    tests += SPECIAL_TESTS
    names = [name for name, _ in tests]
    duplicates = {n for n in names if names.count(n) > 1}
    assert not duplicates, f"duplicate test names: {duplicates}"
    return tests


def selected(name, patterns):
    if not patterns:
        return True
    return any(fnmatch.fnmatch(name, p) if any(c in p for c in "*?[")
               else p in name for p in patterns)


def run_test(session, name, func):
    """-> (passed, lines to print)"""
    try:
        func(Case(session, name))
        return True, [f"PASS {name}"]
    except Failure as failure:
        return False, [f"FAIL {name}: {failure.reason}"] + \
            [f"    {line}" for line in failure.details[:8]]
    except subprocess.TimeoutExpired as error:
        return False, [f"FAIL {name}: timed out after {error.timeout} s: "
                       f"{shlex.join(map(str, error.cmd))[:200]}"]
    except Exception as error:  # a bug in a test must not stop the others
        return False, [f"FAIL {name}: {type(error).__name__}: {error}"]


def run_unit_tests(name):
    """test/NAME prints `N passed, M failed` last. -> (passed, failed)"""
    path = os.path.join(REPO, "test", name)
    if not os.path.exists(path):
        print(f"FAIL {name}: test/{name} is not built", flush=True)
        return 0, 1
    try:
        result = run([path], cwd=REPO)
    except subprocess.TimeoutExpired:
        print(f"FAIL {name}: timed out after {TIMEOUT} s", flush=True)
        return 0, 1
    lines = result.stdout.decode(errors="replace").rstrip().splitlines()
    counts = re.fullmatch(r"(\d+) passed, (\d+) failed", lines[-1].strip()) \
        if lines else None
    for line in lines[:-1] if counts else lines:
        print(line, flush=True)
    if not counts:
        print(f"FAIL {name}: no `N passed, M failed` line (exit status "
              f"{result.returncode})", flush=True)
        for line in tail(result.stderr):
            print(f"    {line}")
        return 0, 1
    passed, failed = int(counts[1]), int(counts[2])
    if result.returncode != 0 and failed == 0:
        print(f"FAIL {name}: exit status {result.returncode}", flush=True)
        failed = 1
    return passed, failed


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.join(REPO, "samtools"),
                        help="the samtools wrapper to test [./samtools]")
    parser.add_argument("-k", dest="patterns", action="append", default=[],
                        metavar="PATTERN",
                        help="run only tests whose name contains PATTERN "
                             "(or matches it, if it has * ? [); repeatable")
    parser.add_argument("-j", "--jobs", type=int, default=2,
                        help="tests run at once [2]")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (test/out/run-*)")
    return parser.parse_args()


def main():
    args = parse_args()
    binary = os.path.abspath(args.binary)
    rocksort_cmd = shlex.split(os.environ.get("ROCKSORT_CMD", "")) or \
        [binary, "rocksort"]
    out_root = os.path.join(REPO, "test", "out")
    os.makedirs(out_root, exist_ok=True)
    session = Session(tempfile.mkdtemp(prefix="run-", dir=out_root), binary,
                      rocksort_cmd)
    passed = failed = 0
    for name in UNIT_TESTS:
        if selected(name, args.patterns):
            ok, bad = run_unit_tests(name)
            passed, failed = passed + ok, failed + bad
    tests = [(n, f) for n, f in all_tests() if selected(n, args.patterns)]
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for ok, lines in pool.map(lambda t: run_test(session, *t), tests):
                print("\n".join(lines), flush=True)
                passed, failed = passed + ok, failed + (not ok)
    finally:
        if args.keep:
            print(f"work directory kept: {session.root}", file=sys.stderr)
        else:
            shutil.rmtree(session.root, ignore_errors=True)
            if not os.listdir(out_root):
                os.rmdir(out_root)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
