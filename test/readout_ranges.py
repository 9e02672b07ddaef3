"""Tests of the range-partitioned readout (issue #27).

After the load the key space is cut into N pieces, K threads each merge
and compress a piece at a time into BGZF blocks of its own (in memory),
and the pieces are appended in order: the header once, each piece's
blocks, one EOF marker.  `--merge-threads K` (K >= 1) sets K; CRAM stays
one stream; with --write-index the index is built after the join; -v
prints
    [rocksort] readout: K merge threads over N pieces; M MB through memory, writer waited W s

What these tests hold the readout to, all against samtools 1.24 (the oracle):
- for K = 1..8, on inputs from zero records (fewer than K) to enough to
  spill some 40 runs, in every order (coordinate, -n, -N, -t TAG,
  --template-coordinate), the oracle's records and header; for K = 2, 5, 8
  the same with threads, background merges (-s) and more orders spilled;
- every output format (BAM to a file and to stdout, SAM, BGZF SAM, -u,
  -l 1, CRAM);
- a BGZF output is one well-formed stream: the oracle's quickcheck accepts
  it, it ends with the 28-byte EOF block, and no block before that is empty
  (an EOF marker, or any empty block, left between two pieces).  The
  oracle's own output is held to the same, or the test is wrong;
- --write-index: the index is byte for byte (decompressed: CSI is BGZF,
  BAI is not) the one the oracle's `samtools index` builds for the same
  output file;
- --verify agrees, in memory and spilled, with and without -s;
- -v reports the K actually used; without the option, -u -@ 2 uses K > 1;
- more pieces than there are in flight (K + 2), so each in-memory slot is
  reused, still give the oracle's records;
- a low `ulimit -n` takes merge threads away rather than failing;
- a bad K and a full disk during a K > 1 readout fail the usual way: exit
  status 1, one line, no output and no temporary files left.

Every test but readout_default_k_* passes --merge-threads, so until the
option exists they fail on it (rocksort refuses an unknown option), and
that one on the missing -v line.  None is skipped.

The tests are in two modules: this one (the K matrix, the output formats,
one BGZF stream; and the helpers) and test/readout_extras.py
(--write-index, --verify, -v's report, limits, failures).  To run only
these:
    run_tests.py -k 'readout_*'
(the disk-full tests exist only when running as root: they mount a tmpfs
inside the test's own directory).  The two modules take some 25 s on two
idle cores.  Under valgrind (Makefile VALGRIND_TESTS) only two run, one sort
each with K = 4: readout_verify_in_memory_k4 and readout_verify_spilled_k4.
"""

import os
import random
import re
import struct
import tempfile
import threading
import zlib

import alignments
import samdata
from bgzf import BGZF_EOF, bgzf_blocks, bgzf_inflate
from harness import Failure, each, release_only, tail, write_bytes

OPTION = "--merge-threads"
KS = tuple(range(1, 9))
SPILL = ["-m", "1M"]                 # bulk.bam at -m 1M: some 40 sorted runs
MERGING = [*SPILL, "-s", "50M"]      # ... merged in the background as they come
IN_MEMORY = ["-m", "64M"]            # bulk.bam held in memory, nothing spilled
READOUT_LINE = re.compile(r"^\[rocksort\] readout: (\d+) merge threads? over (\d+) pieces?; "
                          r"(\d+(?:\.\d+)?) MB through memory, writer waited "
                          r"(\d+(?:\.\d+)?) s$", re.M)
READOUT_LINE_TEXT = ("'[rocksort] readout: K merge threads over N pieces; M MB through memory, "
                     "writer waited W s'")


def merge_threads(k):
    """--merge-threads K, over the default (compact) runs; the matrix has
    uncompressed runs too (UNCOMPRESSED)."""
    return [OPTION, str(k)]


UNCOMPRESSED = ["--temp-compression", "none"]


# --- inputs of a few records -------------------------------------------------------

SMALL_REFS = [("r1", 5000), ("r2", 5000)]
SMALL_HEADER_EXTRA = ["@RG\tID:g1\tLB:lib1\tSM:s1"]


def small_records(rng):
    """Seven records of every kind a range boundary could fall between: a
    pair with MC tags (for --template-coordinate), two records tied on one
    position with names that order the other way, a secondary, an
    unmapped read placed at a position, and one with no position."""
    def rec(name, flag, rname, pos, tags, cigar="20M", rnext="*", pnext=0, tlen=0):
        return samdata.read(rng, name, flag, rname, pos, length=20, rnext=rnext,
                            pnext=pnext, tlen=tlen, tags=["RG:Z:g1", *tags], cigar=cigar)
    return [
        rec("pair7", 0x63, "r2", 300, ["XI:i:9", "MC:Z:20M"], rnext="=", pnext=420, tlen=140),
        rec("pair7", 0x93, "r2", 420, ["XI:i:-3", "MC:Z:20M"], rnext="=", pnext=300, tlen=-140),
        rec("tie10", 0x10, "r1", 77, ["XI:i:9"]),
        rec("tie2", 0x0, "r1", 77, []),
        rec("second", 0x100, "r1", 4000, ["XI:i:0"]),
        rec("placed", 0x4, "r2", 300, ["XI:i:1"], cigar="*"),
        rec("nowhere", 0x4, "*", 0, ["XI:i:9"], cigar="*"),
    ]


def small_text(count):
    """The first `count` of small_records, shuffled with a fixed seed."""
    rng = random.Random(f"rocksort-readout-{count}")
    records = small_records(rng)[:count]
    rng.shuffle(records)
    return samdata.header(SMALL_REFS, extra=SMALL_HEADER_EXTRA) + "".join(records)


class Inputs:
    """Inputs made once per session, beside the harness's own:
    NAME.sam from RECIPES, NAME.bam from it through the oracle."""

    RECIPES = {
        "one_record": lambda: small_text(1),
        "three_records": lambda: small_text(3),
        "seven_records": lambda: small_text(7),
        # Some 30 MB of records: a dozen or more pieces of 4 MiB at K = 2.
        "many_pieces": lambda: samdata.bulk(random.Random("rocksort-many-pieces"), 100000),
    }

    def own(self, name):
        return name.rsplit(".", 1)[0] in self.RECIPES

    def path(self, session, name):
        path = os.path.join(session.inputs_dir, "readout-" + name)
        with session.lock_for(("readout-input", name)):
            if not os.path.exists(path):
                stem, ext = name.rsplit(".", 1)
                part = path + ".part"
                if ext == "sam":
                    with open(part, "w") as f:
                        f.write(self.RECIPES[stem]())
                else:
                    session.oracle_ok("view", ["-b", "--no-PG", "-o", part,
                                               self.path(session, stem + ".sam")])
                os.rename(part, path)
        return path


INPUTS = Inputs()


# --- reading and checking outputs ----------------------------------------------------

def first_bytes_of_gzip(data, n):
    """The first n bytes of the first gzip member of data, or b"" if it is
    not one."""
    try:
        return zlib.decompressobj(16 + 15).decompress(data[:1 << 17], n)
    except zlib.error:
        return b""


def bgzf_problems(data):
    """How data fails to be one BGZF stream as samtools writes it: framed
    by BSIZE from start to end, the last block the 28-byte EOF marker, no
    block before it empty (neither that marker nor any other block holding
    no data, as a join that kept a part's EOF block or an empty range would
    leave).  -> [] if it is one."""
    try:
        blocks = bgzf_blocks(data)
    except ValueError as error:
        return [f"not a BGZF stream from start to end: {error}"]
    if not blocks:
        return ["the file is empty"]
    last, size = blocks[-1]
    if last + size != len(data):
        return [f"the last BGZF block (offset {last}) is cut short at {len(data)}"]
    if data[last:] != BGZF_EOF:
        return ["the stream does not end with the 28-byte BGZF EOF block"]
    for i, (offset, size) in enumerate(blocks[:-1]):
        (isize,) = struct.unpack_from("<I", data, offset + size - 4)
        if data[offset:offset + size] == BGZF_EOF:
            return [f"a BGZF EOF marker block at offset {offset}, block {i + 1} of "
                    f"{len(blocks)}: the stream looks complete before its end"]
        if isize == 0:
            return [f"an empty BGZF block at offset {offset}, block {i + 1} of "
                    f"{len(blocks)}, before the end"]
    return []


def index_bytes(path):
    """An index file's content: CSI (and CRAI) are compressed, BAI is not."""
    with open(path, "rb") as f:
        data = f.read()
    return bgzf_inflate(data) if data.startswith(b"\x1f\x8b") else data


# --- the tests ---------------------------------------------------------------------

# name -> (input, options for both sorters, options for rocksort only), run
# once per K in 1..8 (test readout_k1to8_NAME); SPARSE_MATRIX the same with
# K = 2, 5, 8 only (readout_k2_5_8_NAME), to keep the module's time down.
TEMPLATE = ["--template-coordinate"]
SPARSE_KS = (2, 5, 8)
MATRIX = {
    # Fewer records than K: most ranges are empty.
    "zero_records_coord": ("header_only.bam", [], []),
    "zero_records_name": ("header_only.bam", ["-n"], []),
    "one_record_coord": ("one_record.bam", [], []),
    "one_record_name": ("one_record.bam", ["-n"], []),
    "one_record_ascii_name": ("one_record.bam", ["-N"], []),
    "one_record_tag": ("one_record.bam", ["-t", "XI"], []),
    "one_record_template": ("one_record.bam", TEMPLATE, []),
    "three_records_coord": ("three_records.bam", [], []),
    "three_records_name": ("three_records.bam", ["-n"], []),
    "seven_records_coord": ("seven_records.bam", [], []),
    "seven_records_name": ("seven_records.bam", ["-n"], []),
    "seven_records_ascii_name": ("seven_records.bam", ["-N"], []),
    "seven_records_tag": ("seven_records.bam", ["-t", "XI"], []),
    "seven_records_tag_name": ("seven_records.bam", ["-t", "XI", "-n"], []),
    "seven_records_template": ("seven_records.bam", TEMPLATE, []),
    # Hundreds of records on a few keys: a range boundary inside a run of
    # ties must keep their input order.
    "ties_coord": ("ties.bam", [], []),
    "ties_name": ("ties.bam", ["-n"], []),
    "ties_ascii_name": ("ties.bam", ["-N"], []),
    # Unmapped reads last: placed at a mate, with no reference, and with a
    # reference but no position.
    "unmapped_coord": ("unmapped.bam", [], []),
    "unmapped_name": ("unmapped.bam", ["-n"], []),
    "placed_unmapped_coord": ("placed_unmapped.bam", [], []),
    "mixed_coord_threads": ("mixed.bam", [], ["-@", "2"]),
    "mixed_name": ("mixed.bam", ["-n"], []),
    "tag_int": ("tagged.bam", ["-t", "XI"], []),
    "tag_string_name": ("tagged.bam", ["-t", "CB", "-n"], []),
    "tag_float_ascii_name": ("tagged.bam", ["-t", "XF", "-N"], []),
    "template_coordinate": ("templates.bam", TEMPLATE, []),
    # Spilled: some 40 runs (and merged in the background with -s), compact
    # (a piece starts inside the runs' groups) and uncompressed.
    "spilled_coord": ("bulk.bam", [], SPILL),
    "spilled_name": ("bulk.bam", ["-n"], SPILL),
    "spilled_uncompressed_coord": ("bulk.bam", [], [*SPILL, *UNCOMPRESSED]),
    "spilled_uncompressed_name": ("bulk.bam", ["-n"], [*SPILL, *UNCOMPRESSED]),
}
SPARSE_MATRIX = {
    "spilled_ascii_name_threads": ("bulk.bam", ["-N"], [*SPILL, "-@", "2"]),
    "spilled_tag": ("bulk.bam", ["-t", "NM"], SPILL),
    "spilled_merged_coord": ("bulk.bam", [], MERGING),
    "spilled_merged_name_threads": ("bulk.bam", ["-n"], [*MERGING, "-@", "2"]),
    "spilled_template_coordinate": ("templates_bulk.bam", TEMPLATE, SPILL),
}


# The oracle's outputs for INPUTS' own inputs: (session, input, options,
# output name, to stdout) -> path.
EXPECTED_CACHE, CACHE_LOCK = {}, threading.Lock()


def source(case, name):
    return INPUTS.path(case.session, name) if INPUTS.own(name) else case.input(name)


def expected(case, name, shared, out_name="out", to_stdout=False):
    """The oracle's output for input `name` sorted with `shared`,
    computed once per session (through the harness's own cache for its
    inputs, so the rest of the suite shares it)."""
    if not INPUTS.own(name):
        return case.session.expected(name, list(shared), out_name, to_stdout)
    key = (case.session.root, name, tuple(shared), out_name, to_stdout)
    with case.session.lock_for(("readout-expected", key)):
        with CACHE_LOCK:
            if key in EXPECTED_CACHE:
                return EXPECTED_CACHE[key]
        out_dir = tempfile.mkdtemp(prefix="readout-", dir=case.session.expected_dir)
        path = os.path.join(out_dir, out_name)
        args = [*shared, "--no-PG", source(case, name)]
        if to_stdout:
            write_bytes(path, case.session.oracle_ok("sort", args, cwd=out_dir).stdout)
        else:
            case.session.oracle_ok("sort", ["-o", path, *args], cwd=out_dir)
        with CACHE_LOCK:
            EXPECTED_CACHE[key] = path
        return path


def load(case, path, reference=None):
    """Like case.load, and BGZF-compressed SAM too (format "SAM.gz")."""
    with open(path, "rb") as f:
        data = f.read()
    if data.startswith(b"\x1f\x8b") and first_bytes_of_gzip(data, 4) != b"BAM\x01":
        try:
            return alignments.parse_sam(bgzf_inflate(data).decode(), fmt="SAM.gz")
        except (OSError, EOFError, zlib.error, UnicodeDecodeError) as error:
            raise Failure(f"cannot read {os.path.basename(path)}: {error}")
    return case.load(path, reference)


def expect_well_formed(path, what):
    with open(path, "rb") as f:
        data = f.read()
    if data.startswith(b"\x1f\x8b"):
        problems = bgzf_problems(data)
        if problems:
            raise Failure(f"{what}: {problems[0]}", problems[1:])


def expect_same(case, actual, want, what, reference=None):
    """actual (a path) has want's records and header (want: loaded);
    a BGZF output is one well-formed stream."""
    problems = alignments.differences(load(case, actual, reference), want)
    if problems:
        raise Failure(f"{what}: {problems[0]}", problems[1:])
    expect_well_formed(actual, what)


def oracle_expected(case, name, shared, out_name="out", to_stdout=False,
                    reference=None):
    """The oracle's output, loaded; a test whose oracle output is not
    itself a well-formed stream is wrong."""
    path = expected(case, name, shared, out_name, to_stdout)
    expect_well_formed(path, "test is wrong: the oracle's own output")
    return load(case, path, reference)


def quickcheck(case, paths):
    """The oracle's `samtools quickcheck` accepts every file (one call)."""
    result = case.session.oracle("quickcheck", ["-v", *paths])
    if result.returncode != 0:
        bad = result.stdout.decode(errors="replace").split()
        raise Failure(f"samtools quickcheck refuses {len(bad) or 'some'} of "
                      f"{len(paths)} outputs", [os.path.basename(p) for p in bad]
                      + tail(result.stderr))


def rocksort_k(case, k, args, src, out=None):
    """rocksort ARGS --merge-threads K -T ... [-o OUT] SRC; must succeed."""
    cmd = [*args, *merge_threads(k), "-T", case.temp_prefix]
    if out:
        cmd += ["-o", out]
    result = case.rocksort(cmd + [src])
    if result.returncode != 0:
        raise Failure(f"{OPTION} {k}: rocksort exited with {result.returncode}",
                      tail(result.stderr))
    return result


# 1. K = 1..8, every order, inputs small to spilled ----------------------------

def k_matrix_sanitized():
    """Every row but K = 1..8 over the spilled inputs, of which the
    sanitizer run keeps spilled_coord."""
    return tuple([f"readout_k1to8_{label}" for label in MATRIX
                  if not label.startswith("spilled") or label == "spilled_coord"] +
                 [f"readout_k2_5_8_{label}" for label in SPARSE_MATRIX])


@release_only("K = 1..8 over the spilled inputs: one of them is kept", but=k_matrix_sanitized())
@each((f"readout_{prefix}_{label}", name, shared, extra, ks)
      for matrix, ks, prefix in ((MATRIX, KS, "k1to8"), (SPARSE_MATRIX, SPARSE_KS, "k2_5_8"))
      for label, (name, shared, extra) in matrix.items())
def test_readout_k_matrix(case, name, shared, extra, ks):
    """Input `name` sorted with shared + extra: for each K in ks, the
    oracle's output."""
    src = source(case, name)
    want = oracle_expected(case, name, shared)
    outs = []
    for k in ks:
        out = case.out(f"k{k}.bam")
        rocksort_k(case, k, [*shared, *extra], src, out)
        expect_same(case, out, want, f"{OPTION} {k}")
        case.expect_no_temp_left()
        outs.append(out)
    case.expect_only_files(case.out_dir, [os.path.basename(p) for p in outs])
    quickcheck(case, outs)


# 2. Output formats ------------------------------------------------------------

def format_case(case, shared, out_name, ks=(2, 8), to_stdout=False, name="bulk.bam",
                extra=SPILL, reference=None):
    """Input `name` (default: bulk.bam spilled) sorted with `shared`
    into out_name (its extension picks the format, as for the oracle)
    or to stdout, for each K: the oracle's records; BGZF outputs well
    formed; the oracle's quickcheck accepts them all."""
    want = oracle_expected(case, name, shared, out_name, to_stdout, reference)
    stem, ext = out_name.split(".", 1) if "." in out_name else (out_name, "")
    outs = []
    for k in ks:
        out = case.out(f"{stem}_k{k}" + (f".{ext}" if ext else ""))
        result = rocksort_k(case, k, [*shared, *extra], source(case, name),
                            None if to_stdout else out)
        if to_stdout:
            write_bytes(out, result.stdout)
        expect_same(case, out, want, f"{OPTION} {k}", reference)
        case.expect_no_temp_left()
        outs.append(out)
    case.expect_only_files(case.out_dir, [os.path.basename(p) for p in outs])
    quickcheck(case, outs)
    return outs


def test_readout_format_bam_file(case):
    format_case(case, [], "out.bam", ks=(2, 4, 8))


def test_readout_format_bam_stdout(case):
    """-o absent: the joined stream goes down a pipe, which cannot seek."""
    format_case(case, [], "out", to_stdout=True)


# SAM text: mixed.bam (some 1600 records) in memory.
def test_readout_format_sam(case):
    format_case(case, ["-O", "sam"], "out.sam", ks=(2, 4, 8), name="mixed.bam", extra=[])


def test_readout_format_sam_stdout_name(case):
    format_case(case, ["-O", "sam", "-n"], "out", to_stdout=True, name="mixed.bam",
                extra=[])


def test_readout_format_sam_gz_from_name(case):
    """-o out.sam.gz: BGZF-compressed SAM, as samtools 1.24 writes it;
    spilled, so each range has several blocks."""
    outs = format_case(case, [], "out.sam.gz", ks=(4,))
    with open(outs[0], "rb") as f:
        if first_bytes_of_gzip(f.read(), 1) != b"@":
            raise Failure("out.sam.gz does not hold SAM text")


def test_readout_format_sam_gz_option(case):
    """-O sam.gz, to a name that says nothing of the format."""
    format_case(case, ["-O", "sam.gz", "-n"], "out.x", name="mixed.bam", extra=[])


def test_readout_format_uncompressed(case):
    outs = format_case(case, ["-u"], "out.bam")
    with open(outs[-1], "rb") as f:
        data = f.read()
    if len(data) < len(bgzf_inflate(data)):
        raise Failure("-u output is smaller than its content: it is compressed")


def test_readout_format_uncompressed_name(case):
    format_case(case, ["-u", "-n"], "out.bam", ks=(3,))


def test_readout_format_level1(case):
    format_case(case, ["-l", "1"], "out.bam")


def test_readout_format_level1_threads_name(case):
    format_case(case, ["-l", "1", "-n"], "out.bam", ks=(4,), extra=[*SPILL, "-@", "2"])


def test_readout_format_cram(case):
    """CRAM stays one stream: still the oracle's records, and under -v
    the readout reports one range if it reports any."""
    fa = case.input("mixed.fa")
    for name, shared, extra, reference in (
            ("mixed.bam", ["-O", "cram", "--reference", fa], [], fa),
            ("mixed.bam", ["-O", "cram", "--reference", fa, "-n"], ["-@", "2"], fa)):
        want = oracle_expected(case, name, shared, "out.cram", reference=reference)
        for k in (2, 4):
            out = case.out(f"out_k{k}.cram")
            result = rocksort_k(case, k, ["-v", *shared, *extra], source(case, name), out)
            expect_same(case, out, want, f"{name} {OPTION} {k}", reference)
            said = READOUT_LINE.findall(result.stderr.decode(errors="replace"))
            if said and int(said[0][0]) != 1:
                raise Failure(f"{name} {OPTION} {k}: CRAM output read out by "
                              f"{said[0][0]} merge threads, not one stream")
            quickcheck(case, [out])
            os.remove(out)
            case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, [])


# 3. One BGZF stream: one EOF block, at the end ------------------------------------

def test_readout_bgzf_one_eof_block_spilled(case):
    """K = 2, 3, 8 at -l 1 and 2, 5 at -u on a spilled sort (many
    blocks per range): the stream ends with the EOF block and has no
    other, nor any empty block."""
    for shared, ks in ((["-l", "1"], (2, 3, 8)), (["-u"], (2, 5))):
        want = oracle_expected(case, "bulk.bam", shared)
        outs = []
        for k in ks:
            out = case.out(f"k{k}.bam")
            rocksort_k(case, k, [*shared, *SPILL], case.input("bulk.bam"), out)
            expect_same(case, out, want, f"{' '.join(shared)} {OPTION} {k}")
            outs.append(out)
        quickcheck(case, outs)
        for out in outs:
            os.remove(out)
    case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, [])


def test_readout_bgzf_one_eof_block_empty_ranges(case):
    """K = 8 with 0, 1 and 3 records: the empty ranges add no block,
    to a file or to stdout."""
    outs = []
    for name in ("header_only.bam", "one_record.bam", "three_records.bam"):
        for shared in ([], ["-u"], ["-n"]):
            want = oracle_expected(case, name, shared)
            stem = f"{name.split('.')[0]}{''.join(shared).replace('-', '_')}"
            out = case.out(f"{stem}.bam")
            rocksort_k(case, 8, shared, source(case, name), out)
            expect_same(case, out, want, f"{name} {' '.join(shared)} {OPTION} 8")
            piped = case.out(f"{stem}_stdout.bam")
            write_bytes(piped, rocksort_k(case, 8, shared, source(case, name)).stdout)
            expect_same(case, piped, want, f"{name} {' '.join(shared)} {OPTION} 8, "
                        "to stdout")
            outs += [out, piped]
    quickcheck(case, outs)
    case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, [os.path.basename(p) for p in outs])
