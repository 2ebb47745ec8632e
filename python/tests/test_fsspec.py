"""ShoalFileSystem: fsspec's generic expectations of a read-only filesystem, on a real cluster."""

import errno
import os
import pickle
import subprocess
import sys

import pytest

fsspec = pytest.importorskip("fsspec")

import shoal  # noqa: E402  (registers the protocol)
from shoal.fsspec import ShoalFileSystem  # noqa: E402


@pytest.fixture(scope="module")
def fs(cluster):
    return fsspec.filesystem("shoal", config=cluster.config)


def test_registered_on_import_and_by_url(cluster, fs, monkeypatch):
    assert isinstance(fs, ShoalFileSystem)
    monkeypatch.setenv("SHOAL_CONFIG", cluster.config)
    with fsspec.open("shoal:///data/notes/readme.txt") as f:
        assert f.read() == cluster.files["notes/readme.txt"]
    with fsspec.open("shoal:///data/notes/readme.txt", "rt") as f:
        assert f.readline() == "hello shoal\n"


def test_entry_point_names_the_filesystem():
    # The installed package declares it under fsspec.specs (pyproject.toml; test_install checks
    # an installed copy); the build tree declares the same in its dist-info.
    here = os.path.dirname(os.path.abspath(__file__))
    text = open(os.path.join(here, "..", "pyproject.toml")).read()
    assert '[project.entry-points."fsspec.specs"]' in text
    assert 'shoal = "shoal.fsspec:ShoalFileSystem"' in text


def _run_python(code, *args, env=None):
    """`code` in a fresh interpreter (this one's, the test's PYTHONPATH); -> its stdout."""
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_protocol_found_without_importing_shoal(cluster):
    # From the build tree (PYTHONPATH, as CTest runs this) as from an installed package.
    code = (
        "import sys, fsspec\n"
        "assert 'shoal' not in sys.modules\n"
        "fs = fsspec.filesystem('shoal', config=sys.argv[1])\n"
        "sys.stdout.write(fs.cat_file('/data/notes/readme.txt').decode())\n"
    )
    assert _run_python(code, cluster.config) == cluster.files["notes/readme.txt"].decode()


def test_ls_and_info(cluster, fs):
    assert fs.ls("/data/big", detail=False) == ["/data/big/shard-0.bin", "/data/big/shard-1.bin"]
    entries = fs.ls("shoal:///data/big")
    assert [e["type"] for e in entries] == ["file", "file"]
    assert entries[0]["size"] == len(cluster.files["big/shard-0.bin"])
    root = fs.ls("/", detail=False)
    assert root == ["/data"]
    top = {e["name"]: e["type"] for e in fs.ls("/data")}
    assert top["/data/train"] == "directory" and top["/data/big"] == "directory"
    info = fs.info("/data/notes/readme.txt")
    assert info["type"] == "file" and info["size"] == 1200 and info["version"]
    assert fs.info("/data/train")["type"] == "directory"
    assert fs.info("/")["type"] == "directory"
    assert fs.ls("/data/notes/readme.txt", detail=False) == ["/data/notes/readme.txt"]
    with pytest.raises(FileNotFoundError):
        fs.info("/data/missing")
    with pytest.raises(FileNotFoundError):
        fs.ls("/data/missing")


def test_exists_isdir_isfile_size(cluster, fs):
    assert fs.exists("/data/train/0/img0000.bin")
    assert fs.exists("/data/train")
    assert not fs.exists("/data/train/nope")
    assert fs.isdir("/data/train") and not fs.isfile("/data/train")
    assert fs.isfile("/data/big/shard-1.bin") and not fs.isdir("/data/big/shard-1.bin")
    assert fs.size("/data/big/shard-1.bin") == 3 * 1024 * 1024
    assert fs.sizes(["/data/big/shard-1.bin", "/data/notes/readme.txt"]) == [3 * 1024 * 1024, 1200]
    assert fs.ukey("/data/big/shard-1.bin") == fs.info("/data/big/shard-1.bin")["version"]
    assert fs.modified("/data/big/shard-1.bin").year >= 2020


def test_cat_file_ranges(cluster, fs):
    data = cluster.files["big/shard-0.bin"]
    p = "/data/big/shard-0.bin"
    assert fs.cat_file(p) == data
    assert fs.cat_file(p, start=10, end=20) == data[10:20]
    assert fs.cat_file(p, start=1024 * 1024 - 3, end=1024 * 1024 + 3) == data[1024 * 1024 - 3:1024 * 1024 + 3]
    assert fs.cat_file(p, start=-100) == data[-100:]
    assert fs.cat_file(p, start=5, end=-5) == data[5:-5]
    assert fs.cat_file(p, start=len(data) + 5) == b""
    assert fs.cat_file(p, start=30, end=20) == b""
    assert fs.head(p, 7) == data[:7]
    assert fs.tail(p, 7) == data[-7:]
    both = fs.cat(["/data/notes/readme.txt", "/data/train/empty.bin"])
    assert both == {"/data/notes/readme.txt": cluster.files["notes/readme.txt"], "/data/train/empty.bin": b""}
    assert fs.cat_ranges(["/data/notes/readme.txt", p], [0, 100], [5, 110]) == [b"hello", data[100:110]]


def test_open_seek_read(cluster, fs):
    data = cluster.files["big/shard-0.bin"]
    with fs.open("/data/big/shard-0.bin", "rb", block_size=1 << 20) as f:
        f.seek(3 * 1024 * 1024 + 11)
        assert f.read(1000) == data[3 * 1024 * 1024 + 11:3 * 1024 * 1024 + 1011]
        assert f.tell() == 3 * 1024 * 1024 + 1011
        f.seek(0)
        assert f.read() == data
    with pytest.raises(FileNotFoundError):
        fs.open("/data/nope")
    with pytest.raises(IsADirectoryError):
        fs.open("/data/train")


def test_find_glob_walk_du(cluster, fs):
    train = sorted("/data/" + n for n in cluster.files if n.startswith("train/"))
    assert fs.find("/data/train") == train
    assert fs.find("shoal:///data/train") == train
    detail = fs.find("/data/train", detail=True)
    assert {k: v["size"] for k, v in detail.items()} == {p: len(cluster.files[p[6:]]) for p in train}
    assert fs.find("/data/train", maxdepth=1) == ["/data/train/empty.bin"]
    with_dirs = fs.find("/data/train", withdirs=True)
    assert "/data/train/2" in with_dirs
    assert fs.glob("/data/train/3/*.bin") == [p for p in train if p.startswith("/data/train/3/")]
    assert fs.glob("shoal:///data/big/shard-?.bin") == ["/data/big/shard-0.bin", "/data/big/shard-1.bin"]
    assert fs.glob("/data/**/img001?.bin") == [p for p in train if "/img001" in p]
    walked = []
    for root, dirs, files in fs.walk("/data/train"):
        walked += [root.rstrip("/") + "/" + f for f in files]
    assert sorted(walked) == train
    assert fs.du("/data/train") == sum(len(cluster.files[p[6:]]) for p in train)
    per = fs.du("/data/big", total=False)
    assert per == {f"/data/big/shard-{i}.bin": len(cluster.files[f"big/shard-{i}.bin"]) for i in (0, 1)}


def test_get_to_local(cluster, fs, tmp_path):
    fs.get("/data/big/shard-1.bin", str(tmp_path / "copy.bin"))
    assert (tmp_path / "copy.bin").read_bytes() == cluster.files["big/shard-1.bin"]
    fs.get("/data/train/0", str(tmp_path / "dir"), recursive=True)
    got = sorted(os.listdir(tmp_path / "dir"))
    assert got == sorted(os.path.basename(n) for n in cluster.files if n.startswith("train/0/"))


def test_mapper_reads(cluster, fs):
    m = fs.get_mapper("/data/notes")
    assert list(m) == ["readme.txt"]
    assert m["readme.txt"] == cluster.files["notes/readme.txt"]
    with pytest.raises(KeyError):
        m["absent"]


def test_writes_pipe_put_cp_touch_mv_rm(cluster, fs, tmp_path):
    base = "/data/fsspec-writes"
    fs.pipe(f"{base}/a.bin", b"alpha" * 1000)
    assert fs.cat_file(f"{base}/a.bin") == b"alpha" * 1000
    with fs.open(f"{base}/b.txt", "w") as f:  # text mode over the binary writer
        f.write("line one\nline two\n")
    with fsspec.open(f"shoal://{base}/b.txt", "rt", config=cluster.config) as f:
        assert f.read().splitlines() == ["line one", "line two"]
    local = tmp_path / "local.bin"
    local.write_bytes(bytes(range(256)) * 4096)
    fs.put(str(local), f"{base}/put.bin")
    assert fs.cat_file(f"{base}/put.bin") == local.read_bytes()
    fs.cp_file(f"{base}/put.bin", f"{base}/copy.bin")
    assert fs.cat_file(f"{base}/copy.bin") == local.read_bytes()
    fs.touch(f"{base}/empty")
    assert fs.info(f"{base}/empty")["size"] == 0
    fs.mv(f"{base}/a.bin", f"{base}/moved.bin")
    assert not fs.exists(f"{base}/a.bin")
    assert fs.cat_file(f"{base}/moved.bin") == b"alpha" * 1000
    assert fs.ls(base, detail=False) == [f"{base}/{n}" for n in ("b.txt", "copy.bin", "empty", "moved.bin", "put.bin")]
    fs.makedirs(f"{base}/sub", exist_ok=True)
    fs.makedirs(f"{base}/sub", exist_ok=True)
    with pytest.raises(FileExistsError):
        fs.makedirs(f"{base}/sub", exist_ok=False)
    fs.pipe(f"{base}/sub/x", b"x")
    assert fs.find(base, withdirs=True)[-2:] == [f"{base}/sub", f"{base}/sub/x"]
    fs.rm_file(f"{base}/empty")
    assert not fs.exists(f"{base}/empty")
    fs.rm(base, recursive=True)
    assert not fs.exists(base)
    with pytest.raises(FileNotFoundError):
        fs.rm_file(f"{base}/moved.bin")


def test_write_errors(fs):
    with pytest.raises(ValueError, match="mode"):
        fs.open("/data/x", "ab")
    with pytest.raises(FileExistsError):
        fs.open("/data/notes/readme.txt", "xb")
    fs.mkdir("/data/fsspec-dir")
    try:
        fs.pipe("/data/fsspec-dir/f", b"1")
        with pytest.raises(OSError) as e:
            fs.rmdir("/data/fsspec-dir")
        assert e.value.errno == errno.ENOTEMPTY
    finally:
        fs.rm("/data/fsspec-dir", recursive=True)
    with pytest.raises(FileNotFoundError):
        fs.mkdir("/data/no-parent/child", create_parents=False)


def test_pickle_filesystem(cluster, fs):
    fs2 = pickle.loads(pickle.dumps(fs))
    assert fs2.cat_file("/data/notes/readme.txt") == cluster.files["notes/readme.txt"]


def test_pickled_filesystem_reaches_its_cluster_in_another_process(cluster, tmp_path, monkeypatch):
    # Opened from $SHOAL_CONFIG (config=None), and with a client: either way the pickle names the
    # config's absolute path, so a process where SHOAL_CONFIG names another file (or none) still
    # reads this cluster.
    monkeypatch.setenv("SHOAL_CONFIG", os.path.relpath(cluster.config))
    from_env = ShoalFileSystem()
    from_client = ShoalFileSystem(client=shoal.Client(cluster.config))
    for f in (from_env, from_client):
        assert f.storage_options["config"] == os.path.abspath(cluster.config)
        assert "client" not in f.storage_options
    code = (
        "import pickle, sys\n"
        "for blob in sys.stdin.buffer.read().split(b'--next--'):\n"
        "    fs = pickle.loads(blob)\n"
        "    sys.stdout.write(fs.client.config + ' ' + fs.cat_file('/data/notes/readme.txt')[:5].decode() + '\\n')\n"
    )
    blob = pickle.dumps(from_env) + b"--next--" + pickle.dumps(from_client)
    elsewhere = tmp_path / "other.yaml"  # what a worker's environment might name
    r = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, timeout=120,
                       env=dict(os.environ, SHOAL_CONFIG=str(elsewhere)), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().splitlines() == [f"{os.path.abspath(cluster.config)} hello"] * 2
    # fsspec's JSON form carries the same.
    again = fsspec.AbstractFileSystem.from_json(from_env.to_json())
    assert again.client.config == os.path.abspath(cluster.config)
