"""Fixtures: a real s3rver and a real Shoal cluster (`shoal up`, 3 workers) on loopback.

Both listen on ports the kernel picks, keep their data in a fresh temp directory,
and are stopped (process group, then the directory) at the end of the session.
SHOAL_BIN names the shoal binary, SHOAL_SOURCE_DIR the repository (for s3rver,
installed by scripts/bootstrap); CTest sets both.
"""

import os
import random
import shutil
import tempfile

import pytest

from shoal.testing import Servers, put

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SHOAL_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))
SHOAL_BIN = os.environ.get("SHOAL_BIN", os.path.join(SOURCE_DIR, "build", "shoal"))
BUCKET = "pydata"


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
    work = tempfile.mkdtemp(prefix="shoal-pytest-")
    try:
        with Servers(work) as servers:
            os.mkdir(os.path.join(work, "s3"))
            endpoint = servers.start_s3rver(SOURCE_DIR, os.path.join(work, "s3"))
            put(f"{endpoint}/{BUCKET}")
            files = _add_formats(_make_dataset())
            for name, data in files.items():
                put(f"{endpoint}/{BUCKET}/{name}", data)
            config = servers.start_shoal_up(
                SHOAL_BIN, f"s3://{BUCKET}/", os.path.join(work, "state"),
                ["-o", f"endpoint={endpoint}", "-o", "credentials=anonymous", "--workers", "3", "--cache-size", "256MiB", "--page-size", "256KiB",
                 "--shard-size", "1MiB"])
            yield Cluster(config, files, "/data", endpoint)
    except RuntimeError as e:
        pytest.fail(str(e))
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="session")
def client(cluster):
    import shoal

    return shoal.Client(cluster.config)
