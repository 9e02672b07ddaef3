"""The report: the results table, case d's RSS table, case e's scaling and
merge lines, the machine and its temp directory's traits, the markdown text
(bench/out/latest.md) and every run's numbers (bench/out/latest.json)."""
import datetime
import json
import os
import platform
import re
import subprocess
import time

import tools
from limit import limit_lines
from model_case import model_lines
from disks_case import disk_lines
from paths import OUT, ROOT, TMP
from runner import SAMPLE_EVERY, median
from tools import LIBDEFLATE_LEVEL, SHARED_DEFLATE_TOOL, mako_version, samtools_version

LOAD_AT_START = os.getloadavg()[0]  # the machine is shared: note how busy


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / 2**20
    rev = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    st = subprocess.run([tools.SAMTOOLS, "--version"], stdout=subprocess.PIPE, text=True,
                        errors="replace").stdout.split("\n")
    return (f"{os.cpu_count()} cores ({cpu}), {mem_gib:.0f} GiB, {platform.release()}, "
            f"{datetime.datetime.now().isoformat(timespec='seconds')}; "
            f"load average {LOAD_AT_START:.2f} at start, {os.getloadavg()[0]:.2f} at end; "
            f"reference {st[0]} ({st[1]}); rocksort at {rev or 'no commit'}")


def temp_traits():
    """Two traits of the temp directory's machine that a sort with gigabytes of temp
    data pays for and a recompression does not: the cost of new page-cache pages
    (high when the cache fills memory and each page must first be reclaimed), and
    online discard, which makes unlinking written-back files slow."""
    path, chunk, n = os.path.join(TMP, "page-cache-probe"), os.urandom(1 << 20), 512
    rates = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(2):  # first into new pages, then over the same, cached ones
            os.lseek(fd, 0, os.SEEK_SET)
            t = time.perf_counter()
            for _ in range(n):
                os.write(fd, chunk)
            rates.append(n / (time.perf_counter() - t))
    finally:
        os.close(fd)
        os.unlink(path)
    return (f"temp dir: page-cache writes {rates[0]:.0f} MiB/s into new pages "
            f"({free_memory_gib():.1f} GiB free), {rates[1]:.0f} MiB/s over cached ones; "
            f"{mount_of(TMP)}")


def free_memory_gib():
    # When free memory is short, every new page-cache page is first reclaimed.
    with open("/proc/meminfo") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("MemFree:")) / 2**20


def mount_of(path):
    path, best = os.path.realpath(path), ("?", "?", "")
    with open("/proc/mounts") as f:
        for line in f:
            _, point, fstype, opts = line.split()[:4]
            if (path + "/").startswith(point.rstrip("/") + "/") and len(point) >= len(best[2]):
                best = (fstype, opts, point)
    discard = "discard" in best[1].split(",")
    return f"{best[0]} {'with' if discard else 'without'} online discard"


def fmt(x, pat="{:.1f}"):
    return "–" if x is None else pat.format(x)


def table(cases):
    rows = ["| case | tool | median s | min–max | CPU s | × limit | × floor | × samtools sort | "
            "peak RSS MB | peak temp MB | output MB | s/GiB in |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for cr in cases:
        floor = median(cr.results.get("floor", []))
        ref = median(cr.results.get("samtools sort", []))
        limit = cr.limit.seconds if cr.limit and cr.case != "f" else None
        gib = cr.input["compressed"] / 2**30
        for tool, results in cr.results.items():
            med = median(results)
            ok = [r.seconds for r in results if not r.failed]
            span = f"{min(ok):.1f}–{max(ok):.1f}" if ok else "FAILED"
            rows.append(
                f"| {cr.case}) {cr.title} | {tool} | {fmt(med)} | {span} | "
                f"{fmt(median(results, 'cpu_seconds'))} | {ratio(med, limit)} | "
                f"{ratio(med, floor if cr.case != 'f' else None)} | {ratio(med, ref)} | "
                f"{fmt(peak(results, 'rss_mb'), '{:.0f}')} | "
                f"{fmt(peak(results, 'temp_mb'), '{:.0f}')} | "
                f"{fmt(peak(results, 'out_bytes', 1e-6), '{:.1f}')} | "
                f"{fmt(med / gib if med and cr.case != 'f' else None)} |")
    return rows


def ratio(x, y):
    return fmt(x / y if x and y else None, "{:.2f}")


def peak(results, attr, scale=1.0):
    """The largest value of the successful runs (output sizes vary at most by @PG)."""
    return max((getattr(r, attr) * scale for r in results if not r.failed), default=None)


def rss_table(cr, cfg):
    rows = [f"| tool (-@ {cfg.threads}, -m {cfg.mem}) | peak RSS MB, max over runs | median |",
            "|---|---|---|"]
    for tool, results in cr.results.items():
        rows.append(f"| {tool} | {fmt(max((r.rss_mb for r in results), default=None), '{:.0f}')} "
                    f"| {fmt(median(results, 'rss_mb'), '{:.0f}')} |")
    return rows


def phase_lines(stderr):
    """rocksort -v's phase times; the format is not fixed, so keep any line
    that names a phase or has a colon, raw."""
    return [l for l in stderr.splitlines() if "phase" in l.lower() or ":" in l][:40]


def save_raw(cfg, inp, cases, mr=None):
    """Every run's numbers, for a later look (bench/out/latest.json)."""
    raw = {"input": inp, "options": {k: v for k, v in vars(cfg).items()},
           "samtools": [tools.SAMTOOLS, tools.SAMTOOLS_NOTE],
           "model": mr and {"runs": mr.raw, "error": mr.error, "commands": mr.commands,
                            "stages": mr.stages and vars(mr.stages), "checks": mr.checks},
           "cases": [{"case": c.case, "title": c.title, "checks": c.checks,
                      "limit": c.limit and dict(vars(c.limit), seconds=c.limit.seconds),
                      "results": {t: [vars(r) for r in rs] for t, rs in c.results.items()}}
                     for c in cases]}
    with open(os.path.join(OUT, "latest.json"), "w") as f:
        json.dump(raw, f, indent=1)


def report(cfg, inp, cases, rss_case, mr=None):
    md = ["# rocksort benchmark", "",
          f"- input: {inp['records']:,} records, {inp['compressed'] / 2**20:.0f} MiB BAM, "
          f"{inp['uncompressed'] / 2**20:.0f} MiB uncompressed (ratio {inp['ratio']}), "
          f"generated by bench/make_input.py (seed {inp['seed']})",
          f"- options: -@ {cfg.threads}, -m {cfg.mem} (spilling) / {cfg.inmem} (in memory), "
          f"-l {cfg.level}; {cfg.runs} run(s) per tool, alternating",
          f"- rocksort: `{' '.join(cfg.rocksort)}`; samtools sort: `{tools.SAMTOOLS} sort` "
          f"({samtools_version(tools.SAMTOOLS)}, {tools.SAMTOOLS_NOTE or 'default'}); "
          f"floor: `{tools.SAMTOOLS} view -b` (no sort)",
          "- mako: " + (f"`{cfg.mako}` ({mako_version(cfg.mako)}), `--compression-level "
                         f"{LIBDEFLATE_LEVEL[cfg.level]}` for -l {cfg.level}, 1 for -l 1 (case l), "
                         "0 for -u (libdeflate's level, as htslib maps it); `--order coordinate`, "
                         "`queryname::natural` for -n"
                         if cfg.mako else "not run (not on PATH, $MAKO unset)"),
          f"- {SHARED_DEFLATE_TOOL} (case a): " +
          (f"`{cfg.shared_deflate} sort`, samtools 1.24 linked against the shared "
           "libdeflate.so.0 as Debian links it; the main samtools sort row links it statically"
           if cfg.shared_deflate else "not run (`LIBDEFLATE=shared bench/build_samtools.sh` failed)"),
          f"- peak temp MB: each tool's own temp directory, sampled every {SAMPLE_EVERY} s, "
          "allocated blocks, 10^6 bytes",
          f"- machine: {machine()}", f"- {temp_traits()}", ""]
    md += table(cases)
    md += limit_lines(cases, cfg.threads)
    md += ["", "Streaming (f): the median is the time from the end of input to the finished "
           "output; the feed itself takes ~1.5x the floor's time." if any(c.case == "f" for c in cases) else ""]
    for cr in cases:
        if cr.case == "f":
            for tool, results in cr.results.items():
                md.append(f"- f) {tool}: feed {fmt(median(results, 'fed_seconds'))} s, "
                          f"total {fmt(median(results, 'total_seconds'))} s")
    md += scaling_lines(cases) + merge_lines(cases) + disk_lines(cases)
    if rss_case:
        md += ["", "## d) peak RSS at the same -m/-@", ""] + rss_table(rss_case, cfg)
    md += ["", "## Correctness (each sorter vs samtools sort, first run of each case)", ""]
    for cr in cases:
        md += [f"- {cr.case}) {line}" for line in (cr.checks or ["not checked"])]
    failures = [(cr.case, t, r.failed) for cr in cases for t, rs in cr.results.items()
                for r in rs if r.failed]
    if failures:
        md += ["", "## Failures", ""] + [f"- {c}) {t}: `{f}`" for c, t, f in failures]
    if mr:
        md += model_lines(mr, cfg)
    md += ["", "<details><summary>rocksort -v output (phase times, raw)</summary>", ""]
    for cr in cases:
        for tool in ("rocksort", "rocksort none", "rocksort, 2 disks", "rocksort, 1 disk"):
            for i, r in enumerate(cr.results.get(tool, []), 1):
                md += [f"{cr.case}) {tool} run {i}, {r.seconds:.1f} s:", "```"] + \
                      (phase_lines(r.stderr) or ["(nothing)"]) + ["```"]
    md += ["", "</details>", ""]
    return "\n".join(md)


# -- case e's lines ---------------------------------------------------------

RUNS_LINE = re.compile(r"runs: (\d+) written, (\d+) merged at readout")


def merge_lines(cases):
    """Case e's rocksort runs: sorted runs written (T) and merged at readout."""
    lines = []
    for cr in cases:
        if cr.case != "e":
            continue
        for i, r in enumerate(cr.results.get("rocksort", []), 1):
            m = RUNS_LINE.search(r.stderr)
            if m:
                t, merged = int(m[1]), int(m[2])
                lines.append(f"- e) {cr.title}, rocksort run {i}: readout merged {merged} of "
                             f"T = {t} runs (2·√T = {2 * t ** 0.5:.1f})")
    return lines


def scaling_lines(cases):
    """Seconds per GiB at SCALE x over 1x, per tool: 1.00 is linear."""
    rows = [c for c in cases if c.case == "e"]
    if len(rows) != 2:
        return []
    lines = []
    for tool in rows[0].results:
        per_gib = [median(c.results.get(tool, [])) for c in rows]
        if None in per_gib:
            continue
        one, big = (s / (c.input["compressed"] / 2**30) for s, c in zip(per_gib, rows))
        lines.append(f"- e) {tool}: {one:.1f} s/GiB at 1x, {big:.1f} s/GiB at "
                     f"{rows[1].title.split()[1]} (x{big / one:.2f})")
    return lines
