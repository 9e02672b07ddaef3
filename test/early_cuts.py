"""BAMs cut early: at every byte of their first BGZF blocks and of their
EOF marker, read by name, as a file on standard input and through a pipe,
at several -@.  At -@ 1 and more, htslib's reader thread stops for good on
a block it cannot read, and a BGZF EOF check or seek asked of it afterwards
waits forever (#50: sorts hung for an hour); rocksort now starts that
thread only after the header, the EOF check and a resumed sort's seek.

Every cut must be refused as its -@0 twin refuses it: exit status 1, one
line, no output and no temporary data, and never more than a few seconds
later than the twin.  (samtools 1.24 fails on every such cut but those at a
block's end by name, which it sorts with a warning; rocksort refuses those,
as README says.)  The sanitizer run takes a sample of the offsets inside
deflated data (cut_offsets()).
To run only these:  run_tests.py -k 'early_cut*'
"""

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from bgzf import BGZF_EOF, bgzf_blocks, bgzf_compress, bgzf_inflate
from harness import Failure, stderr_lines, write_bytes

# Uncompressed bytes per block: a few hundred compressed bytes each, so
# that the header, the first records and the EOF marker all fall within
# the offsets cut.
SMALL_BLOCK = 300
BLOCKS_CUT = 2        # every offset of the first BLOCKS_CUT blocks
RUN_TIMEOUT = 20      # seconds: a hang fails the test instead of stalling it
SLOWER_ALLOWED = 3.0  # seconds beyond the -@0 twin
WORKERS = 8           # most of the stdin and pipe ways' time is a sleep: the signal grace
BGZF_HEADER_BYTES = 18  # gzip header with the BC extra field
BGZF_FOOTER_BYTES = 8   # CRC32 and the uncompressed size
SAMPLE_STRIDE = 5       # the sanitizer run's stride inside deflated data

# (how the input is given, -@, options): the -@0 twin first.
TWIN = ("name", 0, [])
WAYS = [("name", 1, []), ("name", 4, ["-n"]), ("stdin", 2, []), ("pipe", 3, ["-n"])]


def small_block_bam(case):
    """The mixed input as BAM in blocks of SMALL_BLOCK bytes."""
    with open(case.input("mixed.bam"), "rb") as f:
        raw = bgzf_inflate(f.read())
    return bgzf_compress(raw, block=SMALL_BLOCK)


def cut_offsets(data, light):
    """Every offset inside the first blocks, and inside the EOF marker.  The
    sanitizer run (light) keeps every byte of each block's header and footer
    and of the EOF marker, and every SAMPLE_STRIDE-th byte of the deflated
    data between them: the release run covers each of those bytes."""
    blocks = bgzf_blocks(data)
    if len(blocks) < BLOCKS_CUT + 2 or data[-len(BGZF_EOF):] != BGZF_EOF:
        raise Failure("test is wrong: the input has too few blocks")
    offsets = []
    for start, size in blocks[:BLOCKS_CUT]:
        deflated = range(start + BGZF_HEADER_BYTES, start + size - BGZF_FOOTER_BYTES)
        offsets += [o for o in range(start, start + size)
                    if not light or o not in deflated or (o - deflated.start) % SAMPLE_STRIDE == 0]
    return offsets + list(range(len(data) - len(BGZF_EOF), len(data)))


def sort_cut(case, src, how, threads, opts, out):
    """-> (exit status or None if it hung, stderr, seconds)"""
    cmd = [*case.session.rocksort_cmd, *opts, "-@", str(threads), "-T",
           case.temp_prefix, "-o", out, src if how == "name" else "-"]
    env = dict(case.session.env, TMPDIR=case.tmp)
    start = time.monotonic()
    with open(src if how == "stdin" else os.devnull, "rb") as stdin:
        feeder = subprocess.Popen(["cat", src], stdout=subprocess.PIPE) if how == "pipe" else None
        proc = subprocess.Popen(cmd, stdin=feeder.stdout if feeder else stdin,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        if feeder:
            feeder.stdout.close()
        try:
            _, err = proc.communicate(timeout=RUN_TIMEOUT)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            rc = None
        if feeder:
            feeder.wait()
    return rc, err, time.monotonic() - start


def refused(case, offset, way, result, out):
    """-> None, or what is wrong with one cut's outcome."""
    how, threads, opts = way
    rc, err, _ = result
    where = f"cut at {offset}, {how}, -@{threads} {' '.join(opts)}".rstrip()
    if rc is None:
        return f"{where}: hung (killed after {RUN_TIMEOUT} s)"
    lines = stderr_lines(err)
    if rc != 1 or len(lines) != 1:
        return f"{where}: exit status {rc} with {len(lines)} lines: {lines[:2]}"
    if os.path.lexists(out):
        return f"{where}: an output was left"
    return None


def one_offset(case, data, offset):
    """Sorts the cut at offset every way; -> [problems]"""
    src = os.path.join(case.dir, f"cut_{offset}.bam")
    write_bytes(src, data[:offset])
    problems, twin_seconds = [], None
    for i, way in enumerate([TWIN, *WAYS]):
        out = case.out(f"out_{offset}_{i}.bam")
        result = sort_cut(case, src, *way, out)
        problem = refused(case, offset, way, result, out)
        if problem:
            problems.append(problem)
            continue
        if way is TWIN:
            twin_seconds = result[2]
        elif twin_seconds is not None and result[2] > twin_seconds + SLOWER_ALLOWED:
            problems.append(f"cut at {offset}, {way[0]}, -@{way[1]}: {result[2]:.1f} s, "
                            f"its -@0 twin {twin_seconds:.1f} s")
    os.remove(src)
    return problems


def test_early_cut_every_offset(case):
    data = small_block_bam(case)
    offsets = cut_offsets(data, case.session.light)
    problems = []
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [pool.submit(one_offset, case, data, o) for o in offsets]
        for future in futures:
            if len(problems) >= 5:
                future.cancel()    # enough shown: a hang each would take long
                continue
            problems += future.result()
    if problems:
        raise Failure(f"{len(problems)}+ of {len(offsets) * (1 + len(WAYS))} cut sorts went "
                      "wrong", problems[:5])
    case.expect_no_temp_left()
