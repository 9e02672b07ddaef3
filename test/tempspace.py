"""Temp space tests of `samtools rocksort`: the runs' format is chosen
before reading from the free space under -T, a sort whose runs cannot fit
is refused at once, and --temp-compression still forces a format.

The space tests mount a tmpfs inside the case's own directory (root only,
like robustness.py's disk_full tests) and unmount it afterwards.  Their
input looks like short-read data (binned qualities, reads overlapping on a
small reference, flowcell names), so compact runs take well under half the
bytes of uncompressed ones, as on real data; sizes measured with this
input at -m 4M (9 runs, no background merges): uncompressed runs 10.3 MB
on the tmpfs, compact 2.2 MB; estimated peaks 13 MB and 4.1 MB (the input
is 2.7 MB of BGZF).
To run only these:  run_tests.py -k temp_space_ -k temp_forced_
"""

import os
import random
import re
import subprocess

import tmpfs
from harness import Failure, expect_error, tail, write_text

WAIT = 20           # seconds: the longest a mount or a refusal may take
MEM = ["-m", "4M"]  # some 10 runs of the input below, no background merges
# tmpfs sizes (KiB) around the measured sizes above, with 1 MB or more of
# margin on each side that matters.
ROOM_FOR_COMPACT_ONLY = 7 * 1024   # 7.3 MB: < 10.3 MB uncompressed, > 4.1 MB estimate
ROOM_FOR_NEITHER = 1024            # 1.0 MB: < 2.2 MB of compact runs


def reads_text(count=30000, ref_len=60000, seed=26):
    """SAM text of `count` 150-base reads on one small reference, shuffled."""
    rng = random.Random(seed)
    ref = "".join(rng.choice("ACGT") for _ in range(ref_len + 200))
    bins = "#,:F"   # Illumina's binned qualities (2, 11, 25, 37)
    lines = ["@HD\tVN:1.6\tSO:unsorted", f"@SQ\tSN:chr1\tLN:{ref_len + 200}",
             "@RG\tID:rg1\tSM:s1"]
    for i in range(count):
        pos = rng.randrange(1, ref_len)
        seq = list(ref[pos - 1:pos + 149])
        if rng.random() < 0.3:
            seq[rng.randrange(150)] = rng.choice("ACGT")
        qual, q = [], "F"
        while len(qual) < 150:
            if rng.random() < 0.15:
                q = rng.choice(bins[:3] if len(qual) > 100 else bins)
            qual.append(q)
        flag = rng.choice((99, 147, 83, 163))
        name = f"SIM:1:FCX:1:{1101 + i % 12}:{rng.randrange(30000)}:{rng.randrange(30000)}"
        lines.append("\t".join([name, str(flag), "chr1", str(pos), "60", "150M", "=",
                                str(pos + 200), "350", "".join(seq), "".join(qual),
                                "NM:i:0", "MD:Z:150", "AS:i:150", "RG:Z:rg1"]))
    return "\n".join(lines) + "\n"


def make_input(case):
    sam = os.path.join(case.dir, "reads.sam")
    bam = os.path.join(case.dir, "reads.bam")
    write_text(sam, reads_text())
    case.session.oracle_ok("view", ["-b", "--no-PG", "-o", bam, sam])
    return bam


def with_tmpfs(case, kib, body):
    tmpfs.with_tmpfs(case.dir, f"{kib}k", body, Failure)


def report_line(result, what):
    text = result.stderr.decode(errors="replace")
    match = re.search(rf"^\[rocksort\] {what}.*$", text, re.M)
    if not match:
        raise Failure(f"no '{what}' line in the -v report", tail(text))
    return match.group(0)


def temp_bytes(result):
    line = report_line(result, "runs:")
    return int(re.search(r"temp bytes written: (\d+)", line).group(1))


def sort_ok(case, src, args):
    """Sorts src (-v) into out.bam and compares with the oracle."""
    expected = os.path.join(case.dir, "expected.bam")
    case.session.oracle_ok("sort", [*MEM, "--no-PG", "-o", expected, src])
    out = case.out("out.bam")
    result = case.rocksort_ok(["-v", *MEM, *args, "-o", out, src])
    case.expect_same(out, expected)
    return result


def expect_refusal(case, result, place):
    """Exit 1, one line naming the place, the space needed and free, and
    -T; no output, nothing in the temp dir.  The refusal is the space
    check's, not a full disk's, so no run was written: it came before the
    sort (not timed, which a busy machine would fail; a pipe nobody writes
    to shows it comes before the first read)."""
    line = expect_error(case, result, [place], case.out("out.bam"))
    for word in ("needed", "free", "-T"):
        if word not in line:
            raise Failure(f"the refusal does not say '{word}'", [line])
    if len(re.findall(r"\d+(\.\d+)? [MG]B", line)) < 2:
        raise Failure("the refusal does not give the space needed and free", [line])
    return line


if os.geteuid() == 0:
    def test_temp_space_compact_when_uncompressed_cannot_fit(case):
        """7 MiB of temp room: uncompressed runs (~10 MB) would fill it,
        compact ones (~2 MB) fit.  Unforced, the sort picks compact."""
        src = make_input(case)

        def body(mount_point):
            result = sort_ok(case, src, ["-T", mount_point])
            line = report_line(result, "temp runs:")
            if "compact" not in line.split(";")[0]:
                raise Failure("compact runs were not chosen", [line])
        with_tmpfs(case, ROOM_FOR_COMPACT_ONLY, body)

    def test_temp_space_refused_file_input(case):
        """1 MiB of temp room: not even compact runs fit.  Refused before
        sorting, with the one-line message; nothing left behind."""
        src = make_input(case)

        def body(mount_point):
            result = case.rocksort([*MEM, "-T", mount_point, "-o",
                                    case.out("out.bam"), src])
            expect_refusal(case, result, mount_point)
        with_tmpfs(case, ROOM_FOR_NEITHER, body)

    def test_temp_space_refused_before_reading_stdin(case):
        """-s 1G with the input on a pipe nobody writes to: the refusal
        must come before the first read, or it would wait forever."""
        def body(mount_point):
            read_end, write_end = os.pipe()
            try:
                proc = subprocess.run(
                    [*case.session.rocksort_cmd, *MEM, "-s", "1G", "-T", mount_point,
                     "-o", case.out("out.bam"), "-"], stdin=read_end,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    env=dict(case.session.env, TMPDIR=case.tmp), timeout=WAIT)
            finally:
                os.close(read_end)
                os.close(write_end)
            line = expect_refusal(case, proc, mount_point)
            if "-s" not in line:
                raise Failure("the refusal does not say the estimate came from -s",
                              [line])
        with_tmpfs(case, ROOM_FOR_NEITHER, body)

    def test_temp_forced_none_refused_where_only_compact_fits(case):
        """--temp-compression none is obeyed: where its runs cannot fit,
        the sort is refused rather than switched to compact runs."""
        src = make_input(case)

        def body(mount_point):
            result = case.rocksort([*MEM, "--temp-compression", "none", "-T",
                                    mount_point, "-o", case.out("out.bam"), src])
            line = expect_refusal(case, result, mount_point)
            if "none" not in line:
                raise Failure("the refusal does not name the forced format", [line])
        with_tmpfs(case, ROOM_FOR_COMPACT_ONLY, body)


def test_temp_forced_none_writes_uncompressed_runs(case):
    """With room to spare either way, the forced formats are kept: none
    writes at least the records' own bytes, compact far fewer."""
    src = make_input(case)
    raw = sum(len(line) for line in reads_text().splitlines()[3:])
    none = sort_ok(case, src, ["-T", case.temp_prefix, "--temp-compression", "none"])
    line = report_line(none, "temp runs:")
    if (not line.startswith("[rocksort] temp runs: none (records in plain groups),")
            or "--temp-compression" not in line):
        raise Failure("-v does not report forced uncompressed runs", [line])
    compact = sort_ok(case, src, ["-T", case.temp_prefix, "--temp-compression",
                                  "compact"])
    if temp_bytes(none) < raw * 0.6 or temp_bytes(compact) * 2 > temp_bytes(none):
        raise Failure(f"temp bytes: none {temp_bytes(none)}, compact "
                      f"{temp_bytes(compact)}, SAM records {raw}")
    case.expect_no_temp_left()


DISK_SPEED = re.compile(r"the slowest temp directory took direct writes at (\d+) MB/s "
                        r"\(fast: (\d+) or more\)|the disk's speed unknown")


def fast_disk_mb_s(threads):
    """What the disk must take at -@ threads: 150 MB/s a thread, counting at
    least two, at most 500 (store/temp_space.h)."""
    return min(150 * max(threads, 2), 500)


def expect_format_of_disk(args, line, threads=0):
    """-u and -l 1 with room to spare: uncompressed runs on a fast disk,
    compact ones on a slow one, fast meaning fast_disk_mb_s(threads).  The
    disk's speed is a measurement, and a disk busy with other programs
    measures slow: either format is right when -v gives the speed it was
    chosen by."""
    speed = DISK_SPEED.search(line)
    if not speed:
        raise Failure(f"{' '.join(args)}: -v does not give the disk speed the format "
                      "hung on", [line])
    if speed[2] is not None and int(speed[2]) != fast_disk_mb_s(threads):
        raise Failure(f"{' '.join(args)}: the disk was held to {speed[2]} MB/s, not "
                      f"{fast_disk_mb_s(threads)}", [line])
    fast = speed[1] is None or int(speed[1]) >= int(speed[2])
    want = "none" if fast else "compact"
    if not line.startswith(f"[rocksort] temp runs: {want}"):
        raise Failure(f"{' '.join(args)}: {want} runs expected", [line])


def test_temp_auto_uncompressed_at_levels_0_and_1(case):
    """Without --temp-compression: at -u and -l 1, with room to spare on a
    fast disk (or tmpfs, memory), uncompressed runs, and compact ones on a
    disk that measures slow (as any may under load), -v giving the speed
    measured and the speed it was held to, which grows with -@; but
    compact ones with more than 8 threads (issue #41: the spill thread
    alone writes every byte of a run, three to four times as many
    uncompressed, even in plain groups), where the disk is not measured;
    at the default level, compact ones; and with
    no estimate of the size (a pipe), compact ones.  Each output is the
    oracle's."""
    src = make_input(case)
    for args, threads in ((["-u"], 0), (["-l", "1"], 0), (["-u", "-@", "3"], 3),
                          (["-u", "-@", "4"], 4)):
        result = sort_ok(case, src, ["-T", case.temp_prefix, *args])
        expect_format_of_disk(args, report_line(result, "temp runs:"), threads)
    for args in ([], ["-u", "-@", "9"]):
        result = sort_ok(case, src, ["-T", case.temp_prefix, *args])
        line = report_line(result, "temp runs:")
        if not line.startswith("[rocksort] temp runs: compact") or DISK_SPEED.search(line):
            raise Failure(f"{' '.join(args) or 'the default level'}: compact runs expected, "
                          "the disk not measured", [line])
    piped = case.rocksort(["-v", *MEM, "-u", "-T", case.temp_prefix, "-o", case.out("p.bam"),
                           "-"], stdin=src)
    line = report_line(piped, "temp runs:")
    if piped.returncode != 0 or not line.startswith("[rocksort] temp runs: compact"):
        raise Failure("a pipe without -s at -u: compact runs expected", [line])
    case.expect_no_temp_left()
