"""Fixtures: a real s3rver and a real Shoal cluster (`shoal up`, 3 workers) on loopback.

Both listen on ports the kernel picks, keep their data in a fresh temp directory,
and are stopped (process group, then the directory) at the end of the session.
SHOAL_BIN names the shoal binary, SHOAL_SOURCE_DIR the repository (for s3rver,
installed by scripts/bootstrap); CTest sets both.
"""

import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SHOAL_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))
SHOAL_BIN = os.environ.get("SHOAL_BIN", os.path.join(SOURCE_DIR, "build", "shoal"))
BUCKET = "pydata"
START_TIMEOUT = 120  # s3rver and three workers on a loaded 2-core machine


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

    def wait_for_line(self, prefix, timeout):
        """The first stdout line containing `prefix`; fails when the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    if prefix in line:
                        return line
                if self.proc.poll() is not None and not self.reader.is_alive():
                    raise RuntimeError(f"{self.proc.args[0]} exited ({self.proc.returncode}) before printing "
                                       f"{prefix!r}; output: {self.lines}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"{self.proc.args[0]} did not print {prefix!r} within {timeout}s")
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


def _put(url, data=b""):
    req = urllib.request.Request(url, data=data, method="PUT")
    with urllib.request.urlopen(req, timeout=60) as r:
        r.read()


def _make_dataset():
    """name -> bytes: small files, files spanning several 1 MiB shards, and real formats."""
    rnd = random.Random(1234)
    files = {}
    for i in range(96):
        files[f"train/{i % 4}/img{i:04d}.bin"] = rnd.randbytes(rnd.randint(1, 48 * 1024))
    files["train/empty.bin"] = b""
    files["big/shard-0.bin"] = rnd.randbytes(5 * 1024 * 1024 + 12345)
    files["big/shard-1.bin"] = rnd.randbytes(3 * 1024 * 1024)
    files["notes/readme.txt"] = b"hello shoal\n" * 100
    return files


def _add_formats(files):
    """A .npy, a .tar and a torch .pt file, made by the real libraries."""
    import io
    import tarfile

    import numpy as np

    buf = io.BytesIO()
    arr = np.arange(300_000, dtype=np.float32).reshape(600, 500)
    np.save(buf, arr)
    files["formats/array.npy"] = buf.getvalue()

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for i in range(5):
            data = bytes([i]) * (10_000 * (i + 1))
            info = tarfile.TarInfo(f"member{i}.bin")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    files["formats/archive.tar"] = buf.getvalue()
    try:
        from PIL import Image

        buf = io.BytesIO()
        Image.new("RGB", (17, 9), (10, 200, 30)).save(buf, format="PNG")
        files["formats/image.png"] = buf.getvalue()
    except ImportError:
        pass
    try:
        import torch

        buf = io.BytesIO()
        torch.save({"w": torch.arange(1000, dtype=torch.float64), "step": 7}, buf)
        files["formats/model.pt"] = buf.getvalue()
    except ImportError:
        pass
    return files


class Cluster:
    def __init__(self, config, files, mount, s3_endpoint):
        self.config = config
        self.files = files  # name under the mount -> bytes
        self.mount = mount  # "/data"
        self.s3_endpoint = s3_endpoint

    def path(self, name):
        return f"{self.mount}/{name}"

    def ufs_read_bytes(self):
        import shoal

        return sum(w.ufs_read_bytes for w in shoal.Client(self.config).status())


@pytest.fixture(scope="session")
def cluster():
    if not os.path.exists(SHOAL_BIN):
        pytest.fail(f"no shoal binary at {SHOAL_BIN}: run `make` first (or set SHOAL_BIN)")
    script = os.path.join(SOURCE_DIR, "tools", "node_modules", "s3rver", "bin", "s3rver.js")
    if not os.path.exists(script):
        pytest.fail(f"s3rver is not installed ({script}): run scripts/bootstrap")
    work = tempfile.mkdtemp(prefix="shoal-pytest-")
    procs = []
    try:
        s3dir = os.path.join(work, "s3")
        os.mkdir(s3dir)
        s3 = Process(["node", "--openssl-legacy-provider", script, "--directory", s3dir, "--address", "127.0.0.1",
                      "--port", "0", "--silent"], stderr_path=os.path.join(work, "s3rver.err"))
        procs.append(s3)
        line = s3.wait_for_line("S3rver listening on", START_TIMEOUT)
        endpoint = "http://127.0.0.1:" + line.rsplit(":", 1)[1].strip()
        _put(f"{endpoint}/{BUCKET}")
        files = _add_formats(_make_dataset())
        for name, data in files.items():
            _put(f"{endpoint}/{BUCKET}/{name}", data)

        env = dict(os.environ, SHOAL_LOG=os.environ.get("SHOAL_LOG", "warn"))
        up = Process([SHOAL_BIN, "up", "--ufs", f"s3://{BUCKET}/", "-o", f"endpoint={endpoint}", "-o",
                      "access_key_id=S3RVER", "-o", "secret_access_key=S3RVER", "--workers", "3",
                      "--state-dir", os.path.join(work, "state"), "--cache-size", "256MiB", "--page-size",
                      "256KiB", "--shard-size", "1MiB"], env=env, stderr_path=os.path.join(work, "up.err"))
        procs.append(up)
        line = up.wait_for_line("ready: config=", START_TIMEOUT)
        config = line.split("ready: config=", 1)[1].strip()
        yield Cluster(config, files, "/data", endpoint)
    finally:
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="session")
def client(cluster):
    import shoal

    return shoal.Client(cluster.config)
