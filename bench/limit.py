"""The cores' limit of a case: no sort that reads BAM and writes it can finish
before its cores have decoded the input and compressed the output, so
(decode CPU + compress CPU) / P is a lower bound on its wall time, P being the
CPUs the tools may use.  Both are measured with samtools 1.24's single-threaded
`view` (-@0) as CPU seconds (user + system, wait4), the median of LIMIT_RUNS:

  decode    view -@0 -u -o /dev/null in.bam
  compress  view -@0 -O bam,level=L -o /dev/null sorted-u.bam
            minus view -@0 -u -o /dev/null sorted-u.bam

sorted-u.bam holds the input's records in the case's order, uncompressed
(`samtools sort -l 0`), made once per input and order and kept in bench/out/
like the inputs.  The subtraction leaves the work of compressing at level L
beyond that of writing stored blocks, which the decode run already does, so
decode + compress is reading the input plus writing the output at level L."""
import os
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass

import tools
from paths import LOGS, TMP

LIMIT_RUNS = 3  # each measurement's runs; the median counts


@dataclass
class Limit:
    order: str           # "coordinate" or "name"
    level: int           # htslib's level; 0 is -u
    cores: int           # P: the CPUs the tools may use
    decode_cpu: float    # s
    compress_cpu: float  # s
    runs: int = LIMIT_RUNS
    error: str = ""

    @property
    def seconds(self):
        return None if self.error else (self.decode_cpu + self.compress_cpu) / self.cores


def usable_cpus():
    """The CPUs this process (and so each tool) may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cores(threads):
    """samtools' -@ T adds T threads to its main one: T + 1 busy threads at most,
    and no more CPUs than the machine lets the tools use."""
    return min(usable_cpus(), threads + 1)


def cpu_seconds(argv, name):
    """One run's user + system CPU seconds (all threads, wait4)."""
    with open(os.path.join(LOGS, f"limit-{name}.err"), "w") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"`{' '.join(argv)}` failed (see bench/out/logs/limit-{name}.err)")
    return usage.ru_utime + usage.ru_stime


def median_cpu(commands):
    """{name: median CPU s} of the commands, run in turn LIMIT_RUNS times, so a
    busy spell of the shared machine touches each alike."""
    seen = {name: [] for name in commands}
    for _ in range(LIMIT_RUNS):
        for name, argv in commands.items():
            seen[name].append(cpu_seconds(argv, name))
    return {name: statistics.median(v) for name, v in seen.items()}


def view(path, out_opts):
    return [tools.SAMTOOLS, "view", "-@", "0"] + out_opts + ["-o", "/dev/null", path]


def sorted_uncompressed(inp, order, cfg):
    """The input's records in the order, uncompressed: made once, then reused.
    Written under a temporary name, so an interrupted sort leaves no copy."""
    path = inp["path"][:-len(".bam")] + f"-sorted-{order}-u.bam"
    if os.path.exists(path):
        return path
    print(f"bench: writing {path} (the limit's sorted records)", file=sys.stderr, flush=True)
    tmp = os.path.join(TMP, "limit")
    os.makedirs(tmp, exist_ok=True)
    argv = [tools.SAMTOOLS, "sort", "-@", str(cfg.threads), "-m", cfg.mem, "-l", "0"] + \
        (["-n"] if order == "name" else []) + \
        ["-T", os.path.join(tmp, "st"), "-o", path + ".part", inp["path"]]
    try:
        with open(os.path.join(LOGS, f"limit-sort-{order}.err"), "w") as err:
            tools.sh(argv, stderr=err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    os.rename(path + ".part", path)
    return path


class Limits:
    """Each case's limit; the decode and each (order, level)'s compression are
    measured once per benchmark run and shared by the cases that need them."""

    def __init__(self, cfg, inp):
        self.cfg, self.inp = cfg, inp
        self.decode, self.compress = None, {}

    def for_case(self, order, level):
        p = cores(self.cfg.threads)
        try:
            return Limit(order, level, p, self.decode_cpu(), self.compress_cpu(order, level))
        except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
            print(f"bench: the limit was not measured: {e}", file=sys.stderr)
            return Limit(order, level, p, 0.0, 0.0, error=str(e))

    def decode_cpu(self):
        if self.decode is None:
            print("bench: limit: decode CPU", file=sys.stderr, flush=True)
            self.decode = median_cpu({"decode": view(self.inp["path"], ["-u"])})["decode"]
        return self.decode

    def compress_cpu(self, order, level):
        """Level 0 (-u) writes the stored blocks the decode run already wrote: 0."""
        if level == 0:
            return 0.0
        if (order, level) not in self.compress:
            src = sorted_uncompressed(self.inp, order, self.cfg)
            print(f"bench: limit: compress CPU, {order} order, level {level}",
                  file=sys.stderr, flush=True)
            got = median_cpu({f"store-{order}": view(src, ["-u"]),
                              f"compress-{order}-{level}": view(src, ["-O", f"bam,level={level}"])})
            self.compress[(order, level)] = max(0.0, got[f"compress-{order}-{level}"] -
                                                got[f"store-{order}"])
        return self.compress[(order, level)]


def limit_lines(cases, threads):
    """The report's section: how P is chosen, and each case's limit."""
    rows = [c for c in cases if c.limit]
    if not rows:
        return []
    md = ["", f"## The {cores(threads)}-core limit: (decode CPU + compress CPU) / P", "",
          f"P = min(CPUs the tools may use = {usable_cpus()} (this process's affinity), "
          f"-@ {threads} + 1 = {threads + 1}) = {cores(threads)}. Decode: CPU s of "
          f"`samtools view -@0 -u -o /dev/null in.bam`; compress: CPU s of `samtools view "
          f"-@0 -O bam,level=L -o /dev/null sorted-u.bam` minus that of `view -@0 -u` of the "
          f"same file (the input's records sorted, uncompressed); each the median of "
          f"{LIMIT_RUNS} runs in turn, by the reference samtools "
          f"({tools.samtools_version(tools.SAMTOOLS)}, `{tools.SAMTOOLS}`). "
          f"\"× limit\" in the table is a tool's median wall over this.", "",
          "| case | order | level | decode CPU s | compress CPU s | P | limit s |",
          "|---|---|---|---|---|---|---|"]
    for c in rows:
        lim = c.limit
        if lim.error:
            md.append(f"| {c.case}) | {lim.order} | {lim.level} | not measured: {lim.error} "
                      "| | | |")
            continue
        level = "0 (-u)" if lim.level == 0 else str(lim.level)
        md.append(f"| {c.case}) | {lim.order} | {level} | {lim.decode_cpu:.2f} | "
                  f"{lim.compress_cpu:.2f} | {lim.cores} | {lim.seconds:.2f} |")
    return md
