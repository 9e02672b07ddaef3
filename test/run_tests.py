#!/usr/bin/env python3
"""End-to-end tests of `samtools rocksort`.

Every test sorts an input made here by test/samdata.py with both rocksort and
the oracle (samtools 1.24 as bundled by pysam) and requires the same records,
byte for byte and in the same order, and the same header apart from @PG lines.

Usage, from the repo root:
    .venv/bin/python test/run_tests.py [--binary ./samtools] [-k PATTERN]...

ROCKSORT_CMD, if set, replaces "BINARY rocksort" as the command under test
(split like a shell would), e.g. to try the harness against a stand-in.

This file only finds and runs the tests: the C unit tests (UNIT_TESTS),
then every test the modules of test/ define (all_modules(); what a test is,
and the harness the tests share, are in test/harness.py).
"""

import argparse
import fnmatch
import importlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from harness import REPO, TIMEOUT, Case, Failure, Session, Skip, run, tail, tests_in

TEST_DIR = os.path.dirname(os.path.abspath(__file__))
# The C unit tests: one program per test/test_*.c (the Makefile's pattern
# rule builds each), so a new one needs no entry here.
UNIT_TESTS = sorted(os.path.splitext(name)[0] for name in os.listdir(TEST_DIR)
                    if name.startswith("test_") and name.endswith(".c"))
# The modules whose tests run first, in this order: the sort cases make the
# inputs and oracle outputs that most later tests share.  Every other module
# in test/ follows, by name, so a new module needs no entry here.
MODULE_ORDER = [
    "sort_cases",       # one input and its options, against the oracle
    "cli",              # the rest of the command line, the samtools wrapper
    "robustness",       # all or nothing, --verify, closed pipes, full disks
    "signals",
    "bad_input",        # damaged input, fuzz reproducers
    "tempspace",        # temp runs' format chosen from the free space
    "parsing",          # odd SAM text parsed as samtools 1.24 parses it
    "faults",           # damage made the way it happens outside a test suite
    "workflows",        # the Snakemake and CWL examples
    "features",         # --write-index, --max-memory, progress, sizing
    "disk_io",          # O_DIRECT, syncs, the page cache
    "destinations",     # -o on devices, FIFOs, links; make install
    "readout_ranges",   # --merge-threads: the readout in key ranges (#27)
    "readout_extras",
]


# The slowest tests are named at the end, so that the suite's time (CI keeps
# it near 20 minutes on 2 cores) is spent knowingly.
SLOWEST_SHOWN = 8


# --- finding and running the tests ------------------------------------------

def all_modules():
    """Every module of test/ but this one, imported: MODULE_ORDER's first,
    then the others by name."""
    names = sorted(f[:-len(".py")] for f in os.listdir(TEST_DIR)
                   if f.endswith(".py") and f != os.path.basename(__file__))
    names.sort(key=lambda n: MODULE_ORDER.index(n) if n in MODULE_ORDER
               else len(MODULE_ORDER))
    return [importlib.import_module(name) for name in names]


def all_tests():
    """[(name, function of a Case, release_only reason or None)]"""
    tests = [t for module in all_modules() for t in tests_in(module)]
    names = [name for name, _, _ in tests]
    duplicates = {n for n in names if names.count(n) > 1}
    assert not duplicates, f"duplicate test names: {duplicates}"
    return tests


def selected(name, patterns):
    if not patterns:
        return True
    return any(fnmatch.fnmatch(name, p) if any(c in p for c in "*?[")
               else p in name for p in patterns)


def run_test(session, name, func):
    """-> (passed: True, False, or None if skipped; lines to print;
    seconds taken)"""
    start = time.monotonic()
    ok, lines = run_one(session, name, func)
    return ok, lines, time.monotonic() - start


def run_one(session, name, func):
    try:
        func(Case(session, name))
        return True, [f"PASS {name}"]
    except Skip as skip:
        return None, [f"SKIP {name}: {skip}"]
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
    parser.add_argument("--light", action="store_true",
                        help="leave out the tests marked release_only (the sanitizer run)")
    parser.add_argument("--durations", metavar="FILE",
                        help="write each test's seconds and name to FILE")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (test/out/run-*)")
    return parser.parse_args()


def signals_reach_children():
    """rocksort keeps a signal ignored at its start ignored (as under nohup):
    one the runner inherited ignored (`make test &` in a script ignores
    SIGINT, nohup SIGHUP) is caught instead, so that the rocksort under test
    gets its default again (exec resets a caught signal) and the signal tests
    hold; the runner itself still ignores it."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, lambda *_: None)


def main():
    signals_reach_children()
    args = parse_args()
    binary = os.path.abspath(args.binary)
    rocksort_cmd = shlex.split(os.environ.get("ROCKSORT_CMD", "")) or \
        [binary, "rocksort"]
    out_root = os.path.join(REPO, "test", "out")
    os.makedirs(out_root, exist_ok=True)
    session = Session(tempfile.mkdtemp(prefix="run-", dir=out_root), binary,
                      rocksort_cmd, light=args.light)
    passed = failed = skipped = 0
    for name in UNIT_TESTS:
        if selected(name, args.patterns):
            ok, bad = run_unit_tests(name)
            passed, failed = passed + ok, failed + bad
    chosen = [t for t in all_tests() if selected(t[0], args.patterns)]
    left = [(n, why) for n, _, why in chosen if args.light and why]
    tests = [(n, f) for n, f, why in chosen if not (args.light and why)]
    took = []
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for (name, _), (ok, lines, seconds) in zip(
                    tests, pool.map(lambda t: run_test(session, *t), tests)):
                print("\n".join(lines), flush=True)
                took.append((seconds, name))
                if ok is None:
                    skipped += 1
                else:
                    passed, failed = passed + ok, failed + (not ok)
    finally:
        if args.keep:
            print(f"work directory kept: {session.root}", file=sys.stderr)
        else:
            shutil.rmtree(session.root, ignore_errors=True)
            if not os.listdir(out_root):
                os.rmdir(out_root)
    took.sort(reverse=True)
    if args.durations:
        with open(args.durations, "w") as f:
            f.writelines(f"{seconds:.1f}\t{name}\n" for seconds, name in took)
    if len(took) > SLOWEST_SHOWN:
        print("slowest: " + ", ".join(f"{name} {seconds:.0f} s"
                                      for seconds, name in took[:SLOWEST_SHOWN]))
    if left:
        reasons = sorted({why for _, why in left})
        print(f"{len(left)} tests left to the release build (release_only): " + "; ".join(reasons))
    if skipped:   # apart from the last line, which scripts/test.sh totals
        print(f"{skipped} skipped: this machine cannot run them (SKIP lines above)")
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
