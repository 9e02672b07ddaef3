"""BAM records parsed on the -@ pool (from -@ 8, load/record_parse.h),
damaged the ways the world damages them, in the middle of the input: a file
cut at any byte, a stream cut inside a record, a corrupt byte in a block, and
records with impossible sizes or fields or naming references the header
lacks.  Each sort must end exactly as its -@ 0 twin ends, which parses every
record on the loader: the same exit status and the same lines, so that the
record count in the message names the records before the damage; an output
only where the twin writes one, with the same records.  One damage cannot
end alike: a BGZF block that cannot be read whole (a stream cut inside it, a
damaged header), where htslib's threaded reader drops blocks it decoded
ahead, and the count says "at least".
To run only these:  run_tests.py -k pool_parse_
"""

import os
import random
import re
import resource
import struct
import subprocess

from bgzf import (REC_BLOCK_SIZE, REC_L_SEQ, bam_layout, bam_with_refs, bgzf_blocks,
                  bgzf_compress, bgzf_inflate, flip_byte_in_block, patched)
from harness import Failure, each, stderr_lines, write_bytes

SOURCE = "bulk_large.bam"
THREADS = ("0", "16")
CUTS = 12            # offsets cut per kind of cut
REC_REF_ID, REC_NEXT_REF_ID = 4, 24


def raw_bam(case):
    with open(case.input(SOURCE), "rb") as f:
        return bgzf_inflate(f.read())


def record_starts(raw):
    """Offsets of every record of an uncompressed BAM."""
    at, starts = bam_layout(raw)[2], []
    while at + 4 <= len(raw):
        starts.append(at)
        at += 4 + struct.unpack_from("<i", raw, at)[0]
    return starts


def sort_limited(case, args, kib):
    """rocksort args under `ulimit -v kib`. -> the finished process"""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (kib << 10, kib << 10))
    return subprocess.run([*case.session.rocksort_cmd, *args], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=case.out_dir,
                          timeout=300, preexec_fn=limit, env=dict(case.session.env, TMPDIR=case.tmp))


def twins(case, src, name, extra=(), kib=None):
    """Sorts src at -@ 0 and at -@ 16 (small batches: many spans, several
    runs), under `ulimit -v kib` if given, and fails unless both end alike.
    -> the -@ 0 lines"""
    ends = []
    for t in THREADS:
        out = case.out(f"{name}_t{t}.bam")
        args = ["-@", t, "-m", "2M", *extra, "-T", case.temp_prefix, "-o", out, src]
        result = case.rocksort(args) if kib is None else sort_limited(case, args, kib)
        ends.append((result.returncode, stderr_lines(result.stderr), out))
    (rc0, lines0, out0), (rc1, lines1, out1) = ends
    if (rc0, lines0) != (rc1, lines1):
        raise Failure(f"{name}: -@ 16 ended otherwise than -@ 0",
                      [f"-@ 0: {rc0} {lines0[:2]}", f"-@ 16: {rc1} {lines1[:2]}"])
    if os.path.exists(out0) != os.path.exists(out1):
        raise Failure(f"{name}: an output at one -@ only")
    if rc0 == 0:
        case.expect_same(out1, out0)
    case.expect_no_temp_left()
    return lines0


def middle_records(raw, count):
    starts = record_starts(raw)
    if len(starts) < 1000:
        raise Failure("test is wrong: too few records to damage the middle")
    return [starts[len(starts) * (i + 1) // (count + 1)] for i in range(count)]


DAMAGE = [
    ("block_size_negative", REC_BLOCK_SIZE, "<i", -1),
    ("block_size_short", REC_BLOCK_SIZE, "<i", 20),
    ("block_size_huge", REC_BLOCK_SIZE, "<i", 0x7ffffff0),
    ("l_seq_huge", REC_L_SEQ, "<i", 0x7fffffff),
    ("l_seq_negative", REC_L_SEQ, "<i", -5),
    ("ref_id_beyond", REC_REF_ID, "<i", 99),
    ("mate_ref_id_beyond", REC_NEXT_REF_ID, "<i", 99),
    ("ref_id_below", REC_REF_ID, "<i", -2),
]


@each((f"pool_parse_damaged_{name}", field, fmt, value) for name, field, fmt, value in DAMAGE)
def test_pool_parse_damaged_record(case, field, fmt, value):
    raw = raw_bam(case)
    at = middle_records(raw, 1)[0]
    src = os.path.join(case.dir, "damaged.bam")
    write_bytes(src, bgzf_compress(patched(raw, at + field, fmt, value)))
    lines = twins(case, src, "damaged")
    if not lines:
        raise Failure("test is wrong: the damage went unnoticed")


def test_pool_parse_refs_beyond_header(case):
    """Every record on a reference after the first under a header that
    lists only the first."""
    src = os.path.join(case.dir, "refs.bam")
    write_bytes(src, bgzf_compress(bam_with_refs(raw_bam(case), 1)))
    twins(case, src, "refs")


def test_pool_parse_file_cut_anywhere(case):
    """The compressed file cut at bytes spread over its records: inside
    blocks, in their headers, between them."""
    with open(case.input(SOURCE), "rb") as f:
        data = f.read()
    first = bgzf_blocks(data)[1][0]
    rng = random.Random(52)
    for i, cut in enumerate(sorted(rng.randrange(first, len(data)) for _ in range(CUTS))):
        src = os.path.join(case.dir, f"cut{i}.bam")
        write_bytes(src, data[:cut])
        twins(case, src, f"cut{i}")
        os.remove(src)


def test_pool_parse_stream_cut_inside_record(case):
    """The uncompressed stream cut inside records, then compressed whole
    with its EOF marker: only the record lengths tell."""
    raw = raw_bam(case)
    rng = random.Random(53)
    for i, at in enumerate(middle_records(raw, CUTS)):
        src = os.path.join(case.dir, f"short{i}.bam")
        write_bytes(src, bgzf_compress(raw[:at + rng.randrange(1, 60)]))
        twins(case, src, f"short{i}")
        os.remove(src)


def test_pool_parse_block_unread_counts_at_least(case):
    """A BGZF block that cannot be read whole: a stream cut inside one (fed
    on stdin), and a file given by name whose block header is damaged.  At
    -@ 0 the line counts every record wholly in the blocks before it.  At
    -@ 16 htslib's reader thread drops the blocks it decoded ahead when it
    meets that block, so the line says "at least" and a count no larger;
    without those words its count looked exact and varied from run to run.
    A block whose data do not inflate is reported in turn, exactly, at every
    -@ (pool_parse_corrupt_blocks)."""
    with open(case.input(SOURCE), "rb") as f:
        data = f.read()
    blocks = bgzf_blocks(data)
    rng = random.Random(54)
    for i in range(6):
        offset, size = blocks[rng.randrange(len(blocks) // 4, len(blocks) - 2)]
        src = os.path.join(case.dir, f"unread{i}.bam")
        stream = i < 4
        if stream:
            write_bytes(src, data[:offset + rng.randrange(20, size - 1)])
        else:
            write_bytes(src, data[:offset] + b"\0" + data[offset + 1:])   # not a block's magic
        whole = bgzf_inflate(data[:offset])
        before = sum(1 for at in record_starts(whole)
                     if at + 4 + struct.unpack_from("<i", whole, at)[0] <= len(whole))
        for t in THREADS:
            expect_counted(case, src, stream, t, before, f"{'stream' if stream else 'file'} {i}")
        os.remove(src)


def expect_counted(case, src, stream, threads, before, what):
    out = case.out("unread.bam")
    args = ["-@", threads, "-m", "2M", "-T", case.temp_prefix, "-o", out, "-" if stream else src]
    result = case.rocksort(args, stdin=src if stream else None)
    lines = stderr_lines(result.stderr)
    name = "-" if stream else src
    said = re.search(rf"'{re.escape(name)}' is truncated or corrupt \(after (at least )?(\d+) records\)",
                     "\n".join(lines))
    if result.returncode != 1 or not said or os.path.exists(out):
        raise Failure(f"{what} at -@ {threads}: exit status {result.returncode}, expected 1, "
                      "a line counting records and no output", lines[:3])
    exact, n = not said.group(1), int(said.group(2))
    if threads == "0" and not (exact and n == before):
        raise Failure(f"{what} at -@ 0: counted {said.group(0)}, expected {before} records "
                      "exactly", lines[:3])
    if threads != "0" and (exact or n > before):
        raise Failure(f"{what} at -@ {threads}: counted {said.group(0)}, expected at least "
                      f"some number up to {before}", lines[:3])
    case.expect_no_temp_left()


def test_pool_parse_corrupt_blocks(case):
    with open(case.input(SOURCE), "rb") as f:
        data = f.read()
    n = len(bgzf_blocks(data))
    for i, block in enumerate((n // 4, n // 2, n - 3)):
        src = os.path.join(case.dir, f"corrupt{i}.bam")
        write_bytes(src, flip_byte_in_block(data, block))
        twins(case, src, f"corrupt{i}")
        os.remove(src)


def test_pool_parse_verify_and_small_blocks(case):
    """--verify counts the records parsed on the pool; blocks of a few
    hundred bytes put records across many blocks and chunks."""
    src = os.path.join(case.dir, "small_blocks.bam")
    write_bytes(src, bgzf_compress(raw_bam(case), block=700))
    twins(case, src, "verify", extra=["--verify"])


def instrumented(case):
    """Sanitizers and valgrind reserve more address space than the limit."""
    if len(case.session.rocksort_cmd) > 2:
        return True
    with open(case.session.binary, "rb") as f:
        return b"__asan_init" in f.read()


def test_pool_parse_record_beyond_memory(case):
    """A record in the middle claiming 1.9 GB, its fields consistent, under
    `ulimit -v` 2 GB: htslib cannot hold it, nor can the chunk grow for it,
    and both must say what the loader says."""
    if instrumented(case):
        return
    raw = raw_bam(case)
    at = middle_records(raw, 1)[0]
    claim = 1_900_000_000
    l_qname, n_cigar = raw[at + 12], struct.unpack_from("<H", raw, at + 16)[0]
    l_seq = (claim - 32 - 4 * n_cigar - l_qname - 4) * 2 // 3
    data = patched(patched(raw, at + REC_BLOCK_SIZE, "<i", claim), at + REC_L_SEQ, "<i", l_seq)
    src = os.path.join(case.dir, "claim.bam")
    write_bytes(src, bgzf_compress(data))
    if not twins(case, src, "claim", kib=2_000_000):
        raise Failure("test is wrong: the claim went unnoticed")
