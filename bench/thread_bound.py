"""The many-core bound measured from outside (issue #41): a sorter run with
many threads on few cores, every thread's CPU time sampled from
/proc/PID/task/*/stat, the run cut where the output first passes 1 MB into
a load phase and an output phase, and for each phase

    bound = max(the busiest single thread's CPU, all CPU / P)

summed over the two phases: a lower bound on the wall on P cores for that
design, whatever the machine it runs on has.  The same measure for every
sorter; by default rocksort, samtools 1.24 and mako at -@ 16, and rocksort
at -@ 32.

    .venv/bin/python bench/thread_bound.py                 # the issue's four rows
    .venv/bin/python bench/thread_bound.py --runs 3 --tools rocksort,mako
    .venv/bin/python bench/thread_bound.py --cmd 'mine=./samtools rocksort -@16 -m 32M \
        -T {tmp} -o {out} {in}' --threads 16

Each run gets an output directory and a temp directory of its own under
--work (removed afterwards); the output's size is that directory's, so a
sorter that writes under a hidden name and renames it at the end is cut
right.  Threads that exit between two samples keep the CPU of their last
sample; what no sample saw (up to 0.1 s per short-lived thread) is listed
as "unseen" (the process's rusage minus the threads' sum) and counted in
the phase it ended in, not in any thread's.
"""
import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

from paths import OUT, ROOT

TICK = os.sysconf("SC_CLK_TCK")
CUT_BYTES = 1 << 20
DEFAULT_TOOLS = "rocksort,samtools,mako,rocksort32"
# Each sorter's pools, by thread name prefix: rocksort's -@ pool, its merge
# threads and run readers (one each per piece), its compact runs' own
# encoders, and in builds before #41 every thread but the main one
# ("samtools", whatever the binary is called, counts only when it is not
# the main thread); samtools' threads all share its name; mako's workers.
POOLS = {"rocksort": ["rocksort-pool", "rocksort-enc", "rocksort-merge", "rocksort-read",
                      "samtools"],
         "samtools": ["samtools"], "mako": ["fgumi-worker", "fast-path-gathe"]}


def task_times(pid):
    """{tid: (comm, cpu seconds)} of every thread of pid now; {} once gone."""
    got = {}
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return got
    for tid in tids:
        try:
            with open(f"{base}/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue   # exited between the listing and the read
        # comm is in parentheses and may hold spaces or parentheses itself.
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        # Fields 14 and 15 of stat (utime, stime), counted from pid as 1.
        got[int(tid)] = (comm, (int(fields[11]) + int(fields[12])) / TICK)
    return got


def dir_bytes(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


class Sampled:
    """One run's samples: per thread its name and CPU at the cut and at its
    last sample, the wall times, the process's own CPU."""
    def __init__(self):
        self.last = {}        # tid -> (comm, cpu) at its last sample
        self.at_cut = None    # {tid: (comm, cpu)} at the first sample past the cut
        self.cut_wall = None
        self.wall = 0.0
        self.cpu = 0.0        # user + system of the whole process (wait4)
        self.rss_mb = 0.0
        self.status = 0
        self.pid = 0


def sample_run(argv, out_dir, every, log):
    """Runs argv, sampling its threads every `every` seconds until it exits."""
    s = Sampled()
    t0 = time.monotonic()
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        s.pid = proc.pid
        while True:
            now = task_times(proc.pid)
            s.last.update(now)
            if s.at_cut is None and dir_bytes(out_dir) > CUT_BYTES:
                s.at_cut, s.cut_wall = dict(s.last), time.monotonic() - t0
            if proc.poll() is not None:
                break
            time.sleep(every)
        # poll() reaped it; its rusage comes from the children's totals.
    s.wall = time.monotonic() - t0
    s.status = proc.returncode
    return s


def run_one(name, argv_text, inp, work, every, logs):
    out_dir = os.path.join(work, name + ".out")
    tmp = os.path.join(work, name + ".tmp")
    for d in (out_dir, tmp):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    out = os.path.join(out_dir, "out.bam")
    argv = [a.format(**{"in": inp, "out": out, "tmp": tmp, "tmpfile": os.path.join(tmp, "st")})
            for a in shlex.split(argv_text)]
    before = os.times()
    s = sample_run(argv, out_dir, every, os.path.join(logs, f"thread_bound-{name}.err"))
    after = os.times()
    s.cpu = (after.children_user - before.children_user) + (after.children_system -
                                                              before.children_system)
    s.out_bytes = dir_bytes(out_dir)
    for d in (out_dir, tmp):
        shutil.rmtree(d, ignore_errors=True)
    if s.status != 0:
        sys.exit(f"thread_bound: {name} failed (exit {s.status}): {' '.join(argv)}; "
                 f"see {logs}/thread_bound-{name}.err")
    if s.at_cut is None:
        sys.exit(f"thread_bound: {name} never wrote {CUT_BYTES} bytes of output")
    return s


def phases(s, cores, pool_prefixes):
    """The run's figures: per phase the CPU, the busiest thread and the bound."""
    load = {tid: cpu for tid, (_, cpu) in s.at_cut.items()}
    out = {tid: cpu - load.get(tid, 0.0) for tid, (_, cpu) in s.last.items()}
    seen = sum(cpu for _, cpu in s.last.values())
    unseen = max(0.0, s.cpu - seen)
    # What no sample saw ended in the phase the process ended in.
    load_cpu, out_cpu = sum(load.values()), sum(out.values()) + unseen
    def busiest(d):
        tid = max(d, key=d.get)
        return d[tid], s.last[tid][0]
    lb, lname = busiest(load)
    ob, oname = busiest(out)
    lbound, obound = max(lb, load_cpu / cores), max(ob, out_cpu / cores)
    pools = pool_threads(s, pool_prefixes)
    lsingle, lsname = busiest_single(s, load, pools)
    osingle, osname = busiest_single(s, out, pools)
    return {"cpu": s.cpu, "load_cpu": load_cpu, "out_cpu": out_cpu, "unseen": unseen,
            "load_busiest": lb, "load_name": lname, "out_busiest": ob, "out_name": oname,
            "bound": lbound + obound, "load_bound": lbound, "out_bound": obound,
            "pool_bound": max(lsingle, load_cpu / cores) + max(osingle, out_cpu / cores),
            "load_single": lsingle, "load_single_name": lsname,
            "out_single": osingle, "out_single_name": osname,
            "wall": s.wall, "cut": s.cut_wall, "threads": len(s.last),
            "roles": roles(s, load, out)}


def pool_threads(s, prefixes):
    """The threads that are a pool's workers: besides the main thread,
    those whose names start with one of the sorter's pool prefixes.  A
    pool's work goes to whichever of its threads is free, so on few cores
    it gathers on some of them (htslib's pool wakes a thread only when the
    ones awake cannot keep up); on P cores it spreads."""
    return {tid for tid, (comm, _) in s.last.items()
            if tid != s.pid and comm.startswith(tuple(prefixes))}


def busiest_single(s, cpu_by_tid, pools):
    """The busiest thread that is no pool's worker, and its name."""
    single = {tid: c for tid, c in cpu_by_tid.items() if tid not in pools}
    if not single:
        return 0.0, "-"
    tid = max(single, key=single.get)
    return single[tid], ("main" if tid == s.pid else s.last[tid][0])


def roles(s, load, out):
    """Per thread name: threads, load CPU, output CPU, busiest thread of each."""
    by = {}
    for tid, (comm, _) in s.last.items():
        r = by.setdefault(comm, [0, 0.0, 0.0, 0.0, 0.0])
        r[0] += 1
        r[1] += load.get(tid, 0.0)
        r[2] += out.get(tid, 0.0)
        r[3] = max(r[3], load.get(tid, 0.0))
        r[4] = max(r[4], out.get(tid, 0.0))
    return by


def median_run(runs):
    """The run whose bound is the median (its own figures, not a mix)."""
    ordered = sorted(runs, key=lambda r: r["bound"])
    return ordered[len(ordered) // 2]   # of an even count, the higher middle


def tool_commands(args):
    rs = args.rocksort
    st = args.samtools
    mk = args.mako
    t, m = args.threads, args.mem
    cmds = {
        "rocksort": (f"{rs} -@ {t} -m {m} -T {{tmp}} -o {{out}} {{in}}", t),
        "samtools": (f"{st} sort -@ {t} -m {m} -T {{tmpfile}} -o {{out}} {{in}}", t),
        "mako": (f"{mk} -i {{in}} -o {{out}} --order coordinate -@ {t} -m {args.mako_mem or m} "
                 f"--compression-level 7 -T {{tmp}}", t),
        "rocksort32": (f"{rs} -@ {2 * t} -m {m} -T {{tmp}} -o {{out}} {{in}}", 2 * t),
    }
    pools = {"rocksort": POOLS["rocksort"], "samtools": POOLS["samtools"],
             "mako": POOLS["mako"], "rocksort32": POOLS["rocksort"]}
    chosen = []
    for name in filter(None, args.tools.split(",")):
        if name not in cmds:
            sys.exit(f"thread_bound: unknown tool '{name}' (known: {', '.join(cmds)})")
        chosen.append((name, *cmds[name], pools[name]))
    for spec in args.cmd:
        name, _, cmd = spec.partition("=")
        kind = args.pools.get(name, "rocksort")
        chosen.append((name, cmd, args.threads, POOLS.get(kind, kind.split(","))))
    return chosen


def table(results, detail):
    md = ["| sorter | P | CPU s | load / output CPU s | busiest thread, load / output s "
          "| P-core bound s | speed-up over its CPU | busiest outside pools, load / output s "
          "| bound, pools spread s | wall here s |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for name, cmd, p, r in results:
        md.append(f"| {name} | {p} | {r['cpu']:.1f} | {r['load_cpu']:.1f} / {r['out_cpu']:.1f} "
                  f"| {r['load_busiest']:.2f} ({r['load_name']}) / {r['out_busiest']:.2f} "
                  f"({r['out_name']}) | {r['bound']:.2f} | {r['cpu'] / r['bound']:.1f}× "
                  f"| {r['load_single']:.2f} ({r['load_single_name']}) / {r['out_single']:.2f} "
                  f"({r['out_single_name']}) | {r['pool_bound']:.2f} | {r['wall']:.1f} |")
    md += ["", "P-core bound: per phase max(busiest thread, CPU / P), summed (issue #41's "
           "measure).  Bound, pools spread: the same with a pool's workers (besides the main "
           "thread, names of the sorter's pools: thread_bound.py's POOLS) counted as spread "
           "over the cores, as their work would be on P cores, and the other threads as "
           "single ones."]
    md += ["", "Commands:", ""] + [f"- {name}: `{cmd}`" for name, cmd, _, _ in results]
    if not detail:
        return md
    for name, _, p, r in results:
        md += ["", f"{name}: per thread name (threads; load CPU s, busiest; output CPU s, "
               f"busiest). Unseen CPU {r['unseen']:.2f} s; cut at {r['cut']:.1f} s of "
               f"{r['wall']:.1f} s.", "",
               "| thread | n | load CPU | load busiest | output CPU | output busiest |",
               "|---|---|---|---|---|---|"]
        for comm, (n, lc, oc, lb, ob) in sorted(r["roles"].items(),
                                                key=lambda kv: -(kv[1][1] + kv[1][2])):
            md.append(f"| {comm} | {n} | {lc:.2f} | {lb:.2f} | {oc:.2f} | {ob:.2f} |")
    return md


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=os.path.join(OUT, "input-1G-s1-g1.bam"))
    ap.add_argument("--threads", type=int, default=16, help="-@ (rocksort32: twice this)")
    ap.add_argument("--mem", default="32M", help="-m for rocksort and samtools")
    ap.add_argument("--mako-mem", default=None,
                    help="mako's -m [--mem: per thread, as samtools' and rocksort's]")
    ap.add_argument("--tools", default=DEFAULT_TOOLS,
                    help=f"comma-separated, of {DEFAULT_TOOLS}; empty for --cmd only")
    ap.add_argument("--cmd", action="append", default=[],
                    help="NAME=COMMAND with {in} {out} {tmp} {tmpfile}; P is --threads")
    ap.add_argument("--pools", action="append", default=[],
                    help="NAME=KIND for a --cmd sorter's pools: rocksort (the default), "
                    "samtools, mako, or comma-separated thread name prefixes")
    ap.add_argument("--rocksort", default=os.path.join(ROOT, "samtools") + " rocksort")
    ap.add_argument("--samtools", default=os.environ.get(
        "SAMTOOLS", os.path.join(OUT, "samtools-1.24", "samtools")))
    ap.add_argument("--mako", default=os.environ.get("MAKO") or shutil.which("mako")
                    or os.path.expanduser("~/.cargo/bin/mako"))
    ap.add_argument("--runs", type=int, default=1, help="runs per sorter, in turn; the "
                    "median run by bound is reported")
    ap.add_argument("--every", type=float, default=0.1, help="seconds between samples")
    ap.add_argument("--work", default=os.path.join(OUT, "tmp", "thread_bound"))
    ap.add_argument("--detail", action="store_true", help="also per thread name")
    args = ap.parse_args()
    args.pools = dict(x.partition("=")[::2] for x in args.pools)
    chosen = tool_commands(args)
    logs = os.path.join(OUT, "logs")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    runs = {name: [] for name, _, _, _ in chosen}
    for i in range(args.runs):
        for name, cmd, p, pools in chosen:
            print(f"thread_bound: run {i + 1}/{args.runs}: {name}", file=sys.stderr, flush=True)
            s = run_one(name, cmd, args.input, args.work, args.every, logs)
            runs[name].append(phases(s, p, pools))
    load = os.getloadavg()[0]
    results = [(name, cmd, p, median_run(runs[name])) for name, cmd, p, _ in chosen]
    print(f"Input {args.input}; {args.runs} run(s) each, in turn; the median run by bound. "
          f"Load average at the end {load:.1f} on {os.cpu_count()} CPUs.\n")
    print("\n".join(table(results, args.detail)))
    for name, _, _, _ in results:
        bounds = [r["bound"] for r in runs[name]]
        if len(bounds) > 1:
            print(f"\n{name}: bounds {', '.join(f'{b:.2f}' for b in bounds)} "
                  f"(median {statistics.median(bounds):.2f})")


if __name__ == "__main__":
    main()
