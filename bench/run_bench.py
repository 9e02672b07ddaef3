#!/usr/bin/env python3
"""Benchmark of `samtools rocksort` against `samtools sort` and a no-sort floor.

    run_bench.py [--size 1G] [--runs 3] [--threads 2] [--mem 256M] [--cases a,b,c,d,f,g,m]
    run_bench.py --quick          # 50M input, 1 run per tool: a smoke test

Cases (all tools get the same -@, -m and -l):
  a  spilling (-m MEM): rocksort, rocksort --temp-compression compact,
     samtools sort, mako, floor (and sambamba, bamsort when installed)
  b  in memory (-m INMEM): rocksort, samtools sort, mako, floor
  c  uncompressed output (-u), spilling: rocksort, samtools sort, mako, floor
  d  peak RSS at the same -m/-@ (from case a's runs)
  e  scaling: seconds per GiB at SCALE x the input vs 1x (big: not by default)
  f  streaming: input piped at a limited rate (feed takes ~1.5x the floor's
     time); the time that counts is from end of input to finished output
  g  name sort (-n): rocksort, rocksort compact, samtools sort, mako, floor
  m  model: each stage's throughput on one thread, the wall predicted for
     1 and 2 cores against rocksort under taskset, and for 8, 16, 32 cores
floor = `samtools view -b` (decompress and recompress, no sort): no sort that
reads and writes BAM can beat it.  mako runs when it is on PATH or $MAKO
names it.  samtools is a native 1.24 (bench/build_samtools.sh) unless that
cannot be built ($SAMTOOLS overrides).  Runs alternate tool by tool, so a
noisy neighbour slows all tools alike.  Each tool has its own temp directory,
whose size is sampled every 0.3 s (peak temp MB).  Each case checks once that
every sorter's records but sambamba's and bamsort's equal samtools sort's.
The report goes to stdout and bench/out/latest.md.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from itertools import zip_longest

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
OUT = os.path.join(BENCH, "out")
TMP = os.path.join(OUT, "tmp")
LOGS = os.path.join(OUT, "logs")
DEBIAN_SAMTOOLS = "/usr/bin/samtools"   # the input generator's, and the fallback
SAMTOOLS = os.environ.get("SAMTOOLS") or DEBIAN_SAMTOOLS  # set by choose_samtools()
SAMTOOLS_NOTE = ""
DEFAULT_ROCKSORT = "./samtools rocksort -v"
ALL_CASES = "abcdefgm"
DEFAULT_CASES = "a,b,c,d,f,g,m"
SAMPLE_EVERY = 0.3  # seconds between two looks at a tool's temp directory
# htslib's level L is libdeflate's level MAP[L] (bgzf.c's lvl_map), so a tool
# that takes libdeflate levels (mako) gets MAP[L] to do the same work.
LIBDEFLATE_LEVEL = [0, 1, 2, 3, 5, 6, 7, 8, 10, 12]
LOAD_AT_START = os.getloadavg()[0]  # the machine is shared: note how busy
STREAM_SLOWDOWN = 1.5  # the feed takes this many times the floor's time

sys.path.insert(0, BENCH)
import make_input  # noqa: E402  (its size parser and generator version)
import model  # noqa: E402  (case m's throughput model)


# -- setup ----------------------------------------------------------------

def sh(argv, **kw):
    return subprocess.run(argv, check=True, text=True, **kw)


def ensure_debian_samtools():
    """Debian's samtools makes the input (bench/make_input.py) and is the
    fallback reference; install it when missing."""
    if os.access(DEBIAN_SAMTOOLS, os.X_OK):
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = ["env", "DEBIAN_FRONTEND=noninteractive"]
    print(f"bench: {DEBIAN_SAMTOOLS} missing, installing Debian's samtools", file=sys.stderr)
    sh(sudo + env + ["apt-get", "update", "-qq"])
    sh(sudo + env + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "samtools"])


def samtools_version(path):
    """'1.24' from `samtools --version`'s first line, or ''."""
    try:
        out = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, errors="replace").stdout
    except OSError:
        return ""
    first = out.split("\n", 1)[0].split()
    return first[1] if len(first) > 1 else ""


def choose_samtools():
    """The timed samtools sort and floor: $SAMTOOLS if set, else samtools 1.24
    built natively by bench/build_samtools.sh (the version rocksort follows,
    with libdeflate), else Debian's 1.16 with a note in the report."""
    global SAMTOOLS, SAMTOOLS_NOTE
    if os.environ.get("SAMTOOLS"):
        SAMTOOLS, SAMTOOLS_NOTE = os.environ["SAMTOOLS"], "from $SAMTOOLS"
        return
    res = subprocess.run(["bash", os.path.join(BENCH, "build_samtools.sh")], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    path = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    if res.returncode == 0 and samtools_version(path) == "1.24":
        SAMTOOLS, SAMTOOLS_NOTE = path, "native 1.24 build (bench/build_samtools.sh)"
        return
    why = (res.stderr.strip().splitlines() or ["no output"])[-1]
    SAMTOOLS = DEBIAN_SAMTOOLS
    SAMTOOLS_NOTE = (f"Debian's, because bench/build_samtools.sh failed ({why}); 1.16 breaks "
                     "-n ties differently, so -n outputs are compared as multisets")
    print(f"bench: no native samtools 1.24: {why}; using {SAMTOOLS}", file=sys.stderr)


def find_mako():
    """mako (crate fg-mako) when on PATH or named by $MAKO, else None."""
    path = os.environ.get("MAKO") or shutil.which("mako")
    return path if path and os.access(path, os.X_OK) else None


def mako_version(path):
    out = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, errors="replace").stdout
    return out.split("\n", 1)[0].strip() or "version unknown"


def has_option(cmd, option):
    """Whether the tool's -h text names the option (older rocksort builds
    refuse --merge-threads)."""
    res = subprocess.run(cmd + ["-h"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, text=True, errors="replace", cwd=ROOT)
    return option in res.stdout


def rocksort_command(arg):
    """The rocksort command prefix; a relative program path is taken from
    the repo root, so the script runs from anywhere."""
    words = shlex.split(arg or os.environ.get("ROCKSORT_CMD") or DEFAULT_ROCKSORT)
    if "/" in words[0] and not os.path.isabs(words[0]):
        words[0] = os.path.normpath(os.path.join(ROOT, words[0]))
    return words


def build_rocksort(cmd, explicit):
    """`make` the default ./samtools; an overridden command is used as is."""
    if not explicit and os.path.exists(os.path.join(ROOT, "Makefile")):
        jobs = str(min(2, os.cpu_count() or 2))   # the machine is shared
        # `samtools` named: the Makefile's first target is htslib, not all.
        res = subprocess.run(["make", "-j", jobs, "samtools"], cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if res.returncode:
            sys.exit(f"bench: make failed:\n{res.stdout[-3000:]}")
    if not os.access(cmd[0], os.X_OK) and not shutil.which(cmd[0]):
        sys.exit(f"bench: {cmd[0]} not found: build it (make) or pass "
                 "--rocksort CMD / ROCKSORT_CMD (e.g. '/usr/bin/samtools sort')")


def ensure_input(size_text, seed):
    """Builds the input once; later runs reuse bench/out/input-*.bam."""
    path = os.path.join(OUT, f"input-{size_text}-s{seed}-g{make_input.GEN_VERSION}.bam")
    if not (os.path.exists(path) and os.path.exists(path + ".json")):
        print(f"bench: generating {path}", file=sys.stderr)
        sh([sys.executable, os.path.join(BENCH, "make_input.py"), size_text, path,
            "--seed", str(seed)], stdout=sys.stderr)
    with open(path + ".json") as f:
        stats = json.load(f)
    stats["path"] = path
    return stats


# -- running one tool -----------------------------------------------------

@dataclass
class Job:
    tool: str            # "rocksort", "samtools sort", "floor", ...
    argv: list           # IN_PATH, OUT_PATH and TMP_DIR are filled in per run
    feed_rate: float = 0.0  # bytes/s through stdin; 0: the tool reads the file
    checked: bool = False   # its records are compared with samtools sort's


@dataclass
class Result:
    seconds: float       # wall time (streaming: end of input to exit)
    rss_mb: float
    cpu_seconds: float = 0.0       # user + system, all threads (wait4)
    fed_seconds: float = 0.0
    total_seconds: float = 0.0
    temp_mb: float = 0.0           # peak of the temp dir, allocated blocks (du)
    temp_apparent_mb: float = 0.0  # peak of the same, file sizes (du --apparent-size)
    stderr: str = ""
    failed: str = ""


@dataclass
class CaseResult:
    case: str
    title: str
    input: dict
    results: dict = field(default_factory=dict)  # tool -> [Result]
    checks: list = field(default_factory=list)   # one line per tool


def feed(pipe, path, rate, done):
    """Writes the file to the pipe at `rate` bytes/s, then closes it and
    notes when: the streaming case times what happens after that."""
    start, sent = time.monotonic(), 0
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 18):
                pipe.write(chunk)
                sent += len(chunk)
                ahead = start + sent / rate - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
    except BrokenPipeError:
        pass  # the tool died; its exit status tells
    finally:
        try:
            pipe.close()
        except BrokenPipeError:
            pass
        done.append(time.monotonic())


class TempSampler(threading.Thread):
    """The size of a temp directory every SAMPLE_EVERY seconds; keeps the peak,
    both as allocated blocks (what fills a disk) and as file sizes."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.peak, self.peak_apparent = path, 0, 0
        self.done = threading.Event()

    def sample(self):
        used = apparent = 0
        for root, _, files in os.walk(self.path):  # errors (vanished dirs) are skipped
            for name in files:
                try:
                    st = os.lstat(os.path.join(root, name))
                except OSError:
                    continue  # removed between the listing and the look
                used += st.st_blocks * 512
                apparent += st.st_size
        self.peak = max(self.peak, used)
        self.peak_apparent = max(self.peak_apparent, apparent)

    def run(self):
        self.sample()
        while not self.done.wait(SAMPLE_EVERY):
            self.sample()

    def stop(self):
        self.done.set()
        self.join()


def tool_tmp(tool):
    """Each tool's own temp directory, so its peak is its own."""
    return os.path.join(TMP, re.sub(r"[^A-Za-z0-9]+", "_", tool).strip("_"))


def run_job(job, inp, out_path, log_path):
    """Runs one tool, timing it, taking its peak RSS from wait4() and its
    peak temp size from a sampler of its own temp directory."""
    tmp = tool_tmp(job.tool)
    # Substrings, for key=value tools (bamsort's I=IN_PATH O=OUT_PATH).
    argv = [a.replace("OUT_PATH", out_path).replace("IN_PATH", inp).replace("TMP_DIR", tmp)
            for a in job.argv]
    if os.path.exists(out_path):
        os.remove(out_path)
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    fed = []
    sampler = TempSampler(tmp)
    with open(log_path, "w") as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if job.feed_rate else subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT,
                                env=dict(os.environ, TMPDIR=tmp))
        sampler.start()
        feeder = None
        if job.feed_rate:
            feeder = threading.Thread(target=feed, args=(proc.stdin, inp, job.feed_rate, fed))
            feeder.start()
        _, status, usage = os.wait4(proc.pid, 0)
        end = time.monotonic()
        sampler.stop()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if feeder:
            feeder.join()
    with open(log_path, errors="replace") as f:
        stderr = f.read()
    shutil.rmtree(tmp, ignore_errors=True)  # what a tool left must not count for the next
    # Writeback of this run's output must not slow the next tool down.
    os.sync()
    res = Result(seconds=end - start, rss_mb=usage.ru_maxrss / 1024, stderr=stderr,
                 cpu_seconds=usage.ru_utime + usage.ru_stime,
                 temp_mb=sampler.peak / 1e6, temp_apparent_mb=sampler.peak_apparent / 1e6)
    if fed:
        res.fed_seconds, res.total_seconds = fed[0] - start, end - start
        res.seconds = end - fed[0]
    if proc.returncode:
        res.failed = f"exit {proc.returncode}: {stderr.strip()[-500:]}"
        print(f"bench: FAILED {' '.join(argv)}\n{res.failed}", file=sys.stderr)
    return res


# -- checking the sorters' output -----------------------------------------

def view_lines(path):
    return subprocess.Popen([SAMTOOLS, "view", "-@1", path], stdout=subprocess.PIPE)


def header_note(tool, path, ref):
    """Headers without @PG should match; a difference is reported, not failed,
    as 1.16 (if it is the reference) and 1.24 (what rocksort follows) differ."""
    def lines(p):
        out = subprocess.run([SAMTOOLS, "view", "-H", p], stdout=subprocess.PIPE,
                             check=True).stdout.decode(errors="replace")
        return [l for l in out.splitlines() if not l.startswith("@PG")]
    a, b = lines(path), lines(ref)
    if a == b:
        return "headers equal (without @PG)"
    diff = [f"{tool} `{x}` vs samtools `{y}`" for x, y in zip_longest(a, b) if x != y]
    return "headers differ (without @PG): " + "; ".join(diff[:3])


def ordered_digest(path):
    """(records, sha256 of the header-less SAM text): one pass per file, so a
    case with several checked tools reads each output once."""
    proc, digest, count = view_lines(path), hashlib.sha256(), 0
    while chunk := proc.stdout.read(1 << 20):
        digest.update(chunk)
        count += chunk.count(b"\n")
    proc.wait()
    return count, digest.hexdigest()


def first_difference(tool, path, ref):
    """Records of both files, line by line: the first difference, for the report."""
    pa, pb = view_lines(path), view_lines(ref)
    for n, (a, b) in enumerate(zip_longest(pa.stdout, pb.stdout), 1):
        if a != b:
            for p in (pa, pb):
                p.kill()
                p.wait()
            return f"record {n} differs:\n  {tool}: {short(a)}\n  samtools: {short(b)}"
    for p in (pa, pb):
        p.wait()
    return "the record streams differ (no single differing line found)"


def short(line):
    return "(none)" if line is None else line.decode(errors="replace").rstrip()[:160]


def natural_key(name):
    """samtools' -n order: digit runs compare as numbers."""
    parts = re.split(rb"(\d+)", name)
    parts[1::2] = [int(p) for p in parts[1::2]]
    return parts


def multiset_digest(path, check_names):
    """(records, order-free digest, first name out of natural order or None):
    for -n against samtools 1.16, which breaks ties between equal names
    differently from 1.24."""
    proc, total, count, prev, order_error = view_lines(path), 0, 0, None, None
    for line in proc.stdout:
        total += int.from_bytes(hashlib.blake2b(line, digest_size=8).digest(), "little")
        count += 1
        if check_names and order_error is None:
            key = natural_key(line.split(b"\t", 1)[0])
            if prev is not None and key < prev:
                order_error = f"record {count}: name out of order: {short(line)}"
            prev = key
    proc.wait()
    return count, total % (1 << 64), order_error


def verify_case(outputs, name_sort):
    """One line per checked tool against samtools sort's output; a mismatch
    is shouted on stderr too.  outputs: {tool: path}, samtools sort's included."""
    ref = outputs.get("samtools sort")
    if not (ref and os.path.exists(ref)):
        return ["not checked (samtools sort's output is missing)"]
    multiset = name_sort and samtools_version(SAMTOOLS) != "1.24"
    want = multiset_digest(ref, False)[:2] if multiset else ordered_digest(ref)
    lines = []
    for tool, path in outputs.items():
        if tool == "samtools sort":
            continue
        if not os.path.exists(path):
            lines.append(f"{tool}: not checked (no output)")
            continue
        if multiset:
            count, digest, error = multiset_digest(path, True)
            if not error and (count, digest) != want:
                error = f"records differ as a multiset (count, digest): {(count, digest)} vs {want}"
            what = ("same records as a multiset, names in natural order (tie order not "
                    "checked: 1.16 and 1.24 differ)")
        else:
            got = ordered_digest(path)
            count = got[0]
            error = None if got == want else first_difference(tool, path, ref)
            what = "identical records, same order"
        if error:
            print(f"\nbench: MISMATCH between {tool} and samtools sort\n{error}\n", file=sys.stderr)
            lines.append(f"{tool}: **MISMATCH** " + error.replace("\n", " "))
        else:
            lines.append(f"{tool}: {what}: {count:,} records; {header_note(tool, path, ref)}")
    return lines


# -- cases ----------------------------------------------------------------

def sort_jobs(cfg, mem, extra=(), rate=0.0, compact=False, peers=True):
    """rocksort and samtools sort with the same options (and, with peers,
    mako when installed; with compact, rocksort's forced compact temp runs);
    IN_PATH/OUT_PATH/TMP_DIR are filled in per run."""
    level = ["-u"] if "-u" in extra else ["-l", str(cfg.level)]
    opts = ["-@", str(cfg.threads), "-m", mem] + level + [e for e in extra if e != "-u"]
    src = "-" if rate else "IN_PATH"
    jobs = [Job("rocksort", cfg.rocksort + opts + ["-T", "TMP_DIR", "-o", "OUT_PATH", src],
                rate, checked=True)]
    if compact:
        jobs.append(Job("rocksort compact", cfg.rocksort + opts +
                        ["--temp-compression", "compact", "-T", "TMP_DIR", "-o", "OUT_PATH", src],
                        rate, checked=True))
    # samtools sort -T takes a prefix: its files go into TMP_DIR as st.NNNN.bam.
    jobs.append(Job("samtools sort", [SAMTOOLS, "sort"] + opts +
                    ["-T", os.path.join("TMP_DIR", "st"), "-o", "OUT_PATH", src], rate))
    if peers and not rate and cfg.mako:
        jobs.append(mako_job(cfg, mem, extra))
    return jobs


def mako_job(cfg, mem, extra):
    """mako at the like-for-like level: its --compression-level is libdeflate's,
    and htslib's -l L is libdeflate's LIBDEFLATE_LEVEL[L] (6 -> 7); -u is its
    level 0.  -@ and -m as the others get them: its -m is per thread, times
    its sort threads (= -@), as in samtools.  -n is queryname::natural."""
    level = 0 if "-u" in extra else LIBDEFLATE_LEVEL[cfg.level]
    order = "queryname::natural" if "-n" in extra else "coordinate"
    return Job("mako", [cfg.mako, "-i", "IN_PATH", "-o", "OUT_PATH", "--order", order,
                        "-@", str(max(1, cfg.threads)), "-m", mem,
                        "--compression-level", str(level), "-T", "TMP_DIR"], checked=True)


def floor_job(cfg, uncompressed=False):
    # `view -l` selects a library, not a level: the level goes through -O.
    level = ["-u"] if uncompressed else ["-O", f"bam,level={cfg.level}"]
    return Job("floor", [SAMTOOLS, "view", "-@", str(cfg.threads)] + level +
               ["-o", "OUT_PATH", "IN_PATH"])


def other_sorters(cfg):
    """sambamba and biobambam2's bamsort, only when installed: extra rows of
    case a, timed but not checked for order.  Each takes one memory figure
    for all threads, so it gets -m times the threads: the budget samtools
    sort and rocksort have.  sambamba sort always writes a .bai as well."""
    threads = max(1, cfg.threads)
    total_mib = max(1, make_input.parse_size(cfg.mem) * threads // 2**20)
    jobs = []
    if shutil.which("sambamba"):
        jobs.append(Job("sambamba", ["sambamba", "sort", "-t", str(threads), "-m",
                                     f"{total_mib}M", "-l", str(cfg.level),
                                     "--tmpdir=TMP_DIR", "-o", "OUT_PATH", "IN_PATH"]))
    if shutil.which("bamsort"):
        jobs.append(Job("bamsort", ["bamsort", "SO=coordinate", f"level={cfg.level}",
                                    f"blockmb={total_mib}", f"sortthreads={threads}",
                                    f"inputthreads={threads}", f"outputthreads={threads}",
                                    f"tmpfile={os.path.join('TMP_DIR', 'bs')}",
                                    "I=IN_PATH", "O=OUT_PATH"]))
    return jobs


CASES = {
    "a": ("spilling, -m {mem}",
          lambda cfg: sort_jobs(cfg, cfg.mem, compact=True) + [floor_job(cfg)] + other_sorters(cfg)),
    "b": ("in memory, -m {inmem}", lambda cfg: sort_jobs(cfg, cfg.inmem) + [floor_job(cfg)]),
    "c": ("-u output, spilling, -m {mem}",
          lambda cfg: sort_jobs(cfg, cfg.mem, ["-u"]) + [floor_job(cfg, True)]),
    "g": ("name sort -n, -m {mem}",
          lambda cfg: sort_jobs(cfg, cfg.mem, ["-n"], compact=True) + [floor_job(cfg)]),
}


def output_path(key, tool):
    return os.path.join(OUT, "res", f"{key}-{tool.replace(' ', '_')}.bam")


def run_case(key, title, jobs, inp, runs, check=True):
    """Alternates the tools run by run; checks the sorters after the first round."""
    cr = CaseResult(key, title, inp)
    for r in range(runs):
        for job in jobs:
            out = output_path(key, job.tool)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            print(f"bench: {key} run {r + 1}/{runs}: {job.tool}", file=sys.stderr, flush=True)
            res = run_job(job, inp["path"], out,
                          os.path.join(LOGS, f"{key}-{job.tool.replace(' ', '_')}-{r + 1}.err"))
            cr.results.setdefault(job.tool, []).append(res)
        if r == 0 and check:
            name_sort = "-n" in jobs[0].argv
            outputs = {j.tool: output_path(key, j.tool) for j in jobs
                       if j.checked or j.tool == "samtools sort"}
            cr.checks = verify_case(outputs, name_sort)
            cr.checks += [f"{j.tool}: timed, not checked" for j in jobs
                          if not j.checked and j.tool not in ("samtools sort", "floor")]
    return cr


def median(results, attr="seconds"):
    ok = [getattr(r, attr) for r in results if not r.failed]
    return statistics.median(ok) if ok else None


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
    return [Job(j.tool, hinted(j.argv), j.feed_rate) if j.tool == "rocksort" else j
            for j in jobs]


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


# -- m: the model ----------------------------------------------------------

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
    rs = cfg.rocksort
    warm_cache(inp["path"])
    mr.merge_threads = has_option(rs, "--merge-threads")
    merge1 = ["--merge-threads", "1"] if mr.merge_threads else []
    sorted_u = output_path("m", "stages")
    steps = [  # (name, job, input)
        ("stages", Job("m stages", (two or one) + rs + ["-@", "0", "-u", "-m", cfg.mem] + merge1 +
                       ["-T", "TMP_DIR", "-o", "OUT_PATH", "IN_PATH"]), inp["path"]),
        ("decode", Job("m decode", one + [SAMTOOLS, "view", "-c", "-@", "0", "IN_PATH"]), inp["path"]),
        ("store", Job("m store", one + [SAMTOOLS, "view", "-@", "0", "-u", "-o", "-", "IN_PATH"]),
         sorted_u),
        ("parse", Job("m parse", one + [SAMTOOLS, "view", "-c", "-@", "0", "IN_PATH"]), sorted_u),
        ("compress", Job("m compress", one + [SAMTOOLS, "view", "-@", "0", "-O",
                                              f"bam,level={cfg.level}", "-o", "-", "IN_PATH"]),
         sorted_u),
        ("p1", Job("m p1", one + rs + ["-@", "1", "-m", cfg.mem, "-l", str(cfg.level),
                                       "-T", "TMP_DIR", "-o", "OUT_PATH", "IN_PATH"]), inp["path"]),
    ]
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


def fit_model(mr, runs, inp):
    """The stage seconds from the runs' medians (bench/model.py's Stages)."""
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
    key = load - stage("wait", 0.0) - cpu["decode"]
    if key < 0:
        notes.append(f"key and batch came out negative ({key:.2f} s): set to 0")
    ranges_a = int(stage("ranges", 1))
    if ranges_a != 1:
        notes.append(f"the stage run merged {ranges_a} ranges at once, not 1: merge is their wall")
    joins = [(x["join"], x["appended_mb"]) for name in ("p1", "p2") for x in v.get(name, [])
             if x.get("appended_mb")]
    out_mb = os.path.getsize(output_path("m", "p1")) / 1e6 if os.path.exists(
        output_path("m", "p1")) else 0.0
    mr.stages = model.Stages(
        bytes=u, dec=cpu["decode"], parse=min(cpu["parse"], cpu["decode"]), key=max(0.0, key),
        spill=stage("sort", 0.0) + stage("write", 0.0),
        merge=readout - stage("join", 0.0),
        comp=max(0.0, cpu["compress"] - cpu["store"]), settle=settle,
        fixed=max(0.0, wall["stages"] - load - settle - readout),
        join_per_mb=med([j / m for j, m in joins]) or 0.0, out_mb=out_mb, notes=notes)
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
    rule = ("at 1-2 cores read from -v; at 8-32 from K = min(P, ceil(P*m/(m+c)))"
            if ranges_read else None)
    md += model.report(mr.stages, mr.checks, rule=rule)
    md += ["", "<details><summary>case m's commands (taskset pins the cores)</summary>", "",
           "```"] + mr.commands + ["```", "", "</details>"]
    return md


# -- report ---------------------------------------------------------------

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
    st = subprocess.run([SAMTOOLS, "--version"], stdout=subprocess.PIPE, text=True,
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
    rows = ["| case | tool | median s | min–max | × floor | × samtools sort | peak RSS MB | "
            "peak temp MB | s/GiB in |",
            "|---|---|---|---|---|---|---|---|---|"]
    for cr in cases:
        floor = median(cr.results.get("floor", []))
        ref = median(cr.results.get("samtools sort", []))
        gib = cr.input["compressed"] / 2**30
        for tool, results in cr.results.items():
            med = median(results)
            ok = [r.seconds for r in results if not r.failed]
            span = f"{min(ok):.1f}–{max(ok):.1f}" if ok else "FAILED"
            rss = max((r.rss_mb for r in results if not r.failed), default=None)
            temp = max((r.temp_mb for r in results if not r.failed), default=None)
            rows.append(
                f"| {cr.case}) {cr.title} | {tool} | {fmt(med)} | {span} | "
                f"{fmt(med / floor if med and floor and cr.case != 'f' else None, '{:.2f}')} | "
                f"{fmt(med / ref if med and ref else None, '{:.2f}')} | {fmt(rss, '{:.0f}')} | "
                f"{fmt(temp, '{:.0f}')} | "
                f"{fmt(med / gib if med and cr.case != 'f' else None)} |")
    return rows


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
           "samtools": [SAMTOOLS, SAMTOOLS_NOTE],
           "model": mr and {"runs": mr.raw, "error": mr.error, "commands": mr.commands,
                            "stages": mr.stages and vars(mr.stages), "checks": mr.checks},
           "cases": [{"case": c.case, "title": c.title, "checks": c.checks,
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
          f"- rocksort: `{' '.join(cfg.rocksort)}`; samtools sort: `{SAMTOOLS} sort` "
          f"({samtools_version(SAMTOOLS)}, {SAMTOOLS_NOTE or 'default'}); "
          f"floor: `{SAMTOOLS} view -b` (no sort)",
          "- mako: " + (f"`{cfg.mako}` ({mako_version(cfg.mako)}), `--compression-level "
                         f"{LIBDEFLATE_LEVEL[cfg.level]}` for -l {cfg.level} (libdeflate's level, "
                         f"as htslib maps it), 0 for -u"
                         if cfg.mako else "not run (not on PATH, $MAKO unset)"),
          f"- peak temp MB: each tool's own temp directory, sampled every {SAMPLE_EVERY} s, "
          "allocated blocks, 10^6 bytes",
          f"- machine: {machine()}", f"- {temp_traits()}", ""]
    md += table(cases)
    md += ["", "Streaming (f): the median is the time from the end of input to the finished "
           "output; the feed itself takes ~1.5x the floor's time." if any(c.case == "f" for c in cases) else ""]
    for cr in cases:
        if cr.case == "f":
            for tool, results in cr.results.items():
                md.append(f"- f) {tool}: feed {fmt(median(results, 'fed_seconds'))} s, "
                          f"total {fmt(median(results, 'total_seconds'))} s")
    md += scaling_lines(cases) + merge_lines(cases)
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
        for tool in ("rocksort", "rocksort compact"):
            for i, r in enumerate(cr.results.get(tool, []), 1):
                md += [f"{cr.case}) {tool} run {i}, {r.seconds:.1f} s:", "```"] + \
                      (phase_lines(r.stderr) or ["(nothing)"]) + ["```"]
    md += ["", "</details>", ""]
    return "\n".join(md)


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
    inp = ensure_input(cfg.size, cfg.seed)
    fmt_args = {"mem": cfg.mem, "inmem": cfg.inmem}
    cases, rss_case, mr = [], None, None
    for key in cfg.cases:
        if key in CASES:
            title, jobs = CASES[key]
            cases.append(run_case(key, title.format(**fmt_args), jobs(cfg), inp, cfg.runs))
        elif key == "d":
            rss_case = next((c for c in cases if c.case == "a"), None) or run_case(
                "d", f"-m {cfg.mem}", CASES["a"][1](cfg), inp, 1, check=False)
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
    save_raw(cfg, inp, cases, mr)
    text = report(cfg, inp, cases, rss_case, mr)
    with open(os.path.join(OUT, "latest.md"), "w") as f:
        f.write(text)
    print(text)
    if any("**MISMATCH**" in line for cr in cases for line in cr.checks):
        sys.exit("bench: a sorter's output differs from samtools sort's (see Correctness)")


if __name__ == "__main__":
    main()
