"""Two rocksort builds in turn on the benchmark's cases: a change's cost.

    .venv/bin/python bench/ab_builds.py OLD_BINARY NEW_BINARY [--cases a,c,g,l] [--runs 5]
    .venv/bin/python bench/ab_builds.py ./samtools ./samtools --new-extra '--resume TMP_DIR/state'

Each case runs the two builds alternately (old, new, old, new, ...) with the
case's options from bench/README.md at -@ 2 -m 256M on the 1 GiB input, so
that the machine's drift hits both alike, and prints per case the median
wall, CPU, peak RSS and peak temp of each build and the median of the
pairwise ratios new / old.  The outputs of the first round are compared
record for record.  Nothing else may run on the machine meanwhile.
"""
import argparse
import os
import shlex
import statistics
import sys

import tools
from checks import ordered_digest
from paths import LOGS, OUT
from runner import ensure_input, run_job
from tools import Job

CASES = {"a": ["-l", "6"], "c": ["-u"], "g": ["-n", "-l", "6"], "l": ["-l", "1"]}


def job(binary, case, cfg, which):
    """One build's command; --old-extra/--new-extra add options (TMP_DIR is
    the run's own temp directory, emptied before and removed after)."""
    extra = shlex.split(cfg.new_extra if which else cfg.old_extra)
    return Job(f"ab-{which}-{case}", [binary, "rocksort", "-@", str(cfg.threads), "-m", cfg.mem,
                                      *CASES[case], *extra, "-T", "TMP_DIR", "-o", "OUT_PATH",
                                      "IN_PATH"])


def run_pair(case, builds, cfg, inp):
    results = ([], [])
    outs = [os.path.join(OUT, "res", f"ab-{case}-{i}.bam") for i in (0, 1)]
    for r in range(cfg.runs):
        for i, b in enumerate(builds):
            print(f"ab: case {case} run {r + 1}/{cfg.runs}: {b}", file=sys.stderr, flush=True)
            res = run_job(job(b, case, cfg, i), inp["path"], outs[i],
                          os.path.join(LOGS, f"ab-{case}-{i}-{r + 1}.err"))
            if res.failed:
                sys.exit(f"ab: {b} failed in case {case}: {res.failed}")
            results[i].append(res)
        if r == 0 and ordered_digest(outs[0]) != ordered_digest(outs[1]):
            sys.exit(f"ab: case {case}: the two builds' outputs differ")
    return results


def report(case, results):
    old, new = results
    ratio = statistics.median(n.seconds / o.seconds for o, n in zip(old, new))
    cpu = statistics.median(n.cpu_seconds / o.cpu_seconds for o, n in zip(old, new))
    for name, rs in zip(("old", "new"), (old, new)):
        walls = sorted(r.seconds for r in rs)
        print(f"| {case} | {name} | {statistics.median(walls):.2f} | {walls[0]:.2f}-{walls[-1]:.2f} "
              f"| {statistics.median(r.cpu_seconds for r in rs):.2f} "
              f"| {max(r.rss_mb for r in rs):.0f} | {max(r.temp_mb for r in rs):.0f} |")
    print(f"| {case} | new / old | **{ratio:.3f}** | | {cpu:.3f} | | |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--cases", default="a,c,g,l")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mem", default="256M")
    ap.add_argument("--size", default="1G")
    ap.add_argument("--old-extra", default="", help="options for the old build's runs only")
    ap.add_argument("--new-extra", default="", help="options for the new build's runs only")
    ap.add_argument("--samtools", default=os.environ.get("SAMTOOLS") or os.path.join(
        OUT, "samtools-1.24", "samtools"))
    cfg = ap.parse_args()
    tools.SAMTOOLS = cfg.samtools   # the records are compared through its view
    os.makedirs(LOGS, exist_ok=True)
    os.makedirs(os.path.join(OUT, "res"), exist_ok=True)
    inp = ensure_input(cfg.size, 1)
    builds = [os.path.abspath(cfg.old), os.path.abspath(cfg.new)]
    print(f"input: {inp['path']}; old {builds[0]}, new {builds[1]}; -@ {cfg.threads} "
          f"-m {cfg.mem}; extra options old '{cfg.old_extra}', new '{cfg.new_extra}'; "
          f"{cfg.runs} runs each, alternating\n")
    print("| case | build | median wall s | min-max | median CPU s | peak RSS MB | peak temp MB |")
    print("|---|---|---|---|---|---|---|")
    for case in cfg.cases.split(","):
        report(case, run_pair(case, builds, cfg, inp))


if __name__ == "__main__":
    main()
