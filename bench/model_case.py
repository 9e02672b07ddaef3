"""Case m: each stage timed on one thread, rocksort at 1 and 2 cores under
taskset, bench/model.py fitted to them (fit_model), and the report's
section on it (model_lines)."""
import os
import shutil
import statistics
import sys
from dataclasses import dataclass, field

import model  # the throughput model
import tools
from paths import LOGS
from runner import output_path, run_job
from tools import Job, has_option


@dataclass
class ModelRun:
    """Case m's numbers: the stages, the checks at 1 and 2 cores, the commands."""
    stages: object = None             # model.Stages
    checks: list = field(default_factory=list)
    commands: list = field(default_factory=list)
    raw: dict = field(default_factory=dict)
    merge_threads: bool = False       # the rocksort build knows --merge-threads
    error: str = ""


def pinned(cpus):
    """taskset's prefix for the first n of this process's CPUs (none if the
    machine has fewer or taskset is missing)."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < cpus or not shutil.which("taskset"):
        return None
    return ["taskset", "-c", ",".join(str(c) for c in allowed[:cpus])]


def warm_cache(path):
    """Reads a file once: rocksort drops its output's pages, and reading them
    back into new page-cache pages (slow to touch on some VMs) would count
    as the next one-thread tool's CPU time."""
    with open(path, "rb") as f:
        while f.read(1 << 22):
            pass


def model_case(cfg, inp):
    """Times each stage on one thread, then rocksort at 1 and 2 cores, and
    fits bench/model.py to them.  Every measurement runs cfg.runs times in
    turn; the medians count."""
    mr = ModelRun()
    one, two = pinned(1), pinned(2)
    if not one:
        mr.error = "needs taskset and at least one CPU in this process's affinity"
        return mr
    rs, st = cfg.rocksort, tools.SAMTOOLS
    warm_cache(inp["path"])
    mr.merge_threads = has_option(rs, "--merge-threads")
    merge1 = ["--merge-threads", "1"] if mr.merge_threads else []
    # The stage run writes -u, where rocksort may choose uncompressed runs;
    # above level 1 it keeps compact ones, which the stage run must measure.
    compact = ["--temp-compression", "compact"] if cfg.level > 1 and has_option(
        rs, "--temp-compression") else []
    sorted_u = output_path("m", "stages")
    steps = [  # (name, job, input)
        # -@ 4: the spill thread hands its work to the pool, as on many cores.
        ("stages", Job("m stages", (two or one) + rs + ["-@", "4", "-u", "-m", cfg.mem] + merge1 +
                       compact + ["-T", "TMP_DIR", "-o", "OUT_PATH", "IN_PATH"]), inp["path"]),
        ("decode", Job("m decode", one + [st, "view", "-c", "-@", "0", "IN_PATH"]), inp["path"]),
        ("store", Job("m store", one + [st, "view", "-@", "0", "-u", "-o", "-", "IN_PATH"]),
         sorted_u),
        ("parse", Job("m parse", one + [st, "view", "-c", "-@", "0", "IN_PATH"]), sorted_u),
        ("compress", Job("m compress", one + [st, "view", "-@", "0", "-O",
                                              f"bam,level={cfg.level}", "-o", "-", "IN_PATH"]),
         sorted_u),
        ("p1", Job("m p1", one + rs + ["-@", "1", "-m", cfg.mem, "-l", str(cfg.level),
                                       "-T", "TMP_DIR", "-o", "OUT_PATH", "IN_PATH"]), inp["path"]),
    ]
    if mr.merge_threads:    # the pieces' pass through memory: K = 2 on one core
        steps.insert(1, ("pieces", Job("m pieces", one + rs + ["-@", "0", "-u", "-m", cfg.mem,
                                                            "--merge-threads", "2", "-T", "TMP_DIR",
                                                            "-o", "OUT_PATH", "IN_PATH"]),
                         inp["path"]))
        steps.insert(1, ("stream", Job("m stream", one + rs + ["-@", "0", "-u", "-m", cfg.mem] +
                                       merge1 + ["-T", "TMP_DIR", "-o", "OUT_PATH", "IN_PATH"]),
                         inp["path"]))
    if two:
        steps.append(("p2", Job("m p2", two + rs + ["-@", "2", "-m", cfg.mem, "-l", str(cfg.level),
                                                    "-T", "TMP_DIR", "-o", "OUT_PATH", "IN_PATH"]),
                      inp["path"]))
    mr.commands = [" ".join(job.argv).replace("IN_PATH", "in.bam" if src == inp["path"] else
                                              "sorted-u.bam").replace("OUT_PATH", "out.bam")
                   .replace("TMP_DIR", "TMPDIR") for _, job, src in steps]
    runs = {name: [] for name, _, _ in steps}
    for r in range(cfg.runs):
        for name, job, src in steps:
            out = sorted_u if name == "stages" else output_path("m", name)
            print(f"bench: m run {r + 1}/{cfg.runs}: {name}", file=sys.stderr, flush=True)
            res = run_job(job, src, out, os.path.join(LOGS, f"m-{name}-{r + 1}.err"))
            if res.failed:
                mr.error = f"{name} failed: {res.failed}"
                return mr
            runs[name].append(res)
            if name == "stages":
                warm_cache(sorted_u)
    mr.raw = {name: [vars(r) for r in rs_] for name, rs_ in runs.items()}
    fit_model(mr, runs, inp)
    return mr


def phase_cpu(x, phase):
    """A run's CPU in one phase, from -v's thread lines (None if absent)."""
    return x.get("threads", {}).get(phase, {}).get("cpu")


def pass_per_mb(v, med):
    """Seconds per MB through memory: the -u readout's CPU with K = 2
    against one stream's, both on one core (0 when the build cannot say)."""
    if "pieces" not in v:
        return 0.0
    stream = med([phase_cpu(x, "readout") for x in v["stream"]])
    pieces = med([phase_cpu(x, "readout") for x in v["pieces"]])
    through = med([x.get("through_mb") for x in v["pieces"]])
    if not (stream and pieces and through):
        return 0.0
    return max(0.0, pieces - stream) / through


def thread_figures(a, med):
    """The stage run's per-thread CPU, medians over its runs."""
    def role(phase, name):
        return med([model.role_cpu(x["threads"], phase, name)[1] for x in a]) or 0.0
    parts = med([model.role_cpu(x["threads"], "readout", "read")[0] for x in a]) or 1
    return {"loader": role("load", "loader"), "spill": role("load", "spill"),
            "load_cpu": med([phase_cpu(x, "load") for x in a]) or 0.0,
            "merge": role("readout", "merge"), "read": role("readout", "read"),
            "parts": int(parts), "write_u": role("readout", "out"),
            "readout_u": med([phase_cpu(x, "readout") for x in a]) or 0.0}


def fit_model(mr, runs, inp):
    """The figures from the runs' medians (bench/model.py's Stages)."""
    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None
    v = {name: [model.parse_verbose(r.stderr) for r in rs_] for name, rs_ in runs.items()}
    a = v["stages"]

    def stage(key, default=None):
        got = med([x.get(key) for x in a])
        return default if got is None else got
    if stage("load") is None or stage("readout") is None:
        mr.error = "the rocksort command printed no `-v` phase lines (is it rocksort -v?)"
        return
    if not all(phase_cpu(x, "load") for x in a):
        mr.error = "the rocksort command printed no `-v` thread lines (a build before #41)"
        return
    wall = {name: med([r.seconds for r in rs_]) for name, rs_ in runs.items()}
    # One-thread tools are timed by their CPU time: on a shared machine the
    # pinned core may also run other work, which their wall time would count.
    cpu = {name: med([r.cpu_seconds for r in rs_]) for name, rs_ in runs.items()}
    notes = []
    decoded = stage("decoded_mb")
    u = decoded * 1e6 if decoded else inp["uncompressed"]
    if not decoded:
        notes.append("U taken from the input's `view -u` size: rocksort -v gave no decoded MB")
    load, readout, settle = stage("load"), stage("readout"), stage("settle", 0.0)
    if int(stage("ranges", 1)) != 1:
        notes.append("the stage run merged with more than one thread: merge is theirs")
    out_mb = os.path.getsize(output_path("m", "p1")) / 1e6 if os.path.exists(
        output_path("m", "p1")) else 0.0
    u_mb = os.path.getsize(output_path("m", "stages")) / 1e6 if os.path.exists(
        output_path("m", "stages")) else 0.0
    t = thread_figures(a, med)
    write = t["write_u"] * out_mb / u_mb if u_mb else t["write_u"]
    mr.stages = model.Stages(
        bytes=u, dec=cpu["decode"], parse=min(cpu["parse"], cpu["decode"]),
        comp=max(0.0, cpu["compress"] - cpu["store"]), write=write, settle=settle,
        fixed=max(0.0, wall["stages"] - load - settle - readout),
        pass_per_mb=pass_per_mb(v, med), out_mb=out_mb, notes=notes, **t)
    if not mr.merge_threads:
        notes.append("this rocksort has no --merge-threads: the stage run's readout is its "
                     "one merge, and the runs at 1 and 2 cores merge one range (K = 1)")
    for name, cores, threads in (("p1", 1, 1), ("p2", 2, 2)):
        if name not in runs:
            continue
        k = int(med([x.get("ranges") for x in v[name]]) or 1)
        mr.checks.append((cores, threads, k, {
            "wall": wall[name], "load": med([x.get("load") for x in v[name]]),
            "readout": med([x.get("readout") for x in v[name]])}))


def model_lines(mr, cfg):
    md = ["", f"## m) model: stage throughputs and predicted wall (-m {cfg.mem}, -l {cfg.level})", ""]
    if mr.error:
        return md + [f"Not modelled: {mr.error}."]
    ranges_read = any(k != 1 for _, _, k, _ in mr.checks)
    rule = ("at 1-2 cores read from -v; at 8-32 by rocksort's rule (readout/readout_model.c) on these stage times"
            if ranges_read else None)
    md += model.report(mr.stages, mr.checks, rule=rule)
    md += ["", "<details><summary>case m's commands (taskset pins the cores)</summary>", "",
           "```"] + mr.commands + ["```", "", "</details>"]
    return md
