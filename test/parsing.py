"""Odd SAM text, parsed as samtools 1.24 parses it.

rocksort must read SAM with the htslib samtools 1.24 is built on: every
difference between htslib releases in how a file is parsed (a U base, an
empty @CO line, an @SQ without LN) becomes a difference in the sorted output.
Each test writes one small SAM file, sorts it with the oracle and with
rocksort in both orders, and requires the same outcome: the same header and
records when the oracle succeeds, or, when it refuses the file, exit status 1,
one line on stderr naming the input, no output and no temporary data.

To run only these:  run_tests.py -k parse_
"""

import gzip
import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

from bgzf import bgzf_compress
from harness import (TIMEOUT, Failure, each, expect_error, expect_outcome_of, stderr_lines,
                     tail, write_bytes, write_text)
from resume import expect_fate_told, expect_finished, resumed_runs, runs_stored

HD = "@HD\tVN:1.6\tSO:unsorted"
SQ = "@SQ\tSN:c1\tLN:5000"


def record(name, flag=0, rname="c1", pos=100, seq="ACGTACGTAC", qual="IIIIIIIIII",
           cigar=None, tags=()):
    cigar = cigar or (f"{len(seq)}M" if seq != "*" and rname != "*" else "*")
    fields = [name, str(flag), rname, str(pos), "30" if rname != "*" else "0", cigar,
              "*", "0", "0", seq, qual, *tags]
    return "\t".join(fields)


def reads(n=6, unplaced=False, **kw):
    """A few records at falling positions, so that the sort moves them;
    unplaced: unmapped records with no reference."""
    if unplaced:
        return [record(f"r{n - i}", flag=4, rname="*", pos=0, **kw) for i in range(n)]
    return [record(f"r{i}", pos=1000 - 100 * i, **kw) for i in range(n)]


# name -> SAM text.  Headers and records that htslib validates, or that one
# htslib release parses differently from another.
CASES = {
    "u_base": [HD, SQ, *reads(seq="ACGUUGCAUN")],
    "lowercase_and_iupac_bases": [HD, SQ, *reads(seq="acgtRYKMSW")],
    "equals_base": [HD, SQ, *reads(seq="ACG=TACGTA")],
    "empty_co_lines": [HD, SQ, "@CO", "@CO\t", "@CO\ttext", *reads()],
    "co_with_tabs": [HD, SQ, "@CO\ta\tb\t\tc", *reads()],
    "sq_without_ln": [HD, "@SQ\tSN:c1", *reads()],
    "sq_ln_zero": [HD, "@SQ\tSN:c1\tLN:0", *reads(unplaced=True)],
    "sq_ln_not_a_number": [HD, "@SQ\tSN:c1\tLN:abc", *reads()],
    "sq_ln_negative": [HD, "@SQ\tSN:c1\tLN:-5", *reads()],
    "sq_ln_past_2g": [HD, "@SQ\tSN:c1\tLN:3000000000", *reads()],
    "sq_without_sn": [HD, "@SQ\tLN:5000", *reads(unplaced=True)],
    "sq_duplicate_sn": [HD, SQ, "@SQ\tSN:c1\tLN:6000", *reads()],
    "sq_bad_tag_syntax": [HD, "@SQ\tSNc1\tLN:5000", *reads(unplaced=True)],
    "hd_not_first": [SQ, HD, *reads()],
    "hd_without_vn": ["@HD\tSO:unsorted", SQ, *reads()],
    "rg_without_id": [HD, SQ, "@RG\tSM:s1", *reads()],
    "rg_duplicate_id": [HD, SQ, "@RG\tID:g\tSM:a", "@RG\tID:g\tSM:b",
                        *reads(tags=["RG:Z:g"])],
    "unknown_header_type": [HD, SQ, "@XY\tAB:cd", *reads()],
    "header_line_lowercase_type": [HD, SQ, "@co\tlowercase", *reads()],
    "record_unknown_rname": [HD, SQ, *reads(rname="c9")],
    "record_qual_length_mismatch": [HD, SQ, *reads(qual="III")],
    "record_cigar_length_mismatch": [HD, SQ, *reads(cigar="5M")],
    "record_negative_pos": [HD, SQ, *reads()[:3], record("neg", pos=-5)],
    "record_too_few_fields": [HD, SQ, *reads()[:3], "short\t0\tc1\t5"],
    "crlf_line_ends": [HD, SQ, *reads()],
}
CRLF = {"crlf_line_ends"}


def write_case(case, name):
    path = os.path.join(case.dir, f"{name}.sam")
    end = "\r\n" if name in CRLF else "\n"
    write_text(path, end.join(CASES[name]) + end)
    return path


@each((f"parse_{name}", name) for name in CASES)
def test_parse_case(case, name):
    src = write_case(case, name)
    for order, tag in (([], "coord"), (["-n"], "name")):
        expect_outcome_of(case, src, order, name=tag)


def test_parse_refusals_are_real(case):
    """The header cases that samtools 1.24 refuses stay refused: if the
    oracle changed its mind, the refusal tests above would prove nothing."""
    for name in ("sq_without_ln", "sq_ln_not_a_number"):
        src = write_case(case, name)
        oracle = case.session.oracle("sort", ["-o", case.out("x.bam"), src])
        if oracle.returncode == 0:
            raise Failure(f"samtools 1.24 now accepts {name}")


# --- a last line without a newline -----------------------------------------------
#
# Plain SAM has no end marker.  A last line without a newline that parses is a
# whole record to samtools 1.24, and to rocksort too (issue #32).  A line cut
# where it no longer parses is refused by both.  A cut at the end of a field, or
# inside the last tag's value, parses: rocksort sorts it as 1.24 does and warns,
# in one line naming the file.

NO_NEWLINE_LAST = record("z_last", pos=150, seq="ACGTACGTAC", qual="ABCDEFGHIJ",
                         tags=["NM:i:123", "MD:Z:10", "XA:Z:c1,+150,10M,0"])
NO_NEWLINE_TEXT = "\n".join([HD, SQ, *reads(), NO_NEWLINE_LAST])
# Where to cut the last line: (name, the text it ends with).
LAST_LINE_CUTS = [
    ("qname", "z_la"),
    ("cigar", "\t1"),
    ("seq", "ACGTA"),
    ("qual", "ABCDEFG"),
    ("qual_whole", "ABCDEFGHIJ"),
    ("before_tags", "ABCDEFGHIJ\t"),
    ("tag_type", "NM:i"),
    ("tag_value", "NM:i:12"),
    ("last_tag_value", "XA:Z:c1,+15"),
    ("last_tag_empty_value", "XA:Z:"),
]


def _cut_after(text, ending):
    """text up to the last occurrence of `ending` in its last line, inclusive."""
    start = text.rindex("\n") + 1
    at = text.rindex(ending, start) + len(ending)
    return text[:at]


def sort_like_oracle(case, src, order, name, stdin=None):
    """The oracle's outcome (expect_outcome_of's rules) -> rocksort's
    stderr lines when both succeeded, else None."""
    expected = os.path.join(case.dir, f"expected_{name}.bam")
    oracle = case.session.oracle("sort", [*order, "--no-PG", "-o", expected, src])
    actual = case.out(f"{name}.bam")
    args = [*order, "-T", case.temp_prefix, "-o", actual]
    result = case.rocksort(args + ["-"] if stdin else args + [src],
                           stdin=src if stdin else None)
    if oracle.returncode != 0:
        expect_error(case, result, [os.path.basename(src)], actual)
        return None
    if result.returncode != 0:
        raise Failure(f"rocksort failed ({result.returncode}) where the oracle "
                      "succeeded", tail(result.stderr))
    case.expect_same(actual, expected)
    case.expect_no_temp_left()
    return [l for l in result.stderr.decode(errors="replace").splitlines() if l.strip()]


def expect_warning(lines, src):
    name = os.path.basename(src)
    if len(lines) != 1 or "warning" not in lines[0] or name not in lines[0] \
            or "newline" not in lines[0]:
        raise Failure(f"expected one warning line naming {name} and the missing "
                      "newline", lines[:5])


def expect_silent(lines):
    if lines:
        raise Failure("expected nothing on stderr", lines[:5])


def test_parse_no_final_newline_sam(case):
    """A whole last record without its newline: sorted as 1.24 sorts it,
    both orders, with the one warning line."""
    src = os.path.join(case.dir, "no_newline.sam")
    write_text(src, NO_NEWLINE_TEXT)
    for order, tag in (([], "coord"), (["-n"], "name")):
        lines = sort_like_oracle(case, src, order, tag)
        if lines is None:
            raise Failure("samtools 1.24 refused a whole last record")
        expect_warning(lines, src)


COMPRESSIONS = {"gzipped": gzip.compress, "bgzipped": bgzf_compress}


def sorted_with_warning(case, args, expected, stdin=None, name=None):
    """rocksort args (its input last, or '-' with stdin's bytes): exit 0,
    the output 1.24 gave (expected), one warning line naming the input and
    its missing newline."""
    out = case.out("out.bam")
    if os.path.exists(out):
        os.remove(out)
    if stdin is None:
        result = case.rocksort(["-T", case.temp_prefix, "-o", out, *args])
    else:
        result = through_a_pipe(case, stdin, ["-T", case.temp_prefix, "-o", out, *args])
    if result.returncode != 0:
        raise Failure(f"{name}: rocksort exited with {result.returncode}", tail(result.stderr))
    expect_warning(stderr_lines(result.stderr), "'-'" if stdin is not None else args[-1])
    case.expect_same(out, expected)
    case.expect_no_temp_left()


@each((f"parse_no_final_newline_{name}_sam", name) for name in COMPRESSIONS)
def test_parse_no_final_newline_compressed_sam(case, name):
    """Gzipped or bgzipped SAM whose text has no final newline (issue #50
    item 8): its compression's end shows a whole file, not a whole text,
    which may have been cut before it was compressed.  Given by name it
    gets the plain twin's warning, at -@ 0 (read on this thread) and -@ 4
    (parsed by htslib's threads, its text's last byte read again), and
    1.24's records; on a stream it is refused as a plain stream is.  So does a text cut inside its
    header, given by name."""
    compress = COMPRESSIONS[name]
    plain = os.path.join(case.dir, "no_newline.sam")
    write_text(plain, NO_NEWLINE_TEXT)
    src = os.path.join(case.dir, f"no_newline.{name}.sam.gz")
    write_bytes(src, compress(NO_NEWLINE_TEXT.encode()))
    expected = os.path.join(case.dir, "expected.bam")
    case.session.oracle_ok("sort", ["--no-PG", "-o", expected, src])
    for threads in ("0", "4"):
        sorted_with_warning(case, ["-@", threads, plain], expected, name="the plain twin")
        sorted_with_warning(case, ["-@", threads, src], expected, name=f"{name} by name")
        out = case.out(f"stream{threads}.bam")
        result = through_a_pipe(case, compress(NO_NEWLINE_TEXT.encode()),
                                ["-@", threads, "-T", case.temp_prefix, "-o", out])
        expect_cut_refused(case, result, "'-'", out)
    header = "\n".join(HEADER_ONLY)
    src = os.path.join(case.dir, f"header_cut.{name}.sam.gz")
    write_bytes(src, compress(header.encode()))
    case.session.oracle_ok("sort", ["--no-PG", "-o", expected, src])
    for threads in ("0", "4"):
        sorted_with_warning(case, ["-@", threads, src], expected, name=f"{name} header by name")


def test_parse_final_newline_compressed_sam_silent(case):
    """The same texts whole, with their final newline: no warning, however
    compressed and read."""
    text = (NO_NEWLINE_TEXT + "\n").encode()
    for name, compress in COMPRESSIONS.items():
        src = os.path.join(case.dir, f"whole.{name}.sam.gz")
        write_bytes(src, compress(text))
        for threads in ("0", "4"):
            lines = sort_like_oracle(case, src, ["-@", threads], f"{name}{threads}")
            expect_silent(lines)
        expect_stream_sorted(case, (compress(text), f"whole_{name}"), ".sam.gz")


# --- a stream whose last line has no newline --------------------------------------
#
# A stream from an aligner ends with a newline; without one its writer died
# mid-line (the SAM form of a BAM without its EOF marker), and a cut at the end
# of a field parses.  rocksort refuses it on a stream, wherever the cut, at any
# -@ (htslib's threaded parsing would not say), with one line naming the cut; the
# same text given by name is sorted with a warning (above), and the whole text
# on a stream is sorted as samtools 1.24 sorts it.

STREAM_CUTS = [*LAST_LINE_CUTS, ("whole_record", NO_NEWLINE_LAST)]


def through_a_pipe(case, data, args):
    """rocksort reading data from a pipe, as `cat FILE | samtools rocksort -`."""
    env = dict(case.session.env, TMPDIR=case.tmp)
    return subprocess.run([*case.session.rocksort_cmd, *args, "-"], input=data,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=case.out_dir, env=env, timeout=TIMEOUT)


def expect_cut_refused(case, result, name, out):
    """Exit 1, one line naming the input and its last line's missing newline,
    no output, no temporary data."""
    line = expect_error(case, result, [name], out)
    if "no newline" not in line:
        raise Failure("the line does not name the missing newline", [line])


@each((f"parse_stream_last_line_cut_in_{cut_name}", ending) for cut_name, ending in STREAM_CUTS)
def test_parse_stream_cut(case, ending):
    text = _cut_after(NO_NEWLINE_TEXT, ending).encode()
    for threads in ("0", "4"):
        out = case.out(f"threads{threads}.bam")
        result = through_a_pipe(case, text, ["-@", threads, "-T", case.temp_prefix, "-o", out])
        expect_cut_refused(case, result, "'-'", out)
    if ending == NO_NEWLINE_LAST:
        expect_stream_sorted(case, (text + b"\n", "plain"), ".sam")
        # Bgzipped SAM ends with the BGZF EOF marker, which tells a whole
        # stream but not a whole text (`aligner | bgzip`): refused too.
        for threads in ("0", "4"):
            out = case.out(f"bgzipped{threads}.bam")
            result = through_a_pipe(case, bgzf_compress(text),
                                    ["-@", threads, "-T", case.temp_prefix, "-o", out])
            expect_cut_refused(case, result, "'-'", out)


def expect_stream_sorted(case, data_and_name, ext, warned=False):
    """data on a pipe, at -@ 0 and 4: sorted as 1.24 sorts it, silently (or
    warned: with one line on its missing final newline)."""
    data, name = data_and_name
    src = os.path.join(case.dir, name + ext)
    write_bytes(src, data)
    expected = os.path.join(case.dir, f"expected_{name}.bam")
    case.session.oracle_ok("sort", ["--no-PG", "-o", expected, src])
    for threads in ("0", "4"):
        out = case.out(f"{name}{threads}.bam")
        result = through_a_pipe(case, data, ["-@", threads, "-T", case.temp_prefix, "-o", out])
        if result.returncode != 0:
            raise Failure(f"{name}: rocksort exited with {result.returncode}",
                          tail(result.stderr))
        if warned:
            expect_warning(stderr_lines(result.stderr), "'-'")
        else:
            expect_silent(stderr_lines(result.stderr))
        case.expect_same(out, expected)
    case.expect_no_temp_left()


# A stream that ends inside its header: the writer died before any record.  A
# cut @SQ's LN would be a wrong header with exit 0.  htslib reads the header
# itself and forgets its lines' ends, so the header is peeked at before htslib
# reads it; whole headers with "\r\n" ends or a bare @CO line must still be
# sorted.
HEADER_ONLY = [HD, SQ, "@SQ\tSN:c2\tLN:7000"]
HEADER_CUTS = [("last_line_whole", "\n".join(HEADER_ONLY)),
               ("sq_length", "\n".join(HEADER_ONLY)[:-2])]
WHOLE_HEADERS = [("lf", "\n".join(HEADER_ONLY) + "\n"),
                 ("crlf", "\r\n".join(HEADER_ONLY) + "\r\n"),
                 ("bare_co", "\n".join([*HEADER_ONLY, "@CO"]) + "\n")]


def test_parse_stream_cut_in_header(case):
    for cut_name, text in HEADER_CUTS:
        for threads in ("0", "4"):
            out = case.out(f"{cut_name}{threads}.bam")
            result = through_a_pipe(case, text.encode(),
                                    ["-@", threads, "-T", case.temp_prefix, "-o", out])
            expect_cut_refused(case, result, "'-'", out)
    for name, text in WHOLE_HEADERS:
        expect_stream_sorted(case, (text.encode(), f"header_{name}"), ".sam")


# Every cut of a small text on a stream (issue #50 item 3: a CRLF header cut
# inside a line, or one cut just after "@CO" or "@CO<TAB>", was taken with exit
# 0).  A cut that falls just after a newline leaves a whole text, which must
# sort as 1.24 sorts it, silently; any other is refused: exit 1, one line naming
# the input, no output.  Each run is short, and most wait out the grace a
# refusal gives a signal, so they run side by side.
EVERY_CUT_LINES = [HD, SQ, "@SQ\tSN:c2\tLN:7000", "@CO\tcut here",
                   record("r1", rname="c2", pos=50), record("r2", pos=90)]
EVERY_CUT_WORKERS = 8


def expect_cut_outcome(case, data, threads, expected):
    """rocksort -@ threads on the bytes data from a pipe: expected is the
    oracle's output for them, or None where it must refuse.  -> [] or the
    problem's lines."""
    name = f"cut{len(data)}_threads{threads}"
    out = case.out(f"{name}.bam")
    env = dict(case.session.env, TMPDIR=case.tmp)
    result = subprocess.run([*case.session.rocksort_cmd, "-@", threads, "-T",
                             os.path.join(case.tmp, name), "-o", out, "-"], input=data,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=case.out_dir, env=env, timeout=TIMEOUT)
    lines = stderr_lines(result.stderr)
    cut = f"cut after {len(data)} bytes ({data[-12:]!r}), -@ {threads}"
    if expected is None:
        if result.returncode != 1 or len(lines) != 1 or "'-'" not in lines[0] \
                or os.path.lexists(out):
            return [f"{cut}: exit {result.returncode}, expected a one-line refusal naming "
                    f"'-' and no output", *lines[:3]]
        return []
    if result.returncode != 0 or lines:
        return [f"{cut}: exit {result.returncode}, expected 0 and a silent sort", *lines[:3]]
    try:
        case.expect_same(out, expected)
    except Failure as failure:
        return [f"{cut}: {failure.reason}", *failure.details[:3]]
    return []


def oracle_for_prefix(case, data):
    """samtools 1.24's output for data (a whole text) as a file, or None if
    it refuses it."""
    src = os.path.join(case.dir, f"prefix{len(data)}.sam")
    write_bytes(src, data)
    expected = os.path.join(case.dir, f"expected{len(data)}.bam")
    oracle = case.session.oracle("sort", ["--no-PG", "-o", expected, src])
    return expected if oracle.returncode == 0 else None


@each((f"parse_stream_every_cut_{name}", end) for name, end in (("lf", "\n"), ("crlf", "\r\n")))
def test_parse_stream_every_cut(case, end):
    text = (end.join(EVERY_CUT_LINES) + end).encode()
    whole = [n for n in range(1, len(text) + 1) if text[n - 1] == ord("\n")]
    with ThreadPoolExecutor(max_workers=EVERY_CUT_WORKERS) as pool:
        expected = dict(zip(whole, pool.map(lambda n: oracle_for_prefix(case, text[:n]), whole)))
        if None in expected.values():
            raise Failure("test is wrong: samtools 1.24 refuses a whole text",
                          [str(n) for n, e in expected.items() if e is None])
        runs = [(n, threads) for n in range(len(text) + 1) for threads in ("0", "4")]
        problems = pool.map(lambda run: expect_cut_outcome(case, text[:run[0]], run[1],
                                                           expected.get(run[0])), runs)
        problems = [p for p in problems if p]
    if problems:
        raise Failure(f"{len(problems)} of {len(runs)} cuts handled wrongly",
                      [line for p in problems[:4] for line in p])
    case.expect_no_temp_left()


def test_parse_fifo_last_line_cut(case):
    """A FIFO given by name is a stream too: its size is not known."""
    fifo = os.path.join(case.dir, "cut.fifo")
    os.mkfifo(fifo)
    text = _cut_after(NO_NEWLINE_TEXT, "NM:i:12").encode()

    def write():
        with open(fifo, "wb") as f:
            f.write(text)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    out = case.out("out.bam")
    result = case.rocksort(["-T", case.temp_prefix, "-o", out, fifo])
    writer.join(TIMEOUT)
    expect_cut_refused(case, result, "cut.fifo", out)


def test_parse_stream_cut_with_resume_keeps_the_state(case):
    """--resume on a stream cut before its last tag, after many runs: refused,
    DIR kept without the cut record; the whole stream then resumes from it
    and gives 1.24's records."""
    with open(case.input("bulk.sam"), "rb") as f:
        whole = f.read()
    cut = whole[:whole.rindex(b"\t")]      # before the last record's only tag: it parses
    state = os.path.join(case.dir, "state")
    args = ["-m", "1M", "--resume", state, "-T", case.temp_prefix, "-o", case.out("out.bam")]
    result = through_a_pipe(case, cut, args)
    lines = stderr_lines(result.stderr)
    if result.returncode != 1 or len(lines) != 2 or "no newline" not in lines[0]:
        raise Failure(f"exit {result.returncode}; expected 1, the cut's line and the state's",
                      lines[:5])
    expect_fate_told(lines, state)
    if runs_stored(state) < 2:
        raise Failure("the test is wrong: too few runs stored before the cut")
    result = through_a_pipe(case, whole, ["-v", *args])
    lines = stderr_lines(result.stderr)
    if result.returncode != 0 or not resumed_runs(lines):
        raise Failure(f"the whole stream: exit {result.returncode}, expected 0 and a resume",
                      lines[-5:])
    expect_finished(case, state, "bulk.sam", [])


def test_parse_no_final_newline_spilled(case):
    """40,000 records, the last without its newline, through many runs."""
    with open(case.input("bulk.sam")) as f:
        text = f.read().rstrip("\n")
    src = os.path.join(case.dir, "bulk_no_newline.sam")
    write_text(src, text)
    for order, tag in (([], "coord"), (["-n"], "name")):
        expected = os.path.join(case.dir, f"expected_{tag}.bam")
        case.session.oracle_ok("sort", [*order, "--no-PG", "-o", expected, src])
        actual = case.out(f"{tag}.bam")
        result = case.rocksort_ok([*order, "-m", "1M", "-T", case.temp_prefix,
                                   "-o", actual, src])
        case.expect_same(actual, expected)
        case.expect_no_temp_left()
        expect_warning(stderr_lines(result.stderr), src)


@each((f"parse_last_line_cut_in_{cut_name}", cut_name, ending)
      for cut_name, ending in LAST_LINE_CUTS)
def test_parse_last_line_cut(case, cut_name, ending):
    src = os.path.join(case.dir, f"cut_{cut_name}.sam")
    write_text(src, _cut_after(NO_NEWLINE_TEXT, ending))
    for order, tag in (([], "coord"), (["-n"], "name")):
        lines = sort_like_oracle(case, src, order, tag)
        if lines is not None:
            expect_warning(lines, src)


def test_parse_last_line_cuts_are_real(case):
    """The cuts above give both outcomes with samtools 1.24: some are
    refused, some parse.  If 1.24 changed its mind, the tests above would
    cover one side only."""
    outcomes = {}
    for cut_name, ending in LAST_LINE_CUTS:
        src = os.path.join(case.dir, f"cut_{cut_name}.sam")
        write_text(src, _cut_after(NO_NEWLINE_TEXT, ending))
        oracle = case.session.oracle("sort", ["-o", case.out(f"{cut_name}.bam"), src])
        outcomes[cut_name] = oracle.returncode == 0
    refused = {n for n, ok in outcomes.items() if not ok}
    if refused != {"qname", "cigar", "seq", "qual", "tag_type"}:
        raise Failure("samtools 1.24 refuses other cuts than expected", sorted(refused))
