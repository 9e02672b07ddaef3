"""Several inputs sorted into one output (issue #53, item 3):
`samtools rocksort [options] -o OUT in1 in2 ...`, and -b FILE.

The oracle for several inputs is samtools 1.24's `samtools cat` of them,
sorted by `samtools sort`: cat takes BAM or CRAM of one format only, so each
part is first made BAM by the oracle's `samtools view`.  The parts are made
here from the session's inputs, cut into 2-5 runs of records written as BAM,
SAM and CRAM (the header is the source's for every part): with identical
headers rocksort's output must be the oracle's, header (apart from @PG) and
records.  Headers that differ follow rocksort's own rules (README, the man
page): those tests check the records against the oracle and the header
lines against the rules, built from the parts' own headers.

To run only these:  run_tests.py -k 'inputs_*'
"""

import os
import re
import shutil
import struct
import threading

from harness import (PYTHON, SPILL, Failure, each, expect_error, run, stderr_lines, tail,
                     write_text)
import alignments
from resume import journal_frames, journal_types, kill_when, rerun, runs_stored

# Writes a source's records as parts: "path:fmt" each (bam, sam, cram),
# cut into runs of records of about equal size, every part with the
# source's header; CRAM with the reference given, or none (no_ref=1).
SPLIT_SCRIPT = """
import sys, pysam
src, ref, *parts = sys.argv[1:]
with pysam.AlignmentFile(src) as inp:
    records = list(inp)
    n = len(parts)
    cuts = [len(records) * i // n for i in range(n + 1)]
    for i, spec in enumerate(parts):
        path, fmt = spec.rsplit(":", 1)
        kw = {}
        if fmt == "cram":
            kw = {"reference_filename": ref} if ref != "-" else {"format_options": [b"no_ref=1"]}
        with pysam.AlignmentFile(path, {"bam": "wb", "sam": "wh", "cram": "wc"}[fmt],
                                 template=inp, **kw) as out:
            for rec in records[cuts[i]:cuts[i + 1]]:
                out.write(rec)
        print(cuts[i + 1] - cuts[i])
"""

_made = {}
_made_lock = threading.Lock()
_records = {}   # a part's path -> its records


def parts_of(case, source, formats, reference=None):
    """The parts of a session input (made once per source and formats):
    -> [paths]; records_in() then says how many records each holds."""
    key = (source, tuple(formats), reference)
    with _made_lock:
        lock = _made.setdefault(("lock", key), threading.Lock())
    with lock:
        if key not in _made:
            where = os.path.join(case.session.inputs_dir,
                                 "parts-" + source.replace(".", "_") + "-" + "-".join(formats))
            os.makedirs(where, exist_ok=True)
            paths = [os.path.join(where, f"part{i}.{fmt}") for i, fmt in enumerate(formats)]
            ref = case.input(reference) if reference else "-"
            result = run([PYTHON, "-c", SPLIT_SCRIPT, case.input(source), ref,
                          *[f"{p}:{f}" for p, f in zip(paths, formats)]], env=case.session.env)
            if result.returncode != 0:
                raise Failure(f"could not cut {source} into parts", tail(result.stderr))
            _records.update(zip(paths, map(int, result.stdout.split())))
            _made[key] = paths
        return _made[key]


def oracle_cat_sort(case, paths, shared, reference=None, name="expected.bam"):
    """samtools 1.24: each part made BAM, `samtools cat` of them in order,
    then `samtools sort` with shared.  -> the output's path."""
    work = os.path.join(case.dir, "oracle")
    os.makedirs(work, exist_ok=True)
    ref = ["--reference", case.input(reference)] if reference else []
    bams = []
    for i, path in enumerate(paths):
        bam = os.path.join(work, f"in{i}.bam")
        case.session.oracle_ok("view", ["-b", "--no-PG", *ref, "-o", bam, path])
        bams.append(bam)
    joined = os.path.join(work, "cat.bam")
    case.session.oracle_ok("cat", ["--no-PG", "-o", joined, *bams])
    out = os.path.join(work, name)
    case.session.oracle_ok("sort", [*shared, "--no-PG", "-o", out, joined])
    return out


def expect_same_records(case, actual, expected, reference=None):
    problems = alignments.record_differences(case.load(actual, reference),
                                             case.load(expected, reference))
    if problems:
        raise Failure(problems[0], problems[1:])


def records_in(path):
    return _records[path]


# --- every order, held and spilled, -@ 0 and -@ 3 ---------------------------------

# order -> (source, options, the parts' formats, CRAM reference)
ORDERS = {
    "coord": ("bulk.bam", [], ["bam", "sam", "cram", "bam"], None),
    "name": ("names_bulk.bam", ["-n"], ["sam", "bam", "cram"], None),
    "ascii_name": ("bulk.bam", ["-N"], ["cram", "bam"], None),
    "tag": ("tagged_bulk.bam", ["-t", "XI"], ["bam", "bam", "sam", "cram", "sam"], None),
    "template": ("templates_bulk.bam", ["--template-coordinate"], ["bam", "cram", "sam"], None),
    "minimiser": ("minimiser_bulk.bam", ["-M"], ["sam", "cram", "bam", "bam"], "mixed.fa"),
}
RUNS = re.compile(r"runs: (\d+) written")


@each((f"inputs_{order}_{memory}_t{threads}", order, memory, threads)
      for order in ORDERS for memory in ("held", "spilled") for threads in (0, 3))
def test_inputs_order(case, order, memory, threads):
    """Parts of one input, of mixed formats: the records and header of
    samtools 1.24's cat | sort; -v gives each part's records."""
    source, shared, formats, reference = ORDERS[order]
    parts = parts_of(case, source, formats, reference)
    ref = ["--reference", case.input(reference)] if reference else []
    expected = oracle_cat_sort(case, parts, [*shared, *ref], reference)
    actual = case.out("out.bam")
    # --verify's digest of a record read is taken before -M rewrites it
    # (reverse-complemented unplaced reads), so it fails -M with one input
    # too: left out there until that is fixed on its own.
    verify = ["--verify"] if order != "minimiser" else []
    args = [*shared, *ref, "-@", str(threads), *(SPILL if memory == "spilled" else []),
            "-v", *verify, "-T", case.temp_prefix, "-o", actual, *parts]
    result = case.rocksort_ok(args)
    case.expect_same(actual, expected, reference and case.input(reference))
    case.expect_no_temp_left()
    said = result.stderr.decode(errors="replace")
    runs = RUNS.search(said)
    if not runs or (int(runs[1]) > 1) != (memory == "spilled"):
        raise Failure(f"expected the sort to be {memory}", stderr_lines(said)[:3])
    counts = "; records from each: " + ", ".join(f"'{p}' {records_in(p)}" for p in parts)
    if f"[rocksort] inputs: {len(parts)}{counts}" not in said:
        raise Failure("-v does not give each input's records", [counts] + stderr_lines(said)[:3])


def test_inputs_cram_with_reference(case):
    """--reference serves every CRAM input; SAM out, the oracle's."""
    parts = parts_of(case, "mixed.bam", ["cram", "sam", "bam"], "mixed.fa")
    ref = ["--reference", case.input("mixed.fa")]
    expected = oracle_cat_sort(case, parts, ["-O", "sam", *ref], "mixed.fa", "expected.sam")
    actual = case.out("out.sam")
    case.rocksort_ok([*ref, "-T", case.temp_prefix, "-o", actual, *parts])
    case.expect_same(actual, expected)
    case.expect_no_temp_left()


# --- the command line ------------------------------------------------------------

def test_inputs_list_then_arguments(case):
    """-b FILE: one input a line (a blank line skipped), read before the
    arguments, as samtools merge reads them."""
    parts = parts_of(case, "bulk.bam", ["bam", "sam", "cram"])
    listing = os.path.join(case.dir, "inputs.txt")
    write_text(listing, f"{parts[0]}\n\n{parts[1]}\n")
    expected = oracle_cat_sort(case, parts, ["-n"])
    actual = case.out("out.bam")
    case.rocksort_ok(["-n", "-b", listing, "-T", case.temp_prefix, "-o", actual, parts[2]])
    case.expect_same(actual, expected)


def test_inputs_list_only_to_stdout(case):
    """-b alone, no -o: every input from the list, the output on stdout."""
    parts = parts_of(case, "mixed.bam", ["sam", "bam"])
    listing = os.path.join(case.dir, "inputs.txt")
    write_text(listing, "".join(p + "\n" for p in parts))
    expected = oracle_cat_sort(case, parts, [])
    result = case.rocksort_ok(["-b", listing, "-T", case.temp_prefix])
    actual = os.path.join(case.dir, "stdout.bam")
    with open(actual, "wb") as f:
        f.write(result.stdout)
    case.expect_same(actual, expected)


def test_inputs_list_missing_or_empty(case):
    for content, mention in ((None, "no-such-list"), ("\n\n", "names none")):
        listing = os.path.join(case.dir, "no-such-list")
        if content is not None:
            write_text(listing, content)
        result = case.rocksort(["-b", listing, "-T", case.temp_prefix, "-o", case.out("o.bam")])
        expect_error(case, result, [mention], case.out("o.bam"))


def test_inputs_stdin_among_files(case):
    """'-' may be one of the inputs, in its place."""
    parts = parts_of(case, "bulk.bam", ["bam", "sam", "cram"])
    expected = oracle_cat_sort(case, parts, [])
    actual = case.out("out.bam")
    case.rocksort_ok(["-m", "1M", "-T", case.temp_prefix, "-o", actual, parts[0], "-", parts[2]],
                     stdin=parts[1])
    case.expect_same(actual, expected)
    case.expect_no_temp_left()


def test_inputs_stdin_twice_refused(case):
    result = case.rocksort(["-T", case.temp_prefix, "-o", case.out("o.bam"), "-",
                            case.input("mixed.bam"), "-"])
    expect_error(case, result, ["standard input"], case.out("o.bam"))


def test_inputs_header_only_among_others(case):
    """An input with a header and no record adds nothing but its header."""
    parts = parts_of(case, "mixed.bam", ["bam", "sam"])
    empty = os.path.join(case.dir, "empty.bam")
    case.session.oracle_ok("view", ["-b", "--no-PG", "-H", "-o", empty, parts[0]])
    inputs = [parts[0], empty, parts[1]]
    expected = oracle_cat_sort(case, inputs, ["-n"])
    actual = case.out("out.bam")
    case.rocksort_ok(["-n", "-T", case.temp_prefix, "-o", actual, *inputs])
    case.expect_same(actual, expected)


def test_inputs_missing_one_named(case):
    parts = parts_of(case, "mixed.bam", ["bam", "sam"])
    missing = os.path.join(case.dir, "absent.bam")
    result = case.rocksort(["-T", case.temp_prefix, "-o", case.out("o.bam"), parts[0], missing,
                            parts[1]])
    line = expect_error(case, result, ["absent.bam"], case.out("o.bam"))
    if "No such file" not in line:
        raise Failure("the line does not say the input is missing", [line])


def test_inputs_damaged_one_named(case):
    """A cut BAM read last, after two whole inputs spilled: named, and
    nothing written, no temporary data left."""
    parts = parts_of(case, "bulk.bam", ["bam", "sam"])
    result = case.rocksort(["-m", "1M", "-T", case.temp_prefix, "-o", case.out("o.bam"),
                            *parts, case.input("truncated.bam")])
    expect_error(case, result, ["truncated.bam"], case.out("o.bam"))
    case.expect_only_files(case.out_dir, [])


def test_inputs_bad_line_named_in_its_file(case):
    """A SAM line that does not parse in the second input: that input
    named, the line counted in it, the records before it counted in it."""
    header, first, second = mixed_halves(case)
    a = write_sam(case, "a.sam", header, first)
    b = write_sam(case, "b.sam", header, second[:10] + ["bad\tline"] + second[10:])
    result = case.rocksort(["-T", case.temp_prefix, "-o", case.out("o.bam"), a, b])
    line = expect_error(case, result, ["b.sam"], case.out("o.bam"))
    if f"line {len(header) + 11} " not in line or "after 10 records" not in line:
        raise Failure("the line does not count in the second input", [line])


def test_inputs_not_alignments_named(case):
    text = os.path.join(case.dir, "notes.txt")
    write_text(text, "not alignments\n")
    result = case.rocksort(["-T", case.temp_prefix, "-o", case.out("o.bam"),
                            case.input("mixed.bam"), text])
    expect_error(case, result, ["notes.txt"], case.out("o.bam"))


def test_inputs_with_o_are_all_inputs(case):
    """`-o OUT A B`: two inputs (the nf-core shape), never the legacy form,
    even when B does not exist yet... and then B is named as missing."""
    parts = parts_of(case, "mixed.bam", ["bam", "bam"])
    expected = oracle_cat_sort(case, parts, [])
    case.rocksort_ok(["-T", case.temp_prefix, "-o", case.out("out.bam"), *parts])
    case.expect_same(case.out("out.bam"), expected)
    result = case.rocksort(["-T", case.temp_prefix, "-o", case.out("o.bam"), parts[0],
                            parts[1], "prefix"])
    expect_error(case, result, ["prefix"], case.out("o.bam"))


def test_inputs_legacy_form_unchanged(case):
    """Without -o or -b, two arguments are still the 2014 form IN OUT.prefix
    (README): the second is a prefix, never read, whatever its name; -b
    makes every argument an input."""
    src = case.input("mixed.bam")
    case.rocksort_ok(["-n", src, "sorted"])
    case.expect_same(case.out("sorted.bam"), case.session.expected("mixed.bam", ["-n"]))
    listing = os.path.join(case.dir, "inputs.txt")
    write_text(listing, src + "\n")
    result = case.rocksort(["-b", listing, src, "sorted2"])
    expect_error(case, result, ["sorted2"], case.out("sorted2.bam"))


# --- header rules ------------------------------------------------------------------

def sam_parts(text):
    """(header lines, record lines) of SAM text."""
    lines = text.splitlines()
    return [l for l in lines if l.startswith("@")], [l for l in lines if not l.startswith("@")]


def write_sam(case, name, header, records):
    path = os.path.join(case.dir, name)
    write_text(path, "".join(l + "\n" for l in header + records))
    return path


def mixed_halves(case):
    with open(case.input("mixed.sam"), encoding="utf-8") as f:
        header, records = sam_parts(f.read())
    half = len(records) // 2
    return header, records[:half], records[half:]


def sq_lines(header):
    return [l for l in header if l.startswith("@SQ")]


def longer_second_sq(header):
    second = sq_lines(header)[1]
    return [l.replace("LN:", "LN:1", 1) if l == second else l for l in header]


def without_last_sq(header):
    last = sq_lines(header)[-1]
    return [l for l in header if l != last]


def with_m5(header, digit):
    return [l + "\tM5:" + digit * 32 if l.startswith("@SQ") else l for l in header]


def other_library(header):
    return [l + "\tLB:other" if l.startswith("@RG\tID:grp1") else l for l in header]


def other_version(header):
    return [l.replace("VN:0.1", "VN:0.2") if l.startswith("@PG") else l for l in header]


# name -> (the first input's header, the second's, what the line must name)
CONFLICTS = {
    "sq_length_differs": (lambda h: h, longer_second_sq, lambda h: sq_lines(h)[1].split("\t")[1]),
    "sq_missing": (lambda h: h, without_last_sq, lambda h: sq_lines(h)[-1].split("\t")[1]),
    "sq_m5_differs": (lambda h: with_m5(h, "1"), lambda h: with_m5(h, "0"), lambda h: "M5:"),
    "rg_conflict": (lambda h: h, other_library, lambda h: "ID:grp1"),
    "pg_conflict": (lambda h: h, other_version, lambda h: "ID:aligner"),
}


@each((f"inputs_header_{name}", name) for name in CONFLICTS)
def test_inputs_header_conflict(case, name):
    """Headers that cannot be merged: exit 1, one line naming the second
    input and what differs (both inputs for an ID given twice), no output."""
    header, first, second = mixed_halves(case)
    header_a, header_b, mention = CONFLICTS[name]
    a = write_sam(case, "a.sam", header_a(header), first)
    b = write_sam(case, "b.sam", header_b(header), second)
    result = case.rocksort(["-T", case.temp_prefix, "-o", case.out("o.bam"), a, b])
    line = expect_error(case, result, [mention(header)], case.out("o.bam"))
    wanted = ["b.sam"] + (["a.sam"] if name.endswith("_conflict") else [])
    if not all(w in line for w in wanted):
        raise Failure(f"the line does not name {wanted}", [line])


def test_inputs_header_union(case):
    """@HD from the first input; @RG, @PG and @CO lines the union of the
    distinct ones in input order; @SQ tags other than SN, LN and M5 may
    differ; rocksort's @PG after them.  The records: the oracle's."""
    header, first, second = mixed_halves(case)
    hd_b = ["@HD\tVN:1.4\tSO:queryname"]
    extra_b = ["@RG\tID:grpB\tSM:sB", "@PG\tID:marker\tPN:marker\tPP:aligner", "@CO\tsecond part"]
    header_b = hd_b + [l + "\tUR:file:/elsewhere.fa" if l.startswith("@SQ") else l
                       for l in header if not l.startswith("@HD")] + extra_b
    a = write_sam(case, "a.sam", header, first)
    b = write_sam(case, "b.sam", header_b, second)
    out = case.out("out.sam")
    case.rocksort_ok(["-O", "sam", "-T", case.temp_prefix, "-o", out, a, b])
    got = case.load(out).header
    hd_a = [l for l in header if l.startswith("@HD")]
    want_hd = [hd_a[0].replace("SO:unsorted", "SO:coordinate")] if hd_a else []
    mine = [l for l in got if "rocksort" in l]
    rest = [l for l in got if l not in mine]
    want = [l for l in header if not l.startswith("@HD")] + extra_b
    if rest[1:] != want or not rest[0].startswith("@HD") or len(mine) != 1 \
            or "VN:1.4" in rest[0]:
        raise Failure("the merged header is not the first's, then the second's new lines, then "
                      "rocksort's @PG", [*rest[:2], *rest[-4:], *mine])
    expected = oracle_cat_sort(case, [a, b], ["-O", "sam"], name="expected.sam")
    expect_same_records(case, out, expected)


# --- resuming several inputs ----------------------------------------------------------

NOTE_BYTES = 16 * 8     # resume/resume_state.c: the note, last in each 'R' record


def inputs_of_runs(state):
    """The input each stored run's note is in (its first field)."""
    found = []
    for _, p in journal_frames(state):
        if struct.unpack_from("<Q", p)[0] == ord("R") and len(p) >= NOTE_BYTES + 8:
            if struct.unpack_from("<Q", p, len(p) - NOTE_BYTES - 8)[0] == NOTE_BYTES:
                found.append(struct.unpack_from("<Q", p, len(p) - NOTE_BYTES)[0])
    return found


def resume_args(case, state, shared=()):
    return [*shared, *SPILL, "--resume", state, "-T", case.temp_prefix, "-o", case.out("out.bam")]


@each((f"inputs_resume_kill_in_input_{k}", k) for k in (0, 1, 2))
def test_inputs_resume_kill(case, k):
    """SIGKILL while the k-th input (of BAM, SAM and CRAM parts) loads,
    as its runs' notes show; the rerun takes the runs back, goes on in that
    input, and gives the oracle's output."""
    parts = parts_of(case, "bulk.bam", ["bam", "sam", "cram"])
    state = os.path.join(case.dir, "state")
    args = resume_args(case, state, ["-n"])
    kill_when(case, args + parts, lambda: inputs_of_runs(state).count(k) >= 3,
              f"3 runs stored from input {k}")
    lines = rerun(case, args + parts)
    if not any("resuming from" in line for line in lines):
        raise Failure("the rerun did not resume", lines[:5])
    # -v: the inputs before the k-th are not read again.
    said = [line for line in lines if line.startswith("[rocksort] inputs: ")]
    passed = [f"'{p}' stored by an earlier run" for p in parts[:k]]
    if len(said) != 1 or not all(p in said[0] for p in passed):
        raise Failure(f"-v does not say the first {k} inputs were passed over", said or lines[:5])
    case.expect_same(case.out("out.bam"), oracle_cat_sort(case, parts, ["-n"]))
    if os.path.exists(state):
        raise Failure("the state directory is still there after the sort succeeded")
    case.expect_no_temp_left()


def test_inputs_resume_verify_reads_every_input_again(case):
    """Killed in the second input without --verify, rerun with it: the
    stored records have no checksum, so every input is read again from the
    first, and the sort goes on where it stopped, the checksums matching."""
    parts = parts_of(case, "bulk.bam", ["sam", "cram", "bam"])
    state = os.path.join(case.dir, "state")
    args = resume_args(case, state)
    kill_when(case, args + parts, lambda: inputs_of_runs(state).count(1) >= 3,
              "3 runs stored from the second input")
    lines = rerun(case, ["--verify", *args, *parts])
    if not any("resuming from" in line for line in lines) or \
            not any("verify:" in line and line.endswith("OK") for line in lines):
        raise Failure("the rerun did not resume and verify", lines[:6])
    case.expect_same(case.out("out.bam"), oracle_cat_sort(case, parts, []))


def test_inputs_resume_other_list_afresh(case):
    """A rerun with another list of inputs sorts afresh, with one line
    saying why, and gives those inputs' output."""
    parts = parts_of(case, "bulk.bam", ["bam", "sam", "cram"])
    state = os.path.join(case.dir, "state")
    args = resume_args(case, state)
    kill_when(case, args + parts, lambda: inputs_of_runs(state).count(1) >= 2,
              "2 runs stored from the second input")
    lines = rerun(case, args + parts[:2])
    if not any("afresh" in line and "'inputs' differs" in line for line in lines):
        raise Failure("no line says the state goes for another list of inputs", lines[:5])
    case.expect_same(case.out("out.bam"), oracle_cat_sort(case, parts[:2], []))


def test_inputs_resume_edited_earlier_input(case):
    """An input the state holds whole, edited in place with its mtime put
    back (identity unchanged, ctime changed): its bytes read again differ,
    so the rerun sorts afresh, and gives the edited inputs' output; a mere
    chmod of it resumes."""
    src = parts_of(case, "bulk.bam", ["sam", "bam"])
    parts = [os.path.join(case.dir, f"in{i}.{p.rsplit('.', 1)[1]}") for i, p in enumerate(src)]
    for s, p in zip(src, parts):
        shutil.copy(s, p)
    state = os.path.join(case.dir, "state")
    args = resume_args(case, state)
    kill_when(case, args + parts, lambda: inputs_of_runs(state).count(1) >= 2,
              "2 runs stored from the second input")
    os.chmod(parts[0], 0o640)
    lines = rerun(case, args + parts)
    if not any("resuming from" in line for line in lines):
        raise Failure("a chmod of a stored input lost the state", lines[:5])
    case.expect_same(case.out("out.bam"), oracle_cat_sort(case, parts, []))
    os.remove(case.out("out.bam"))
    kill_when(case, args + parts, lambda: inputs_of_runs(state).count(1) >= 2,
              "2 runs stored from the second input")
    st = os.stat(parts[0])
    with open(parts[0], "r+b") as f:
        data = f.read()
        at = data.index(b"\tACGT") + 1      # a base in the middle of a record
        f.seek(at)
        f.write(b"T" if data[at:at + 1] != b"T" else b"G")
    os.utime(parts[0], ns=(st.st_atime_ns, st.st_mtime_ns))
    lines = rerun(case, args + parts)
    if not any("changed since the state was made" in line for line in lines):
        raise Failure("no line says an earlier input changed", lines[:5])
    case.expect_same(case.out("out.bam"), oracle_cat_sort(case, parts, [], name="edited.bam"))


def test_inputs_resume_stream_refused(case):
    """--resume reads several inputs as files only: a stream among them is
    refused before DIR is made."""
    state = os.path.join(case.dir, "state")
    result = case.rocksort(resume_args(case, state) + [case.input("mixed.bam"), "-"],
                           stdin=case.input("mixed.bam"))
    lines = stderr_lines(result.stderr)
    if result.returncode != 1 or not any("files only" in l for l in lines) \
            or os.path.exists(state):
        raise Failure(f"exit {result.returncode}; expected 1, a line, and no DIR", lines)


def test_inputs_resume_readout_needs_no_input(case):
    """Killed in the readout, the state of several files holds them whole:
    the rerun with `- < /dev/null` writes the output."""
    parts = parts_of(case, "bulk.bam", ["bam", "sam"])
    state = os.path.join(case.dir, "state")
    args = resume_args(case, state)
    kill_when(case, args + parts, lambda: "C" in journal_types(state), "the inputs complete")
    rerun(case, args + ["-"])
    case.expect_same(case.out("out.bam"), oracle_cat_sort(case, parts, []))


def test_inputs_resume_no_input_names_the_files(case):
    """Killed during the load, a rerun given no input keeps the state and
    names the files to rerun with."""
    parts = parts_of(case, "bulk.bam", ["bam", "sam"])
    state = os.path.join(case.dir, "state")
    args = resume_args(case, state)
    kill_when(case, args + parts, lambda: runs_stored(state) >= 3, "3 runs stored")
    result = case.rocksort(args + ["-"])
    lines = stderr_lines(result.stderr)
    names = [f"'{os.path.realpath(p)}'" for p in parts]
    if result.returncode != 1 or not any(all(n in l for n in names) for l in lines):
        raise Failure("the line does not name both files to rerun with", lines)
    rerun(case, args + parts)
    case.expect_same(case.out("out.bam"), oracle_cat_sort(case, parts, []))


def test_inputs_progress_overall(case):
    """--progress counts every input's records, and the share read of all
    the input files together: it never falls back as the next input opens."""
    parts = parts_of(case, "bulk.bam", ["bam", "sam"])
    result = case.rocksort_ok(["--progress=0.02", "-m", "1M", "-T", case.temp_prefix,
                               "-o", case.out("out.bam"), *parts])
    said = stderr_lines(result.stderr)
    shares = [int(m[1]) for line in said for m in [re.search(r"load: .* read \((\d+)%\)", line)]
              if m]
    total = sum(records_in(p) for p in parts)
    if shares != sorted(shares) or not shares or shares[-1] < 50 or \
            not any(f"done: {total / 1000:.1f}k records" in line for line in said):
        raise Failure(f"the progress lines do not follow both inputs' {total} records", said[-6:])
