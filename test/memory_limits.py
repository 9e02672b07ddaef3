"""--max-memory auto, and the warning for a budget over a limit (issue #53).

`--max-memory auto` (or `-m auto`) takes the budget from the smallest of
the process's cgroup limit, SLURM's allocation and MemAvailable, less a
reserve; `-v` names which.  An explicit budget whose peak may pass a cgroup
or SLURM limit warns in one line and the sort goes on; MemAvailable alone
never warns.  The parsing of the files and variables is
test/test_mem_limits.c's, on fixture trees; here the real binary runs
under SLURM's variables and, where this machine lets a test make one, in a
real memory cgroup: there the sort must finish (not be killed), its peak
RSS within the limit, its records the oracle's.

SLURM's variables of the environment the suite runs in are removed, and the
tests that need a machine without a cgroup limit of its own (or with one
above theirs) are skipped on one.
"""

import os
import re
import subprocess
import sys

from faults import instrumented
from features import runs_written
from harness import TIMEOUT, Failure, Skip, each, expect_error, release_only, tail
from memory_bound import expect_oracle_records, grid_input, oracle_sorted

MIB = 1 << 20
BUDGET_LINE = re.compile(r"\[rocksort\] memory budget: (.*)")


# --- the machine's own limits, read as rocksort reads them ---------------------

def _unescape(text):
    return re.sub(r"\\([0-3][0-7]{2})", lambda m: chr(int(m[1], 8)), text)


def memory_groups():
    """[(version, mount point, this process's group directory)] for each
    mounted memory hierarchy this process is in (v1 with the memory
    controller, v2)."""
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            head, _, tail_ = line.partition(" - ")
            fields, fs = head.split(), tail_.split()
            if len(fields) < 5 or len(fs) < 3:
                continue
            if fs[0] == "cgroup2" or (fs[0] == "cgroup" and "memory" in fs[2].split(",")):
                mounts.append((2 if fs[0] == "cgroup2" else 1, _unescape(fields[3]),
                               _unescape(fields[4])))
    found = []
    with open("/proc/self/cgroup") as f:
        for line in f:
            hid, ctrls, path = line.rstrip("\n").split(":", 2)
            version = 2 if hid == "0" and not ctrls else \
                1 if "memory" in ctrls.split(",") else None
            for v, root, point in mounts:
                if v != version:
                    continue
                rel = path if root == "/" else \
                    path[len(root):] if path.startswith(root) else "/"
                found.append((v, point, os.path.join(point, rel.lstrip("/"))))
                break
    return found


def _limit_in(directory, version):
    names = ["memory.max", "memory.high"] if version == 2 else ["memory.limit_in_bytes"]
    best = None
    for name in names:
        try:
            with open(os.path.join(directory, name)) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            best = int(text) if best is None else min(best, int(text))
    return best


def own_cgroup_limit():
    """The smallest memory limit from this process's groups up to their
    hierarchies' roots, in bytes, or None."""
    limits = []
    for version, point, group in memory_groups():
        d = group
        while True:
            limit = _limit_in(d, version)
            if limit is not None:
                limits.append(limit)
            if os.path.normpath(d) == os.path.normpath(point):
                break
            d = os.path.dirname(d)
    return min(limits) if limits else None


def mem_available():
    with open("/proc/meminfo") as f:
        found = re.search(r"MemAvailable:\s+(\d+) kB", f.read())
    return int(found[1]) * 1024 if found else None


def need_no_limit_below(nbytes, why):
    """Skips when this machine's own cgroup limit would be the one that
    rocksort picks instead of the test's."""
    own = own_cgroup_limit()
    if own is not None and (nbytes is None or own < nbytes):
        raise Skip(f"this machine runs the tests under a cgroup memory limit of "
                   f"{own // MIB} MiB, {why}")


# --- running rocksort with chosen limits ------------------------------------------

def limits_env(case, **slurm):
    """The session's environment without SLURM's variables, plus these."""
    env = {k: v for k, v in case.session.env.items() if not k.startswith("SLURM_")}
    env.update(TMPDIR=case.tmp, **slurm)
    return env


def sort_with(case, args, env, source="bulk.bam"):
    out = case.out("out.bam")
    result = subprocess.run([*case.session.rocksort_cmd, *args, "-T", case.temp_prefix,
                             "-o", out, case.input(source)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=case.out_dir, env=env, timeout=TIMEOUT)
    if result.returncode != 0:
        raise Failure(f"rocksort {' '.join(args)} exited with {result.returncode}",
                      tail(result.stderr))
    case.expect_same(out, case.session.expected(source, []))
    case.expect_no_temp_left()
    os.remove(out)
    return result.stderr.decode(errors="replace")


def budget_line(stderr):
    found = BUDGET_LINE.search(stderr)
    if not found:
        raise Failure("no '[rocksort] memory budget:' line with -v", tail(stderr))
    return found[1]


def budget_mib(line):
    found = re.search(r"auto: ([\d.]+) (MiB|GiB)", line)
    if not found:
        raise Failure("the budget line gives no figure", [line])
    return float(found[1]) * (1024 if found[2] == "GiB" else 1)


def warnings(stderr):
    return [l for l in stderr.splitlines() if "warning" in l]


# --- SLURM's variables --------------------------------------------------------------

def test_memory_auto_names_slurm_per_cpu(case):
    """SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE: 1G x 4 = 4 GiB, less the
    reserve (72 MiB at -@ 0), over 1.15: 3499 MiB, named on the -v line."""
    need_no_limit_below(4 << 30, "below the test's SLURM allocation of 4 GiB")
    if (mem_available() or 0) < 5 << 30:
        raise Skip("less than 5 GiB of MemAvailable here: it, not SLURM's 4 GiB, "
                   "would set the budget")
    err = sort_with(case, ["-v", "-m", "auto"],
                    limits_env(case, SLURM_MEM_PER_CPU="1G", SLURM_CPUS_ON_NODE="4"))
    line = budget_line(err)
    if "SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE" not in line or "4.0 GiB" not in line:
        raise Failure("the budget line does not name SLURM's 4 GiB", [line])
    if abs(budget_mib(line) - 3.4 * 1024) > 0.06 * 1024:
        raise Failure("the budget is not (4096 - 72) / 1.15 MiB", [line])
    if warnings(err):
        raise Failure("auto's own budget warned", warnings(err))


def test_memory_auto_is_a_max_memory_of_that_size(case):
    """The auto budget acts as --max-memory of its size: under
    SLURM_MEM_PER_NODE=90 at -@ 2 (a reserve of 80 MiB: 8 MiB left, over
    1.15: 8 MiB) it writes the runs --max-memory 8M -@ 2 writes."""
    need_no_limit_below(90 * MIB, "below the test's SLURM allocation of 90 MiB")
    env = limits_env(case, SLURM_MEM_PER_NODE="90")
    err = sort_with(case, ["-v", "-@", "2", "--max-memory", "auto"], env)
    line = budget_line(err)
    if "SLURM_MEM_PER_NODE" not in line:
        raise Failure("the budget line does not name SLURM_MEM_PER_NODE", [line])
    size = budget_mib(line)
    auto_runs = runs_written(err.encode())
    fixed_runs = runs_written(sort_with(case, ["-v", "-@", "2", "--max-memory",
                                               f"{size:.0f}M"], env).encode())
    if auto_runs != fixed_runs or auto_runs == 0:
        raise Failure(f"--max-memory auto ({size:.0f} MiB) wrote {auto_runs} runs, "
                      f"--max-memory {size:.0f}M {fixed_runs}")


def test_memory_auto_without_limit_takes_half_of_memavailable(case):
    need_no_limit_below(None, "so MemAvailable cannot be the only source")
    available = mem_available()
    if not available:
        raise Skip("no MemAvailable in /proc/meminfo (a kernel before 3.14)")
    line = budget_line(sort_with(case, ["-v", "--max-memory", "auto"], limits_env(case),
                                 source="mixed.bam"))
    if "half of MemAvailable" not in line or "no cgroup or SLURM limit" not in line:
        raise Failure("the budget line does not say half of MemAvailable", [line])
    share = budget_mib(line) * MIB / available
    if not 0.3 < share < 0.7:       # MemAvailable moves between the two reads
        raise Failure(f"the budget is {share:.2f} of MemAvailable, not about half", [line])


def test_memory_warns_over_slurm(case):
    """-m 1G x 2 threads and --max-memory 1G under a 300 MiB allocation: one
    warning naming both figures; the sort goes on and is right."""
    need_no_limit_below(300 * MIB, "below the test's SLURM allocation of 300 MiB")
    env = limits_env(case, SLURM_MEM_PER_NODE="300")
    for args, given in ((["-m", "1G", "-@", "2"], "-m 1G x 2 threads = 2.0 GiB"),
                        (["--max-memory", "1G"], "--max-memory 1G = 1.0 GiB")):
        lines = [l for l in sort_with(case, args, env, source="mixed.bam").splitlines()
                 if l.strip()]
        if len(lines) != 1 or "warning" not in lines[0]:
            raise Failure(f"{' '.join(args)}: expected one warning line", lines[:4])
        if given not in lines[0] or "SLURM's allocation of 300 MiB" not in lines[0] \
                or "SLURM_MEM_PER_NODE" not in lines[0]:
            raise Failure(f"the warning lacks '{given}' or the allocation", lines)


def test_memory_no_warning_without_limit(case):
    """A budget far above the machine's memory, but no cgroup or SLURM
    limit: MemAvailable is not a limit, so nothing is said."""
    need_no_limit_below(None, "and these budgets would pass it")
    env = limits_env(case)
    for args in (["--max-memory", "1T"], ["-m", "64G", "-@", "4"]):
        err = sort_with(case, args, env, source="mixed.bam")
        if err.strip():
            raise Failure(f"{' '.join(args)} without a limit printed something",
                          tail(err))


def test_memory_no_warning_within_slurm(case):
    need_no_limit_below(4 << 30, "below the test's SLURM allocation of 4 GiB")
    env = limits_env(case, SLURM_MEM_PER_NODE="4G")
    err = sort_with(case, ["-m", "256M", "-@", "2"], env, source="mixed.bam")
    if err.strip():
        raise Failure("-m 256M x 2 threads within a 4 GiB allocation warned", tail(err))


def test_memory_auto_with_a_size_is_an_error(case):
    for args in (["-m", "auto", "--max-memory", "1G"], ["--max-memory", "auto", "-m", "2M"]):
        result = subprocess.run([*case.session.rocksort_cmd, *args, "-o", case.out("out.bam"),
                                 case.input("mixed.bam")], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=case.out_dir, env=limits_env(case), timeout=TIMEOUT)
        expect_error(case, result, ["auto"], case.out("out.bam"))


# --- a sort within a limit: SLURM's and a real cgroup's ---------------------------------

# rocksort's peak RSS, from a fresh interpreter that first moves itself into
# the cgroup named (if any), so that rocksort starts inside it.
MEASURE_IN_GROUP = """
import os, resource, subprocess, sys
if sys.argv[1]:
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
code = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(128 - code if code < 0 else code)
"""


def sort_within(case, args, env, procs_file, limit):
    """The 40 MiB input (about 100 MB of records) on standard input, spilled,
    with --max-memory auto: exit 0, the oracle's records, peak RSS within
    limit, no temp data left.  -> the -v budget line"""
    if instrumented(case):
        raise Skip("an instrumented build holds memory of its own: a limit would kill it")
    src = grid_input(case.session)
    out = case.out("out.bam")
    cmd = [*case.session.rocksort_cmd, "-v", "--max-memory", "auto", *args,
           "-T", case.temp_prefix, "-o", out, "-"]
    with open(src, "rb") as given:
        result = subprocess.run([sys.executable, "-c", MEASURE_IN_GROUP, procs_file, *cmd],
                                stdin=given, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=case.out_dir, env=env, timeout=TIMEOUT)
    err = result.stderr.decode(errors="replace")
    if result.returncode != 0:
        raise Failure(f"rocksort {' '.join(args)} exited with {result.returncode}"
                      + (" (killed: over the limit)" if result.returncode == 137 else ""),
                      tail(err))
    peak = int(result.stdout.split()[-1]) * 1024
    if runs_written(result.stderr) == 0:
        raise Failure("the sort did not spill: the test means a spilled sort", tail(err))
    expect_oracle_records(case, out, oracle_sorted(case.session, src))
    case.expect_no_temp_left()
    if peak > limit:
        raise Failure(f"peak RSS {peak / MIB:.0f} MiB, over the limit of {limit / MIB:.0f} MiB",
                      [budget_line(err)])
    return budget_line(err)


@release_only("a 100 MB sort whose memory an instrumented build cannot keep")
def test_memory_auto_within_slurm_spilled(case):
    """SLURM_MEM_PER_NODE=300: the budget is 198 MiB, the peak within 300 MiB."""
    need_no_limit_below(300 * MIB, "below the test's SLURM allocation of 300 MiB")
    line = sort_within(case, [], limits_env(case, SLURM_MEM_PER_NODE="300"), "",
                       300 * MIB)
    if "SLURM_MEM_PER_NODE" not in line:
        raise Failure("the budget line does not name SLURM_MEM_PER_NODE", [line])


class MemoryCgroup:
    """A memory cgroup of `limit` bytes made for one test, and removed after:
    in a v1 hierarchy a child of this process's own group, in a v2 one a
    child of the root where the root hands out the memory controller (v2
    lets no group that holds processes have children that use it).  Entered,
    it gives the cgroup.procs file that moves a process in.  Skips where
    this machine allows neither."""

    def __init__(self, case, limit):
        self.name = f"rocksort-test-{os.getpid()}-{case.dir.rsplit('/', 1)[-1]}"[:200]
        self.limit = limit
        self.path = None

    def _parent(self):
        for version, point, group in memory_groups():
            if version == 1:
                return 1, group
            try:
                with open(os.path.join(point, "cgroup.subtree_control")) as f:
                    if "memory" in f.read().split():
                        return 2, point
            except OSError:
                pass
        raise Skip("no memory cgroup can be made here: no v1 memory hierarchy and no v2 "
                   "root that delegates the memory controller")

    def __enter__(self):
        version, parent = self._parent()
        path = os.path.join(parent, self.name)
        try:
            os.mkdir(path)
        except OSError as error:
            raise Skip(f"cannot make a memory cgroup in {parent}: {error.strerror}")
        self.path = path
        files = ["memory.max", "memory.swap.max"] if version == 2 else \
            ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
        try:
            with open(os.path.join(path, files[0]), "w") as f:
                f.write(str(self.limit))
        except OSError as error:
            self.__exit__(None, None, None)
            raise Skip(f"cannot set {files[0]} in {path}: {error.strerror}")
        try:                  # no swap to hide the limit, where the kernel counts it
            with open(os.path.join(path, files[1]), "w") as f:
                f.write("0" if version == 2 else str(self.limit))
        except OSError:
            pass
        return os.path.join(path, "cgroup.procs")

    def __exit__(self, *exc):
        import time
        for _ in range(50):         # the last process may take a moment to leave
            try:
                os.rmdir(self.path)
                return False
            except FileNotFoundError:
                return False
            except OSError:
                time.sleep(0.1)
        raise Failure(f"could not remove the test's cgroup {self.path}")


def expect_cgroup_named(line, limit):
    own = own_cgroup_limit()
    if own is None or own >= limit:
        want = f"the cgroup's memory limit of {limit // MIB} MiB"
        if want not in line:
            raise Failure(f"the budget line does not name {want}", [line])


@release_only("100 MB sorts whose memory an instrumented build cannot keep")
@each([("memory_auto_within_cgroup", [], 300 * MIB),
       ("memory_auto_within_cgroup_threads16_l1", ["-@", "16", "-l", "1"], 600 * MIB)])
def test_memory_auto_within_cgroup(case, args, limit):
    """In a real cgroup the sort is not killed: the kernel enforces the limit."""
    if instrumented(case):
        raise Skip("an instrumented build holds memory of its own: a limit would kill it")
    with MemoryCgroup(case, limit) as procs:
        line = sort_within(case, args, limits_env(case), procs, limit)
    expect_cgroup_named(line, limit)


def test_memory_warns_over_cgroup(case):
    """-m 1G in a 200 MiB cgroup: one warning naming both figures, and the
    sort of a small input goes on, right."""
    if instrumented(case):
        raise Skip("an instrumented build holds memory of its own: a limit would kill it")
    limit = 200 * MIB
    with MemoryCgroup(case, limit) as procs:
        out = case.out("out.bam")
        cmd = [*case.session.rocksort_cmd, "-m", "1G", "-T", case.temp_prefix, "-o", out,
               case.input("mixed.bam")]
        result = subprocess.run([sys.executable, "-c", MEASURE_IN_GROUP, procs, *cmd],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=case.out_dir,
                                env=limits_env(case), timeout=TIMEOUT)
    lines = [l for l in result.stderr.decode(errors="replace").splitlines() if l.strip()]
    if result.returncode != 0:
        raise Failure(f"exit status {result.returncode}", lines[-5:])
    case.expect_same(out, case.session.expected("mixed.bam", []))
    case.expect_no_temp_left()
    own = own_cgroup_limit()
    figure = f"{min(limit, own or limit) // MIB} MiB"
    if len(lines) != 1 or "-m 1G = 1.0 GiB" not in lines[0] \
            or f"the cgroup's memory limit of {figure}" not in lines[0]:
        raise Failure("expected one warning naming -m 1G and the cgroup's limit", lines[:4])
