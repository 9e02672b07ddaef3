"""A throughput model of rocksort's wall time on P cores (bench case m).

Five stages are timed on one thread each (bench/run_bench.py runs them); their
throughputs are in bytes of uncompressed records per second (U: what rocksort
-v reports as decoded).  From the seconds each stage takes for the whole input
on one thread, the model predicts the wall time on P cores with -@ P:

    load(P)    = max((dec + key + spill) / P,  parse + key,  spill)
    readout(P) = max(merge,  (merge + comp) / P)                  with K = 1
               = max(append,  (merge + comp + pass) / min(K, P))  with K > 1
    wall(P)    = fixed + load(P) + settle + readout(P)

dec: BGZF decompression and parsing of the input (the decompression runs on
the -@ pool, the parsing on the loader); parse: the parsing alone; key: the
loader's own work (key, batch, the last batch's sort); spill: the spill
thread's sort and writing of runs, one batch at a time; merge: the heap merge
with its readers, writing uncompressed output; comp: compressing the output
at the benchmark's level on one thread; K: merge threads (1 for a
single-merge design like samtools'), each merging and compressing pieces of
its own; pass: the pieces' way through memory (an in-memory file, then handed
to the output), measured at -u as the readout's extra time with K = 2 on one
core; append: the one writer's appending of the pieces, taken as
readout_model.h's READOUT_APPEND_S_PER_GB; settle: waiting for background
merges after the load; fixed: what is outside the phases (start, header,
cleanup).  It is a model: it ignores
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
    # The readout's merge threads (--merge-threads): absent from older builds.
    "ranges": r"readout: (\d+) merge threads?",
    "through_mb": rf"readout: \d+ merge threads? over \d+ pieces?; {NUM} MB through memory",
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
    pass_per_mb: float = 0.0   # s per MB of output through memory (K > 1), else 0
    out_mb: float = 0.0        # compressed output size, for pass and append
    notes: list = field(default_factory=list)

    def rates(self):
        """(stage, MB/s on one thread) in pipeline order."""
        def rate(t):
            return self.bytes / 1e6 / t if t > 0 else float("inf")
        return [("decode (decompress + parse)", rate(self.dec)),
                ("  of which parse", rate(self.parse)),
                ("key and batch (loader)", rate(self.key)),
                ("sort and spill (spill thread)", rate(self.spill)),
                ("merge (-u readout, one thread)", rate(self.merge)),
                ("compression per thread", rate(self.comp))]


# readout_model.h's appending of pieces by the one writer, s/GB of output.
APPEND_S_PER_GB = 0.4
DEFAULT_RULE = "by rocksort's rule (readout_model.c) on these stage times"
K_SLACK = 0.2


def readout_seconds(stages, cores, k):
    """(seconds, what bounds them) of the readout with k merge threads."""
    s = stages
    if k <= 1:
        parts = {"merge": s.merge, "cores": (s.merge + s.comp) / cores}
    else:
        pass_s = s.pass_per_mb * s.out_mb
        parts = {"writer": APPEND_S_PER_GB * s.out_mb / 1e3,
                 "cores": (s.merge + s.comp + pass_s) / min(k, cores)}
    bound = max(parts, key=parts.get)
    return parts[bound], bound


def default_ranges(stages, cores):
    """K by rocksort's own rule (readout_model.c) on these stage times: the
    smallest K within 20% of the best."""
    best = 1
    for k in range(2, cores + 1):
        if readout_seconds(stages, cores, k)[0] < readout_seconds(stages, cores, best)[0] * (1 - K_SLACK):
            best = k
    return best


def predict(stages, cores, ranges):
    """(load, readout, wall, what bounds the load, what bounds the readout)."""
    s, p = stages, cores
    load_parts = {"cores": (s.dec + s.key + s.spill) / p,
                  "loader": s.parse + s.key, "spill thread": s.spill}
    load_bound = max(load_parts, key=load_parts.get)
    load = load_parts[load_bound]
    readout, out_bound = readout_seconds(s, p, ranges)
    return load, readout, s.fixed + load + s.settle + readout, load_bound, out_bound


def fmt(x, pat="{:.1f}"):
    return "–" if x is None else pat.format(x)


def report(stages, checks, cores_list=(8, 16, 32, 64), rule=None):
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
           "max(merge, (merge + comp)/P) with one merge thread, max(append, (merge + comp + "
           "pass)/min(K, P)) with K; wall = fixed + load + compaction wait + readout. It "
           "ignores disk and memory bandwidth (see bench/README.md)."]
    md += [f"- {n}" for n in s.notes]
    return md
