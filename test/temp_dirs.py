"""Several temporary directories (issue #42): `-T DIR` given more than once
spreads the runs over every directory, in proportion to its free space and
in turn; the space check counts them together; the readout reads them all
at once; a full disk, signals, --resume and a low `ulimit -n` behave as
with one directory and leave every directory empty.

Most tests mount small tmpfs file systems inside the case's own directory
(root only, like robustness.py's disk-full tests), each a disk of its own
with its own free space.  Each checks what it claims by watching or by
rocksort's -v report (one line per directory: its runs and the bytes
written there), and every sort that succeeds gives the oracle's records.
bulk.bam at -m 1M writes some 37 compact runs, about 4.5 MB; its estimated
peak is 6.1 MB.  To run only these:  run_tests.py -k temp_dirs_
"""

import os
import re
import shutil
import signal
import subprocess

import tmpfs
from background import Background, listing, wait_until
from faults import INPUTS, decoded_digest, expected_digest
from harness import PYTHON, SPILL, Failure, each, expect_error, run, stderr_lines, tail

STORE_PREFIX = "samtools-rocksort."     # the database rocksort makes in a -T directory
DIR_LINE = re.compile(r"^\[rocksort\] temp dir '([^']*)': (\d+) runs; (\d+) bytes written", re.M)
LIMIT_FILES = ("import resource, os, sys; n = int(sys.argv[1]); "
               "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
               "os.execvp(sys.argv[2], sys.argv[2:])")


def with_disks(case, sizes, body, names=None):
    """Mounts one tmpfs per size (as mount takes it) in the case's directory,
    runs body([mount points]) and unmounts them, failing if any is left with
    a file in it."""
    names = names or [f"disk{i + 1}" for i in range(len(sizes))]

    def mount_rest(done):
        if len(done) == len(sizes):
            return body(done)
        i = len(done)
        return tmpfs.with_tmpfs(case.dir, sizes[i], lambda mp: mount_rest(done + [mp]),
                                Failure, name=names[i])
    return mount_rest([])


def t_args(dirs):
    return [a for d in dirs for a in ("-T", d)]


def stores_in(directory):
    return [os.path.join(directory, n) for n in listing(directory) if n.startswith(STORE_PREFIX)]


def size_or_gone(path):
    """A file's size, 0 if it went meanwhile: the sort deletes runs as it
    merges them, between a listing and the look at a file."""
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def has_run(directory):
    """A sorted run (an .sst file) is in a database under directory."""
    return any(n.endswith(".sst") for d in stores_in(directory) for n in listing(d))


def dir_report(stderr, dirs):
    """{-T directory: (runs, bytes written)} from -v's per-directory lines."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    found = {}
    for path, runs, written in DIR_LINE.findall(text):
        for d in dirs:
            if os.path.dirname(os.path.abspath(path)) == os.path.abspath(d):
                found[d] = (int(runs), int(written))
    return found


def expect_each_got_runs(result, dirs):
    report = dir_report(result.stderr, dirs)
    missing = [os.path.basename(d) for d in dirs if report.get(d, (0, 0))[0] == 0
               or report[d][1] == 0]
    if missing:
        raise Failure(f"no runs written to {missing}",
                      [m[0] for m in DIR_LINE.finditer(result.stderr.decode(errors="replace"))]
                      or tail(result.stderr))
    return report


def expect_empty(dirs):
    left = {os.path.basename(d): listing(d) for d in dirs if listing(d)}
    if left:
        raise Failure("temporary data left behind",
                      [f"{d}: {sorted(n)[:3]}" for d, n in left.items()])


def fill(directory):
    """Fills directory's file system with a file of another program's ->
    its path."""
    filler = os.path.join(directory, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 65536) > 0:
            pass
    except OSError:
        pass
    os.close(fd)
    return filler


def sorted_like_oracle(case, src, args, name="out.bam", shared=()):
    out = case.out(name)
    result = case.rocksort_ok(["-v", *shared, *args, "-o", out, src])
    case.expect_same(out, case.session.expected(os.path.basename(src), list(shared)))
    os.remove(out)
    return result


# --- runs spread, and read back, over every directory -----------------------------

PREAD_CALL = re.compile(r"^(\d+) +([\d:.]+) pread64\(\d+<([^>]*\.sst)>.*?"
                        r"(?:= (-?\d+)|<unfinished \.\.\.>)")
PREAD_RESUMED = re.compile(r"^(\d+) +[\d:.]+ <\.\.\. pread64 resumed>.*= (-?\d+)")


def reads_by_thread(trace, dirs):
    """strace -f -y -tt's reads of runs -> {tid: [directories read, first
    time, last time, reads that returned data]}.  A call that another
    thread's call interrupts is split over two lines, "<unfinished ...>"
    and "<... pread64 resumed>": the more threads read at once (and the
    busier the machine), the more of them, so both halves are joined."""
    reads, pending = {}, {}
    with open(trace) as f:
        for line in f:
            call, resumed = PREAD_CALL.match(line), PREAD_RESUMED.match(line)
            if call and call[4] is None:
                pending[call[1]] = call
                continue
            if resumed and resumed[1] in pending:
                call, got = pending.pop(resumed[1]), int(resumed[2])
            elif call:
                got = int(call[4])
            else:
                continue
            if got <= 0:
                continue
            seen = reads.setdefault(call[1], [set(), call[2], call[2], 0])
            seen[0].add(next((d for d in dirs if call[3].startswith(os.path.realpath(d) + "/")),
                             "?"))
            seen[2], seen[3] = call[2], seen[3] + 1
    return reads


def test_temp_dirs_readers_one_per_directory(case):
    """The readout reads every directory at once: under strace, each
    directory's runs are read by a thread that reads no other directory's,
    and those threads' reads overlap in time.  Plain directories: this is
    about threads, not file systems.  Runs of several MB (faults' big.bam
    at -m 16M, uncompressed), so that each is read in several direct reads
    as the merge goes on, not whole at its first.  On a busy machine this
    failed two ways: at -u alone, a disk that measured slow got compact
    runs, read in some 5 reads per directory, and strace splits a call
    that another thread's interrupts over two lines, which were not
    counted.  The format is forced and split calls are counted (the
    thread that reads both directories, some 50 reads, is the spill
    thread checking each run it moves in)."""
    strace = shutil.which("strace")
    if not strace:
        raise Failure("strace is missing: scripts/deps.sh test installs it")
    dirs = [os.path.join(case.dir, n) for n in ("one", "two")]
    for d in dirs:
        os.mkdir(d)
    trace, out = os.path.join(case.dir, "trace"), case.out("out.bam")
    env = dict(case.session.env, TMPDIR=case.tmp)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    result = run([strace, "-f", "-qq", "-y", "-tt", "-e", "trace=pread64", "-o", trace,
                  *case.session.rocksort_cmd, "-v", "--no-PG", "-m", "16M", "-u",
                  "--temp-compression", "none", *t_args(dirs),
                  "-o", out, INPUTS.path(case.session, "big.bam")], env=env)
    if result.returncode != 0:
        raise Failure(f"rocksort exited with {result.returncode}", tail(result.stderr))
    if decoded_digest(out) != expected_digest(case, "big.bam", []):
        raise Failure("the output differs from the oracle's")
    expect_each_got_runs(result, dirs)
    expect_empty(dirs)
    reads = reads_by_thread(trace, dirs)
    readers = {d: [r for r in reads.values() if r[0] == {d} and r[3] >= 5] for d in dirs}
    if not all(readers.values()):
        raise Failure("not every directory has a reader thread of its own",
                      [f"{t}: {sorted(os.path.basename(x) for x in r[0])} {r[3]} reads"
                       for t, r in reads.items()][:8])
    a, b = readers[dirs[0]][0], readers[dirs[1]][0]
    if a[2] < b[1] or b[2] < a[1]:
        raise Failure("the directories were read one after the other, not at once",
                      [f"one: {a[1]}-{a[2]}", f"two: {b[1]}-{b[2]}"])


if os.geteuid() == 0:
    def test_temp_dirs_two_disks_runs_by_free_space(case):
        """Two file systems, one with twice the other's room: both get runs,
        about two for one, and the oracle's output; both end empty."""
        src = case.input("bulk.bam")

        def body(dirs):
            result = sorted_like_oracle(case, src, [*SPILL, *t_args(dirs)])
            report = expect_each_got_runs(result, dirs)
            big, small = report[dirs[0]][0], report[dirs[1]][0]
            if not 1.5 <= big / small <= 2.5:
                raise Failure(f"runs {big} and {small} for twice the room: not in proportion")
        with_disks(case, ["32M", "16M"], body)

    def test_temp_dirs_three_disks_merging_threads(case):
        """Three file systems, -@ 1, some 190 runs (faults' big.bam at -m
        1M), coordinate and by name: every disk gets runs and merges its own
        there (its bytes written well above its share of the runs' bytes;
        with over 32 runs per disk the merges are sure to run, after the
        load if not before), the readout merges about 2*sqrt(T_i) per disk,
        and the output is the oracle's."""
        src, out = INPUTS.path(case.session, "big.bam"), case.out("out.bam")

        def body(dirs):
            for order in ([], ["-n"]):
                result = case.rocksort_ok(["-v", "--no-PG", *order, *SPILL, "-@", "1",
                                           *t_args(dirs), "-o", out, src])
                if decoded_digest(out) != expected_digest(case, "big.bam", order):
                    raise Failure(f"{order}: the output differs from the oracle's")
                report = expect_each_got_runs(result, dirs)
                runs = re.search(rb"runs: (\d+) written, (\d+) merged at readout [^;]*; temp "
                                 rb"bytes written: (\d+)", result.stderr)
                total, merged, run_bytes = (int(x) for x in runs.groups())
                budget = sum(2 * report[d][0] ** 0.5 + 2 for d in dirs)
                if min(r for r, _ in report.values()) <= 32 or merged > budget:
                    raise Failure(f"{order}: {merged} runs merged at readout of {total} "
                                  f"({[report[d][0] for d in dirs]} per disk)")
                unmerged = [os.path.basename(d) for d in dirs
                            if report[d][1] < 1.3 * run_bytes * report[d][0] / total]
                if unmerged:
                    raise Failure(f"{order}: no merges written in {unmerged}",
                                  [f"{os.path.basename(d)}: {report[d]}" for d in dirs])
            os.remove(out)
        with_disks(case, ["24M", "24M", "24M"], body)

    def test_temp_dirs_fit_only_together(case):
        """Two 4 MB file systems: the runs' estimated 6 MB fit in neither
        alone (each is refused) but in both together, which sorts."""
        src = case.input("bulk.bam")

        def body(dirs):
            for d in dirs:
                alone = case.rocksort([*SPILL, "-T", d, "-o", case.out("out.bam"), src])
                expect_error(case, alone, [d], case.out("out.bam"))
            result = sorted_like_oracle(case, src, [*SPILL, *t_args(dirs)])
            expect_each_got_runs(result, dirs)
        with_disks(case, ["4M", "4M"], body)

    def test_temp_dirs_full_disk_left_out(case):
        """One of two disks is full before the sort starts (another
        program's file): it gets no runs, and no database, which it could
        not hold; the sort uses the other, says so in one warning naming the
        full directory, and gives the oracle's records.  Adding a full disk
        to -T once failed a sort that fits in the other (ENOSPC at the
        database's open)."""
        src = case.input("bulk.bam")

        def body(dirs):
            filler = fill(dirs[1])
            result = sorted_like_oracle(case, src, [*SPILL, *t_args(dirs)])
            said = [line for line in stderr_lines(result.stderr)
                    if not line.startswith("[rocksort]")]
            if len(said) != 1 or f"'{dirs[1]}'" not in said[0] or "no runs" not in said[0]:
                raise Failure("no single warning naming the full directory", said)
            report = dir_report(result.stderr, dirs)
            if dirs[1] in report or report.get(dirs[0], (0, 0))[0] == 0:
                raise Failure(f"runs not all on the disk with room: {report}")
            os.remove(filler)
            expect_empty(dirs)
        with_disks(case, ["16M", "16M"], body)

    def test_temp_dirs_refused_before_reading(case):
        """Two 1 MB file systems for an input given as 12 MB (-s) on a pipe
        nobody writes to: refused at once, in one line naming each directory
        with its free space, and the room in all."""
        def body(dirs):
            read_end, write_end = os.pipe()
            try:
                proc = subprocess.run(
                    [*case.session.rocksort_cmd, *SPILL, "-s", "12M", *t_args(dirs), "-o",
                     case.out("out.bam"), "-"], stdin=read_end, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, env=dict(case.session.env, TMPDIR=case.tmp),
                    timeout=20)
            finally:
                os.close(read_end)
                os.close(write_end)
            line = expect_error(case, proc, [], case.out("out.bam"))
            for d in dirs:
                if not re.search(re.escape(f"'{d}' (") + r"[\d.]+ MB free\)", line):
                    raise Failure(f"the refusal does not give {os.path.basename(d)}'s free "
                                  "space", [line])
            if "needed" not in line or "free in all" not in line:
                raise Failure("the refusal does not give the space needed and in all", [line])
        with_disks(case, ["1M", "1M"], body)

    def test_temp_dirs_full_disk_mid_sort(case):
        """Both disks hold runs; then one fills up (another program's
        file).  The sort fails with one line naming that directory and the
        cause, writes no output, and leaves both directories empty."""
        data = open(case.input("bulk.bam"), "rb").read()

        def body(dirs):
            out = case.out("out.bam")
            with Background(case, [*SPILL, *t_args(dirs), "-o", out, "-"], stdin=True) as bg:
                bg.feed(data[:len(data) // 3])
                wait_until(lambda: all(has_run(d) for d in dirs), "every disk holds a run", bg)
                filler = fill(dirs[1])
                bg.feed(data[len(data) // 3:])
                bg.end_input()
                status = bg.wait()
                lines = stderr_lines(bg.stderr())
            os.remove(filler)
            if status != 1 or len(lines) != 1:
                raise Failure(f"exit status {status} and {len(lines)} lines, expected 1 and 1",
                              lines[:5])
            if "No space left on device" not in lines[0] or dirs[1] not in lines[0]:
                raise Failure("the line does not name the full directory and the cause", lines)
            if os.path.exists(out):
                raise Failure("an output was written")
            expect_empty(dirs)
        with_disks(case, ["16M", "16M"], body)

    @each((f"temp_dirs_signal_{sig.name.lower()}_during_load", sig)
          for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP))
    def test_temp_dirs_signal_during_load(case, sig):
        """A signal once every disk holds a run: exit 128 + signal, every
        directory empty, no output."""
        data = open(case.input("bulk.bam"), "rb").read()

        def body(dirs):
            with Background(case, [*SPILL, *t_args(dirs), "-o", case.out("out.bam"), "-"],
                            stdin=True) as bg:
                bg.feed(data[:len(data) // 2])
                wait_until(lambda: all(has_run(d) for d in dirs), "every disk holds a run", bg)
                bg.proc.send_signal(sig)
                status = bg.wait()
            if status != 128 + sig:
                raise Failure(f"exit status {status} after {sig.name}, expected {128 + sig}")
            expect_empty(dirs)
            case.expect_only_files(case.out_dir, [])
        with_disks(case, ["16M", "16M", "16M"], body)

    def test_temp_dirs_signal_during_readout(case):
        """SIGTERM while the readout blocks on a full output pipe, with runs
        on two disks: every directory empty."""
        def body(dirs):
            args = ["-u", *SPILL, *t_args(dirs), case.input("bulk.bam")]
            with Background(case, args, stdout_pipe=True) as bg:
                wait_until(lambda: all(has_run(d) for d in dirs), "every disk holds a run", bg)
                sizes = []

                def stuck():
                    sizes.append(sum(size_or_gone(os.path.join(s, n)) for d in dirs
                                     for s in stores_in(d) for n in listing(s)))
                    return bg.running() and len(sizes) > 25 and sizes[-1] == sizes[-25]
                wait_until(stuck, "the readout waiting on the output pipe", bg)
                bg.proc.send_signal(signal.SIGTERM)
                status = bg.wait()
            if status != 128 + signal.SIGTERM:
                raise Failure(f"exit status {status} after SIGTERM in the readout")
            expect_empty(dirs)
        with_disks(case, ["16M", "16M"], body)

    def test_temp_dirs_resume_keeps_runs_in_its_directory(case):
        """--resume DIR with two -T: the runs go to DIR, never to a -T
        directory (watched while it runs); killed, then run again, the sort
        finishes with the oracle's records and removes DIR."""
        src, state = case.input("bulk.bam"), os.path.join(case.dir, "state")

        def body(dirs):
            args = [*SPILL, "--resume", state, *t_args(dirs), "-o", case.out("out.bam"), src]
            touched = []

            def runs_stored_and_t_empty():
                touched.extend(d for d in dirs if listing(d))
                db = os.path.join(state, "db")
                return sum(n.endswith(".sst") for n in listing(db)) >= 3
            with Background(case, args) as bg:
                wait_until(runs_stored_and_t_empty, "3 runs in the state", bg)
                bg.proc.send_signal(signal.SIGTERM)
                if bg.wait() != 128 + signal.SIGTERM:
                    raise Failure("SIGTERM did not end the first run", bg.stderr_tail())
            if touched or not os.path.isdir(state):
                raise Failure(f"-T directories used ({touched[:2]}) or the state not kept")
            result = case.rocksort_ok(["-v", *args])
            case.expect_same(case.out("out.bam"), case.session.expected("bulk.bam", []))
            if os.path.exists(state):
                raise Failure("the state directory is still there after the sort succeeded")
            said = [p for p, _, _ in DIR_LINE.findall(result.stderr.decode(errors="replace"))]
            if said != [os.path.join(state, "db")]:
                raise Failure(f"-v names {said} as the runs' directories, not the state's")
        with_disks(case, ["16M", "16M"], body)

    def test_temp_dirs_resume_space_checked_where_runs_go(case):
        """With --resume the runs go to its directory, so the space check
        measures that directory's file system, not the -T ones: a state on
        a 1 MB disk with two large -T is refused before reading, naming the
        state's disk and not suggesting -T; a state on a large disk with
        two 1 MB -T sorts.  Both once went the other way (refused by the -T
        disks' room; passed, then ENOSPC in the state mid-sort)."""
        src, out = case.input("bulk.bam"), case.out("out.bam")

        def body(dirs):
            tiny, large = dirs[:2], dirs[2:]
            state = os.path.join(tiny[0], "state")
            result = case.rocksort([*SPILL, "--resume", state, *t_args(large), "-o", out, src])
            line = expect_error(case, result, [f"'{tiny[0]}'"], out)
            if "--resume" not in line or "-T" in line or os.path.exists(state):
                raise Failure("the refusal does not point at --resume's directory", [line])
            state = os.path.join(large[0], "state")
            case.rocksort_ok([*SPILL, "--resume", state, *t_args(tiny), "-o", out, src])
            case.expect_same(out, case.session.expected("bulk.bam", []))
            expect_empty(dirs)
        with_disks(case, ["1M", "1M", "32M", "32M"], body)

    @each((f"temp_dirs_nofile_{limit}_threads{threads}", limit, threads, used)
          for limit, threads, used in ((24, 8, 1), (64, 4, 2)))
    def test_temp_dirs_nofile(case, limit, threads, used):
        """A low `ulimit -n` with three -T: the sort succeeds with the
        oracle's records, using as many directories as the descriptors can
        hold a database in (`used`; with a warning) and leaving them empty.
        A database in each at ulimit -n 24 fails with "Too many open
        files"."""
        sizes = ["16M", "16M", "16M"]
        src, out = case.input("bulk.bam"), case.out("out.bam")

        def body(dirs):
            result = run([PYTHON, "-c", LIMIT_FILES, str(limit), *case.session.rocksort_cmd,
                          "-v", "-@", str(threads), *SPILL, *t_args(dirs), "-o", out, src],
                         cwd=case.out_dir, env=dict(case.session.env, TMPDIR=case.tmp))
            if result.returncode != 0:
                raise Failure(f"exit status {result.returncode} under ulimit -n {limit}",
                              tail(result.stderr))
            said = [line for line in stderr_lines(result.stderr)
                    if not line.startswith("[rocksort]")]
            if any("ulimit -n" not in line for line in said):
                raise Failure("unexpected lines on stderr", said)
            if len(dir_report(result.stderr, dirs)) < used:
                raise Failure(f"fewer than {used} directories received runs", tail(result.stderr))
            case.expect_same(out, case.session.expected("bulk.bam", []))
            expect_empty(dirs)
        with_disks(case, list(sizes), body)


def test_temp_dirs_prefix_among_several_refused(case):
    """With several -T each must be a directory: a prefix (or a missing
    directory) among them is refused before anything is read or made."""
    one = os.path.join(case.dir, "one")
    os.mkdir(one)
    for bad in (os.path.join(one, "rs"), os.path.join(case.dir, "missing")):
        result = case.rocksort(["-T", one, "-T", bad, "-o", case.out("out.bam"),
                                case.input("bulk.bam")])
        line = expect_error(case, result, [bad], case.out("out.bam"))
        if "not a directory" not in line:
            raise Failure("the refusal does not say why", [line])
        expect_empty([one])
