"""A throughput model of rocksort's wall time on P cores (bench case m).

Five stages are timed on one thread each (bench/run_bench.py runs them); their
throughputs are in bytes of uncompressed records per second (U: what rocksort
-v reports as decoded).  From the seconds each stage takes for the whole input
on one thread, the model predicts the wall time on P cores with -@ P:

    load(P)    = max((dec + key + spill) / P,  parse + key,  spill)
    readout(P) = max(merge / K,  (merge + comp) / P) + join
    wall(P)    = fixed + load(P) + settle + readout(P)

dec: BGZF decompression and parsing of the input (the decompression runs on
the -@ pool, the parsing on the loader); parse: the parsing alone; key: the
loader's own work (key, batch, the last batch's sort); spill: the spill
thread's sort and writing of runs, one batch at a time; merge: one key range's
heap merge with its readers, writing uncompressed output; comp: compressing
the output at the benchmark's level on one thread; K: key ranges merged at
once (1 for a single-merge design like samtools'); join: joining the ranges'
outputs; settle: waiting for background merges after the load; fixed: what
is outside the phases (start, header, cleanup).  It is a model: it ignores
the disk's bandwidth, memory bandwidth, hyper-threads and the batch size's
growth with -@ (-m is per thread), and it puts every thread's work on a core
of its own once there are enough.
"""
import re
from dataclasses import dataclass, field

NUM = r"([0-9]+(?:\.[0-9]+)?)"
PATTERNS = {
    "decoded_mb": rf"records: \d+ in, \d+ out; {NUM} MB decoded",
    "load": rf"phase load: {NUM} s",
    "sort": rf"phase load: .*?\bsort {NUM} s",
    "write": rf"phase load: .*?\bwrite runs {NUM} s",
    "hold": rf"phase load: .*?\bcopy held {NUM} s",
    "wait": rf"phase load: .*?\breader waited {NUM} s",
    "settle": rf"phase compaction wait: {NUM} s",
    "readout": rf"phase readout: {NUM} s",
    # The range-partitioned readout (--merge-threads): absent from older builds.
    "ranges": r"readout: (\d+) ranges? merged at once",
    "join": rf"readout: \d+ ranges? merged at once; join {NUM} s",
    "appended_mb": rf"readout: \d+ ranges? merged at once; join {NUM} s, {NUM} MB appended",
}


def parse_verbose(stderr):
    """rocksort -v's numbers as a dict; keys whose line is missing are absent."""
    got = {}
    for key, pattern in PATTERNS.items():
        m = re.search(pattern, stderr)
        if m:
            got[key] = float(m.groups()[-1])
    if "ranges" in got:
        got["ranges"] = int(got["ranges"])
    return got


@dataclass
class Stages:
    """Seconds each stage takes for the whole input on one thread."""
    bytes: float         # U, uncompressed record bytes
    dec: float
    parse: float
    key: float
    spill: float
    merge: float
    comp: float
    settle: float = 0.0
    fixed: float = 0.0
    join_per_mb: float = 0.0   # from a run that reported a join, else 0
    out_mb: float = 0.0        # compressed output size, for the join's estimate
    notes: list = field(default_factory=list)

    def rates(self):
        """(stage, MB/s on one thread) in pipeline order."""
        def rate(t):
            return self.bytes / 1e6 / t if t > 0 else float("inf")
        return [("decode (decompress + parse)", rate(self.dec)),
                ("  of which parse", rate(self.parse)),
                ("key and batch (loader)", rate(self.key)),
                ("sort and spill (spill thread)", rate(self.spill)),
                ("merge per range (-u readout)", rate(self.merge)),
                ("compression per thread", rate(self.comp))]


# readout_model.h's cost of a part (written, then copied onto the output), s/GB.
PART_S_PER_GB = 2.3
DEFAULT_RULE = "by rocksort's rule (readout_model.c) on these stage times"
K_SLACK = 0.05


def default_ranges(stages, cores):
    """K by rocksort's own rule (readout_model.c) on these stage times: the
    smallest K within 5% of the best max(m/K, (m + c + part*(K-1)/K)/P)."""
    m, c = stages.merge, stages.comp
    part = PART_S_PER_GB * stages.bytes / 1e9

    def cost(k):
        return max(m / k, (m + c + part * (k - 1) / k) / cores)
    best = 1
    for k in range(2, cores + 1):
        if cost(k) < cost(best) * (1 - K_SLACK):
            best = k
    return best


def join_seconds(stages, ranges):
    """Assumed: every range but the first is appended to the output."""
    return stages.join_per_mb * stages.out_mb * (ranges - 1) / ranges if ranges > 1 else 0.0


def predict(stages, cores, ranges):
    """(load, readout, wall, what bounds the load, what bounds the readout)."""
    s, p = stages, cores
    load_parts = {"cores": (s.dec + s.key + s.spill) / p,
                  "loader": s.parse + s.key, "spill thread": s.spill}
    load_bound = max(load_parts, key=load_parts.get)
    out_parts = {"cores": (s.merge + s.comp) / p, "merge": s.merge / ranges}
    out_bound = max(out_parts, key=out_parts.get)
    load = load_parts[load_bound]
    join = join_seconds(s, ranges)
    readout = out_parts[out_bound] + join
    if join > 0:
        out_bound += f" + join {join:.1f} s"
    return load, readout, s.fixed + load + s.settle + readout, load_bound, out_bound


def fmt(x, pat="{:.1f}"):
    return "–" if x is None else pat.format(x)


def report(stages, checks, cores_list=(8, 16, 32), rule=None):
    """Markdown lines: the throughputs, predicted vs measured, predictions.
    checks: [(cores, threads, ranges, measured {load, readout, wall})]."""
    s = stages
    md = [f"Stage throughputs on one thread, MB/s of uncompressed records "
          f"(U = {s.bytes / 1e6:.0f} MB):", "",
          "| stage | MB/s, one thread | s for U |", "|---|---|---|"]
    secs = [s.dec, s.parse, s.key, s.spill, s.merge, s.comp]
    md += [f"| {name} | {rate:.0f} | {t:.2f} |" for (name, rate), t in zip(s.rates(), secs)]
    md += [f"| outside the model's stages: fixed {s.fixed:.2f} s, compaction wait "
           f"{s.settle:.2f} s | | |", ""]
    md += ["Predicted against measured (rocksort under taskset):", "",
           "| cores | -@ | K | load s pred / meas | readout s pred / meas | wall s pred / meas | error |",
           "|---|---|---|---|---|---|---|"]
    for cores, threads, ranges, meas in checks:
        load, readout, wall, _, _ = predict(s, cores, ranges)
        err = (wall / meas["wall"] - 1) * 100 if meas.get("wall") else None
        md.append(f"| {cores} | {threads} | {ranges} | {load:.1f} / {fmt(meas.get('load'))} | "
                  f"{readout:.1f} / {fmt(meas.get('readout'))} | {wall:.1f} / "
                  f"{fmt(meas.get('wall'))} | {fmt(err, '{:+.0f}%')} |")
    md += ["", f"Predicted (a model, not a measurement; K {rule or DEFAULT_RULE}):", "",
           "| cores | rocksort K | rocksort wall s | load s (bound) | readout s (bound) | "
           "single merge (K=1) wall s | its readout s (bound) |",
           "|---|---|---|---|---|---|---|"]
    for p in cores_list:
        k = default_ranges(s, p)
        load, readout, wall, lb, rb = predict(s, p, k)
        _, readout1, wall1, _, rb1 = predict(s, p, 1)
        md.append(f"| {p} | {k} | {wall:.1f} | {load:.1f} ({lb}) | {readout:.1f} ({rb}) | "
                  f"{wall1:.1f} | {readout1:.1f} ({rb1}) |")
    md += ["", "Model: load = max((dec + key + spill)/P, parse + key, spill); readout = "
           "max(merge/K, (merge + comp)/P) + join; wall = fixed + load + compaction wait + "
           "readout. It ignores disk and memory bandwidth (see bench/README.md)."]
    md += [f"- {n}" for n in s.notes]
    return md
