"""Open-file limits the faults' ulimit -n cases (faults.py) do not reach.

RocksDB keeps some runs open for as long as they live: a sort whose plan
forgot them met "Too many open files" under ulimit -n 64, now and then on
a busy machine, every time with the input below.  Under ulimit -n 40 the
merges must narrow: they go in tiers, and -v says what they rewrote and
why (issue 45).  Each sort gives the oracle's records and leaves nothing
behind (faults.sort_with_file_limit).  To run only these:
    run_tests.py -k 'fault_nofile_*'
"""

import os
import re
import subprocess

from faults import (INPUTS, LIMIT_FILES, decoded_digest, expect_one_line, expected_digest,
                    sort_with_file_limit, with_tmpfs)
from features import pass_counts
from harness import PYTHON, Failure, each, release_only, run


def test_fault_nofile_64_runs_pinned_open(case):
    """RocksDB keeps each run added while its table cache is under a
    quarter full open for as long as the run lives, whatever merges it.
    Here the first dozen runs hold noisy reads, several times the others'
    size, so that no merge of similar runs takes them, and -s 100G makes
    every merge as wide as the descriptors allow: each merge's inputs then
    stay open beside those pinned runs.  A plan that did not count them
    failed every time with "Too many open files" under ulimit -n 64 (the
    sort of fault_nofile_64_threads1_coord_file, which met it when its
    merges fell behind); the readout's runs and the merges must fit."""
    sort_with_file_limit(case, 64, [], 1, False, name="long_noisy_start.bam",
                         extra=["-s", "100G"])


MERGES_LINE = re.compile(rb"background merges: ([\d.]+) MB written, ([\d.]+) times the runs' "
                         rb"([\d.]+) MB(.*)")
DIR_BYTES = re.compile(rb"temp dir '[^']*': \d+ runs; (\d+) bytes written")


@release_only("ulimit -n cases whose store paths the kept two take too",
              but=("fault_nofile_40_rewrites_bounded_stdin",))
@each((f"fault_nofile_40_rewrites_bounded_{'stdin' if stdin else 'file'}", stdin)
      for stdin in (False, True))
def test_fault_nofile_40_rewrites_bounded(case, stdin):
    """Under ulimit -n 40 the readout may keep some 15 runs open and a merge
    some 12: too few to merge each of long.bam's ~400 runs only once.  The
    merges then go in tiers (store/merge_plan.h), each byte rewritten once per
    tier it climbs: 1.3-1.6 times the runs' bytes here, whatever the load
    (each merge waits for its runs, not for a free thread).  Narrowing the
    one-rewrite plan instead let RocksDB merge the newest runs into one
    growing run: 2-17 times the runs' bytes on this input, more the busier
    the machine (issue 45: 15).  -v says what the merges wrote and why;
    their bytes stay within 2.5 times the runs', and everything written to
    the temp directory (runs, merges, RocksDB's own files) within 4."""
    result = sort_with_file_limit(case, 40, [], 1, stdin)
    runs = int(re.search(rb"temp bytes written: (\d+)", result.stderr)[1])
    written = sum(int(n) for n in DIR_BYTES.findall(result.stderr))
    merges = MERGES_LINE.search(result.stderr)
    if not merges:
        raise Failure("-v does not say what the background merges wrote",
                      [f"runs {runs} bytes, {written} written to the temp directory"])
    if float(merges[2]) > 2.5 or written > 4 * runs or b"ulimit -n" not in merges[4]:
        raise Failure("the merges rewrote too much, or -v does not say why",
                      [merges[0].decode(errors="replace")[:300],
                       f"{written} bytes written to the temp directory for {runs} of runs"])


# Under ulimit -n 40 merges are planned in tiers whether or not any runs:
# bulk.bam at -m 4M writes 9 runs, too few for one; long.bam at -m 2M
# leaves 3 runs whose groups only fit the readout rewritten one at a time.
REPORT_ROWS = {"no_merge": ("bulk.bam", "4M"), "passes_alone": ("long.bam", "2M")}


@each((f"fault_nofile_40_report_adds_up_{name}", name) for name in REPORT_ROWS)
def test_fault_nofile_40_report_adds_up(case, name):
    """-v explains the tiers only for merges that wrote something, and a
    merge pass that rewrote each run alone says so: it said "0.0 MB
    written ... runs of one size merge in tiers" and "3 runs merged into
    3" (issue #50 item 8)."""
    source, memory = REPORT_ROWS[name]
    src = case.input(source) if source == "bulk.bam" else INPUTS.path(case.session, source)
    out = case.out("out.bam")
    result = run([PYTHON, "-c", LIMIT_FILES, "40", *case.session.rocksort_cmd, "--no-PG", "-v",
                  "-m", memory, "-T", case.temp_prefix, "-o", out, src],
                 cwd=case.out_dir, env=dict(case.session.env, TMPDIR=case.tmp))
    err = result.stderr.decode(errors="replace")
    merges = re.search(r"background merges: ([\d.]+) MB written.*", err)
    passes = pass_counts(err)
    if result.returncode != 0 or not merges or not passes:
        raise Failure(f"exit status {result.returncode}, or no -v lines", err.splitlines()[-5:])
    if name == "no_merge" and float(merges[1]) > 0 or \
            name == "passes_alone" and not passes[0] == passes[1] > 0:
        raise Failure("test is wrong: the sort did not come out as planned", [merges[0], passes])
    if float(merges[1]) == 0 and ("tier" in merges[0] or "ulimit" in merges[0]):
        raise Failure("-v explains merges in tiers that wrote nothing", [merges[0]])
    if re.search(r"merge passes: (\d+) runs merged into \1\b", err):
        raise Failure("-v says runs were merged into as many runs", [passes])
    if source == "bulk.bam":
        case.expect_same(out, case.session.expected(source, [], "out.bam"))
    elif decoded_digest(out) != expected_digest(case, source, []):
        raise Failure("the output differs from the oracle's")


def sort_on_small_temp_disk(case, limit, size, src, expected):
    """long.bam on stdin under ulimit -n `limit`, its runs on a tmpfs of
    `size`: the oracle's records, or exit status 1 with one line naming
    the full disk; never a hang, nothing left on the disk.
    -> "sorted" or "full" """
    def body(mount_point):
        out = case.out("out.bam")
        args = [PYTHON, "-c", LIMIT_FILES, str(limit), *case.session.rocksort_cmd, "--no-PG",
                "-m", "1M", "-T", mount_point, "-o", out, "-"]
        try:
            with open(src, "rb") as stdin:
                result = subprocess.run(args, stdin=stdin, capture_output=True, timeout=120,
                                        cwd=case.out_dir, env=dict(case.session.env, TMPDIR=case.tmp))
        except subprocess.TimeoutExpired:
            raise Failure(f"with a {size} temp disk: rocksort hung (killed after 120 s)")
        if os.listdir(mount_point):
            raise Failure(f"with a {size} temp disk: files left on it", os.listdir(mount_point))
        if result.returncode == 0:
            if decoded_digest(out) != expected:
                raise Failure(f"with a {size} temp disk: the output differs from the oracle's")
            os.remove(out)
            return "sorted"
        line = expect_one_line(case, result)
        if "No space left on device" not in line:
            raise Failure(f"with a {size} temp disk: the message does not name the full disk",
                          [line])
        return "full"
    return with_tmpfs(case, size, body)


if os.geteuid() == 0:
    def test_fault_nofile_40_temp_disk_full_during_merges(case):
        """Under ulimit -n 40 the spill thread waits for each tier's merge,
        and after the load for the merges down to the readout's runs.
        RocksDB retries a merge that failed on a full disk until space comes
        back, counting it as running meanwhile: a wait that took it for a
        merge under way never ended, since only the sort could free the
        space.  On a 1.5 MB temp disk the runs fit but a tier's merge does
        not (it hung in the load); on 2 MB the load's merges fit and the
        merges after it do not (it hung at the end of the load, before the
        tiers too).  Each sort must end: sorted, or refused with the full
        disk named."""
        src = INPUTS.path(case.session, "long.bam")
        expected = expected_digest(case, "long.bam", [])
        seen = [sort_on_small_temp_disk(case, 40, size, src, expected)
                for size in ("1500k", "2M")]
        if "full" not in seen:
            raise Failure("test is wrong: the temp disk never filled", seen)
