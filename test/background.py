"""rocksort run in the background, for tests that act while it runs: feed
its stdin a piece at a time, watch its temporary database appear and fill
(store_dirs(), has_sorted_run()), signal it, close its output pipe.
wait_until() waits for such a moment by polling, never by a fixed sleep;
WAIT bounds every wait.
"""

import os
import subprocess
import threading
import time

from harness import Failure

WAIT = 20  # seconds: the longest any test waits for rocksort to do a thing
STORE_PREFIX = "rs.rocksort."  # what `-T case.temp_prefix` makes: tmp/rs.rocksort.XXXXXX


class Background:
    """rocksort started with Popen: stdin and stdout may be pipes, stderr
    goes to a file (nothing can block on it).  Always use with `with`: the
    process is killed if the test leaves early."""

    def __init__(self, case, args, stdin=False, stdout_pipe=False, name="rs", wrap=()):
        """wrap: a command that execs the rest (as `nohup` does)."""
        self.stderr_path = os.path.join(case.dir, f"{name}.stderr")
        env = dict(case.session.env, TMPDIR=case.tmp)
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [*wrap, *case.session.rocksort_cmd, *args],
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE if stdout_pipe else subprocess.DEVNULL,
                stderr=err, cwd=case.out_dir, env=env, bufsize=0)
        self.feeder = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe:
                try:
                    pipe.close()
                except OSError:
                    pass
        return False

    def feed(self, data):
        """Writes data to stdin from a thread (the write blocks while
        rocksort does not read, and must not stall the test)."""
        def write():
            view = memoryview(data)
            try:
                while view:
                    view = view[self.proc.stdin.write(view):]
            except (OSError, ValueError):
                pass  # rocksort is gone: the test says why
        if self.feeder:
            self.feeder.join(WAIT)
        self.feeder = threading.Thread(target=write, daemon=True)
        self.feeder.start()

    def end_input(self):
        if self.feeder:
            self.feeder.join(WAIT)
            if self.feeder.is_alive():
                raise Failure("rocksort stopped reading its input",
                              self.stderr_tail())
        self.proc.stdin.close()

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read()

    def stderr_tail(self):
        text = self.stderr().decode(errors="replace").strip().splitlines()
        return [line[:200] for line in text[-5:]]

    def wait(self, what="rocksort"):
        try:
            return self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            raise Failure(f"{what} did not end within {WAIT} s",
                          self.stderr_tail())

    def running(self):
        return self.proc.poll() is None


def process_state(pid):
    """The state letter of /proc/PID/stat: "T" once stopped."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_until(condition, what, background=None):
    """Polls condition() for up to WAIT seconds; fails if rocksort ends
    first or time runs out."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if condition():
            return
        if background and not background.running():
            raise Failure(f"rocksort ended (exit status "
                          f"{background.proc.returncode}) before {what}",
                          background.stderr_tail())
        time.sleep(0.02)
    raise Failure(f"gave up after {WAIT} s waiting for {what}",
                  background.stderr_tail() if background else [])


def store_dirs(case):
    """The temporary databases under the -T prefix (tmp/rs.rocksort.*)."""
    return [os.path.join(case.tmp, n) for n in os.listdir(case.tmp)
            if n.startswith(STORE_PREFIX)
            and os.path.isdir(os.path.join(case.tmp, n))]


def listing(directory):
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []


def has_sorted_run(case):
    """A sorted run (RocksDB writes each as an .sst file) is on disk."""
    return any(n.endswith(".sst") for d in store_dirs(case) for n in listing(d))
