"""--resume DIR and an input file edited between the runs with its size,
inode and mtime kept (issue #50, item 6).

A file's identity holds its path, inode, size, mtime and sampled blocks; an
edit of a base in the stored part, between the sampled blocks, keeps them
all when the mtime is put back: `touch -r`, `cp -p` over the file, or a
rewrite of the same size (an editor that writes in place) followed by
os.utime().  Each changes the ctime, and the rerun must then check the
bytes the state holds: they differ, so the state is discarded with a line
saying why, and the output is samtools 1.24's of the edited file, never the
killed run's records.  A change of status alone (chmod; the file renamed
away and back) changes the ctime too: the bytes read back the same and the
rerun resumes.  A CRAM's state keeps no checksum of its bytes (its
positions are record counts): a changed ctime sorts it afresh.

To run only these:  run_tests.py -k 'resume_edit*'
"""

import os
import shutil
import struct

from harness import Failure, each, run, tail
from resume import (SPILL, expect_finished, journal_frames, kill_when, oracle_output, rerun,
                    resumed_runs, runs_stored, sort_args, source_path)

SAMPLES, SAMPLE_BYTES = 16, 4096     # resume/resume_identity.h
SWAP = bytes.maketrans(b"ACGT", b"TGCA")


def killed_with_runs(case, name, runs=5):
    """A copy of the input, and its sort killed once `runs` runs are stored."""
    src, state = os.path.join(case.dir, "in-" + name), os.path.join(case.dir, "state")
    shutil.copy(source_path(case, name), src)
    args = sort_args(case, state, [], SPILL) + [src]
    kill_when(case, args, lambda: runs_stored(state) >= runs, f"{runs} runs stored")
    return src, state, args


def stored_bytes(state):
    """Where a plain SAM's next record starts after the last stored run: the
    position in the note of the journal's last 'R' record (store/store_state.c:
    part, entries, bytes, groups' key spans, samples, then the note, whose
    fourth field is the position, after the input and its first record's
    number and the position's kind: resume/resume_state.c)."""
    def skip_bytes(p, at):
        return at + 8 + struct.unpack_from("<Q", p, at)[0]
    pos = 0
    for _, p in journal_frames(state):
        if struct.unpack_from("<Q", p)[0] != ord("R"):
            continue
        at = 40
        for _ in range(struct.unpack_from("<Q", p, at - 8)[0]):
            at = skip_bytes(p, skip_bytes(p, at))
        at += 8
        for _ in range(struct.unpack_from("<Q", p, at - 8)[0]):
            at = skip_bytes(p, at) + 8
        pos = struct.unpack_from("<Q", p, at + 8 + 3 * 8)[0]
    return pos


def sampled(size):
    """The byte ranges the identity's digest reads (resume/resume_identity.c)."""
    span = size - SAMPLE_BYTES if size > SAMPLE_BYTES else 0
    starts = [span // (SAMPLES - 1) * i for i in range(SAMPLES - 1)] + [span]
    return [(at, at + SAMPLE_BYTES) for at in starts]


def edited_bases(data, stored, near=(10_000, 200_000, 500_000)):
    """data with the first base of the first record after each offset in
    `near` swapped; each lies in the stored part and outside every sampled
    block, so that only the bytes themselves tell the edit."""
    out = bytearray(data)
    for target in near:
        line = data.index(b"\n", target) + 1
        seq = line + sum(len(f) + 1 for f in data[line:line + 2000].split(b"\t")[:9])
        if seq >= stored or any(a <= seq < b for a, b in sampled(len(data))):
            raise Failure(f"test is wrong: the base at {seq} is not in the stored part, or "
                          f"is sampled ({stored} bytes stored)")
        out[seq:seq + 1] = data[seq:seq + 1].translate(SWAP)
    if out == data:
        raise Failure("test is wrong: the edit changed nothing")
    return bytes(out)


def tool(*cmd):
    result = run(list(cmd))
    if result.returncode != 0:
        raise Failure(f"test is wrong: {' '.join(cmd)} failed", tail(result.stderr))


def edit_touch_r(case, src, edited):
    """One byte at a time, in place, then `touch -r` a stamp of the old times."""
    stamp = os.path.join(case.dir, "stamp")
    tool("touch", "-r", src, stamp)
    with open(src, "r+b") as f:
        old = f.read()
        for at in (i for i in range(len(old)) if old[i] != edited[i]):
            f.seek(at)
            f.write(edited[at:at + 1])
    tool("touch", "-r", stamp, src)


def edit_cp_p(case, src, edited):
    """An edited copy given the old times, then `cp -p` over the input:
    cp truncates and rewrites the same inode, then sets the copy's mtime."""
    copy = os.path.join(case.dir, "edited.sam")
    with open(copy, "wb") as f:
        f.write(edited)
    tool("touch", "-r", src, copy)
    tool("cp", "-p", copy, src)


def edit_rewrite(case, src, edited):
    """The whole file written anew in place, same size, then os.utime()
    with the old times to the nanosecond."""
    before = os.stat(src)
    with open(src, "wb") as f:
        f.write(edited)
    os.utime(src, ns=(before.st_atime_ns, before.st_mtime_ns))


EDITS = {"touch_r": edit_touch_r, "cp_p": edit_cp_p, "rewrite": edit_rewrite}


@each((f"resume_edit_{how}_mtime_kept_sorts_afresh", how) for how in EDITS)
def test_resume_edit_mtime_kept(case, how):
    src, state, args = killed_with_runs(case, "bulk.sam")
    with open(src, "rb") as f:
        data = f.read()
    before = os.stat(src)
    EDITS[how](case, src, edited_bases(data, stored_bytes(state)))
    after = os.stat(src)
    if (after.st_size, after.st_ino, after.st_mtime_ns) != \
            (before.st_size, before.st_ino, before.st_mtime_ns):
        raise Failure(f"test is wrong: {how} changed the size, inode or mtime")
    lines = rerun(case, args)
    # First what matters: none of the killed run's records in the output.
    case.expect_same(case.out("out.bam"), oracle_output(case, src, []))
    if resumed_runs(lines) or not any("not resuming" in line and "ctime differs" in line
                                      and "afresh" in line for line in lines):
        raise Failure(f"after {how}, no line says the state was discarded for the edit", lines)
    if os.path.exists(state):
        raise Failure("the state directory is still there after the sort succeeded")
    case.expect_no_temp_left()


def status_chmod(src):
    os.chmod(src, 0o600)


def status_renamed_back(src):
    os.rename(src, src + ".away")
    os.rename(src + ".away", src)


STATUS = {"chmod": status_chmod, "renamed_back": status_renamed_back}


@each((f"resume_edit_none_{how}_{name.replace('.', '_')}_resumes", how, name)
      for how, name in (("chmod", "bulk.bam"), ("renamed_back", "bulk.sam")))
def test_resume_edit_none_status_changed(case, how, name):
    """Only the status changed: the bytes the state holds read back the
    same, and the rerun takes every stored run back."""
    src, state, args = killed_with_runs(case, name)
    runs = runs_stored(state)
    before = os.stat(src).st_ctime_ns
    STATUS[how](src)
    if os.stat(src).st_ctime_ns == before:
        raise Failure(f"test is wrong: {how} left the ctime as it was")
    lines = rerun(case, args)
    if (resumed_runs(lines) or 0) < runs - 1 or any("not resuming" in line for line in lines):
        raise Failure(f"after {how} alone the rerun did not take the {runs} runs back", lines)
    if not any("read back the same" in line for line in lines):
        raise Failure("-v does not say the stored bytes were checked", lines)
    expect_finished(case, state, name, [])


def test_resume_edit_none_cram_status_changed_sorts_afresh(case):
    """A CRAM's notes hold record counts, no byte offsets, so no checksum:
    with its ctime changed, nothing shows its stored part unchanged."""
    src, state, args = killed_with_runs(case, "bulk_noref.cram")
    status_chmod(src)
    lines = rerun(case, args)
    if not any("not resuming" in line and "no checksum" in line and "afresh" in line
               for line in lines):
        raise Failure("no line says why the CRAM's state was discarded", lines)
    case.expect_same(case.out("out.bam"), oracle_output(case, src, []))
    if os.path.exists(state):
        raise Failure("the state directory is still there after the sort succeeded")
