#!/usr/bin/env python3
"""Peak memory of rocksort against its budget, over a grid of options.

    .venv/bin/python bench/memory_grid.py [--binary ./samtools] [--input IN.bam]
                                          [--grid full|issue|exceptions|threads]
                                          [--only TEXT]

Each cell sorts the input (a ~40 MiB BAM from make_input.py, made once in
bench/out/ unless --input names one) in a fresh child and reads its peak RSS
from wait4(), as /usr/bin/time does.  The budget is -m x max(1, -@), or
--max-memory; the bound the sort must keep is 1.15 x budget + 48 MB
(issue #45).  The table gives, per cell: the budget, the options, the runs
the readout merged (from -v), the passes merged before it, the peak RSS,
the bound and the wall.  A cell over its bound is marked, and the exit
status is 1 if any is.

Grids: `issue` holds the cases issue #45 reported; `full` -m 1M/4M/16M/64M
x -@ 0-64 x every --temp-compression, the forced --merge-threads, the levels
and the issue's cases; `exceptions` the cases README's memory section
states beyond the bound (-l 8 and 9 at -@ 64, CRAM output, --resume, tiers
under ulimit -n 37 and 40), which are over it by design; `threads` -@ 16-64
with little memory each, meant for the 1 GiB input.  test/memory_bound.py runs a subset of it, with this
file's bound.
"""
import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paths import OUT, ROOT  # noqa: E402

MB = 1000 * 1000
MIB = 1024 * 1024
SLACK_MB = 48
TEMP_FORMATS = ["compact", "none", "lz4", "snappy", "zstd"]


def size_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def budget_bytes(args):
    """-m x max(1, -@), or --max-memory (rocksort's own rule)."""
    threads, per_thread, total = 0, 768 << 20, None
    for i, a in enumerate(args):
        if a == "-@":
            threads = int(args[i + 1])
        elif a == "-m":
            per_thread = size_bytes(args[i + 1])
        elif a == "--max-memory":
            total = size_bytes(args[i + 1])
    return total if total is not None else per_thread * max(1, threads)


def bound_mb(budget):
    """Issue #45's bound on the peak RSS, in MB."""
    return 1.15 * budget / MB + SLACK_MB


def issue_cells():
    return [["-m", "1M"], ["-m", "4M"], ["-m", "16M"],
            ["-m", "1M", "-s", "110M", "STDIN"],
            ["-@", "32", "--max-memory", "64M", "-l", "1"],
            ["-@", "8", "-m", "1M", "--merge-threads", "200"]]


def full_cells():
    cells = []
    for t in TEMP_FORMATS:
        for m in ["1M", "4M", "16M", "64M"]:
            for threads in ["0", "2", "8", "32", "64"]:
                cells.append(["-@", threads, "-m", m, "--temp-compression", t])
    for k in ["1", "2", "8", "200"]:
        for threads, m in [("2", "1M"), ("8", "1M"), ("8", "16M"), ("64", "1M")]:
            cells.append(["-@", threads, "-m", m, "--merge-threads", k])
    cells += [["-@", "4", "-m", "16M", "--merge-threads", "4", "--temp-compression", t]
              for t in TEMP_FORMATS]
    cells += [["-@", "16", "--max-memory", "64M", "-l", l] for l in ["0", "1", "6"]]
    cells += issue_cells()
    return cells


def exception_cells():
    """README's memory exceptions (issue #50): their figures come from these."""
    cells = [["-@", "64", "-m", m, "-l", l] for l in ["8", "9"] for m in ["1M", "2M", "4M"]]
    cells += [["-@", t, "-m", "2M", "-O", "cram", "--output-fmt-option", "no_ref=1"]
              for t in ["0", "2", "4", "8"]]
    cells += [["-m", m, "--resume", "RESUME"] for m in ["1M", "2M", "4M", "16M"]]
    cells += [["-m", m, f"NOFILE{n}"] for n in ["37", "40"] for m in ["1M", "4M"]]
    return cells


def thread_cells():
    """Many threads with little memory each, for the 1 GiB input (--input):
    the allocator's arenas kept tens of MB of freed readahead buffers there,
    over the bound at -@ 16 -m 16M, -@ 32 -m 8M and -@ 64 -m 4M."""
    cells = [["-@", t, "-m", m, "-l", "1"] for t, m in [("16", "16M"), ("32", "8M"), ("64", "4M"),
                                                       ("16", "32M")]]
    return cells + [["-@", "16", "-m", "16M"]]


GRIDS = {"issue": issue_cells, "full": full_cells, "exceptions": exception_cells,
         "threads": thread_cells}


def ensure_input():
    path = os.path.join(OUT, "memory-grid-40M.bam")
    if not os.path.exists(path):
        os.makedirs(OUT, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_input.py"), "40M",
                        path], check=True, stdout=sys.stderr)
    return path


def run_cell(binary, cell, inp, tmp_root):
    """-> (peak RSS MB, wall s, stderr text, exit status).  Tokens: STDIN (the
    input on stdin), RESUME (a state directory in the cell's temp), NOFILEn
    (ulimit -n n, soft and hard)."""
    stdin = "STDIN" in cell
    tmp = tempfile.mkdtemp(dir=tmp_root)
    files = [int(a[len("NOFILE"):]) for a in cell if a.startswith("NOFILE")]
    args = [os.path.join(tmp, "state") if a == "RESUME" else a for a in cell
            if a != "STDIN" and not a.startswith("NOFILE")]
    nofile = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (files[0], files[0]))) \
        if files else None
    out = os.path.join(tmp, "out.bam")
    argv = [binary, "rocksort", "-v", *args, "-T", os.path.join(tmp, "t"), "-o", out,
            "-" if stdin else inp]
    with open(inp if stdin else os.devnull, "rb") as src, \
            tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=src, stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=nofile)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        err.seek(0)
        text = err.read().decode(errors="replace")
    shutil.rmtree(tmp, ignore_errors=True)
    return usage.ru_maxrss * 1024 / MB, wall, text, os.waitstatus_to_exitcode(status)


def readout_runs(text):
    m = re.search(r"runs: \d+ written, (\d+) merged at readout", text)
    return m.group(1) if m else "-"


def passes(text):
    m = re.search(r"merge passes: (\d+) runs merged into (\d+)", text)
    alone = re.search(r"merge passes: (\d+) runs rewritten one at a time", text)
    return f"{m.group(1)} -> {m.group(2)}" if m else \
        f"{alone.group(1)} -> {alone.group(1)}" if alone else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "samtools"))
    ap.add_argument("--input")
    ap.add_argument("--grid", default="full", choices=sorted(GRIDS))
    ap.add_argument("--only", help="run only the cells whose options contain this text")
    cfg = ap.parse_args()
    inp = cfg.input or ensure_input()
    tmp_root = tempfile.mkdtemp(prefix="memory-grid-")
    over = 0
    print("| budget | options | runs at readout | passes | peak RSS | bound | wall |")
    print("|---|---|---|---|---|---|---|")
    try:
        for cell in GRIDS[cfg.grid]():
            text_opts = " ".join("(stdin)" if a == "STDIN" else a for a in cell)
            if cfg.only and cfg.only not in text_opts:
                continue
            rss, wall, err, code = run_cell(cfg.binary, cell, inp, tmp_root)
            budget = budget_bytes(cell)
            bound = bound_mb(budget)
            mark = "" if rss <= bound and code == 0 else " **over**" if code == 0 \
                else f" **exit {code}**"
            over += bool(mark)
            print(f"| {budget / MIB:g} MiB | `{text_opts}` | {readout_runs(err)} | {passes(err)} "
                  f"| {rss:.0f} MB{mark} | {bound:.0f} MB | {wall:.1f} s |", flush=True)
            if code:
                print(err.strip()[-400:], file=sys.stderr)
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
