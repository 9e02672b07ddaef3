"""Tests of where rocksort writes: output paths that are not a new regular
file, what an output written over a file keeps of it, names as long as a
name may be, and `make install`.

A new name or a regular file is written under a temporary name and renamed
into place; for a symlink that is its target, and the link stays.  Devices,
FIFOs and this process's own descriptors (/dev/stdout, /proc/self/fd/N) are
written in place, and a failed run leaves out the BGZF EOF marker there.  A
destination that can never be written is refused before any input is read:
those tests give rocksort a stdin pipe that stays open and empty, so a run
that reads before it checks hangs instead of passing.

These tests never touch the real /dev.  Device nodes are made with mknod
(root only) inside the test's own directory, and /dev/stdout is stood in for
by a link to /proc/self/fd/1 there.  NodeGuard checks every node made after
each test that made one, and /dev/null at exit; a node that is no longer
what it was is reported loudly and fails the run.

To run only these:
    run_tests.py -k 'dest_*' -k 'install_*'
"""

import atexit
import grp
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

import robustness
from background import WAIT
from bgzf import BGZF_EOF, BGZF_HEAD
from features import query
from harness import (ORACLE_SCRIPT, PYTHON, REPO, SPILL, TIMEOUT, Failure, each, expect_error,
                     run, tail, write_bytes)

NOBODY = 65534  # uid and gid of the unprivileged user for the permission test


class NodeGuard:
    """Every device node and FIFO the tests make, with what it must stay."""

    def __init__(self):
        self.nodes = []     # (path, file type bits, st_rdev)
        self.lock = threading.Lock()
        atexit.register(self.at_exit)

    def make_null_device(self, path):
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        self._track(path)

    def make_fifo(self, path):
        os.mkfifo(path)
        self._track(path)

    def _track(self, path):
        st = os.lstat(path)
        with self.lock:
            self.nodes.append((path, stat.S_IFMT(st.st_mode), st.st_rdev))

    def broken(self):
        """Nodes (still on disk) that are no longer what they were made as,
        and the real /dev/null if it is no longer a character device."""
        with self.lock:
            nodes = list(self.nodes)
        bad = []
        for path, kind, rdev in nodes:
            if os.path.lexists(path):
                st = os.lstat(path)
                if stat.S_IFMT(st.st_mode) != kind or st.st_rdev != rdev:
                    bad.append(path)
        if not stat.S_ISCHR(os.stat("/dev/null").st_mode):
            bad.append("/dev/null")
        return bad

    def check(self):
        bad = self.broken()
        if bad:
            shout(bad)
            raise Failure("a device node or FIFO was replaced", bad)

    def at_exit(self):
        bad = self.broken()
        if bad:
            shout(bad)
            os._exit(3)


def shout(paths):
    banner = "!" * 72
    sys.stderr.write(f"\n{banner}\nDEVICE NODE OR FIFO REPLACED BY A REGULAR FILE "
                     f"(or changed): {', '.join(paths)}\n{banner}\n")
    sys.stderr.flush()


GUARD = NodeGuard()


def dest_dir(case):
    d = os.path.join(case.dir, "dest")
    os.makedirs(d, exist_ok=True)
    return d


def oracle_bam(case):
    return case.session.expected("mixed.bam", [])


def sort_to(case, output, src=None, **kw):
    return case.rocksort(["-T", case.temp_prefix, "-o", output,
                          src or case.input("mixed.bam")], **kw)


def expect_ok(result):
    if result.returncode != 0:
        raise Failure(f"rocksort exited with {result.returncode}",
                      tail(result.stderr))


def expect_link(path, target):
    if not os.path.islink(path) or os.readlink(path) != target:
        raise Failure(f"{os.path.basename(path)} is no longer a link to {target}")


def same_as_oracle(case, data, name):
    path = os.path.join(case.dir, name)
    write_bytes(path, data)
    case.expect_same(path, oracle_bam(case))


# Devices, FIFOs, descriptors: written in place -----------------------------

if os.geteuid() == 0:  # mknod needs root
    def test_dest_char_device_stays_a_device(case):
        """-o on a null device: the sort succeeds and the node is still
        a character device (1, 3), not a regular file."""
        null = os.path.join(dest_dir(case), "null")
        GUARD.make_null_device(null)
        try:
            expect_ok(sort_to(case, null))
            st = os.lstat(null)
            if not stat.S_ISCHR(st.st_mode) or st.st_rdev != os.makedev(1, 3):
                raise Failure("the null device was replaced")
            case.expect_no_temp_left()
            case.expect_only_files(dest_dir(case), ["null"])
        finally:
            GUARD.check()


def through_fifo(case, src):
    """Sorts src into a FIFO that a reader thread drains. -> (result,
    bytes read).  A descriptor held open for writing lets the reader's
    open return before rocksort starts and keeps its EOF from coming
    before rocksort is done; a rocksort that never opens the FIFO then
    shows as an empty read, not a hang."""
    fifo = os.path.join(dest_dir(case), "reader.fifo")
    GUARD.make_fifo(fifo)
    holder = os.open(fifo, os.O_RDWR)
    got, opened = bytearray(), threading.Event()

    def drain():
        with open(fifo, "rb") as f:
            opened.set()
            while chunk := f.read(65536):
                got.extend(chunk)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        if not opened.wait(WAIT):
            raise Failure("the test's reader could not open the FIFO")
        result = sort_to(case, fifo, src)
    finally:
        os.close(holder)
        reader.join(WAIT)
        GUARD.check()
    if reader.is_alive():
        raise Failure("the FIFO's reader never saw the end of the stream")
    if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        raise Failure("the FIFO was replaced by a regular file")
    return result, bytes(got)


def test_dest_fifo_reader_gets_the_bam(case):
    result, data = through_fifo(case, case.input("mixed.bam"))
    expect_ok(result)
    same_as_oracle(case, data, "from_fifo.bam")
    case.expect_no_temp_left()
    case.expect_only_files(dest_dir(case), ["reader.fifo"])


def test_dest_fifo_failed_run_has_no_eof_marker(case):
    """The write fails during the readout, with records already sent:
    what the reader got must not end like a complete BGZF file."""
    src = robustness.Inputs().path(case.session, "late_failure.sam")
    result, data = through_fifo(case, src)
    if result.returncode != 1:
        raise Failure(f"exit status {result.returncode}, expected 1",
                      tail(result.stderr))
    if not data.startswith(BGZF_HEAD):
        raise Failure(f"the reader got {len(data)} bytes, not the start "
                      "of the BGZF stream written before the failure")
    if data.endswith(BGZF_EOF):
        raise Failure("a failed run's FIFO output ends with the BGZF EOF block")
    case.expect_no_temp_left()


def test_dest_stdout_link_writes_to_stdout(case):
    """-o through a link to /proc/self/fd/1, as /dev/stdout is: the
    BAM arrives on the captured stdout and the link stays."""
    link = os.path.join(dest_dir(case), "stdout")
    os.symlink("/proc/self/fd/1", link)
    result = sort_to(case, link)
    expect_ok(result)
    expect_link(link, "/proc/self/fd/1")
    same_as_oracle(case, result.stdout, "from_stdout.bam")
    case.expect_only_files(dest_dir(case), ["stdout"])


def test_dest_descriptor_to_regular_file_written_through(case):
    """/proc/self/fd/N open on a regular file is written through that
    descriptor (same inode), not replaced by a rename onto the file."""
    d = dest_dir(case)
    target = os.path.join(d, "by_descriptor.bam")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    inode = os.fstat(fd).st_ino
    link = os.path.join(d, "fd_link")
    os.symlink(f"/proc/self/fd/{fd}", link)
    try:
        result = subprocess.run(
            [*case.session.rocksort_cmd, "-T", case.temp_prefix, "-o", link,
             case.input("mixed.bam")], pass_fds=(fd,), stdin=subprocess.DEVNULL,
            capture_output=True, env=dict(case.session.env, TMPDIR=case.tmp),
            cwd=case.out_dir, timeout=TIMEOUT)
    finally:
        os.close(fd)
    expect_ok(result)
    expect_link(link, f"/proc/self/fd/{fd}")
    if os.stat(target).st_ino != inode:
        raise Failure("the file behind the descriptor was replaced, not written")
    case.expect_same(target, oracle_bam(case))
    case.expect_only_files(d, ["by_descriptor.bam", "fd_link"])


# Symlinks: the target is replaced, in its own directory -------------------

def test_dest_symlink_target_replaced_link_kept(case):
    """A relative link to a file in another directory: a failed run
    leaves the target as it was; a good one replaces the target."""
    d = dest_dir(case)
    os.mkdir(os.path.join(d, "elsewhere"))
    target = os.path.join(d, "elsewhere", "target.bam")
    write_bytes(target, b"an older file\n")
    link = case.out("link.bam")
    os.symlink("../dest/elsewhere/target.bam", link)
    failed = sort_to(case, link, case.input("truncated.bam"))
    if failed.returncode != 1:
        raise Failure(f"truncated input: exit status {failed.returncode}, expected 1")
    with open(target, "rb") as f:
        if f.read() != b"an older file\n":
            raise Failure("a failed run changed the link's target")
    expect_ok(sort_to(case, link))
    expect_link(link, "../dest/elsewhere/target.bam")
    case.expect_same(target, oracle_bam(case))
    case.expect_no_temp_left()
    case.expect_only_files(os.path.dirname(target), ["target.bam"])
    case.expect_only_files(case.out_dir, ["link.bam"])


def test_dest_dangling_symlink_chain_creates_target(case):
    """link.bam -> hop.bam -> elsewhere/new.bam, which does not exist
    yet: the output is made there and both links stay."""
    d = dest_dir(case)
    os.mkdir(os.path.join(d, "elsewhere"))
    os.symlink("hop.bam", os.path.join(d, "link.bam"))
    os.symlink("elsewhere/new.bam", os.path.join(d, "hop.bam"))
    expect_ok(sort_to(case, os.path.join(d, "link.bam")))
    expect_link(os.path.join(d, "link.bam"), "hop.bam")
    expect_link(os.path.join(d, "hop.bam"), "elsewhere/new.bam")
    case.expect_same(os.path.join(d, "elsewhere", "new.bam"), oracle_bam(case))
    case.expect_only_files(os.path.join(d, "elsewhere"), ["new.bam"])
    case.expect_only_files(d, ["link.bam", "hop.bam", "elsewhere"])


# Destinations that can never be written: refused before the input ----------

def refused_before_reading(case, args, mention, cmd=None, cwd=None):
    """rocksort reads stdin from a pipe that stays open and empty: it must
    exit 1 at once with one line naming `mention`. -> the line"""
    err_path = os.path.join(case.dir, "refused.stderr")
    read_end, write_end = os.pipe()
    try:
        with open(err_path, "wb") as err:
            proc = subprocess.Popen(
                [*(cmd or case.session.rocksort_cmd), *args, "-"],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=err,
                cwd=cwd or case.out_dir, env=dict(case.session.env, TMPDIR=case.tmp))
        try:
            proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise Failure(f"still running after {WAIT} s: it waited for input "
                          "instead of refusing the destination")
    finally:
        os.close(read_end)
        os.close(write_end)
    with open(err_path, "rb") as f:
        stderr = f.read()
    os.remove(err_path)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, b"", stderr)
    return expect_error(case, result, [mention], None)


def test_dest_refuse_existing_directory(case):
    d = dest_dir(case)
    os.mkdir(os.path.join(d, "somedir"))
    os.symlink("somedir", os.path.join(d, "dirlink"))
    for name in ("somedir", "dirlink"):
        refused_before_reading(case, ["-o", os.path.join(d, name)], name)
    case.expect_only_files(os.path.join(d, "somedir"), [])


def test_dest_refuse_missing_parent(case):
    refused_before_reading(case, ["-o", case.out("missing/out.bam")], "missing")
    case.expect_only_files(case.out_dir, [])


def test_dest_refuse_parent_is_a_file(case):
    write_bytes(case.out("afile"), b"a file, not a directory\n")
    refused_before_reading(case, ["-o", case.out("afile/out.bam")], "afile")
    case.expect_only_files(case.out_dir, ["afile"])


def test_dest_refuse_name_ending_in_slash(case):
    """out.bam/ names no file: it could only fail at the final rename."""
    refused_before_reading(case, ["-o", case.out("out.bam") + "/"], "out.bam/")
    case.expect_only_files(case.out_dir, [])


def test_dest_refuse_index_path(case):
    """--write-index: an index in a missing directory, and a default
    index name (out.bam.csi) taken by a directory."""
    refused_before_reading(case, ["--write-index", "-o",
                                  case.out("out.bam") + "##idx##" + case.out("no/x.bai")],
                           "no/x.bai")
    os.mkdir(case.out("out.bam.csi"))
    refused_before_reading(case, ["--write-index", "-o", case.out("out.bam")],
                           "out.bam.csi")
    case.expect_only_files(case.out_dir, ["out.bam.csi"])


def test_dest_refuse_directory_not_writable(case):
    """A directory the user may not create files in.  Root may write
    anywhere, so as root the command runs as uid 65534 (setpriv), from
    a world-readable directory of its own with a copy of the binary."""
    root = tempfile.mkdtemp(prefix="rocksort-dest-")
    try:
        os.chmod(root, 0o755)
        locked = os.path.join(root, "locked")
        os.mkdir(locked, 0o755)
        cmd = case.session.rocksort_cmd
        if os.geteuid() == 0:
            if cmd[0] == case.session.binary:
                cmd = [shutil.copy(case.session.binary, root), *cmd[1:]]
            cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                   "--clear-groups", *cmd]
            probe = subprocess.run([*cmd, "--help"], capture_output=True, cwd=root)
            if probe.returncode != 0:
                raise Failure("cannot run rocksort as uid 65534", tail(probe.stderr))
        else:
            os.chmod(locked, 0o555)
        refused_before_reading(case, ["-o", os.path.join(locked, "out.bam")],
                               "locked", cmd=cmd, cwd=root)
        if os.listdir(locked):
            raise Failure("files were made in the locked directory")
    finally:
        shutil.rmtree(root, ignore_errors=True)


# Over an existing file: its mode, group and owner stay, as samtools keeps them
#
# samtools opens an existing output with O_TRUNC, so the file keeps its inode
# and everything on it; rocksort renames a new file over it and must give it
# the same (output/output_attrs.h).  Each test sorts with --write-index over
# an output and an index made with the row's attributes, once with the
# oracle and once with rocksort, and compares what each file ends with.

def group_id(name, fallback):
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return fallback


DAEMON_GID = group_id("daemon", 1)   # a system group root is not in by default


def under_umask(umask, cmd):
    return ["sh", "-c", f'umask {umask:03o} && exec "$@"', "sh", *cmd]


def make_existing(path, attrs):
    """attrs: (mode, uid, gid), uid or gid None for the test's own; None:
    no file there."""
    if attrs is None:
        return
    mode, uid, gid = attrs
    write_bytes(path, b"an older file\n")
    os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
    os.chmod(path, mode)


def attrs_of(path):
    st = os.stat(path)
    return (oct(stat.S_IMODE(st.st_mode)), st.st_uid, st.st_gid)


def sort_over(case, cmd, out_dir, out_attrs, idx_attrs, umask, cwd, user=()):
    """Sorts mixed.bam with --write-index to out_dir/out.bam, made first
    with out_attrs and its index with idx_attrs (make_existing()), cmd the
    sorter's command line up to its arguments. -> (output, index)"""
    out = os.path.join(out_dir, "out.bam")
    make_existing(out, out_attrs)
    make_existing(out + ".csi", idx_attrs)
    src = os.path.join(cwd, "in.bam")
    result = run([*user, *under_umask(umask, [*cmd, "--write-index", "-o", out, src])],
                 cwd=cwd, env=dict(case.session.env, TMPDIR=case.tmp))
    if result.returncode != 0:
        raise Failure(f"{os.path.basename(out_dir)}: exit status {result.returncode}",
                      tail(result.stderr))
    return out, out + ".csi"


def expect_kept_like_oracle(case, base, out_attrs, idx_attrs, umask, user=(), cmd=None):
    """In base (readable by `user`, with in.bam): the oracle into
    base/theirs, rocksort (cmd) into base/ours, as `user` (a setpriv
    command line) if given; both files end with the same mode, owner and
    group, the same records, and an index that works.  The oracle runs as
    root: the pyenv python cannot be run as another user here, and
    samtools keeps the file's inode whoever runs it."""
    dirs = {who: os.path.join(base, who) for who in ("theirs", "ours")}
    for d in dirs.values():
        os.mkdir(d)
        if user:
            os.chown(d, NOBODY, NOBODY)
    oracle = [PYTHON, "-c", ORACLE_SCRIPT, "sort", "--no-PG"]
    theirs = sort_over(case, oracle, dirs["theirs"], out_attrs, idx_attrs, umask, base)
    ours = sort_over(case, [*(cmd or case.session.rocksort_cmd), "-T", dirs["ours"]],
                     dirs["ours"], out_attrs, idx_attrs, umask, base, user)
    for mine, want, what in zip(ours, theirs, ("output", "index")):
        if attrs_of(mine) != attrs_of(want):
            raise Failure(f"the {what} ends with (mode, uid, gid) {attrs_of(mine)}, "
                          f"samtools' with {attrs_of(want)}")
    case.expect_same(ours[0], theirs[0])
    if query(case, *ours, "c1") != query(case, *theirs, "c1"):
        raise Failure("the index finds other records than samtools' index")
    case.expect_only_files(dirs["ours"], ["out.bam", "out.bam.csi"])
    case.expect_no_temp_left()


KEPT = [("dest_over_file_keeps_mode_0600", (0o600, None, None), (0o640, None, None), 0o022),
        ("dest_over_file_keeps_mode_0640", (0o640, None, None), (0o600, None, None), 0o022),
        ("dest_new_file_mode_by_umask", None, None, 0o027)]
if os.geteuid() == 0:   # chown to another group or user
    KEPT += [("dest_over_file_keeps_group", (0o640, None, DAEMON_GID),
              (0o660, None, DAEMON_GID), 0o022),
             ("dest_over_file_keeps_owner", (0o604, NOBODY, DAEMON_GID),
              (0o600, NOBODY, None), 0o022)]


@each(KEPT)
def test_dest_over_file_keeps_attributes(case, out_attrs, idx_attrs, umask):
    """--write-index over an output and an index (or none: a new file's
    mode comes from the umask)."""
    shutil.copy(case.input("mixed.bam"), os.path.join(case.dir, "in.bam"))
    expect_kept_like_oracle(case, case.dir, out_attrs, idx_attrs, umask)


if os.geteuid() == 0:   # setpriv to another user
    def test_dest_user_keeps_group_of_theirs(case):
        """As uid 65534 with the supplementary group daemon, over an output
        of 65534:daemon mode 0640: a user may give a file any group they
        are in, and the output keeps it (root, above, may give any)."""
        base = tempfile.mkdtemp(prefix="rocksort-dest-")
        try:
            os.chmod(base, 0o755)
            shutil.copy(case.input("mixed.bam"), os.path.join(base, "in.bam"))
            os.chmod(os.path.join(base, "in.bam"), 0o644)
            cmd = [shutil.copy(case.session.binary, base), *case.session.rocksort_cmd[1:]] \
                if case.session.rocksort_cmd[0] == case.session.binary else None
            user = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                    f"--groups={DAEMON_GID}"]
            attrs = (0o640, NOBODY, DAEMON_GID)
            expect_kept_like_oracle(case, base, attrs, attrs, 0o022, user, cmd)
        finally:
            shutil.rmtree(base, ignore_errors=True)


# Names as long as a name may be: the hidden name beside them fits too --------

def long_name(length, last="x"):
    """An output's last name of `length` bytes, ending in `last` and .bam."""
    return "n" * (length - len(last) - len(".bam")) + last + ".bam"


# None: no index; "": --write-index's default (NAME.csi); else named after ##idx##.
INDEXES = {"": None, "_index": "", "_named_index": "i.csi"}


@each((f"dest_long_name_{n}{suffix}", n, index)
      for n in range(250, 256) for suffix, index in INDEXES.items())
def test_dest_long_name(case, length, index):
    """-o with a last name of 250 to 255 bytes (NAME_MAX): samtools writes
    it, and so must rocksort, whose hidden name beside it would be longer.
    The default index's name is 4 bytes longer still: where samtools fails
    on it (from 252), rocksort must fail as cleanly, before any output."""
    name = long_name(length)
    index_name = name + ".csi" if index == "" else index

    def spec(d):
        out = os.path.join(d, name)
        return f"{out}##idx##{os.path.join(d, index)}" if index else out
    flags = [] if index is None else ["--write-index"]
    theirs = os.path.join(case.dir, "theirs")
    os.mkdir(theirs)
    src = case.input("mixed.bam")
    oracle = case.session.oracle("sort", [*flags, "--no-PG", "-o", spec(theirs), src])
    result = case.rocksort([*flags, "-T", case.temp_prefix, "-o", spec(case.out_dir), src])
    if oracle.returncode != 0:
        expect_error(case, result, [index_name], case.out(name))
        case.expect_only_files(case.out_dir, [])
        return
    expect_ok(result)
    case.expect_same(case.out(name), os.path.join(theirs, name))
    if index is not None:
        ours = (case.out(name), case.out(index_name))
        if query(case, *ours, "c1") != query(case, os.path.join(theirs, name),
                                             os.path.join(theirs, index_name), "c1"):
            raise Failure("the index finds other records than samtools' index")
    case.expect_only_files(case.out_dir, [name] + ([index_name] if index is not None else []))
    case.expect_no_temp_left()


@each((f"dest_long_temp_prefix_{n}{suffix}", n, spill)
      for n, suffix, spill in ((240, "", False), (255, "", False), (246, "_spilled", True)))
def test_dest_long_temp_prefix(case, length, spill):
    """-T PREFIX whose last name is 240 to 255 bytes: samtools writes no
    temporary file for an input that fits in memory, and up to 246 bytes
    its own (PREFIX.NNNN.bam) fit when it spills; rocksort's database,
    PREFIX.rocksort.XXXXXX, must fit as well."""
    shared = SPILL if spill else []
    source = "bulk.bam" if spill else "mixed.bam"
    theirs = os.path.join(case.dir, "theirs")
    os.mkdir(theirs)
    last = "p" * length
    oracle = case.session.oracle("sort", [*shared, "--no-PG", "-T", os.path.join(theirs, last),
                                          "-o", os.path.join(theirs, "out.bam"),
                                          case.input(source)])
    if oracle.returncode != 0:
        raise Failure("test is wrong: the oracle failed", tail(oracle.stderr))
    expect_ok(case.rocksort([*shared, "-T", os.path.join(case.tmp, last),
                             "-o", case.out("out.bam"), case.input(source)]))
    case.expect_same(case.out("out.bam"), os.path.join(theirs, "out.bam"))
    case.expect_no_temp_left()
    case.expect_only_files(case.out_dir, ["out.bam"])


# --- make install ---------------------------------------------------------------
#
# `make install` into a DESTDIR of the test's own, with the ./samtools
# already built (make -o samtools: nothing is rebuilt).

def make_install(case, destdir, *extra):
    binary = os.path.join(REPO, "samtools")
    if not os.path.exists(binary):
        raise Failure("no ./samtools to install: build it first")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "-s", "-o", "samtools", "install",
                           f"DESTDIR={destdir}", "PREFIX=/usr", *extra],
                          cwd=REPO, env=env, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=TIMEOUT)


def installed_version(path):
    result = subprocess.run([path, "--version"], capture_output=True,
                            timeout=TIMEOUT)
    lines = result.stdout.decode(errors="replace").splitlines()
    return lines[0] if lines else ""


def expect_installed_ours(destdir, what):
    version = installed_version(os.path.join(destdir, "usr/bin/samtools"))
    if not re.fullmatch(r"samtools [0-9.]+\+rocksort\.[0-9.]+", version):
        raise Failure(f"{what}: bin/samtools is not rocksort's ({version!r})")


def install_ok(case, destdir, what, *extra):
    result = make_install(case, destdir, *extra)
    if result.returncode != 0:
        raise Failure(f"{what}: make install exited with {result.returncode}",
                      tail(result.stderr))
    expect_installed_ours(destdir, what)


OTHER_SAMTOOLS = b"#!/bin/sh\necho 'samtools 1.24'\n"


def test_install_only_over_own_samtools(case):
    """Installs into an empty prefix and over its own copy; refuses,
    naming the file and the ways out, to replace another samtools;
    REPLACE_SAMTOOLS=yes replaces it."""
    destdir = os.path.join(case.dir, "root")
    install_ok(case, destdir, "empty prefix")
    if not os.path.exists(os.path.join(destdir, "usr/share/man/man1/samtools-rocksort.1")):
        raise Failure("the man page was not installed")
    install_ok(case, destdir, "over its own copy")
    theirs = os.path.join(destdir, "usr/bin/samtools")
    write_bytes(theirs, OTHER_SAMTOOLS)
    os.chmod(theirs, 0o755)
    result = make_install(case, destdir)
    with open(theirs, "rb") as f:
        if f.read() != OTHER_SAMTOOLS:
            raise Failure("make install replaced another samtools")
    text = " ".join(result.stderr.decode(errors="replace").split())
    missing = [w for w in (theirs, "PREFIX=", "REPLACE_SAMTOOLS=yes") if w not in text]
    if result.returncode == 0 or missing:
        raise Failure(f"over another samtools: exit status {result.returncode}, "
                      f"the message lacks {missing}", tail(result.stderr))
    install_ok(case, destdir, "REPLACE_SAMTOOLS=yes", "REPLACE_SAMTOOLS=yes")


def test_install_keeps_forwarding(case):
    """The installed samtools passes other subcommands to the next
    samtools on PATH, and says so clearly when there is none."""
    destdir = os.path.join(case.dir, "root")
    install_ok(case, destdir, "empty prefix")
    installed = os.path.join(destdir, "usr/bin/samtools")
    upstream_dir = os.path.join(case.dir, "upstream")
    os.mkdir(upstream_dir)
    upstream = os.path.join(upstream_dir, "samtools")
    write_bytes(upstream, b'#!/bin/sh\necho "upstream: $*"\n')
    os.chmod(upstream, 0o755)
    env = {k: v for k, v in case.session.env.items() if k != "SAMTOOLS_UPSTREAM"}
    bin_dir = os.path.dirname(installed)
    ran = run([installed, "view", "-c", "x.bam"],
              env=dict(env, PATH=f"{bin_dir}:{upstream_dir}"))
    if ran.returncode != 0 or ran.stdout.strip() != b"upstream: view -c x.bam":
        raise Failure(f"view was not passed on (exit status {ran.returncode})",
                      tail(ran.stdout + ran.stderr))
    alone = run([installed, "view", "x.bam"], env=dict(env, PATH=bin_dir))
    expect_error(case, alone, ["no upstream samtools"], None)
