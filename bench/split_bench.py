"""rocksort --split against samtools sort | samtools split, alternating (issue #54).

    .venv/bin/python bench/split_bench.py                       # 1G input, 3 runs, -@ 2 -m 256M
    .venv/bin/python bench/split_bench.py --size 50M --runs 1   # a smoke test of the script
    .venv/bin/python bench/split_bench.py --by RG --runs 5

For each split (by RG: the input's @RG lines, one per flowcell lane; by
tag: XC, a tag with --values values added to every record, cycling with
the record's number), the two commands run alternately (rocksort, two-pass,
rocksort, ...) so that the machine's drift hits both alike:

    rocksort   ./samtools rocksort -@T -m M --split BY -T TMP -o 'OUT/%!.bam' IN
    two-pass   samtools sort -@T -m M -u -T TMP/st IN |
                   samtools split -@T -M -1 [-d TAG] -f 'OUT/%!.bam' -u OUT/unaccounted.bam -

The sort writes uncompressed BAM into the pipe (-u): the cheapest two-pass
a user would run; both write level-6 BAM files.  samtools is the native 1.24
build (bench/build_samtools.sh; $SAMTOOLS replaces it).  After the first
round the two directories must hold the same files with the same records
in the same order (samtools view of each, hashed).  Printed: a markdown
table per split of each command's median wall, CPU, peak RSS (the
largest process's) and peak temp, and the median of the pairwise wall
ratios rocksort / two-pass, against issue #54's goal of 0.6 or less.

Timings mean something only on a quiet machine: nothing else may run
meanwhile (see bench/README.md).  The tagged input is made once and kept
in bench/out beside the input it comes from.
"""
import argparse
import hashlib
import os
import shlex
import shutil
import statistics
import subprocess
import sys

import tools
from paths import LOGS, OUT, ROOT
from runner import ensure_input, run_job
from tools import Job

GOAL = 0.6
TAG = "XC"


def tagged_input(src, values, threads):
    """src with XC:Z:V<n mod values> added to every record; made once."""
    path = src.replace(".bam", f"-{TAG}{values}.bam")
    if os.path.exists(path):
        return path
    print(f"split_bench: adding {TAG} ({values} values) to {src}", file=sys.stderr, flush=True)
    awk = (f'BEGIN {{ OFS = "\\t" }} /^@/ {{ print; next }} '
           f'{{ print $0, "{TAG}:Z:V" (n++ % {values}) }}')
    cmd = (f"{shlex.quote(tools.SAMTOOLS)} view -h -@{threads} {shlex.quote(src)} | "
           f"awk {shlex.quote(awk)} | "
           f"{shlex.quote(tools.SAMTOOLS)} view -b -@{threads} -o {shlex.quote(path + '.part')} -")
    subprocess.run(["bash", "-o", "pipefail", "-c", cmd], check=True)
    os.rename(path + ".part", path)
    return path


def jobs(cfg, by, out_dirs):
    """The two commands; OUT directories given here, emptied per run."""
    t, m = str(cfg.threads), cfg.mem
    rocksort = Job("rocksort --split", [*cfg.rocksort, "-@", t, "-m", m, "--split", by,
                                        "-T", "TMP_DIR", "-o", os.path.join(out_dirs[0], "%!.bam"),
                                        "IN_PATH"])
    st = shlex.quote(tools.SAMTOOLS)
    split = f"-d {by} " if by != "RG" else ""
    pipe = (f"{st} sort -@{t} -m {m} -u -T TMP_DIR/st IN_PATH | "
            f"{st} split -@{t} -M -1 {split}-f {shlex.quote(os.path.join(out_dirs[1], '%!.bam'))} "
            f"-u {shlex.quote(os.path.join(out_dirs[1], 'unaccounted.bam'))} -")
    return [rocksort, Job("sort | split", ["bash", "-o", "pipefail", "-c", pipe])]


def records_of(path):
    """(records, sha256 of the records as SAM text) of one file."""
    proc = subprocess.Popen([tools.SAMTOOLS, "view", path], stdout=subprocess.PIPE)
    digest, count = hashlib.sha256(), 0
    while chunk := proc.stdout.read(1 << 20):
        digest.update(chunk)
        count += chunk.count(b"\n")
    proc.wait()
    return count, digest.hexdigest()


def check_same(dirs):
    """The same files, each with the same records in the same order.  An
    unaccounted file the two-pass wrote empty may be missing on rocksort's
    side (rocksort writes it only when it has records)."""
    mine, theirs = (sorted(os.listdir(d)) for d in dirs)
    if "unaccounted.bam" in theirs and "unaccounted.bam" not in mine and \
            records_of(os.path.join(dirs[1], "unaccounted.bam"))[0] == 0:
        theirs.remove("unaccounted.bam")
    if mine != theirs:
        return f"different files: {sorted(set(mine) ^ set(theirs))[:5]}"
    for name in mine:
        if records_of(os.path.join(dirs[0], name)) != records_of(os.path.join(dirs[1], name)):
            return f"{name}: different records"
    return f"same {len(mine)} files, same records in the same order"


def run_split(cfg, by, inp):
    dirs = [os.path.join(OUT, "res", f"split-{by}-{w}") for w in ("rocksort", "two-pass")]
    results, check = ([], []), ""
    for r in range(cfg.runs):
        for i, job in enumerate(jobs(cfg, by, dirs)):
            shutil.rmtree(dirs[i], ignore_errors=True)
            os.makedirs(dirs[i])
            print(f"split_bench: by {by} run {r + 1}/{cfg.runs}: {job.tool}", file=sys.stderr,
                  flush=True)
            res = run_job(job, inp, os.path.join(dirs[i], ".none"),
                          os.path.join(LOGS, f"split-{by}-{i}-{r + 1}.err"))
            if res.failed:
                sys.exit(f"split_bench: {job.tool} failed (by {by}): {res.failed}")
            results[i].append(res)
        if r == 0 and not cfg.no_check:
            check = check_same(dirs)
            if not check.startswith("same"):
                sys.exit(f"split_bench: by {by}: the outputs differ: {check}")
    return results, check


def report(by, results, check, outputs):
    mine, theirs = results
    ratio = statistics.median(a.seconds / b.seconds for a, b in zip(mine, theirs))
    print(f"\n### split by {by} ({outputs} outputs; {check or 'not checked'})\n")
    print("| command | wall s (median) | range | CPU s | peak RSS MB | peak temp MB |")
    print("|---|---|---|---|---|---|")
    for name, rs in (("rocksort --split", mine), ("sort \\| split", theirs)):
        walls = sorted(r.seconds for r in rs)
        print(f"| {name} | {statistics.median(walls):.2f} | {walls[0]:.2f}-{walls[-1]:.2f} "
              f"| {statistics.median(r.cpu_seconds for r in rs):.2f} "
              f"| {max(r.rss_mb for r in rs):.0f} | {max(r.temp_mb for r in rs):.0f} |")
    verdict = "meets" if ratio <= GOAL else "misses"
    print(f"\nrocksort / two-pass wall, median of pairs: **{ratio:.3f}** ({verdict} the goal "
          f"of {GOAL})", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1G")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mem", default="256M")
    ap.add_argument("--by", default="RG,tag", help="RG, tag or both [RG,tag]")
    ap.add_argument("--values", type=int, default=1000, help="the tag's values [1000]")
    ap.add_argument("--no-check", action="store_true", help="skip comparing the outputs")
    ap.add_argument("--rocksort", help="rocksort command [./samtools rocksort]")
    cfg = ap.parse_args()
    explicit = cfg.rocksort is not None
    cfg.rocksort = tools.rocksort_command(cfg.rocksort or "./samtools rocksort")
    tools.build_rocksort(cfg.rocksort, explicit)
    tools.choose_samtools()
    os.makedirs(LOGS, exist_ok=True)
    inp = ensure_input(cfg.size, cfg.seed)["path"]
    print(f"split_bench: {inp}, -@ {cfg.threads} -m {cfg.mem}, {cfg.runs} runs; samtools "
          f"{tools.SAMTOOLS} ({tools.SAMTOOLS_NOTE}); rocksort {' '.join(cfg.rocksort)} "
          f"in {ROOT}", flush=True)
    for by in cfg.by.split(","):
        src = inp if by == "RG" else tagged_input(inp, cfg.values, cfg.threads)
        tag = "RG" if by == "RG" else TAG
        results, check = run_split(cfg, tag, src)
        outputs = len(os.listdir(os.path.join(OUT, "res", f"split-{tag}-rocksort")))
        report(tag, results, check, outputs)


if __name__ == "__main__":
    sys.exit(main())
