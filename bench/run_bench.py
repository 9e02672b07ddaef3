#!/usr/bin/env python3
"""Benchmark of `samtools rocksort` against `samtools sort` and a no-sort floor.

    run_bench.py [--size 1G] [--runs 3] [--threads 2] [--mem 256M] [--cases a,b,c,d,f,g,m]
    run_bench.py --quick          # 50M input, 1 run per tool: a smoke test

Cases (all tools get the same -@, -m and -l):
  a  spilling (-m MEM): rocksort, rocksort --temp-compression none,
     samtools sort, samtools sort linked to the shared libdeflate, mako,
     floor (and sambamba, bamsort when installed)
  b  in memory (-m INMEM): rocksort, samtools sort, mako, floor
  c  uncompressed output (-u), spilling: rocksort, samtools sort, mako, floor
  d  peak RSS at the same -m/-@ (from case a's runs)
  e  scaling: seconds per GiB at SCALE x the input vs 1x (big: not by default)
  f  streaming: input piped at a limited rate (feed takes ~1.5x the floor's
     time); the time that counts is from end of input to finished output
  g  name sort (-n): rocksort, rocksort none, samtools sort, mako, floor
  l  level-1 output (-l 1), spilling: rocksort, samtools sort, mako, floor
     (not by default)
  m  model: each stage's throughput on one thread, the wall predicted for
     1 and 2 cores against rocksort under taskset, and for 8, 16, 32 cores
  t  two throttled temp disks (../shared/tools/slow-temp-disk setup 12G 150
     150 900M 2, as root, first), -m DISK_MEM: rocksort on both and on one,
     samtools sort on one, mako on both, rocksort on the fast disk (the
     limit); peak temp per disk (not by default)
floor = `samtools view -b` (decompress and recompress, no sort): no sort that
reads and writes BAM can beat it.  mako runs when it is on PATH or $MAKO
names it.  samtools is a native 1.24 (bench/build_samtools.sh) unless that
cannot be built ($SAMTOOLS overrides).  Runs alternate tool by tool, so a
noisy neighbour slows all tools alike.  Each tool has its own temp directory,
whose size is sampled every 0.3 s (peak temp MB).  Each case checks once that
every sorter's records but sambamba's and bamsort's equal samtools sort's.
Cases a, b, c, g and l also give the cores' limit: the CPU seconds of
decoding the input and compressing the sorted output at the case's level
(samtools view -@0, median of 3), over P = min(CPUs, -@ + 1); "x limit" is
each tool's wall over it.  The report goes to stdout and bench/out/latest.md.
"""
# The parts: tools.py (which samtools, mako, the rocksort build, each tool's
# command), runner.py (running and timing a job or a case, the input),
# checks.py (outputs against samtools sort's), limit.py (the cores' limit),
# model_case.py (case m), report.py (tables and the markdown report),
# paths.py (where files go).
import argparse
import os
import sys
from dataclasses import dataclass, replace
from typing import Callable, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_input  # noqa: E402  (its size parser)
from limit import Limits  # noqa: E402
from model_case import model_case  # noqa: E402
from disks_case import disk_jobs, disks_ready  # noqa: E402
from paths import LOGS, OUT, TMP  # noqa: E402
from report import report, save_raw  # noqa: E402
from runner import CaseResult, ensure_input, median, run_case  # noqa: E402
from tools import (DEFAULT_ROCKSORT, build_rocksort, choose_samtools,  # noqa: E402
                   ensure_debian_samtools, find_mako, find_shared_deflate, floor_job,
                   other_sorters, rocksort_command, shared_deflate_job, sort_jobs)

ALL_CASES = "abcdefglmt"
DEFAULT_CASES = "a,b,c,d,f,g,m"
STREAM_SLOWDOWN = 1.5  # the feed takes this many times the floor's time


# -- cases ----------------------------------------------------------------

@dataclass
class Case:
    title: str
    jobs: Callable       # cfg -> [Job]
    order: str = "coordinate"   # the output's order and level, for the case's limit
    level: Optional[int] = None  # None: --level; 0: -u


CASES = {
    "a": Case("spilling, -m {mem}",
              lambda cfg: with_shared_deflate(cfg, sort_jobs(cfg, cfg.mem, uncompressed=True)) +
              [floor_job(cfg)] + other_sorters(cfg)),
    "b": Case("in memory, -m {inmem}", lambda cfg: sort_jobs(cfg, cfg.inmem) + [floor_job(cfg)]),
    "c": Case("-u output, spilling, -m {mem}",
              lambda cfg: sort_jobs(cfg, cfg.mem, ["-u"]) + [floor_job(cfg, True)], level=0),
    "g": Case("name sort -n, -m {mem}",
              lambda cfg: sort_jobs(cfg, cfg.mem, ["-n"], uncompressed=True) + [floor_job(cfg)],
              order="name"),
    # The many-core prediction of issue #33 is made at -l 1 and -u: case c is -u.
    "l": Case("-l 1 output, spilling, -m {mem}",
              lambda cfg: sort_jobs(cfg, cfg.mem, level=1) + [floor_job(cfg, level=1)], level=1),
}


def disks_case(cfg, inp, limits):
    """Case t, or a note saying how to set its disks up."""
    title = f"two throttled temp disks, -m {cfg.disk_mem}"
    note = disks_ready()
    if note:
        print(f"bench: case t {note}", file=sys.stderr)
        return CaseResult("t", title, inp, checks=[note])
    cr = run_case("t", title, disk_jobs(cfg, cfg.disk_mem), inp, cfg.runs)
    cr.limit = limits.for_case("coordinate", cfg.level)
    return cr


def with_shared_deflate(cfg, jobs):
    """The jobs with samtools sort as Debian links it next to the main samtools
    sort row, when that build exists."""
    if not cfg.shared_deflate:
        return jobs
    at = next(i for i, j in enumerate(jobs) if j.tool == "samtools sort") + 1
    return jobs[:at] + [shared_deflate_job(cfg, cfg.shared_deflate, cfg.mem)] + jobs[at:]


def run_listed_case(key, cfg, inp, limits):
    case = CASES[key]
    limit = limits.for_case(case.order, cfg.level if case.level is None else case.level)
    cr = run_case(key, case.title.format(mem=cfg.mem, inmem=cfg.inmem), case.jobs(cfg), inp,
                  cfg.runs)
    cr.limit = limit
    return cr


def stream_case(cfg, inp, floor_seconds):
    rate = inp["compressed"] / (STREAM_SLOWDOWN * floor_seconds)
    cr = run_case("f", f"streaming at {rate / 2**20:.1f} MiB/s, -m {cfg.mem}: "
                  "s after input ends",
                  sort_jobs(cfg, cfg.mem, rate=rate), inp, cfg.runs)
    return cr


def scaling_cases(cfg, inp, done):
    """Case a's tools at 1x (case a's runs when there are) and SCALE x the
    input; the s/GiB column compares them."""
    jobs = sort_jobs(cfg, cfg.mem) + [floor_job(cfg)]
    a = next((c for c in done if c.case == "a"), None)
    one = CaseResult("e", f"scaling: 1x input, -m {cfg.mem}", inp,
                     a.results if a else run_case("e", "", jobs, inp, cfg.runs, False).results,
                     ["see a)"] if a else [])
    size = make_input.parse_size(cfg.size) * cfg.scale
    big = ensure_input(f"{size // 2**20}M", cfg.seed)
    return [one, run_case("e", f"scaling: {cfg.scale}x input, -m {cfg.mem}",
                          with_size_hint(jobs, big), big, cfg.runs)]


def with_size_hint(jobs, inp):
    """rocksort gets -s (the input's uncompressed size), as the issue's case e
    asks: background merges leave the readout about 2*sqrt(T) runs."""
    def hinted(argv):
        at = argv.index("-T")      # sort_jobs() puts -T after the shared options
        return argv[:at] + ["-s", str(inp["uncompressed"])] + argv[at:]
    return [replace(j, argv=hinted(j.argv)) if j.tool == "rocksort" else j for j in jobs]


# -- main -----------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--size", help="input BAM size [1G; --quick: 50M]")
    ap.add_argument("--runs", type=int, help="runs per tool [3; --quick: 1]")
    ap.add_argument("--threads", type=int, default=2, help="-@ for every tool [2]")
    ap.add_argument("--mem", help="-m for the spilling cases [256M; --quick: 32M]")
    ap.add_argument("--inmem", default="6G", help="-m for the in-memory case b [6G]")
    ap.add_argument("--disk-mem", default="32M", help="-m for case t, the throttled disks [32M]")
    ap.add_argument("--level", type=int, default=6, help="-l for every tool [6]")
    ap.add_argument("--cases", default=DEFAULT_CASES, help=f"from {ALL_CASES} [{DEFAULT_CASES}]")
    ap.add_argument("--scale", type=int, default=4, help="input multiple for case e [4]")
    ap.add_argument("--seed", type=int, default=1, help="input generator seed [1]")
    ap.add_argument("--rocksort", help=f"rocksort command prefix [$ROCKSORT_CMD or '{DEFAULT_ROCKSORT}']")
    ap.add_argument("--quick", action="store_true", help="50M input, 1 run: a smoke test")
    cfg = ap.parse_args()
    cfg.size = cfg.size or ("50M" if cfg.quick else "1G")
    cfg.runs = cfg.runs or (1 if cfg.quick else 3)
    cfg.mem = cfg.mem or ("32M" if cfg.quick else "256M")
    cfg.cases = [c for c in cfg.cases.replace(",", "") if c in ALL_CASES]
    cfg.explicit_rocksort = bool(cfg.rocksort or os.environ.get("ROCKSORT_CMD"))
    cfg.rocksort = rocksort_command(cfg.rocksort)
    return cfg


def main():
    cfg = parse_args()
    for d in (OUT, LOGS, TMP, os.path.join(OUT, "res")):
        os.makedirs(d, exist_ok=True)
    ensure_debian_samtools()
    build_rocksort(cfg.rocksort, cfg.explicit_rocksort)
    choose_samtools()
    cfg.mako = find_mako()
    cfg.shared_deflate = find_shared_deflate() if "a" in cfg.cases else None
    inp = ensure_input(cfg.size, cfg.seed)
    limits = Limits(cfg, inp)
    cases, rss_case, mr = [], None, None
    for key in cfg.cases:
        if key in CASES:
            cases.append(run_listed_case(key, cfg, inp, limits))
        elif key == "d":
            rss_case = next((c for c in cases if c.case == "a"), None) or run_case(
                "d", f"-m {cfg.mem}", CASES["a"].jobs(cfg), inp, 1, check=False)
        elif key == "e":
            cases += scaling_cases(cfg, inp, cases)
        elif key == "f":
            a = next((c for c in cases if c.case == "a"), None)
            floor = median(a.results["floor"]) if a else None
            if floor is None:  # the feed rate is set from the floor's time
                floor = run_case("f0", "floor", [floor_job(cfg)], inp, 1, False).results["floor"][0].seconds
            cases.append(stream_case(cfg, inp, floor))
        elif key == "m":
            mr = model_case(cfg, inp)
        elif key == "t":
            cases.append(disks_case(cfg, inp, limits))
    save_raw(cfg, inp, cases, mr)
    text = report(cfg, inp, cases, rss_case, mr)
    with open(os.path.join(OUT, "latest.md"), "w") as f:
        f.write(text)
    print(text)
    if any("**MISMATCH**" in line for cr in cases for line in cr.checks):
        sys.exit("bench: a sorter's output differs from samtools sort's (see Correctness)")


if __name__ == "__main__":
    main()
