#!/usr/bin/env python3
"""Times rocksort builds against samtools 1.24 and mako on a lent 16-core
machine, alternating, in one device call.

    many_cores_ab.py KIT_TAR OUT K BUDGET_S [NAME=PATH ...]

KIT_TAR is ../shared/tools/many-cores/make-kit's kit (samtools 1.24 with
static libdeflate, mako, the kit's rocksort as "rk", bamscale, a seed BAM
and every shared library).  NAME=PATH adds another rocksort build, started
through the kit's loader and libraries (build it on the machine that made
the kit).  Every case gives all sorters the same -m (mako's -m is per
thread, as samtools' is).  The first run of each rocksort build in a case
keeps its -v as OUT/v_<case>_<name>.txt; the first round of each case
checks every rocksort's records against samtools'.  PLAN=main (default)
runs the cases below; PLAN=variants adds forced merge threads and temp
formats at -u and at level 6.  Results: OUT/results.json and OUT/log.txt.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

kit_tar, out, K, budget = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
builds = [("rk", None)] + [tuple(a.split("=", 1)) for a in sys.argv[5:]]
t0 = time.time()
os.makedirs(out, exist_ok=True)
logf = open(os.path.join(out, "log.txt"), "a")
results = []


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    logf.write(s + "\n")
    logf.flush()


kit = "/tmp/kit"
if not os.path.isdir(kit):
    tarfile.open(kit_tar).extractall("/tmp")
LOADER = [kit + "/lib/ld-linux-x86-64.so.2", "--library-path", kit + "/lib"]
ST, MK, BS = (LOADER + [kit + "/bin/" + b] for b in ("st124", "mako", "bamscale"))
RK = {name: LOADER + [path or kit + "/bin/rocksort"] for name, path in builds}
w = os.environ.get("BENCH_DIR", "/tmp/w")
shutil.rmtree(w, ignore_errors=True)
os.makedirs(w + "/t")
inp = w + "/in.bam"


def run(name, cmd, errfile=None):
    shutil.rmtree(w + "/t", ignore_errors=True)
    os.makedirs(w + "/t")
    err = open(errfile, "w") if errfile else subprocess.DEVNULL
    start = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    _, status, ru = os.wait4(p.pid, 0)
    r = dict(name=name, wall=round(time.time() - start, 2), cpu=round(ru.ru_utime + ru.ru_stime, 2),
             rss_mb=ru.ru_maxrss // 1024, rc=os.waitstatus_to_exitcode(status))
    results.append(r)
    json.dump(results, open(os.path.join(out, "results.json"), "w"), indent=1)
    log(json.dumps(r))
    return r


def digest(path):
    p = subprocess.Popen(ST + ["view", "--no-PG", "-@8", path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    h = hashlib.md5()
    for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
        h.update(chunk)
    p.wait()
    return h.hexdigest()


def case(tag, threads, mem, rounds, peers=("samtools", "mako"), extra=(), level=None,
         variants=()):
    """Each round: the peers, then every rocksort build with `extra`, then
    the variants ((label, args) of the first build)."""
    for rnd in range(rounds):
        if time.time() - t0 > budget:
            log("budget reached, skipping", tag, rnd)
            return
        outs = {}
        if "samtools" in peers:
            run(f"{tag} samtools r{rnd}", ST + ["sort", f"-@{threads}", "-m", mem, "-T", w + "/t/s",
                                                "-o", w + "/st.bam"] + [a for a in extra if a == "-u"]
                + [inp])
        if "mako" in peers:
            run(f"{tag} mako r{rnd}", MK + ["-i", inp, "-o", w + "/mk.bam", "--order", "coordinate",
                                            "-@", str(threads), "-m", mem, "-T", w + "/t",
                                            "--compression-level", str(7 if level is None else level)])
        jobs = [(name, list(extra)) for name in RK] + [(builds[0][0] + " " + lab, list(extra) + list(a))
                                                       for lab, a in variants]
        for name, args in jobs:
            key = name.split()[0]
            o = f"{w}/rk_{len(outs)}.bam"
            vfile = (os.path.join(out, "v_%s_%s.txt" % (tag.replace(" ", "_"), name.replace(" ", "_")))
                     if rnd == 0 else None)
            run(f"{tag} {name} r{rnd}", RK[key] + ["rocksort", f"-@{threads}", "-m", mem, "-T", w + "/t/",
                                                  "-o", o] + args + (["-v"] if vfile else []) + [inp],
                vfile)
            outs[name] = o
        if rnd == 0 and "samtools" in peers:
            want = digest(w + "/st.bam")
            same = {n: digest(o) == want for n, o in outs.items()}
            log("records", tag, json.dumps(same))
            results.append(dict(name=tag + " identical", **same))
        for o in outs.values():
            os.unlink(o)


log("host", os.uname().nodename, "cpus", os.cpu_count())
run("make-input", BS + ["-i", kit + "/seed.bam", "-o", inp, "-k", K, "-s", "1", "-@", "16"])
log("input bytes", os.path.getsize(inp))
plan = os.environ.get("PLAN", "main")
U_VARIANTS = [("K4", ["--merge-threads", "4"]), ("K8", ["--merge-threads", "8"]),
              ("K16", ["--merge-threads", "16"]), ("none", ["--temp-compression", "none"])]
if plan == "variants":
    case("t16 u spill512M", 16, "32M", 2, peers=("samtools", "mako"), extra=["-u"], level=0,
         variants=U_VARIANTS)
    case("t16 spill512M", 16, "32M", 2, variants=[("K16", ["--merge-threads", "16"])])
    case("t8 spill512M", 8, "64M", 1)
    case("t16 held -m1G", 16, "1G", 1, peers=("mako",))
    case("t8 held -m640M", 8, "640M", 1)
else:
    case("t16 spill512M", 16, "32M", 2)
    case("t16 u spill512M", 16, "32M", 2, peers=("samtools", "mako"), extra=["-u"], level=0)
    case("t8 spill512M", 8, "64M", 1)
    case("t16 held -m1G", 16, "1G", 1, peers=("mako",))
    case("t8 held -m640M", 8, "640M", 1)
log("done in", round(time.time() - t0, 1), "s")
