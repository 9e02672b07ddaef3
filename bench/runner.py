"""Running the tools: one job timed, with its peak RSS (wait4) and the peak of
its own temp directory (sampled), the streaming feed, a case's runs
alternating tool by tool, and the cached input."""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import make_input  # its generator version
from checks import verify_case
from paths import BENCH, LOGS, OUT, ROOT, TMP
from tools import sh

SAMPLE_EVERY = 0.3  # seconds between two looks at a tool's temp directory


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
class Result:
    seconds: float       # wall time (streaming: end of input to exit)
    rss_mb: float
    cpu_seconds: float = 0.0       # user + system, all threads (wait4)
    fed_seconds: float = 0.0
    total_seconds: float = 0.0
    temp_mb: float = 0.0           # peak of the temp dir, allocated blocks (du)
    temp_apparent_mb: float = 0.0  # peak of the same, file sizes (du --apparent-size)
    temp_mb_by_dir: list = field(default_factory=list)  # each temp dir's own peak
    out_bytes: int = 0             # the output file's size
    stderr: str = ""
    failed: str = ""


@dataclass
class CaseResult:
    case: str
    title: str
    input: dict
    results: dict = field(default_factory=dict)  # tool -> [Result]
    checks: list = field(default_factory=list)   # one line per tool
    limit: object = None   # limit.Limit: the cores' limit for this case's work


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
    """The size of temp directories every SAMPLE_EVERY seconds; keeps the peak
    of them all, both as allocated blocks (what fills a disk) and as file
    sizes, and each directory's own peak in blocks."""

    def __init__(self, *paths):
        super().__init__(daemon=True)
        self.paths, self.peak, self.peak_apparent = paths, 0, 0
        self.peak_by_path = [0] * len(paths)
        self.done = threading.Event()

    def sample(self):
        used = apparent = 0
        for i, path in enumerate(self.paths):
            here = 0
            for root, _, files in os.walk(path):  # errors (vanished dirs) are skipped
                for name in files:
                    try:
                        st = os.lstat(os.path.join(root, name))
                    except OSError:
                        continue  # removed between the listing and the look
                    here += st.st_blocks * 512
                    apparent += st.st_size
            used += here
            self.peak_by_path[i] = max(self.peak_by_path[i], here)
        self.peak = max(self.peak, used)
        self.peak_apparent = max(self.peak_apparent, apparent)

    def run(self):
        self.sample()
        while not self.done.wait(SAMPLE_EVERY):
            self.sample()

    def stop(self):
        self.done.set()
        self.join()


def file_name(tool):
    """A tool's name as a file name ("samtools sort (shared libdeflate)")."""
    return re.sub(r"[^A-Za-z0-9]+", "_", tool).strip("_")


def tool_tmp(tool):
    """Each tool's own temp directory, so its peak is its own."""
    return os.path.join(TMP, file_name(tool))


def run_job(job, inp, out_path, log_path):
    """Runs one tool, timing it, taking its peak RSS from wait4() and its
    peak temp size from a sampler of its own temp directory, or of the
    directories it names (emptied by its wrapper, slow-temp-disk run)."""
    tmp = tool_tmp(job.tool)
    # Substrings, for key=value tools (bamsort's I=IN_PATH O=OUT_PATH).
    argv = list(job.wrapper) + [
        a.replace("OUT_PATH", out_path).replace("IN_PATH", inp).replace("TMP_DIR", tmp)
        for a in job.argv]
    remove_output(out_path)
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    fed = []
    sampler = TempSampler(*(job.temp_dirs or [tmp]))
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
                 temp_mb=sampler.peak / 1e6, temp_apparent_mb=sampler.peak_apparent / 1e6,
                 temp_mb_by_dir=[p / 1e6 for p in sampler.peak_by_path],
                 out_bytes=os.path.getsize(out_path) if os.path.exists(out_path) else 0)
    if fed:
        res.fed_seconds, res.total_seconds = fed[0] - start, end - start
        res.seconds = end - fed[0]
    if proc.returncode:
        res.failed = f"exit {proc.returncode}: {stderr.strip()[-500:]}"
        print(f"bench: FAILED {' '.join(argv)}\n{res.failed}", file=sys.stderr)
    return res


# -- running a case --------------------------------------------------------

def output_path(key, tool):
    return os.path.join(OUT, "res", f"{key}-{file_name(tool)}.bam")


def run_case(key, title, jobs, inp, runs, check=True):
    """Alternates the tools run by run; checks the sorters after the first
    round.  Outputs go once checked: a case's outputs left on the disk
    (2.7 GB each at -u) change what the next sorts find free, and rocksort
    picks its temp format by the room it finds."""
    cr = CaseResult(key, title, inp)
    for r in range(runs):
        for job in jobs:
            out = output_path(key, job.tool)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            print(f"bench: {key} run {r + 1}/{runs}: {job.tool}", file=sys.stderr, flush=True)
            res = run_job(job, inp["path"], out,
                          os.path.join(LOGS, f"{key}-{file_name(job.tool)}-{r + 1}.err"))
            cr.results.setdefault(job.tool, []).append(res)
            if r > 0 or not check:
                remove_output(out)
        if r == 0 and check:
            name_sort = "-n" in jobs[0].argv
            outputs = {j.tool: output_path(key, j.tool) for j in jobs
                       if j.checked or j.tool == "samtools sort"}
            cr.checks = verify_case(outputs, name_sort)
            cr.checks += [f"{j.tool}: timed, not checked" for j in jobs
                          if not j.checked and j.tool not in ("samtools sort", "floor")]
            for job in jobs:
                remove_output(output_path(key, job.tool))
    return cr


def remove_output(path):
    if os.path.exists(path):
        os.remove(path)


def median(results, attr="seconds"):
    ok = [getattr(r, attr) for r in results if not r.failed]
    return statistics.median(ok) if ok else None
