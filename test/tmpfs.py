"""A small tmpfs for the full-disk and temp-space tests (root only).

with_tmpfs() mounts one on a new directory inside the test's own directory,
never anywhere else, runs body(mount point), and always unmounts it again.
"""

import os
import subprocess

TIMEOUT = 60  # seconds for mount and umount


def with_tmpfs(parent, size, body, failure, name=None, must_end_empty=True):
    """-> body(mount point).  size as mount takes it ("4M", "700k");
    failure(reason, details) is the exception raised when mounting fails
    or, with must_end_empty, when body leaves files behind."""
    mount_point = os.path.join(parent, name or f"tmpfs_{size}")
    os.mkdir(mount_point)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                              mount_point], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=TIMEOUT)
    if mounted.returncode != 0:
        raise failure(f"cannot mount a {size} tmpfs",
                      mounted.stdout.decode(errors="replace").splitlines()[-5:])
    try:
        result = body(mount_point)
        left = os.listdir(mount_point)
        if must_end_empty and left:
            raise failure("files left on the small file system", sorted(left)[:5])
        return result
    finally:
        if subprocess.run(["umount", mount_point], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=TIMEOUT).returncode:
            subprocess.run(["umount", "-l", mount_point], timeout=TIMEOUT)
        os.rmdir(mount_point)
