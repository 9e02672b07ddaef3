"""Tests of issue #41, many cores: the threads carry their roles' names,
and -v reports each phase's CPU time per thread and the longest single
thread (figures present and adding up, never how fast they are).  To run
only these:  run_tests.py -k 'cores_*'
"""

import os
import re

from background import Background, wait_until
from harness import Failure, SPILL, stderr_lines, tail

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
    """{(tid, name)} of pid's threads now."""
    names = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.add((int(tid), f.read().strip()))
        except OSError:
            pass
    return names


def test_cores_threads_named_by_role(case):
    """While a spilling sort reads its input from a pipe, /proc shows its
    threads by role: the spill thread, the -@ pool, the compact runs'
    encoders, BGZF's reader; the main thread keeps the program's name."""
    with open(case.input("bulk.bam"), "rb") as f:
        data = f.read()
    out = case.out("out.bam")
    with Background(case, ["-@", "3", *SPILL, "-T", case.temp_prefix, "-o", out, "-"],
                    stdin=True) as bg:
        bg.feed(data[:len(data) // 2])
        want = {"rocksort-spill", "rocksort-pool", "rocksort-enc", "rocksort-in"}
        seen = set()

        def named():
            seen.update(thread_names(bg.proc.pid))
            return want <= {name for _, name in seen}
        wait_until(named, "threads named " + ", ".join(sorted(want)), bg)
        with open(f"/proc/{bg.proc.pid}/comm") as f:
            main = f.read().strip()
        bg.feed(data[len(data) // 2:])
        bg.end_input()
        if bg.wait() != 0:
            raise Failure("rocksort failed", bg.stderr_tail())
    if main != "samtools":
        raise Failure(f"the main thread is named '{main}', not the program's name 'samtools'")
    unnamed = {name for tid, name in seen if tid != bg.proc.pid
               and not name.startswith(("rocksort-", "rocksdb:"))}
    if unnamed:
        raise Failure(f"threads without a role's name: {sorted(unnamed)}",
                      sorted(name for _, name in seen))
