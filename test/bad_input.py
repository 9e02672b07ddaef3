"""Damaged input given to `samtools rocksort`: plain gzip where BGZF is
expected, a BAM cut inside its header block or between header blocks, a
corrupt byte in a deflated or a stored block, records naming references the
header lacks or with impossible lengths, a CRAM whose reference is gone, a
SAM line that does not parse (named by its number at every -@); and the fuzz targets' seeds, corpus and every reproducer of a past finding
replayed.  Where the oracle (samtools 1.24) accepts an input, rocksort must
give its output; where it rejects one, rocksort must too, in one line naming
the input, with exit status 1, no output and no temporary data.
To run only these:  run_tests.py -k bad_input_ -k fuzz_replay
"""

import gzip
import os
import re
import shutil

from bgzf import (REC_BLOCK_SIZE, REC_L_SEQ, bam_layout, bam_with_refs, bgzf_blocks,
                  bgzf_compress, flip_byte_in_block, patched)
from harness import (REPO, Failure, each, expect_error, expect_failure_like_oracle,
                     expect_outcome_of, run, tail, write_bytes)
from robustness import oracle_must_fail, robust_input


def bad_input(case, name, data):
    """A damaged input the oracle rejects: rocksort must say so in one
    line naming it, exit 1, and leave no output and no temp data."""
    src = os.path.join(case.dir, name)
    write_bytes(src, data)
    expect_failure_like_oracle(case, src, case.out("out.bam"), name)
    case.expect_only_files(case.out_dir, [])


def mixed_bam_bytes(case):
    with open(case.input("mixed.bam"), "rb") as f:
        return f.read()


def like_oracle(case, src):
    """An input the oracle may accept: then the same output, else the
    same one-line error naming the input; nothing else left behind."""
    expect_outcome_of(case, src, [], name="out", mentions=[os.path.basename(src)])
    made = ["out.bam"] if os.path.exists(case.out("out.bam")) else []
    case.expect_only_files(case.out_dir, made)


def test_bad_input_plain_gzip_sam(case):
    """`gzip -c in.sam`: not BGZF, yet htslib (the oracle) reads it."""
    src = os.path.join(case.dir, "plain.sam.gz")
    with open(case.input("mixed.sam"), "rb") as f:
        write_bytes(src, gzip.compress(f.read()))
    like_oracle(case, src)


def test_bad_input_plain_gzip_bam(case):
    """A BAM stream gzipped as one member: the oracle reads it too."""
    src = os.path.join(case.dir, "plain_gzip.bam")
    write_bytes(src, gzip.compress(gzip.decompress(mixed_bam_bytes(case))))
    like_oracle(case, src)


def test_bad_input_bam_cut_inside_header_block(case):
    data = mixed_bam_bytes(case)
    first_size = bgzf_blocks(data)[0][1]  # the header's only block
    bad_input(case, "cut_in_header.bam", data[:first_size // 2])


def test_bad_input_bam_cut_between_header_blocks(case):
    """A header of several BGZF blocks, cut after its first block: the
    file ends cleanly at a block boundary, in the middle of the header."""
    with open(robust_input(case, "big_header.bam"), "rb") as f:
        data = f.read()
    blocks = bgzf_blocks(data)
    if len(blocks) < 4:
        raise Failure("test is wrong: the big header fits one BGZF block")
    bad_input(case, "cut_between_header_blocks.bam", data[:blocks[1][0]])


def test_bad_input_bam_corrupt_deflated_byte(case):
    data = mixed_bam_bytes(case)
    bad_input(case, "corrupt_byte.bam",
              flip_byte_in_block(data, len(bgzf_blocks(data)) // 2))


def test_bad_input_bam_corrupt_stored_byte(case):
    """Stored (level 0) blocks: the damage only shows as a CRC32 mismatch."""
    data = bgzf_compress(gzip.decompress(mixed_bam_bytes(case)), level=0)
    bad_input(case, "corrupt_crc.bam",
              flip_byte_in_block(data, len(bgzf_blocks(data)) // 2, mask=0x01))


def test_bad_input_bam_tid_beyond_header(case):
    """mixed.bam's records on c2 and c3 under a header that lists c1 only."""
    raw = gzip.decompress(mixed_bam_bytes(case))
    bad_input(case, "tid_beyond.bam", bgzf_compress(bam_with_refs(raw, 1)))


def bad_first_record(case, name, field, fmt, value):
    raw = gzip.decompress(mixed_bam_bytes(case))
    first = bam_layout(raw)[2]
    bad_input(case, name, bgzf_compress(patched(raw, first + field, fmt, value)))


def test_bad_input_bam_l_seq_huge(case):
    bad_first_record(case, "l_seq_huge.bam", REC_L_SEQ, "<i", 0x7fffffff)


def test_bad_input_bam_l_seq_negative(case):
    bad_first_record(case, "l_seq_negative.bam", REC_L_SEQ, "<i", -5)


def test_bad_input_bam_block_size_negative(case):
    bad_first_record(case, "block_size_negative.bam", REC_BLOCK_SIZE, "<i", -1)


def test_bad_input_cram_reference_missing(case):
    """A CRAM whose reference was moved away (its @SQ UR: names a path
    that no longer exists), no --reference, REF_PATH an empty dir."""
    ref_dir = os.path.join(case.dir, "ref")
    os.mkdir(ref_dir)
    ref = os.path.join(ref_dir, "ref.fa")
    shutil.copy(case.input("mixed.fa"), ref)
    shutil.copy(case.input("mixed.fa") + ".fai", ref + ".fai")
    src = os.path.join(case.dir, "no_ref.cram")
    case.session.oracle_ok("view", ["-C", "--no-PG", "--reference", ref,
                                    "-o", src, case.input("mixed.sam")])
    shutil.rmtree(ref_dir)
    empty = os.path.join(case.dir, "empty_ref_path")
    os.mkdir(empty)
    env = {k: v for k, v in case.session.env.items() if k != "REF_CACHE"}
    env["REF_PATH"] = empty
    oracle_must_fail(case, src, env=env)
    out = case.out("out.bam")
    result = run([*case.session.rocksort_cmd, "-T", case.temp_prefix, "-o", out,
                  src], cwd=case.out_dir, env=dict(env, TMPDIR=case.tmp))
    line = expect_error(case, result, ["no_ref.cram"], out)
    if "reference" not in line:
        raise Failure("the error does not say the reference is missing", [line])
    case.expect_only_files(case.out_dir, [])


# Fuzzing: seeds, the corpus kept from fuzz runs, and every reproducer of a
# past finding go through the fuzz targets again (fuzz/replay.c, any compiler).

def replay(case, target):
    binary = os.path.join(REPO, "fuzz", f"replay_{target}")
    dirs = [os.path.join(REPO, "fuzz", d, target) for d in ("corpus", "regressions")]
    files = sum(len(os.listdir(d)) for d in dirs if os.path.isdir(d))
    if files == 0:
        raise Failure(f"no fuzz inputs for {target}: fuzz/corpus/{target} is empty")
    result = run([binary, *dirs], env=dict(case.session.env, TMPDIR=case.tmp))
    if result.returncode != 0:
        raise Failure(f"replay_{target} failed with status {result.returncode}",
                      tail(result.stderr))
    replayed = re.search(rb"replayed (\d+) inputs", result.stdout)
    if not replayed or int(replayed[1]) != files:
        raise Failure(f"replayed {replayed and int(replayed[1])} of {files} inputs")
    case.expect_no_temp_left()


def test_fuzz_replay_record(case):
    replay(case, "record")


def test_fuzz_replay_input(case):
    replay(case, "input")


# --- a SAM line that does not parse, named -------------------------------------
#
# samtools 1.24 names the line ("Parse error at line N", header lines counted)
# at -@ 0 only; htslib's threaded parsing names none, and the records before
# it came out a chunk short, a different count each run.  rocksort's one line
# names the line the oracle names and the records before it, at every -@, from
# a file (twice: the count varied) and from a pipe.

BAD_RECORD = 30000


def sam_with_bad_record(case):
    """bulk.sam with record BAD_RECORD's QUAL a base short."""
    with open(case.input("bulk.sam"), "rb") as f:
        lines = f.read().split(b"\n")
    at = sum(1 for line in lines if line.startswith(b"@")) + BAD_RECORD - 1
    fields = lines[at].split(b"\t")
    fields[10] = fields[10][:-1]
    lines[at] = b"\t".join(fields)
    src = os.path.join(case.dir, "bad_record.sam")
    write_bytes(src, b"\n".join(lines))
    return src


def oracle_bad_line(case, src):
    oracle = case.session.oracle("sort", ["-o", case.out("oracle.bam"), src])
    found = re.search(r"Parse error at line (\d+)", oracle.stderr.decode(errors="replace"))
    if oracle.returncode == 0 or not found:
        raise Failure("test is wrong: samtools 1.24 named no bad line", tail(oracle.stderr))
    return int(found[1])


@each((f"bad_input_sam_line_named_threads{threads}", threads) for threads in ("0", "4", "16"))
def test_bad_input_sam_line_named(case, threads):
    src = sam_with_bad_record(case)
    wanted = [f"line {oracle_bad_line(case, src)} ", f"after {BAD_RECORD - 1} records"]
    out = case.out("out.bam")
    args = ["-@", threads, "-T", case.temp_prefix, "-o", out]
    for how in ("file", "file again", "pipe"):
        result = case.rocksort(args + (["-"] if how == "pipe" else [src]),
                               stdin=src if how == "pipe" else None)
        line = expect_error(case, result, ["'-'" if how == "pipe" else "bad_record.sam"], out)
        if not all(w in line for w in wanted):
            raise Failure(f"{how}: the line does not name {wanted}", [line])


def test_bad_input_sam_line_named_on_resume(case):
    """--resume: the rerun moves the file past its stored runs before it
    meets the bad line, and htslib counts lines from there; the line named
    is still the file's."""
    src = sam_with_bad_record(case)
    wanted = [f"line {oracle_bad_line(case, src)} ", f"after {BAD_RECORD - 1} records"]
    state, out = os.path.join(case.dir, "state"), case.out("out.bam")
    args = ["-m", "1M", "--resume", state, "-T", case.temp_prefix, "-o", out, src]
    for attempt in ("first", "resumed"):
        result = case.rocksort(args)
        lines = [l for l in result.stderr.decode(errors="replace").splitlines() if l.strip()]
        named = [l for l in lines if "bad_record.sam" in l]
        if result.returncode != 1 or len(named) != 1 or not all(w in named[0] for w in wanted):
            raise Failure(f"{attempt} run: exit {result.returncode}; expected 1 and one line "
                          f"naming {wanted}", lines[:5])
        if attempt == "resumed" and not any("resuming from" in l for l in lines):
            raise Failure("test is wrong: the rerun did not resume", lines[:5])
