"""Fault tests of `samtools rocksort`.

They damage inputs and the environment the way it happens outside a test
suite: a BAM cut anywhere (inside a block, between blocks, while it is
being read), corrupted inside a deflated block, with the input big enough
to spill many runs and to merge them in the background; a CRAM cut between
containers, a SAM cut inside a line; records naming references the header
lacks; a -T directory renamed while runs are written to it; hundreds of
sorted runs under `ulimit -n 64` and lower; a full disk and a closed pipe
under a threaded writer.  A failure must end with exit
status 1, one line naming the file and the real cause, no temporary data
and an existing -o file untouched byte for byte; a success must give the
oracle's records.

Inputs are made once per session with fixed seeds.  To run only these:
    run_tests.py -k 'fault_*'
(the disk-full tests exist only when running as root: they mount a tmpfs
inside the test's own directory).
"""

import gzip
import hashlib
import os
import random
import re
import signal
import subprocess

import samdata
import tmpfs
from background import Background, has_sorted_run, listing, process_state, wait_until
from bgzf import BGZF_EOF, bgzf_blocks, flip_byte_in_block
from faultdata import bam_bytes, bam_record, cram_containers, long_reads_bam
from harness import (PYTHON, Failure, each, release_only, run, stderr_lines, tail, write_bytes,
                     write_text)

SPILL = ["-m", "1M"]
MERGING = [*SPILL, "-s", "60M"]   # background merges from the first runs on
PRECIOUS = b"an older file that a failed sort must leave alone\n" * 400
# Sets RLIMIT_NOFILE, soft and hard, as `ulimit -n N` does, then execs.
LIMIT_FILES = ("import resource, os, sys; n = int(sys.argv[1]); "
               "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
               "os.execvp(sys.argv[2], sys.argv[2:])")


# --- inputs ------------------------------------------------------------------

class Inputs:
    """Inputs made once per session, beside the harness's own."""

    def path(self, session, name):
        path = os.path.join(session.inputs_dir, "faults-" + name)
        with session.lock_for(("faults-input", name)):
            if not os.path.exists(path):
                self._make(session, name, path + ".part")
                os.rename(path + ".part", path)
        return path

    def _make(self, session, name, part):
        if name == "big.bam":   # ~200k short reads, 28 MB: ~190 runs with -m 1M
            sam = part + ".sam"
            write_text(sam, samdata.bulk(random.Random("faults-big"), count=200000))
            session.oracle_ok("view", ["-b", "--no-PG", "-o", part, sam])
            os.remove(sam)
        elif name == "long.bam":
            write_bytes(part, long_reads_bam(random.Random("faults-long")))
        elif name == "long_noisy_start.bam":    # long.bam's first 12 runs of noisy reads
            write_bytes(part, long_reads_bam(random.Random("faults-long"), noisy=1300))
        elif name == "bulk.cram":   # no reference needed to read it back
            session.oracle_ok("view", ["-C", "--no-PG", "--output-fmt-option", "no_ref=1",
                                       "-o", part, session.input("bulk.sam")])


INPUTS = Inputs()


# --- the tests ---------------------------------------------------------------------

def big(case):
    with open(INPUTS.path(case.session, "big.bam"), "rb") as f:
        return f.read()


def write_input(case, name, data):
    path = os.path.join(case.dir, name)
    write_bytes(path, data)
    return path


def guard_output(case):
    out = case.out("out.bam")
    write_bytes(out, PRECIOUS)
    return out


def expect_one_line(case, result):
    """Exit status 1, one line on stderr, no temporary data. -> the line"""
    if result.returncode != 1:
        raise Failure(f"exit status {result.returncode}, expected 1", tail(result.stderr))
    lines = stderr_lines(result.stderr)
    if len(lines) != 1:
        raise Failure(f"{len(lines)} lines on stderr, expected 1", lines[:5])
    case.expect_no_temp_left()
    return lines[0]


def expect_refused(case, result, mention, cause, out):
    """expect_one_line(), the line naming `mention` and matching `cause`,
    the file at `out` as it was."""
    line = expect_one_line(case, result)
    if mention not in line or not re.search(cause, line):
        raise Failure(f"the message names not both {mention!r} and /{cause}/", [line])
    with open(out, "rb") as f:
        if f.read() != PRECIOUS:
            raise Failure("the existing output was changed by the failed run")
    case.expect_only_files(case.out_dir, [os.path.basename(out)])
    return line


def refuse(case, src, extra=(), stdin=None, cause="truncated|corrupt"):
    """Sorts a damaged input (a file, or stdin when stdin is given) over
    an existing output: it must be refused."""
    out = guard_output(case)
    args = [*extra, "-T", case.temp_prefix, "-o", out]
    result = case.rocksort(args + ["-"] if stdin else args + [src], stdin=stdin)
    return expect_refused(case, result, "'-'" if stdin else os.path.basename(src),
                          cause, out)


def off_boundary(data, offset):
    """The nearest offset at or after `offset` that is not where a BGZF
    block starts, so the cut lands inside a block."""
    starts = {o for o, _ in bgzf_blocks(data)}
    while offset in starts:
        offset += 1
    return offset


# 1. Cuts --------------------------------------------------------------------

def test_fault_cut_at_60_percent_in_a_block(case):
    """The outside case: a BAM cut with head -c at 60%, inside a block."""
    data = big(case)
    src = write_input(case, "cut60.bam", data[:off_boundary(data, len(data) * 6 // 10)])
    refuse(case, src, MERGING)


def test_fault_cut_at_60_percent_from_stdin_while_merging(case):
    """The same cut read from a pipe: it shows only after some 110 runs
    were written and background merges started."""
    data = big(case)
    src = write_input(case, "cut60.bam", data[:off_boundary(data, len(data) * 6 // 10)])
    refuse(case, src, MERGING, stdin=src)


def test_fault_cut_at_random_offsets(case):
    data = big(case)
    rng = random.Random(24)
    for i in range(6):
        cut = off_boundary(data, rng.randrange(len(data) // 50, len(data) - 1))
        src = write_input(case, f"cut_{cut}.bam", data[:cut])
        refuse(case, src, SPILL, stdin=src if i % 2 else None)
        os.remove(src)


def cut_between_blocks(case):
    data = big(case)
    blocks = bgzf_blocks(data)
    return write_input(case, "cut_between_blocks.bam",
                       data[:blocks[len(blocks) * 6 // 10][0]])


def test_fault_cut_between_blocks(case):
    """No partial block for htslib to notice: only the missing EOF
    marker shows the loss (samtools 1.24 warns and sorts the rest)."""
    refuse(case, cut_between_blocks(case), SPILL, cause="truncated")


def test_fault_cut_between_blocks_from_stdin(case):
    src = cut_between_blocks(case)
    refuse(case, src, MERGING, stdin=src, cause="truncated")


def test_fault_trailing_garbage(case):
    src = write_input(case, "garbage.bam", big(case) + b"garbage after the end\n")
    refuse(case, src, SPILL, cause="after its end|corrupt")


def cut_while_read(case, append_eof):
    """Sorts a copy of the big BAM; once a sorted run is on disk, stops
    rocksort, truncates the file at a block boundary past what it has
    read (appending an EOF block if asked: then only the size read
    shows it), and lets it go on."""
    data = big(case)
    src = write_input(case, "shrinking.bam", data)
    out = guard_output(case)
    with Background(case, [*SPILL, "-T", case.temp_prefix, "-o", out, src]) as bg:
        wait_until(lambda: has_sorted_run(case), "a sorted run was written", bg)
        bg.proc.send_signal(signal.SIGSTOP)
        try:
            pos = read_position(bg.proc.pid, src) or len(data)
            cut = next((o for o, _ in bgzf_blocks(data) if o > pos + (1 << 20)), None)
            if cut is None or cut > len(data) * 9 // 10:
                raise Failure(f"test is wrong: rocksort had read {pos} bytes when stopped")
            with open(src, "r+b") as f:
                f.truncate(cut)
                if append_eof:
                    f.seek(cut)
                    f.write(BGZF_EOF)
        finally:
            bg.proc.send_signal(signal.SIGCONT)
        bg.wait()
        result = subprocess.CompletedProcess(bg.proc.args, bg.proc.returncode,
                                             b"", bg.stderr())
    return expect_refused(case, result, "shrinking.bam", "truncated", out)


def read_position(pid, path):
    """Where process pid's descriptor for path stands (/proc fdinfo)."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.path.realpath(f"/proc/{pid}/fd/{fd}") == os.path.realpath(path):
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    return int(f.readline().split()[1])
        except OSError:
            pass
    return None


def test_fault_file_cut_while_being_read(case):
    cut_while_read(case, append_eof=False)


def test_fault_file_shortened_while_being_read_size_shows_it(case):
    """The shortened file ends with an EOF block, so it reads as
    complete: only the bytes read against the size at open show it."""
    line = cut_while_read(case, append_eof=True)
    if not re.search(r"\b\d+ of \d+\b", line):
        raise Failure("the message does not give the bytes read and the size", [line])


def test_fault_corrupt_deflated_byte_while_merging(case):
    """One byte changed inside a deflated block at 70%, read after some
    130 runs were written and merged in the background."""
    data = big(case)
    index = len(bgzf_blocks(data)) * 7 // 10
    src = write_input(case, "corrupt.bam", flip_byte_in_block(data, index))
    refuse(case, src, MERGING)


def cram_cut(case):
    with open(INPUTS.path(case.session, "bulk.cram"), "rb") as f:
        data = f.read()
    containers = cram_containers(data)
    if len(containers) < 6:
        raise Failure("test is wrong: the CRAM has too few containers")
    return write_input(case, "cut.cram", data[:containers[len(containers) // 2]])


def test_fault_cram_cut_between_containers(case):
    refuse(case, cram_cut(case), SPILL, cause="truncated")


def test_fault_cram_cut_between_containers_from_stdin_threads(case):
    """With a thread pool htslib forgets that the EOF container was
    missing (cram_eof() says 1 either way)."""
    src = cram_cut(case)
    refuse(case, src, ["-@", "4", *SPILL], stdin=src, cause="truncated")


def test_fault_cram_cut_inside_a_container_from_stdin(case):
    """A stream cut inside a container fails to decode once it is read to
    its end.  On one thread the line says truncated and does not blame the
    reference; read ahead on threads, where a whole small CRAM without its
    reference is read to its end too, it names both."""
    with open(INPUTS.path(case.session, "bulk.cram"), "rb") as f:
        data = f.read()
    containers = cram_containers(data)
    if len(containers) < 6:
        raise Failure("test is wrong: the CRAM has too few containers")
    middle = len(containers) // 2
    cut = (containers[middle] + containers[middle + 1]) // 2
    src = write_input(case, "cut_inside.cram", data[:cut])
    line = refuse(case, src, SPILL, stdin=src, cause="truncated")
    if "reference" in line or "inside a container" not in line:
        raise Failure("on one thread the cut is not told as a cut inside a container", [line])
    refuse(case, src, ["-@", "4", *SPILL], stdin=src, cause="truncated")


def test_fault_cram_damaged_small_stream_with_reference(case):
    """A whole small CRAM stream with a byte damaged in its middle, read
    ahead on threads with --reference given: it is read to its end before
    the failure comes back, which then tells nothing, so the line must not
    claim a cut inside a container."""
    whole = case.out("small.cram")
    case.session.oracle_ok("view", ["-C", "--no-PG", "--output-fmt-option", "no_ref=1",
                                    "-o", whole, case.input("mixed.sam")])
    with open(whole, "rb") as f:
        data = bytearray(f.read())
    os.remove(whole)
    data[len(data) // 2] ^= 0x55
    src = write_input(case, "damaged.cram", bytes(data))
    line = refuse(case, src, ["-@", "4", "--reference", case.input("mixed.fa")], stdin=src)
    if "inside a container" in line:
        raise Failure("a whole stream is said to end inside a container", [line])


def test_fault_sam_cut_inside_its_last_line(case):
    """Cut inside a record, in the middle of the file: the last line no
    longer parses, and the cut is refused like samtools 1.24 refuses it."""
    with open(case.input("bulk.sam"), "rb") as f:
        data = f.read()
    cut = data.index(b"\tNM:i:", len(data) // 2) - 3   # inside QUAL
    refuse(case, write_input(case, "cut.sam", data[:cut]), SPILL)


def test_fault_sam_cut_before_its_last_tags_warns(case):
    """Cut just before a record's tags: the last line still parses, as a
    record without tags.  samtools 1.24 sorts it; so does rocksort, with
    one warning line naming the file, since no cut can be seen."""
    with open(case.input("bulk.sam"), "rb") as f:
        data = f.read()
    src = write_input(case, "cut.sam", data[:data.index(b"\tNM:i:", len(data) // 2)])
    expected = case.out("expected.bam")
    case.session.oracle_ok("sort", ["--no-PG", "-o", expected, src])
    actual = case.out("out.bam")
    result = case.rocksort_ok([*SPILL, "-T", case.temp_prefix, "-o", actual, src])
    case.expect_same(actual, expected)
    case.expect_no_temp_left()
    lines = stderr_lines(result.stderr)
    if len(lines) != 1 or "warning" not in lines[0] or "cut.sam" not in lines[0]:
        raise Failure("expected one warning line naming cut.sam", lines[:5])


# 2. References the header lacks ------------------------------------------------

ONE_SQ = "@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:c0\tLN:10000\n"


def test_fault_tid_beyond_header(case):
    records = [bam_record(f"r{i}", i % 61, 100 + i) for i in range(200)]
    src = write_input(case, "tid.bam", bam_bytes(ONE_SQ, ["c0"], records))
    refuse(case, src, cause=r"'r1'.* reference id 1\b.*\b1 reference\b")


def test_fault_mate_tid_beyond_header(case):
    records = [bam_record(f"m{i}", 0, 100 + i, i % 61, 5) for i in range(200)]
    src = write_input(case, "mtid.bam", bam_bytes(ONE_SQ, ["c0"], records))
    refuse(case, src, cause=r"'m1'.* mate reference id 1\b.*\b1 reference\b")


def test_fault_tid_beyond_binary_header_text_lists_more(case):
    """61 @SQ lines in the text, one reference in the binary header
    (samtools 1.24 refuses it)."""
    text = "@HD\tVN:1.6\tSO:unsorted\n" + "".join(
        f"@SQ\tSN:c{i}\tLN:10000\n" for i in range(61))
    records = [bam_record(f"r{i}", i % 61, 100 + i) for i in range(200)]
    src = write_input(case, "tid_text.bam", bam_bytes(text, ["c0"], records))
    refuse(case, src, cause=r"'r1'.* reference id 1\b")


# 3. Few open files, many runs ------------------------------------------------------

EXPECTED_DIGESTS = {}   # (input, options) -> the oracle's output, decoded, hashed


def expected_digest(case, name, args):
    key = (name, tuple(args))
    with case.session.lock_for(("faults-expected", key)):
        if key not in EXPECTED_DIGESTS:
            tag = hashlib.sha256(repr(key).encode()).hexdigest()[:12]
            out = os.path.join(case.session.expected_dir, f"faults-{tag}.bam")
            case.session.oracle_ok("sort", [*args, "--no-PG", "-o", out,
                                            INPUTS.path(case.session, name)])
            EXPECTED_DIGESTS[key] = decoded_digest(out)
            os.remove(out)
        return EXPECTED_DIGESTS[key]


def decoded_digest(path):
    digest = hashlib.sha256()
    with gzip.open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def sort_with_file_limit(case, limit, order, threads, stdin, name="long.bam", extra=()):
    src = INPUTS.path(case.session, name)
    expected = expected_digest(case, name, order)
    out = case.out("out.bam")
    args = [*order, "--no-PG", "-v", "-@", str(threads), *SPILL, *extra,
            "-T", case.temp_prefix, "-o", out, "-" if stdin else src]
    result = run([PYTHON, "-c", LIMIT_FILES, str(limit),
                  *case.session.rocksort_cmd, *args], stdin=src if stdin else None,
                 cwd=case.out_dir, env=dict(case.session.env, TMPDIR=case.tmp))
    if result.returncode != 0:
        said = [line for line in result.stderr.decode(errors="replace").splitlines()
                if not line.startswith("[rocksort]")]
        raise Failure(f"exit status {result.returncode} under ulimit -n {limit}",
                      said[-5:] or tail(result.stderr))
    runs = re.search(rb"runs: (\d+) written", result.stderr)
    if not runs or int(runs[1]) < 240 // threads:
        raise Failure(f"test is wrong: {runs and int(runs[1])} sorted runs")
    if decoded_digest(out) != expected:
        raise Failure("the output differs from the oracle's")
    case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, ["out.bam"])
    return result


# (ulimit -n, threads, order, input from stdin)
NOFILE_CASES = [
    (64, 1, "coord", False), (64, 1, "name", False), (64, 1, "coord", True),
    (64, 4, "coord", False), (64, 4, "name", True),
    (32, 1, "coord", False), (32, 1, "name", True), (32, 4, "coord", True),
    (32, 4, "name", False), (32, 8, "coord", True)]


@release_only("ulimit -n cases whose store paths the kept two take too",
              but=("fault_nofile_64_threads1_coord_file", "fault_nofile_32_threads4_coord_stdin"))
@each((f"fault_nofile_{limit}_threads{threads}_{order}_{'stdin' if stdin else 'file'}",
       limit, threads, order, stdin) for limit, threads, order, stdin in NOFILE_CASES)
def test_fault_nofile(case, limit, threads, order, stdin):
    sort_with_file_limit(case, limit, ["-n"] if order == "name" else [], threads, stdin)


# 4. Writing fails --------------------------------------------------------------------

def with_tmpfs(case, size, body):
    return tmpfs.with_tmpfs(case.dir, size, body, Failure, name="small_fs",
                            must_end_empty=False)


def rocksort_bounded(case, args):
    """rocksort that must end within a minute: a hang is a failure."""
    try:
        return subprocess.run([*case.session.rocksort_cmd, *args],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=case.out_dir, timeout=60,
                              env=dict(case.session.env, TMPDIR=case.tmp))
    except subprocess.TimeoutExpired:
        raise Failure("rocksort hung (killed after 60 s)")


def disk_full(case, fmt_args, name):
    def body(mount_point):
        out = os.path.join(mount_point, name)
        result = rocksort_bounded(case, [*fmt_args, "-@", "2", "-T", case.temp_prefix,
                                         "-o", out, case.input("bulk.bam")])
        line = expect_one_line(case, result)
        if "No space left on device" not in line or name not in line:
            raise Failure("the message does not give the cause and the path", [line])
        if os.listdir(mount_point):
            raise Failure("files left on the full file system", os.listdir(mount_point))
    with_tmpfs(case, "2M", body)


if os.geteuid() == 0:
    def test_fault_disk_full_output_threads_bam(case):
        disk_full(case, [], "out.bam")

    def test_fault_disk_full_output_threads_sam(case):
        """htslib's threaded SAM writer hangs on a failed write."""
        disk_full(case, ["-O", "sam"], "out.sam")

    def test_fault_disk_full_output_threads_sam_gz(case):
        disk_full(case, ["-O", "sam.gz"], "out.sam.gz")

    def test_fault_disk_full_at_the_last_flush(case):
        """File systems a little too small for the output, so that the
        last blocks fail as htslib's threads flush them at the close:
        the cause must still be the full disk, never 'Success'."""
        expected = case.session.expected("mixed.bam", [])
        size = os.path.getsize(expected) // 1024
        seen = []
        for kb in range(size - 28, size + 8, 4):
            def body(mount_point):
                out = os.path.join(mount_point, "out.bam")
                result = rocksort_bounded(case, ["-@", "2", "-T", case.temp_prefix,
                                                 "-o", out, case.input("mixed.bam")])
                if result.returncode == 0:
                    case.expect_same(out, expected)
                    os.remove(out)
                    return "ok"
                line = expect_one_line(case, result)
                if "No space left on device" not in line or "out.bam" not in line:
                    raise Failure(f"with {kb} kB: the message does not give the "
                                  "cause and the path", [line])
                if os.listdir(mount_point):
                    raise Failure("files left on the full file system",
                                  os.listdir(mount_point))
                return "full"
            seen.append(with_tmpfs(case, f"{kb}k", body))
        if "full" not in seen:
            raise Failure("test is wrong: the output always fitted", seen)


def test_fault_pipe_closed_threads_sam(case):
    """`rocksort -@ 2 -O sam ... | head -c 100`: the cause is the pipe."""
    args = ["-@", "2", "-O", "sam", *SPILL, "-T", case.temp_prefix, case.input("bulk.bam")]
    with Background(case, args, stdout_pipe=True) as bg:
        got = b""
        while len(got) < 100:
            chunk = bg.proc.stdout.read(100 - len(got))
            if not chunk:
                raise Failure(f"only {len(got)} bytes on stdout", bg.stderr_tail())
            got += chunk
        bg.proc.stdout.close()
        status = bg.wait("rocksort writing to a closed pipe")
        result = subprocess.CompletedProcess(args, status, b"", bg.stderr())
    line = expect_one_line(case, result)
    if "Broken pipe" not in line:
        raise Failure("the message does not say 'Broken pipe'", [line])


def temp_dir_renamed_while_loading(case, then, stopped=False, rename=None):
    """-T DIR (a directory) renamed once the load has written a run into
    it, or what rename(DIR) renames; then(bg) goes on from there (stopped:
    rocksort is stopped across the rename and then(), and continued after).
    -> (exit status, stderr, the renamed DIR, the existing output)"""
    temp, moved = os.path.join(case.dir, "T"), os.path.join(case.dir, "T.moved")
    os.mkdir(temp)
    with open(case.input("bulk.sam"), "rb") as f:
        data = f.read()
    out = guard_output(case)
    with Background(case, [*SPILL, "-T", temp, "-o", out, "-"], stdin=True) as bg:
        bg.feed(data[:len(data) // 3])
        wait_until(lambda: any(n.endswith(".sst") for d in listing(temp)
                               for n in listing(os.path.join(temp, d))), "a run written", bg)
        if stopped:
            bg.proc.send_signal(signal.SIGSTOP)
            wait_until(lambda: process_state(bg.proc.pid) == "T", "rocksort stopped", bg)
        if rename:
            moved = rename(temp)
        else:
            os.rename(temp, moved)
        then(bg, data[len(data) // 3:])
        if stopped:
            bg.proc.send_signal(signal.SIGCONT)
        status = bg.wait()
        stderr = bg.stderr()
    return status, stderr, moved, out


def feed_the_rest(bg, data):
    bg.feed(data)
    bg.end_input()


def expect_renamed_dir_emptied(moved):
    if os.listdir(moved):
        raise Failure("rocksort's files were left in the renamed -T directory",
                      sorted(os.listdir(moved))[:5])


def test_fault_temp_dir_renamed_while_loading(case):
    """The next run cannot be written: one line with the cause, exit 1,
    and the temporary database removed from where the directory went."""
    status, stderr, moved, out = temp_dir_renamed_while_loading(case, feed_the_rest)
    expect_refused(case, subprocess.CompletedProcess([], status, b"", stderr), "T/",
                   "No such file or directory", out)
    expect_renamed_dir_emptied(moved)


def test_fault_temp_dir_renamed_then_sigterm(case):
    """SIGTERM after the rename: 143, and the database removed all the same.
    rocksort is stopped across the rename and the signal: running, it could
    write its next run into the renamed DIR and fail (exit 1) before the
    signal came, on a busy machine."""
    def terminate(bg, data):
        bg.proc.send_signal(signal.SIGTERM)
    status, stderr, moved, out = temp_dir_renamed_while_loading(case, terminate, stopped=True)
    if status != 128 + signal.SIGTERM:
        raise Failure(f"exit status {status} after SIGTERM, expected 143", tail(stderr))
    expect_renamed_dir_emptied(moved)
    with open(out, "rb") as f:
        if f.read() != PRECIOUS:
            raise Failure("the existing output was changed by the interrupted run")


def renamed_in_the_readout(case, args, directory):
    """rocksort -u ARGS bulk.sam to a pipe; directory renamed once the
    readout has begun writing.  -> (exit status, stderr lines, the output,
    where directory went)"""
    moved = directory + ".moved"
    out = os.path.join(case.dir, "out.bam")
    with Background(case, [*SPILL, "-u", *args, case.input("bulk.sam")],
                    stdout_pipe=True) as bg:
        first = bg.proc.stdout.read(1)      # the readout has begun
        os.rename(directory, moved)
        write_bytes(out, first + bg.proc.stdout.read())
        status = bg.wait()
        lines = stderr_lines(bg.stderr())
    return status, lines, out, moved


def test_fault_state_dir_renamed_in_the_readout(case):
    """--resume DIR renamed while the output is written: the sort succeeds,
    and DIR goes as it does after every success, from where it went (its
    runs were left there, the whole input's size)."""
    state = os.path.join(case.dir, "state")
    status, lines, out, moved = renamed_in_the_readout(
        case, ["--resume", state, "-T", case.temp_prefix], state)
    if status != 0:
        raise Failure(f"exit status {status}, expected 0", lines[-3:])
    case.expect_same(out, case.session.expected("bulk.sam", ["-u"]))
    if os.path.exists(moved):
        raise Failure("the renamed state directory is left after the sort succeeded",
                      [f"{r}: {fs[:3]}" for r, _, fs in os.walk(moved)][:5])


def test_fault_state_dir_renamed_while_loading(case):
    """--resume DIR renamed once a run is in it: exit 1, the state kept
    where DIR went, and the last line names that place, not the old one."""
    state = os.path.join(case.dir, "state")
    moved = state + ".moved"
    with open(case.input("bulk.sam"), "rb") as f:
        data = f.read()
    args = [*SPILL, "--resume", state, "-T", case.temp_prefix, "-o", case.out("out.bam"), "-"]
    with Background(case, args, stdin=True) as bg:
        bg.feed(data[:len(data) // 3])
        wait_until(lambda: any(n.endswith(".sst") for n in listing(os.path.join(state, "db"))),
                   "a run written", bg)
        os.rename(state, moved)
        bg.feed(data[len(data) // 3:])
        bg.end_input()
        status = bg.wait()
        lines = stderr_lines(bg.stderr())
    if status != 1 or not lines or f"'{moved}'" not in lines[-1] or "kept" not in lines[-1]:
        raise Failure(f"exit status {status}; expected 1 and the state kept in '{moved}'",
                      lines[-3:])
    if not os.path.exists(os.path.join(moved, "journal")):
        raise Failure("the state was not kept where DIR went")


def test_fault_keep_temp_dir_renamed_in_the_readout(case):
    """-k: the database kept is named where it is, once -T was renamed."""
    temp = os.path.join(case.dir, "T")
    os.mkdir(temp)
    status, lines, out, moved = renamed_in_the_readout(case, ["-k", "-T", temp], temp)
    kept = [l.split(": ", 1)[1] for l in lines if "kept the temporary database" in l]
    if status != 0 or len(kept) != 1 or not os.path.isdir(kept[0]) \
            or not kept[0].startswith(moved + "/"):
        raise Failure(f"exit status {status}; expected 0 and the database named in {moved}",
                      lines[-3:])
    case.expect_same(out, case.session.expected("bulk.sam", ["-u"]))


def test_fault_temp_database_dir_renamed(case):
    """rocksort's own directory under -T renamed (not -T): still removed."""
    def rename_database(temp):
        os.rename(os.path.join(temp, listing(temp)[0]), os.path.join(temp, "renamed"))
        return temp
    status, stderr, temp, out = temp_dir_renamed_while_loading(case, feed_the_rest,
                                                               rename=rename_database)
    if status != 1 or listing(temp):
        raise Failure(f"exit status {status} (expected 1); left in -T", listing(temp))


# 5. Resource limits ------------------------------------------------------------------

def instrumented(case):
    """Sanitizers and valgrind reserve far more address space than any
    limit this test can set: there, `ulimit -v` says nothing of rocksort."""
    if len(case.session.rocksort_cmd) > 2:    # a wrapper such as valgrind
        return True
    with open(case.session.binary, "rb") as f:
        return b"__asan_init" in f.read()


def test_fault_address_space_limit(case):
    """`ulimit -v` too low for RocksDB's threads: RocksDB throws where
    it cannot go on.  Uncaught, that aborted with libstdc++'s two lines
    and left the temporary database; it must fail like anything else."""
    if instrumented(case):
        return
    import resource
    out = guard_output(case)
    args = [*case.session.rocksort_cmd, "-@", "4", *SPILL, "-T", case.temp_prefix,
            "-o", out, case.input("bulk.bam")]
    for kib in (150_000, 250_000, 400_000):
        def limit(kib=kib):
            resource.setrlimit(resource.RLIMIT_AS, (kib << 10, kib << 10))
        result = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=case.out_dir, timeout=120,
                                preexec_fn=limit,
                                env=dict(case.session.env, TMPDIR=case.tmp))
        if result.returncode != 0:
            expect_refused(case, result, "RocksDB", "memory|thread|Resource|alloc", out)
            return
    raise Failure("test is wrong: every limit let the sort through")
