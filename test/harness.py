"""The harness of the end-to-end tests of `samtools rocksort`: what every
test module imports, and how run_tests.py finds the tests.

- Session: what all tests share: the command under test, the oracle
  (samtools 1.24 as bundled by pysam), the inputs made by test/samdata.py
  and the oracle's outputs, each made once.
- Case: one test's own directory, and rocksort run inside it.
- Failure: what a test raises to fail, with a reason and detail lines.
- run(), tail(), stderr_lines(), write_text(), write_bytes(): small helpers.
- Sorting compared with the oracle: SortCase, Ref, run_sort_case(),
  both_orders(); the options SAM_OUT and SPILL.
- Errors compared with the oracle: expect_error(), expect_outcome_of(),
  expect_same_outcome(), expect_failure_like_oracle().

A test is a top-level function `test_NAME(case)` in any module of test/;
it is test NAME, and case is its Case.  It fails by raising Failure (any
other exception fails it too, as a bug in the test).  A test that needs
root is defined under `if os.geteuid() == 0:`.  A family of tests that
differ only in their arguments is one function under @each(rows), the rows
next to it: see each().  tests_in() is how run_tests.py finds both kinds.
"""

import inspect
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field

import alignments
import samdata

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
PYTHON = VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable
TIMEOUT = 300  # seconds for any one command; a hang must not stall the suite

# pysam's in-process samtools keeps static state between calls (a -n sort
# after a --template-coordinate sort gets the wrong @HD SS), so every oracle
# call runs in a fresh interpreter.
ORACLE_SCRIPT = """
import sys, pysam
command = getattr(pysam.samtools, sys.argv[1])
try:
    command(*sys.argv[2:], catch_stdout=False)
except pysam.SamtoolsError as error:
    sys.stderr.write(str(error) + "\\n")
    sys.exit(1)
"""

# Rewrites the "z*" records (unmapped, RNAME '*') as unmapped reads that keep
# a reference but have no position (tid >= 0, pos -1).  SAM text cannot say
# that (htslib turns RNAME into '*'), yet BAM files in the wild do.
PLACED_UNMAPPED_SCRIPT = """
import sys, pysam
src, dst = sys.argv[1:]
with pysam.AlignmentFile(src) as inp, \\
        pysam.AlignmentFile(dst, "wb", template=inp) as out:
    for i, rec in enumerate(inp):
        if rec.query_name.startswith("z"):
            rec.reference_id = i % 2
            rec.reference_start = -1
        out.write(rec)
"""


class Failure(Exception):
    def __init__(self, reason, details=()):
        super().__init__(reason)
        self.reason = reason
        self.details = list(details)


class Skip(Exception):
    """A test that cannot run here at all, for a reason of the machine's
    (no pseudo-terminal in a chroot), not of rocksort's: run_tests.py
    prints SKIP with the reason and counts it apart.  Raise it only
    before rocksort runs, so that it never hides a failure."""


def tail(text, n=5):
    lines = text.decode(errors="replace").strip().splitlines() \
        if isinstance(text, bytes) else text.strip().splitlines()
    return [line[:200] for line in lines[-n:]]


def stderr_lines(stderr):
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    return [l for l in text.splitlines() if l.strip()]


def run(cmd, stdin=None, cwd=None, env=None):
    """Runs cmd; stdin is a file path or None (then /dev/null, so nothing
    ever waits on the terminal)."""
    with open(stdin or os.devnull, "rb") as stdin_file:
        return subprocess.run(cmd, stdin=stdin_file, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=cwd, env=env,
                              timeout=TIMEOUT)


# --- the oracle and the inputs --------------------------------------------

class Session:
    """What all tests share: the command under test, the oracle, the inputs
    (made on first use) and the oracle's outputs (computed once per input
    and options)."""

    def __init__(self, root, binary, rocksort_cmd, light=False):
        self.root = root
        # The sanitizer run (run_tests.py --light): tests that cut at every
        # byte may take a sample there; the release run takes them all.
        self.light = light
        self.binary = binary
        self.rocksort_cmd = rocksort_cmd
        self.inputs_dir = os.path.join(root, "inputs")
        self.expected_dir = os.path.join(root, "expected")
        os.makedirs(self.inputs_dir)
        os.makedirs(self.expected_dir)
        # An empty REF_PATH dir: htslib must never fetch references from
        # the network when a CRAM reference is missing.
        self.env = dict(os.environ, REF_PATH=os.path.join(root, "no-refs"))
        self.env.pop("REF_CACHE", None)
        self._locks = {}
        self._locks_lock = threading.Lock()
        self._expected = {}

    def lock_for(self, key):
        with self._locks_lock:
            return self._locks.setdefault(key, threading.Lock())

    def oracle(self, subcommand, args, stdin=None, cwd=None):
        return run([PYTHON, "-c", ORACLE_SCRIPT, subcommand, *args],
                   stdin=stdin, cwd=cwd, env=self.env)

    def oracle_ok(self, subcommand, args, **kw):
        result = self.oracle(subcommand, args, **kw)
        if result.returncode != 0:
            raise Failure(f"oracle samtools {subcommand} failed",
                          tail(result.stderr))
        return result

    def input(self, name):
        """Path of input file `name`, e.g. mixed.sam, mixed.bam, mixed.cram,
        mixed.fa; made on first use (thread-safe)."""
        path = os.path.join(self.inputs_dir, name)
        with self.lock_for(("input", name)):
            if not os.path.exists(path):
                self._make_input(name, path + ".part")
                os.rename(path + ".part", path)
        return path

    def _make_input(self, name, path):
        stem, ext = name.rsplit(".", 1)
        if name == "mixed.fa":
            write_text(path, samdata.mixed_reference_text())
            self.oracle_ok("faidx", [path])
            os.rename(path + ".fai", path[:-len(".part")] + ".fai")
        elif name == "placed_unmapped.bam":
            result = run([PYTHON, "-c", PLACED_UNMAPPED_SCRIPT,
                          self.input("unmapped.bam"), path], env=self.env)
            if result.returncode != 0:
                raise Failure("could not make placed_unmapped.bam",
                              tail(result.stderr))
        elif name == "truncated.bam":
            # Cut in the middle of the records, well past the header.
            with open(self.input("bulk.bam"), "rb") as src:
                data = src.read()
            write_bytes(path, data[:len(data) // 2])
        elif ext == "sam":
            write_text(path, samdata.dataset_text(stem))
        elif ext == "bam":
            self.oracle_ok("view", ["-b", "--no-PG", "-o", path,
                                    self.input(stem + ".sam")])
        elif ext == "cram":
            self.oracle_ok("view", ["-C", "--no-PG", "--reference",
                                    self.input("mixed.fa"), "-o", path,
                                    self.input(stem + ".sam")])
        else:
            raise ValueError(f"no recipe for input {name}")

    def expected(self, source, shared_args, out_name="out", to_stdout=False):
        """Path of the oracle's output for sorting input `source` with
        shared_args (computed once; many tests share it)."""
        key = (source, tuple(shared_args), os.path.splitext(out_name)[1],
               to_stdout)
        with self.lock_for(("expected", key)):
            if key not in self._expected:
                self._expected[key] = self._sort_with_oracle(
                    source, shared_args, out_name, to_stdout)
            return self._expected[key]

    def _sort_with_oracle(self, source, shared_args, out_name, to_stdout):
        out_dir = tempfile.mkdtemp(dir=self.expected_dir)
        path = os.path.join(out_dir, out_name)
        args = [*shared_args, "--no-PG", self.input(source)]
        if to_stdout:
            write_bytes(path, self.oracle_ok("sort", args, cwd=out_dir).stdout)
        else:
            self.oracle_ok("sort", ["-o", path, *args], cwd=out_dir)
        return path

    def decode_cram(self, path, reference):
        """CRAM -> SAM text, always through the oracle's viewer."""
        sam = path + ".decoded.sam"
        args = ["-h", "--no-PG", "-o", sam, path]
        if reference:
            args[:0] = ["--reference", reference]
        self.oracle_ok("view", args)
        with open(sam, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        os.remove(sam)
        return text


def write_text(path, text):
    """UTF-8 whatever the locale: inputs hold bytes past 0x7f."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


# --- one test's workspace --------------------------------------------------

class Case:
    """A test's own directory: `actual/` for rocksort's output and `tmp/`,
    given to rocksort as TMPDIR and as the -T prefix, which must be empty
    again when rocksort has finished."""

    def __init__(self, session, name):
        self.session = session
        self.dir = os.path.join(session.root, "cases", name)
        self.out_dir = os.path.join(self.dir, "actual")
        self.tmp = os.path.join(self.dir, "tmp")
        os.makedirs(self.out_dir)
        os.makedirs(self.tmp)
        self.temp_prefix = os.path.join(self.tmp, "rs")

    def input(self, name):
        return self.session.input(name)

    def out(self, name):
        return os.path.join(self.out_dir, name)

    def rocksort(self, args, stdin=None, cwd=None):
        env = dict(self.session.env, TMPDIR=self.tmp)
        return run([*self.session.rocksort_cmd, *args], stdin=stdin,
                   cwd=cwd or self.out_dir, env=env)

    def rocksort_ok(self, args, **kw):
        result = self.rocksort(args, **kw)
        if result.returncode != 0:
            raise Failure(f"rocksort exited with {result.returncode}",
                          tail(result.stderr))
        return result

    def load(self, path, reference=None):
        with open(path, "rb") as f:
            data = f.read()
        try:
            return alignments.load(
                data, lambda _: self.session.decode_cram(path, reference))
        except ValueError as error:
            raise Failure(f"cannot read {os.path.basename(path)}: {error}")

    def expect_same(self, actual, expected, reference=None, keep_pg=False):
        problems = alignments.differences(self.load(actual, reference),
                                          self.load(expected, reference),
                                          keep_pg=keep_pg)
        if problems:
            raise Failure(problems[0], problems[1:])

    def expect_no_temp_left(self):
        left = os.listdir(self.tmp)
        if left:
            raise Failure("temporary data left behind", sorted(left)[:5])

    def expect_only_files(self, directory, allowed):
        extra = sorted(set(os.listdir(directory)) - set(allowed))
        if extra:
            raise Failure(f"unexpected files in {os.path.basename(directory)}/",
                          extra[:5])


# --- sorting compared with the oracle -----------------------------------------

@dataclass(frozen=True)
class Ref:
    """An argument naming an input file, resolved when the test runs;
    template places the path inside the argument (e.g. "reference={}")."""
    name: str
    template: str = "{}"


@dataclass
class SortCase:
    name: str
    source: str                                  # input file, see Session.input
    shared: list = field(default_factory=list)   # options for both sorters
    extra: list = field(default_factory=list)    # rocksort-only options
    stdin: str = None          # None: file argument; "-" or "": piped in
    to_stdout: bool = False    # no -o: the output goes to standard output
    out_name: str = "out"      # its extension picks the format when no -O
    temp_prefix: bool = True   # give -T; without it TMPDIR must be used


def resolve(case, args):
    return [a.template.format(case.input(a.name)) if isinstance(a, Ref) else a
            for a in args]


def reference_in(args):
    return args[args.index("--reference") + 1] if "--reference" in args else None


def run_sort_case(case, sc):
    shared = resolve(case, sc.shared)
    expected = case.session.expected(sc.source, shared, sc.out_name,
                                     sc.to_stdout)
    args = [*shared, *resolve(case, sc.extra)]
    if sc.temp_prefix:
        args += ["-T", case.temp_prefix]
    actual = case.out(sc.out_name)
    if not sc.to_stdout:
        args += ["-o", actual]
    source = case.input(sc.source)
    if sc.stdin is None:
        result = case.rocksort_ok(args + [source])
    else:
        result = case.rocksort_ok(args + ([sc.stdin] if sc.stdin else []),
                                  stdin=source)
    if sc.to_stdout:
        write_bytes(actual, result.stdout)
    case.expect_same(actual, expected, reference_in(shared))
    case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, [sc.out_name])


def both_orders(name, source, shared=(), extra=(), **kw):
    """The same case in coordinate order and in natural name order (-n)."""
    return [SortCase(f"{name}_coord", source, list(shared), list(extra), **kw),
            SortCase(f"{name}_name", source, ["-n", *shared], list(extra), **kw)]


SAM_OUT = ["-O", "sam"]
SPILL = ["-m", "1M"]  # with bulk.bam's ~13 MB of records: many sorted runs


# --- errors compared with the oracle -------------------------------------------

def expect_error(case, result, mentions, output):
    """Exit status 1, one line on stderr naming one of `mentions`, no file
    at `output`, nothing left in the temp dir.  -> the line"""
    if result.returncode != 1:
        raise Failure(f"exit status {result.returncode}, expected 1",
                      tail(result.stderr))
    lines = [l for l in result.stderr.decode(errors="replace").splitlines()
             if l.strip()]
    if len(lines) != 1:
        raise Failure(f"{len(lines)} lines on stderr, expected 1", lines[:5])
    if mentions and not any(m in lines[0] for m in mentions):
        raise Failure(f"error message names none of {mentions}", lines)
    if output and os.path.lexists(output):
        raise Failure("output file created despite the error")
    case.expect_no_temp_left()
    return lines[0]


def expect_same_outcome(case, source, shared, stdin=None):
    """expect_outcome_of() for an input made by the session."""
    expect_outcome_of(case, case.input(source), shared, stdin)


def expect_outcome_of(case, src, shared, stdin=None, name="target", mentions=None):
    """Like the oracle on the file src: the same output (out/NAME.bam) if it
    succeeds, else a one-line error naming one of `mentions` (default: the
    input or the output) and no output at all."""
    expected = os.path.join(case.dir, f"expected_{name}.bam")
    oracle_args = [*shared, "--no-PG", "-o", expected]
    oracle = case.session.oracle("sort", oracle_args + [src])
    actual = case.out(f"{name}.bam")
    args = [*shared, "-T", case.temp_prefix, "-o", actual]
    if stdin is None:
        result = case.rocksort(args + [src])
    else:
        result = case.rocksort(args + [stdin], stdin=src)
    if oracle.returncode != 0:
        if os.path.exists(expected):
            raise Failure("test is wrong: the oracle failed yet wrote output")
        if mentions is None:
            mentions = [] if stdin else [os.path.basename(src), os.path.basename(actual)]
        expect_error(case, result, mentions, actual)
        return
    if result.returncode != 0:
        raise Failure(f"rocksort failed ({result.returncode}) where the oracle "
                      "succeeded", tail(result.stderr))
    case.expect_same(actual, expected)
    case.expect_no_temp_left()


def expect_failure_like_oracle(case, src, output, mention, extra=()):
    """An input or output the oracle rejects: rocksort must reject it too,
    in the one-line way the contract asks."""
    oracle = case.session.oracle("sort", ["-o", output, *extra, src])
    if oracle.returncode == 0:
        os.remove(output)
        raise Failure("test is wrong: the oracle accepted this")
    result = case.rocksort(["-T", case.temp_prefix, "-o", output, *extra, src])
    expect_error(case, result, [mention], output)


# --- finding the tests -----------------------------------------------------------

def each(rows):
    """Makes the function it decorates a family of tests, one per row: a
    row is (test name, arguments...), and test NAME calls
    function(case, *arguments).  The rows sit next to the function and
    nothing else lists them; tests_in() finds them.  For example
        @each((f"parse_{name}", name) for name in CASES)
        def test_parse_case(case, name): ...
    makes test parse_NAME for each NAME in CASES."""
    rows = [tuple(row) for row in rows]

    def mark(func):
        func.rows = rows
        return func
    return mark


def release_only(why, but=()):
    """Marks a test, or an @each family but the rows named in `but`, as
    one the sanitizer run leaves to the release build (run_tests.py
    --light): it repeats at scale paths that other tests take under the
    sanitizer, or measures what an instrumented build cannot (memory,
    time).  `why` says which; it is shown with the count."""
    def mark(func):
        rows = {row[0] for row in getattr(func, "rows", ())}
        unknown = set(but) - rows
        assert not unknown, f"release_only: no such rows: {sorted(unknown)}"
        func.release_only = (why, tuple(but))
        return func
    return mark


def release_only_reason(func, name):
    """-> the release_only reason for test NAME of func, or None."""
    mark = getattr(func, "release_only", None)
    return mark[0] if mark and name not in mark[1] else None


def tests_in(module):
    """[(name, function of a Case, release_only reason or None)] for the
    tests module defines, in the order it defines them: each top-level
    function whose name starts with test_ (test_NAME is test NAME), and each
    row of an @each function.  Functions a module imports belong to the
    module that defines them."""
    found = []
    for attr, obj in vars(module).items():
        if not inspect.isfunction(obj) or obj.__module__ != module.__name__:
            continue
        if hasattr(obj, "rows"):
            found += [(name, lambda case, f=obj, args=args: f(case, *args),
                       release_only_reason(obj, name)) for name, *args in obj.rows]
        elif attr.startswith("test_"):
            name = attr[len("test_"):]
            found.append((name, obj, release_only_reason(obj, name)))
    return found
