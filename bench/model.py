"""A model of rocksort's wall time on P cores (bench case m), from each
thread's CPU time.

bench/model_case.py measures two one-thread tools and one rocksort run.
The tools: decoding the input on one thread (dec, and of it the parsing,
parse) and compressing the sorted output at the level (comp).  The
rocksort run (the stage run: `-v -@ 4 -u`, pinned to two cores, so its
spill thread hands its work to the pool as it does on many cores) prints
every thread's CPU time per phase (-v's "threads in phase" lines), which
the model reads instead of timing stages of its own:

    loader     the main thread in the load: parsing, keys, batches
    spill      the spill thread: with a pool, only what must be in order
    load_cpu   all the load's CPU: decompression, the loader, the sorts and
               the runs' encoding on the pool, the spill thread
    merge      the main thread in the readout: the merge (K = 1, at -u)
    read       the threads that read the runs back, parts of them at once
    write      BGZF's writer thread, at -u (scaled by the output's size)
    readout    all the readout's CPU at -u; at a level, comp more

In seconds for the whole input, the model predicts for P cores with -@ P:

    load(P)    = max(load_cpu / P,  loader,  spill)
    readout(P) = max(merge, read / parts, write, (readout + comp) / P)     K = 1
               = max(append, (readout - write + read * straddle + comp
                              + pass) / min(K, P))                         K > 1
    wall(P)    = fixed + load(P) + settle + readout(P)

load(P) + readout(P) is the model's view of issue #41's P-core bound
(bench/thread_bound.py), with every pool's work spread over the cores.  K
is rocksort's own rule (readout/readout_model.c) applied to these figures: one
stream while no thread of it needs more than its share, (readout + comp) /
P, else K = P merge threads if that is faster.  pass: the pieces' way
through memory, measured at -u as the extra readout CPU with K = 2 on one
core; append: the writer's appending of pieces (READOUT_APPEND_S_PER_GB);
straddle: a piece's second reading of the runs' groups that span its start
(READOUT_STRADDLE_SHARE); settle: waiting for background merges after the
load; fixed: what is outside the phases.  It is a model: it ignores the
disk's and memory's bandwidth, hyper-threads and the batches' growth with
-@ (-m is per thread), and at P of 2 or less it ignores the spill thread,
which then does all of its work itself (the cores bound those walls).
"""
import re
from dataclasses import dataclass, field

NUM = r"([0-9]+(?:\.[0-9]+)?)"
PATTERNS = {
    "decoded_mb": rf"records: \d+ in, \d+ out; {NUM} MB decoded",
    "load": rf"phase load: {NUM} s",
    "wait": rf"phase load: .*?\breader waited {NUM} s",
    "settle": rf"phase compaction wait: {NUM} s",
    "readout": rf"phase readout: {NUM} s",
    "ranges": r"readout: (\d+) merge threads?",
    "through_mb": rf"readout: \d+ merge threads? over \d+ pieces?; {NUM} MB through memory",
}
LONGEST = re.compile(rf"threads in phase ([a-z ]+): the longest single thread: {NUM} s "
                     rf"\(([^)]+)\) of {NUM} CPU-s")
ROLES = re.compile(r"threads in phase ([a-z ]+): (?!the longest)(.*)")
ROLE = re.compile(rf"^(.+?) (?:(\d+) threads )?{NUM} s(?: \(busiest {NUM} s\))?$")


def parse_threads(stderr):
    """-v's thread lines: {phase: {"cpu", "longest", "longest_role",
    "roles": {role: (threads, cpu, busiest)}}}; {} from older builds."""
    phases = {}
    for m in LONGEST.finditer(stderr):
        phases[m.group(1)] = {"longest": float(m.group(2)), "longest_role": m.group(3),
                              "cpu": float(m.group(4)), "roles": {}}
    for m in ROLES.finditer(stderr):
        roles = phases.setdefault(m.group(1), {"cpu": 0.0, "longest": 0.0,
                                               "longest_role": "", "roles": {}})["roles"]
        for item in (x.strip() for x in m.group(2).split(";")):
            r = ROLE.match(item)
            if r and r.group(1) != "unattributed":
                cpu = float(r.group(3))
                roles[r.group(1)] = (int(r.group(2) or 1), cpu,
                                     float(r.group(4)) if r.group(4) else cpu)
    return phases


def parse_verbose(stderr):
    """rocksort -v's numbers as a dict; keys whose line is missing are absent.
    "threads" holds parse_threads()'s figures."""
    got = {}
    for key, pattern in PATTERNS.items():
        m = re.search(pattern, stderr)
        if m:
            got[key] = float(m.groups()[-1])
    if "ranges" in got:
        got["ranges"] = int(got["ranges"])
    got["threads"] = parse_threads(stderr)
    return got


def role_cpu(threads, phase, role):
    """(threads, CPU) of one role in one phase; (0, 0.0) if absent."""
    n, cpu, _ = threads.get(phase, {}).get("roles", {}).get(role, (0, 0.0, 0.0))
    return n, cpu


@dataclass
class Stages:
    """Seconds of CPU for the whole input, each on the thread that pays it."""
    bytes: float         # U, uncompressed record bytes
    dec: float           # decoding the input on one thread (view)
    parse: float         # of which parsing
    comp: float          # compressing the output at the level on one thread (view)
    loader: float
    spill: float
    load_cpu: float
    merge: float
    read: float
    parts: int
    write: float         # BGZF's writer at the benchmark's level
    readout_u: float     # the stage run's readout CPU, at -u
    write_u: float
    settle: float = 0.0
    fixed: float = 0.0
    pass_per_mb: float = 0.0   # s per MB of output through memory (K > 1), else 0
    out_mb: float = 0.0        # compressed output size, for pass and append
    notes: list = field(default_factory=list)

    def rows(self):
        """(stage, MB/s on one thread, seconds for U) in pipeline order."""
        def rate(t):
            return self.bytes / 1e6 / t if t > 0 else float("inf")
        named = [("decode (decompress + parse), one thread", self.dec),
                 ("  of which parse", self.parse),
                 ("loader thread (parse, keys, batches)", self.loader),
                 ("spill thread, its own share (puts, ingest)", self.spill),
                 ("the load, all threads", self.load_cpu),
                 ("merge thread (-u readout, K = 1)", self.merge),
                 (f"run readers, {self.parts} part(s) together", self.read),
                 ("BGZF writer thread at the level", self.write),
                 ("the -u readout, all threads", self.readout_u),
                 ("compression at the level, one thread", self.comp)]
        return [(name, rate(t), t) for name, t in named]


# readout/readout_model.h's constants.
APPEND_S_PER_GB = 0.4
STRADDLE_SHARE = 0.25
MAX_K = 64
DEFAULT_RULE = "by rocksort's rule (readout/readout_model.c) on these figures"


def readout_cpu(s, k):
    """The readout's CPU at the level with k merge threads."""
    base = s.readout_u - s.write_u + s.comp
    if k <= 1:
        return base + s.write
    return base + s.read * STRADDLE_SHARE + s.pass_per_mb * s.out_mb


def readout_seconds(s, cores, k):
    """(seconds, what bounds them) of the readout with k merge threads."""
    if k <= 1:
        parts = {"merge thread": s.merge, "run reader": s.read / max(1, s.parts),
                 "writer": s.write, "cores": readout_cpu(s, 1) / cores}
    else:
        parts = {"appending writer": APPEND_S_PER_GB * s.out_mb / 1e3,
                 "cores": readout_cpu(s, k) / min(k, cores)}
    bound = max(parts, key=parts.get)
    return parts[bound], bound


def default_ranges(s, cores):
    """K by rocksort's rule (readout/readout_model.c) on these figures."""
    single = max(s.merge, s.read / max(1, s.parts), s.write)
    if single <= readout_cpu(s, 1) / cores:
        return 1
    k = min(cores, MAX_K)
    if k < 2:
        return 1
    return k if readout_seconds(s, cores, k)[0] < readout_seconds(s, cores, 1)[0] else 1


def predict(s, cores, ranges):
    """(load, readout, wall, what bounds the load, what bounds the readout)."""
    load_parts = {"cores": s.load_cpu / cores, "loader": s.loader}
    if cores > 2:
        load_parts["spill thread"] = s.spill
    load_bound = max(load_parts, key=load_parts.get)
    load = load_parts[load_bound]
    readout, out_bound = readout_seconds(s, cores, ranges)
    return load, readout, s.fixed + load + s.settle + readout, load_bound, out_bound


def fmt(x, pat="{:.1f}"):
    return "–" if x is None else pat.format(x)


def report(stages, checks, cores_list=(8, 16, 32, 64), rule=None):
    """Markdown lines: the figures, predicted vs measured, predictions.
    checks: [(cores, threads, ranges, measured {load, readout, wall})]."""
    s = stages
    md = [f"CPU seconds for U = {s.bytes / 1e6:.0f} MB of records, each on the thread that "
          "pays it (-v's thread lines of the stage run; one-thread tools for decode and "
          "compression):", "",
          "| stage | MB/s, one thread | s for U |", "|---|---|---|"]
    md += [f"| {name} | {rate:.0f} | {t:.2f} |" for name, rate, t in s.rows()]
    md += [f"| outside the model's phases: fixed {s.fixed:.2f} s, compaction wait "
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
           "| cores | K | wall s | load s (bound) | readout s (bound) | P-core bound s | "
           "single merge (K=1) wall s | its readout s (bound) |",
           "|---|---|---|---|---|---|---|---|"]
    for p in cores_list:
        k = default_ranges(s, p)
        load, readout, wall, lb, rb = predict(s, p, k)
        _, readout1, wall1, _, rb1 = predict(s, p, 1)
        md.append(f"| {p} | {k} | {wall:.1f} | {load:.2f} ({lb}) | {readout:.2f} ({rb}) | "
                  f"{load + readout:.2f} | {wall1:.1f} | {readout1:.2f} ({rb1}) |")
    md += ["", "Model: load = max(load CPU / P, loader, spill thread); readout = max(merge, "
           "reader per part, writer, CPU / P) with one merge thread, max(append, CPU / "
           "min(K, P)) with K; wall = fixed + load + compaction wait + readout; the P-core "
           "bound is load + readout (bench/thread_bound.py's, pools spread). It ignores "
           "disk and memory bandwidth (see bench/README.md)."]
    md += [f"- {n}" for n in s.notes]
    return md
