"""Tests of issue #41, many cores: the threads carry their roles' names,
and -v reports each phase's CPU time per thread and the longest single
thread (figures present and adding up, never how fast they are).  To run
only these:  run_tests.py -k 'cores_*'
"""

import os
import re

from background import Background, wait_until
from harness import PYTHON, SPILL, Failure, each, release_only, run, tail

NUM = r"(\d+(?:\.\d+)?)"
LONGEST = re.compile(rf"^\[rocksort\] threads in phase (load|compaction wait|readout): "
                     rf"the longest single thread: {NUM} s \(([^)]+)\) of {NUM} CPU-s$", re.M)
ROLES = re.compile(r"^\[rocksort\] threads in phase (load|compaction wait|readout): "
                   r"(?!the longest)(.*)$", re.M)
ROLE = re.compile(rf"^ ?([^;]+?) (?:(\d+) threads )?{NUM} s(?: \(busiest {NUM} s\))?$")


def phase_figures(stderr):
    """{phase: (longest s, its role, phase CPU, {role: (threads, cpu, busiest)},
    unattributed)} from -v's thread lines."""
    text = stderr.decode(errors="replace")
    longest = {m.group(1): (float(m.group(2)), m.group(3), float(m.group(4)))
               for m in LONGEST.finditer(text)}
    figures = {}
    for m in ROLES.finditer(text):
        roles, unattributed = {}, None
        for item in (x for x in m.group(2).split(";") if x.strip()):
            item = item.strip()
            if item.startswith("unattributed "):
                unattributed = float(item.split()[1])
                continue
            r = ROLE.match(item)
            if not r:
                raise Failure(f"-v: cannot read '{item}' in phase {m.group(1)}",
                              [m.group(0)])
            n = int(r.group(2) or 1)
            cpu = float(r.group(3))
            roles[r.group(1)] = (n, cpu, float(r.group(4)) if r.group(4) else cpu)
        if m.group(1) not in longest or unattributed is None:
            raise Failure(f"-v: phase {m.group(1)}'s thread lines are incomplete",
                          tail(stderr, 12))
        figures[m.group(1)] = (*longest[m.group(1)], roles, unattributed)
    return figures


def expect_sums(phase, longest, role, cpu, roles, unattributed):
    """Every figure non-negative, the roles and what no thread accounts for
    adding up to the phase's CPU, the longest thread the busiest of its
    role and no busier than any role's busiest."""
    rounding = 0.011 * (len(roles) + 2)
    total = sum(c for _, c, _ in roles.values()) + unattributed
    if abs(total - cpu) > rounding:
        raise Failure(f"-v, phase {phase}: the threads' CPU ({total:.2f} s with "
                      f"{unattributed:.2f} s unattributed) does not add up to the phase's "
                      f"{cpu:.2f} CPU-s")
    if role not in roles or abs(roles[role][2] - longest) > 0.011:
        raise Failure(f"-v, phase {phase}: the longest thread ({role}, {longest:.2f} s) is not "
                      f"the busiest of its role", [str(roles)])
    for name, (n, c, busiest) in roles.items():
        if busiest > longest + 0.011 or busiest > c + 0.011 or c > n * busiest + rounding:
            raise Failure(f"-v, phase {phase}: role {name}'s figures are inconsistent: "
                          f"{n} threads, {c:.2f} s, busiest {busiest:.2f} s, longest of all "
                          f"{longest:.2f} s")


def test_cores_verbose_thread_figures(case):
    """-@ 4, spilling: each phase's per-thread lines are there and add up;
    the load names its loader, spill thread and pool, the readout its
    merge."""
    out = case.out("out.bam")
    result = case.rocksort_ok(["-v", "-@", "4", *SPILL, "-T", case.temp_prefix, "-o", out,
                               case.input("bulk.bam")])
    figures = phase_figures(result.stderr)
    if set(figures) != {"load", "compaction wait", "readout"}:
        raise Failure(f"-v: thread lines for phases {sorted(figures)}, expected load, "
                      "compaction wait and readout", tail(result.stderr, 12))
    for phase, (longest, role, cpu, roles, unattributed) in figures.items():
        expect_sums(phase, longest, role, cpu, roles, unattributed)
    load_roles = figures["load"][3]
    for role in ("loader", "spill", "pool"):
        if role not in load_roles:
            raise Failure(f"-v: no '{role}' thread in the load", [str(load_roles)])
    if figures["load"][3]["loader"][0] != 1 or figures["load"][3]["spill"][0] != 1:
        raise Failure("-v: the load has one loader and one spill thread", [str(load_roles)])
    if "merge" not in figures["readout"][3]:
        raise Failure("-v: no merge thread in the readout", [str(figures["readout"][3])])


def thread_names(pid):
    """{tid: name} of pid's threads now."""
    names = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names[int(tid)] = f.read().strip()
        except OSError:
            pass
    return names


@each([("cores_threads_named_by_role_t2", 2, {"rocksort-enc"}),
       ("cores_threads_named_by_role_t3", 3, set())])
def test_cores_threads_named_by_role(case, threads, more):
    """While a spilling sort reads its input from a pipe, /proc shows its
    threads by role: the spill thread, the -@ pool, BGZF's reader, and at
    -@ 2 the compact runs' encoders of their own; the main thread keeps the
    program's name."""
    with open(case.input("bulk.bam"), "rb") as f:
        data = f.read()
    out = case.out("out.bam")
    with Background(case, ["-@", str(threads), *SPILL, "-T", case.temp_prefix, "-o", out, "-"],
                    stdin=True) as bg:
        bg.feed(data[:len(data) // 2])
        want = {"rocksort-spill", "rocksort-pool", "rocksort-in", *more}
        seen = {}   # each thread's latest name: RocksDB names its own once they run

        def named():
            seen.update(thread_names(bg.proc.pid))
            return want <= set(seen.values())
        wait_until(named, "threads named " + ", ".join(sorted(want)), bg)

        def unnamed():
            seen.update(thread_names(bg.proc.pid))
            return {name for tid, name in seen.items() if tid != bg.proc.pid
                    and not name.startswith(("rocksort-", "rocksdb:"))}
        try:    # a thread RocksDB starts has our name until it names itself
            wait_until(lambda: not unnamed(), "every thread named by its role", bg)
        except Failure:
            raise Failure(f"threads without a role's name: {sorted(unnamed())}",
                          sorted(seen.values()))
        with open(f"/proc/{bg.proc.pid}/comm") as f:
            main = f.read().strip()
        bg.feed(data[len(data) // 2:])
        bg.end_input()
        if bg.wait() != 0:
            raise Failure("rocksort failed", bg.stderr_tail())
    if main != "samtools":
        raise Failure(f"the main thread is named '{main}', not the program's name 'samtools'")


# -- the parallel load against the oracle -----------------------------------------------
#
# With more than two threads the spill thread hands its work to the -@ pool
# (load/spill.h): a batch sorted in parts, each part at least 4096
# records, and a compact run's groups encoded in ranges.  Batches of many
# thousand records take that path: bulk_large's 160,000 records under
# --max-memory 12M spill some 13 runs of about 12,000 records (two or more
# parts each), which -s 30M has merged in the background as they come; at
# -m 64M the whole input is one batch, sorted in many parts; under
# --max-memory 100M and 80M its first batch is held in memory in place
# (a copy in key order, made in parts too, pays only over many batches of
# the largest size: load/batch's unit test copies in parts).  The small
# bulk sets of the other orders spill batches of about 10,000 records under
# --max-memory 9M, read from a pipe (a file that fits the 1M per thread
# that -@ 16 takes at least would be held in memory).

LARGE_SPILL = ["--max-memory", "12M"]
LARGE_MERGING = [*LARGE_SPILL, "-s", "30M"]
SMALL_SPILL = ["--max-memory", "9M", "-"]     # the input from a pipe
IN_MEMORY = ["-m", "64M"]
RUNS_LINE = re.compile(r"^\[rocksort\] runs: (\d+) written, (\d+) merged at readout", re.M)


def parallel_rows():
    rows = []
    for t in (1, 2, 4, 8, 16):
        for order, flags in (("coord", []), ("name", ["-n"])):
            rows.append((f"cores_{order}_spilled_t{t}", "bulk_large.bam", flags,
                         ["-@", str(t), *LARGE_SPILL], "spill"))
            rows.append((f"cores_{order}_merging_t{t}", "bulk_large.bam", flags,
                         ["-@", str(t), *LARGE_MERGING], "merge"))
    for t in (8, 16):
        at = ["-@", str(t)]
        rows += [
            (f"cores_coord_in_memory_t{t}", "bulk_large.bam", [], [*at, *IN_MEMORY], "memory"),
            (f"cores_name_in_memory_t{t}", "bulk_large.bam", ["-n"], [*at, *IN_MEMORY], "memory"),
            (f"cores_name_held_in_place_t{t}", "bulk_large.bam", ["-n"],
             [*at, "--max-memory", "100M"], "held"),
            (f"cores_coord_held_in_place_t{t}", "bulk_large.bam", [],
             [*at, "--max-memory", "80M"], "held"),
            (f"cores_ascii_name_spilled_t{t}", "bulk_large.bam", ["-N"], [*at, *LARGE_SPILL],
             "spill"),
            (f"cores_tag_spilled_t{t}", "tagged_bulk.bam", ["-t", "XM", "-n"],
             [*at, *SMALL_SPILL], "spill"),
            (f"cores_tag_in_memory_t{t}", "tagged_bulk.bam", ["-t", "XF"], [*at, *IN_MEMORY],
             "memory"),
            (f"cores_template_spilled_t{t}", "templates_bulk.bam", ["--template-coordinate"],
             [*at, "--max-memory", "6M", "-"], "spill"),
            (f"cores_template_in_memory_t{t}", "templates_bulk.bam",
             ["--template-coordinate"], [*at, *IN_MEMORY], "memory"),
            (f"cores_minimiser_spilled_t{t}", "minimiser_bulk.bam", ["-M"],
             [*at, *SMALL_SPILL], "spill"),
            (f"cores_minimiser_in_memory_t{t}", "minimiser_bulk.bam", ["-M"], [*at, *IN_MEMORY],
             "memory"),
            (f"cores_uncompressed_runs_t{t}", "bulk_large.bam", ["-n"],
             [*at, *LARGE_MERGING, "--temp-compression", "none"], "merge"),
        ]
    return rows


def expect_runs(result, kind):
    """The runs -v reports fit what the test meant to exercise."""
    m = RUNS_LINE.search(result.stderr.decode(errors="replace"))
    if not m:
        raise Failure("-v printed no runs line", tail(result.stderr, 12))
    written, at_readout = int(m.group(1)), int(m.group(2))
    if kind in ("memory", "held") and written:
        raise Failure(f"meant to sort in memory, yet {written} runs were written")
    if kind == "held" and "held in memory (in place)" not in result.stderr.decode(errors="replace"):
        raise Failure("meant to hold batches in place", tail(result.stderr, 12))
    if kind not in ("memory", "held") and written < 2:
        raise Failure(f"meant to spill, yet only {written} runs were written")
    # Whether a planned merge starts before the load ends is the scheduler's
    # (below STORE_MERGE_MIN_RUNS nothing catches up after the load): on a
    # busy machine the load may end first.  -v must then show them planned.
    if kind == "merge" and at_readout >= written and \
            "each run merged at most once" not in result.stderr.decode(errors="replace"):
        raise Failure(f"meant to merge runs in the background, yet the readout merged all "
                      f"{written}, and -v shows no merges planned", tail(result.stderr, 12))


def sanitized_rows():
    """The rows the sanitizer run keeps: each order's spill and merge at
    -@ 4, and the other orders and holdings at -@ 16."""
    kept = []
    for name, *_ in parallel_rows():
        threads = int(name.rsplit("_t", 1)[1])
        plain = re.match(r"cores_(coord|name)_(spilled|merging)_t", name)
        if (threads == 4 if plain else threads == 16 and "in_memory" not in name):
            kept.append(name)
    return tuple(kept)


@release_only("-@ 1-16 over one input: -@ 4 and 16 are kept", but=sanitized_rows())
@each(parallel_rows())
def test_cores_parallel_load(case, source, shared, extra, kind):
    """The outputs of the load on the pool, batch sorted in parts and runs
    written in ranges, are samtools 1.24's, for every order, spilled, in
    memory and merged in the background."""
    expected = case.session.expected(source, shared)
    actual = case.out("out")
    args = ["-v", *shared, *(x for x in extra if x != "-"), "-T", case.temp_prefix, "-o", actual]
    if "-" in extra:
        result = case.rocksort_ok(args + ["-"], stdin=case.input(source))
    else:
        result = case.rocksort_ok(args + [case.input(source)])
    case.expect_same(actual, expected)
    case.expect_no_temp_left()
    expect_runs(result, kind)


# -- memory touched ahead --------------------------------------------------------------

# Runs the command in argv[1:], then prints its peak RSS in KB, measured from
# outside (the largest waited-for child's), and exits with its status.
PEAK_RSS_OF = ("import resource, subprocess, sys; "
               "status = subprocess.run(sys.argv[1:]).returncode; "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
               "sys.exit(status)")
# What more than two threads may add to -@ 2's peak for the same input: the
# memory touched ahead of the loader (8 MiB), the threads' own, and margin.
# Touching the batches for records that never come took 1 GB.
THREADS_RSS_MB = 96


def sort_peak_rss_mb(case, args):
    """Sorts with args in a process of its own. -> its peak RSS in MB"""
    env = dict(case.session.env, TMPDIR=case.tmp)
    result = run([PYTHON, "-c", PEAK_RSS_OF, *case.session.rocksort_cmd, *args],
                 cwd=case.out_dir, env=env)
    if result.returncode != 0:
        raise Failure(f"rocksort exited with {result.returncode}", tail(result.stderr))
    return int(result.stdout.split()[-1]) / 1024


def test_cores_small_input_touches_little_memory(case):
    """With more than two threads the pool touches the loading batch's
    memory only a few slices ahead of the records: a 6 MB BAM (40,000
    records) sorted at -@ 4, 8 and 16 under -m 3G (two batches of 512 MiB)
    takes about what it takes at -@ 2, not the batches' memory, though the
    pool starts long before the input ends."""
    source = "bulk.bam"
    rss = {}
    for threads in (2, 4, 8, 16):
        out = case.out(f"out{threads}.bam")
        rss[threads] = sort_peak_rss_mb(case, ["-@", str(threads), "-m", "3G",
                                               "-T", case.temp_prefix, "-o", out,
                                               case.input(source)])
        case.expect_same(out, case.session.expected(source, []))
    case.expect_no_temp_left()
    over = [t for t in (4, 8, 16) if rss[t] > rss[2] + THREADS_RSS_MB]
    if over:
        raise Failure(f"a {os.path.getsize(case.input(source)) >> 20} MB input took "
                      + ", ".join(f"{rss[t]:.0f} MB at -@ {t}" for t in over)
                      + f" against {rss[2]:.0f} MB at -@ 2 (at most {THREADS_RSS_MB} MB more): "
                      "the batches' memory was touched for records that never came")
