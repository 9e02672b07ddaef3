"""Case t: two throttled temp disks against one (issue #42).

../shared/tools/slow-temp-disk makes HDD-like disks (loop-mounted ext4,
throttled by cgroup-v1 blkio, the command's memory and page cache capped),
and `setup 12G 150 150 900M 2` makes two, mnt and mnt2, each throttled on
its own.  Every tool runs under `slow-temp-disk run`, which empties the
disks and drops the page cache first, with the same -@ and -m:

- rocksort with -T on both disks, and on one;
- samtools sort on one (it takes one -T);
- mako with -T on both (its -T is repeatable);
- rocksort with its temp data on the fast disk: the limit of what faster
  temp disks could give.

The disks must be set up first (root): the case says so and runs nothing
otherwise.  Peak temp is sampled on each disk apart (disk_lines()).
$SLOW_TEMP_DISK names the tool, $SLOW_BASE its base directory as for the
tool itself.
"""
import os

from paths import ROOT
from tools import LIBDEFLATE_LEVEL, Job, samtools_sort_job

import tools

SLOW_TEMP_DISK = os.environ.get("SLOW_TEMP_DISK") or os.path.normpath(
    os.path.join(ROOT, "..", "shared", "tools", "slow-temp-disk"))
SLOW_BASE = os.environ.get("SLOW_BASE") or "/var/tmp/slowdisk"
DISKS = [os.path.join(SLOW_BASE, "mnt"), os.path.join(SLOW_BASE, "mnt2")]
SETUP = f"{SLOW_TEMP_DISK} setup 12G 150 150 900M 2"


def disks_ready():
    """'' when both throttled disks are mounted, else what to do."""
    missing = [d for d in DISKS if not os.path.ismount(d)]
    if not os.access(SLOW_TEMP_DISK, os.X_OK):
        return f"{SLOW_TEMP_DISK} not found ($SLOW_TEMP_DISK names it)"
    return f"not run: {', '.join(missing)} not mounted; as root: `{SETUP}`" if missing else ""


def t_args(dirs):
    return [a for d in dirs for a in ("-T", d)]


def disk_jobs(cfg, mem):
    """The case's jobs: each under `slow-temp-disk run`, its temp dirs sampled apart."""
    run = (SLOW_TEMP_DISK, "run")
    opts = ["-@", str(cfg.threads), "-m", mem, "-l", str(cfg.level)]
    rocksort = cfg.rocksort + opts
    jobs = [
        Job("rocksort, 2 disks", rocksort + t_args(DISKS) + ["-o", "OUT_PATH", "IN_PATH"],
            checked=True, wrapper=run, temp_dirs=tuple(DISKS)),
        Job("rocksort, 1 disk", rocksort + ["-T", DISKS[0], "-o", "OUT_PATH", "IN_PATH"],
            checked=True, wrapper=run, temp_dirs=(DISKS[0],)),
    ]
    st = samtools_sort_job("samtools sort", tools.SAMTOOLS, opts)
    st.argv = [a.replace(os.path.join("TMP_DIR", "st"), os.path.join(DISKS[0], "st"))
               for a in st.argv]
    jobs.append(Job(st.tool, st.argv, wrapper=run, temp_dirs=(DISKS[0],)))
    if cfg.mako:
        jobs.append(Job("mako, 2 disks", [cfg.mako, "-i", "IN_PATH", "-o", "OUT_PATH",
                                          "--order", "coordinate", "-@", str(max(1, cfg.threads)),
                                          "-m", mem, "--compression-level",
                                          str(LIBDEFLATE_LEVEL[cfg.level]), *t_args(DISKS)],
                        checked=True, wrapper=run, temp_dirs=tuple(DISKS)))
    jobs.append(Job("rocksort, fast disk (limit)", rocksort + ["-T", "TMP_DIR", "-o", "OUT_PATH",
                                                               "IN_PATH"],
                    checked=True, wrapper=run))
    return jobs


def disk_lines(cases):
    """Each tool's peak temp on each throttled disk, the largest over its runs."""
    lines = []
    for cr in cases:
        if cr.case != "t":
            continue
        for tool, results in cr.results.items():
            ok = [r for r in results if not r.failed and r.temp_mb_by_dir]
            if not ok or tool.endswith("(limit)"):
                continue
            peaks = [max(r.temp_mb_by_dir[i] for r in ok) for i in range(len(ok[0].temp_mb_by_dir))]
            lines.append(f"- t) {tool}: peak temp " + ", ".join(
                f"{os.path.basename(d)} {p:.0f} MB" for d, p in zip(DISKS, peaks)))
    return lines
