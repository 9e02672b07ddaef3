"""The tools the benchmark times: which samtools (choose_samtools), mako, the
rocksort build, and the command line of each (Job, sort_jobs, mako_job,
shared_deflate_job, floor_job, other_sorters).  choose_samtools() sets
SAMTOOLS: other modules read it as tools.SAMTOOLS, never through
`from tools import SAMTOOLS`."""
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass

import make_input  # its size parser
from paths import BENCH, ROOT

DEBIAN_SAMTOOLS = "/usr/bin/samtools"   # the input generator's, and the fallback
SAMTOOLS = os.environ.get("SAMTOOLS") or DEBIAN_SAMTOOLS  # set by choose_samtools()
SAMTOOLS_NOTE = ""
DEFAULT_ROCKSORT = "./samtools rocksort -v"
# htslib's level L is libdeflate's level MAP[L] (bgzf.c's lvl_map), so a tool
# that takes libdeflate levels (mako) gets MAP[L] to do the same work.
LIBDEFLATE_LEVEL = [0, 1, 2, 3, 5, 6, 7, 8, 10, 12]
SHARED_DEFLATE_TOOL = "samtools sort (shared libdeflate)"


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


def build_native(libdeflate="static"):
    """(path, '') of samtools 1.24 from bench/build_samtools.sh with libdeflate
    linked statically (as rocksort links it) or shared (as Debian links its
    samtools), or ('', why) when it cannot be built."""
    res = subprocess.run(["bash", os.path.join(BENCH, "build_samtools.sh")], cwd=ROOT,
                         env=dict(os.environ, LIBDEFLATE=libdeflate),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    path = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    if res.returncode == 0 and samtools_version(path) == "1.24":
        return path, ""
    return "", (res.stderr.strip().splitlines() or ["no output"])[-1]


def choose_samtools():
    """The timed samtools sort and floor: $SAMTOOLS if set, else samtools 1.24
    built natively by bench/build_samtools.sh (the version rocksort follows,
    with libdeflate), else Debian's 1.16 with a note in the report."""
    global SAMTOOLS, SAMTOOLS_NOTE
    if os.environ.get("SAMTOOLS"):
        SAMTOOLS, SAMTOOLS_NOTE = os.environ["SAMTOOLS"], "from $SAMTOOLS"
        return
    path, why = build_native()
    if path:
        SAMTOOLS, SAMTOOLS_NOTE = path, "native 1.24 build (bench/build_samtools.sh)"
        return
    SAMTOOLS = DEBIAN_SAMTOOLS
    SAMTOOLS_NOTE = (f"Debian's, because bench/build_samtools.sh failed ({why}); 1.16 breaks "
                     "-n ties differently, so -n outputs are compared as multisets")
    print(f"bench: no native samtools 1.24: {why}; using {SAMTOOLS}", file=sys.stderr)


def find_shared_deflate():
    """samtools 1.24 linked against the shared libdeflate.so.0, as Debian links
    its samtools (which compresses slower than the static archive rocksort
    links), or None when it cannot be built."""
    path, why = build_native("shared")
    if not path:
        print(f"bench: no samtools 1.24 with shared libdeflate: {why}", file=sys.stderr)
    return path or None


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


# -- the commands -------------------------------------------------------

@dataclass
class Job:
    tool: str            # "rocksort", "samtools sort", "floor", ...
    argv: list           # IN_PATH, OUT_PATH and TMP_DIR are filled in per run
    feed_rate: float = 0.0  # bytes/s through stdin; 0: the tool reads the file
    checked: bool = False   # its records are compared with samtools sort's
    wrapper: tuple = ()     # a command the tool runs under (slow-temp-disk run)
    temp_dirs: tuple = ()   # its temp directories, when not TMP_DIR: sampled, each apart


def sort_jobs(cfg, mem, extra=(), rate=0.0, uncompressed=False, peers=True, level=None):
    """rocksort and samtools sort with the same options (and, with peers,
    mako when installed; with uncompressed, rocksort's uncompressed temp runs too);
    level overrides --level for the case; IN_PATH/OUT_PATH/TMP_DIR are filled in per run."""
    level = cfg.level if level is None else level
    opts = ["-@", str(cfg.threads), "-m", mem] + \
        (["-u"] if "-u" in extra else ["-l", str(level)]) + [e for e in extra if e != "-u"]
    src = "-" if rate else "IN_PATH"
    jobs = [Job("rocksort", cfg.rocksort + opts + ["-T", "TMP_DIR", "-o", "OUT_PATH", src],
                rate, checked=True)]
    if uncompressed:
        jobs.append(Job("rocksort none", cfg.rocksort + opts +
                        ["--temp-compression", "none", "-T", "TMP_DIR", "-o", "OUT_PATH", src],
                        rate, checked=True))
    jobs.append(samtools_sort_job("samtools sort", SAMTOOLS, opts, src, rate))
    if peers and not rate and cfg.mako:
        jobs.append(mako_job(cfg, mem, extra, level))
    return jobs


def samtools_sort_job(tool, samtools, opts, src="IN_PATH", rate=0.0, checked=False):
    # samtools sort -T takes a prefix: its files go into TMP_DIR as st.NNNN.bam.
    return Job(tool, [samtools, "sort"] + opts +
               ["-T", os.path.join("TMP_DIR", "st"), "-o", "OUT_PATH", src], rate, checked)


def shared_deflate_job(cfg, path, mem):
    """samtools sort as Debian links it (shared libdeflate), with the main row's
    options; checked like the other sorters, since its order must not change."""
    opts = ["-@", str(cfg.threads), "-m", mem, "-l", str(cfg.level)]
    return samtools_sort_job(SHARED_DEFLATE_TOOL, path, opts, checked=True)


def mako_job(cfg, mem, extra, level):
    """mako at the like-for-like level: its --compression-level is libdeflate's,
    and htslib's -l L is libdeflate's LIBDEFLATE_LEVEL[L] (6 -> 7, 1 -> 1); -u
    is its level 0.  -@ and -m as the others get them: its -m is per thread,
    times its sort threads (= -@), as in samtools.  -n is queryname::natural."""
    level = 0 if "-u" in extra else LIBDEFLATE_LEVEL[level]
    order = "queryname::natural" if "-n" in extra else "coordinate"
    return Job("mako", [cfg.mako, "-i", "IN_PATH", "-o", "OUT_PATH", "--order", order,
                        "-@", str(max(1, cfg.threads)), "-m", mem,
                        "--compression-level", str(level), "-T", "TMP_DIR"], checked=True)


def floor_job(cfg, uncompressed=False, level=None):
    # `view -l` selects a library, not a level: the level goes through -O.
    level = cfg.level if level is None else level
    opts = ["-u"] if uncompressed else ["-O", f"bam,level={level}"]
    return Job("floor", [SAMTOOLS, "view", "-@", str(cfg.threads)] + opts +
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
