"""Local servers for tests and benchmarks: s3rver and `shoal up`, on loopback.

Every process listens on a port the kernel picks, runs in its own process group
and is stopped with it; nothing here sleeps to synchronise (it waits for the
line a server prints when it is ready, with a deadline).

    with Servers() as s:
        endpoint = s.start_s3rver(source_dir)        # "http://127.0.0.1:PORT"
        put(f"{endpoint}/bucket")
        config = s.start_shoal_up(shoal_bin, "s3://bucket/", state_dir, ["-o", f"endpoint={endpoint}"])
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import urllib.request

START_TIMEOUT = 120  # a loaded 2-core machine


class Process:
    """A child in its own process group whose stdout lines are collected by a thread."""

    def __init__(self, argv, env=None, stderr_path=None):
        self.stderr_file = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.stderr_file, env=env,
                                     start_new_session=True)
        self.lines = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            with self.cond:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_for_line(self, text, timeout=START_TIMEOUT):
        """The first stdout line containing `text`; raises when the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    if text in line:
                        return line
                if self.proc.poll() is not None and not self.reader.is_alive():
                    raise RuntimeError(f"{self.proc.args[0]} exited ({self.proc.returncode}) before printing "
                                       f"{text!r}; output: {self.lines}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"{self.proc.args[0]} did not print {text!r} within {timeout}s")
                self.cond.wait(min(left, 0.5))

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=60)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        self.reader.join(timeout=10)
        if self.stderr_file is not subprocess.DEVNULL:
            self.stderr_file.close()


def put(url, data=b""):
    """An anonymous PUT (s3rver takes them): a bucket, or an object."""
    req = urllib.request.Request(url, data=data, method="PUT")
    with urllib.request.urlopen(req, timeout=60) as r:
        r.read()


class Servers:
    """Starts servers and stops them all, last first, on close()."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.procs = []

    def start(self, name, argv, ready_text, env=None):
        p = Process(argv, env=env, stderr_path=os.path.join(self.log_dir, name + ".err"))
        self.procs.append(p)
        return p, p.wait_for_line(ready_text)

    def start_s3rver(self, source_dir, data_dir):
        script = os.path.join(source_dir, "tools", "node_modules", "s3rver", "bin", "s3rver.js")
        if not os.path.exists(script):
            raise RuntimeError(f"s3rver is not installed ({script}): run scripts/bootstrap")
        _, line = self.start("s3rver", ["node", "--openssl-legacy-provider", script, "--directory", data_dir,
                                        "--address", "127.0.0.1", "--port", "0", "--silent"], "S3rver listening on")
        return "http://127.0.0.1:" + line.rsplit(":", 1)[1].strip()

    def start_shoal_up(self, shoal_bin, ufs, state_dir, extra_args=(), env=None, name="shoal-up"):
        """`shoal up`; returns the client config path it printed. S3 credentials for s3rver."""
        if not os.path.exists(shoal_bin):
            raise RuntimeError(f"no shoal binary at {shoal_bin}: run `make` first (or set SHOAL_BIN)")
        argv = [shoal_bin, "up", "--ufs", ufs, "--state-dir", state_dir, *extra_args]
        if ufs.startswith("s3://"):
            argv += ["-o", "access_key_id=S3RVER", "-o", "secret_access_key=S3RVER"]
        env = dict(env if env is not None else os.environ)
        env.setdefault("SHOAL_LOG", "warn")
        proc, line = self.start(name, argv, "ready: config=", env=env)
        self.shoal_up = proc
        return line.split("ready: config=", 1)[1].strip()

    def close(self):
        while self.procs:
            self.procs.pop().stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
