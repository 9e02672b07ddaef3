#!/usr/bin/env python3
"""Case r: does the readout scale with its key ranges?  (issue #27's proxy)

At -u, with the output going to /dev/null through stdout, neither the disk
nor compression bounds the readout, so its throughput shows what the merge
threads can do.  For each of: held in memory (-m 6G) and spilled (-m 256M),
by coordinate and by name (-n), rocksort runs with --merge-threads 1 and 2
in turn, `runs` times each, and the readout's throughput is the records'
decoded bytes over the `phase readout` seconds of -v.  The report gives the
medians and K=2's ratio to K=1 (the target is at least 1.6 on 2 cores).

    readout_proxy.py IN.bam [--runs 3] [--rocksort CMD] [--tmp DIR]
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

SETUPS = [  # (name, -m, extra options)
    ("in memory, coordinate", "6G", []),
    ("in memory, -n", "6G", ["-n"]),
    ("spilled, coordinate", "256M", []),
    ("spilled, -n", "256M", ["-n"]),
]


def one_run(rocksort, inp, mem, extra, k, tmp):
    """Returns (readout seconds, MB decoded, wall seconds, ranges used)."""
    cmd = rocksort + ["-v", "-@", "2", "-u", "-m", mem, "--merge-threads", str(k),
                      "-T", tmp, *extra, "-o", "-", inp]
    t0 = time.monotonic()
    with open(os.devnull, "wb") as null:
        p = subprocess.run(cmd, stdout=null, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if p.returncode:
        sys.exit(f"readout_proxy: {shlex.join(cmd)} failed: {p.stderr.strip()[-300:]}")
    readout = float(re.search(r"phase readout: ([\d.]+) s", p.stderr).group(1))
    mb = float(re.search(r"; ([\d.]+) MB decoded", p.stderr).group(1))
    ranges = int(re.search(r"readout: (\d+) merge thread", p.stderr).group(1))
    return readout, mb, wall, ranges


def measure(rocksort, inp, runs, tmp):
    """{setup name: {k: [(readout s, MB, wall s, ranges), ...]}}, alternating K."""
    out = {}
    for name, mem, extra in SETUPS:
        out[name] = {1: [], 2: []}
        for _ in range(runs):
            for k in (1, 2):
                out[name][k].append(one_run(rocksort, inp, mem, extra, k, tmp))
    return out


def lines(results):
    rows = ["| setup | K=1 readout MB/s | K=2 readout MB/s | K=2 / K=1 | K=1 wall s | K=2 wall s |",
            "|---|---|---|---|---|---|"]
    for name, by_k in results.items():
        rate = {k: statistics.median(mb / r for r, mb, _, _ in v) for k, v in by_k.items()}
        wall = {k: statistics.median(w for _, _, w, _ in v) for k, v in by_k.items()}
        used = {x[3] for x in by_k[2]}
        note = "" if used == {2} else f" (ranges used: {sorted(used)})"
        rows.append(f"| {name}{note} | {rate[1]:.0f} | {rate[2]:.0f} | {rate[2] / rate[1]:.2f} |"
                    f" {wall[1]:.1f} | {wall[2]:.1f} |")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rocksort", default="./samtools rocksort")
    ap.add_argument("--tmp", default="bench/out/tmp/proxy")
    a = ap.parse_args()
    os.makedirs(a.tmp, exist_ok=True)
    print("\n".join(lines(measure(shlex.split(a.rocksort), a.input, a.runs, a.tmp))))


if __name__ == "__main__":
    main()
