"""shoal.Client against a real cluster: reads, files, errors, fork and pickling."""

import io
import multiprocessing
import os
import pickle
import random
import sys
import tarfile
import threading
import time

import pytest

import shoal
from shoal import _shoal


def test_import_and_default_config(cluster, monkeypatch):
    monkeypatch.setenv("SHOAL_CONFIG", cluster.config)
    c = shoal.Client()
    assert c.config == cluster.config
    monkeypatch.delenv("SHOAL_CONFIG")
    with pytest.raises(ValueError, match="SHOAL_CONFIG"):
        shoal.Client()


def test_bad_config_is_an_error_naming_it(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(OSError) as e:
        shoal.Client(missing)
    assert "nope.yaml" in str(e.value)


def test_stat_ls_mounts_status(cluster, client):
    data = cluster.files["big/shard-0.bin"]
    st = client.stat(cluster.path("big/shard-0.bin"))
    assert (st.size, st.is_dir, st.path) == (len(data), False, "/data/big/shard-0.bin")
    assert st.version
    d = client.stat("/data/train")
    assert d.is_dir
    names = [e.path for e in client.ls("/data/big")]
    assert names == ["/data/big/shard-0.bin", "/data/big/shard-1.bin"]
    assert [m.path for m in client.mounts()] == ["/data"]
    assert client.mounts()[0].ufs == "s3://pydata/"
    workers = client.status()
    assert len(workers) == 3 and all(w.up for w in workers)


def test_walk_find_glob(cluster, client):
    expected = sorted("/data/" + n for n in cluster.files if n.startswith("train/"))
    assert [e.path for e in client.find("/data/train")] == expected
    walked = []
    for d, dirs, files in client.walk("/data/train"):
        walked += [f"{d}/{f}" for f in files]
        if d == "/data/train":
            assert sorted(dirs) == ["0", "1", "2", "3"]
    assert sorted(walked) == expected
    assert client.glob("/data/train/1/*.bin") == [p for p in expected if p.startswith("/data/train/1/")]
    assert client.glob("/data/*/shard-?.bin") == ["/data/big/shard-0.bin", "/data/big/shard-1.bin"]
    assert client.glob("/data/**/img000?.bin") == [p for p in expected if "/img000" in p]
    assert client.glob("/data/nothing/*") == []


def test_read_whole_and_ranges(cluster, client):
    for name in ("big/shard-0.bin", "train/0/img0000.bin", "train/empty.bin", "notes/readme.txt"):
        data = cluster.files[name]
        assert client.read(cluster.path(name)) == data, name
    data = cluster.files["big/shard-0.bin"]
    for off, n in ((0, 10), (1024 * 1024 - 5, 10), (3 * 1024 * 1024 + 7, 1 << 20), (len(data) - 3, 100)):
        assert client.read(cluster.path("big/shard-0.bin"), off, n) == data[off:off + n]
    assert client.read(cluster.path("big/shard-0.bin"), len(data) + 10) == b""
    with pytest.raises(ValueError):
        client.read(cluster.path("big/shard-0.bin"), -1)


def test_open_read_seek_tell(cluster, client):
    data = cluster.files["big/shard-0.bin"]
    with client.open(cluster.path("big/shard-0.bin")) as f:
        assert isinstance(f, io.BufferedIOBase) and isinstance(f.buffered, io.BufferedReader)
        assert isinstance(f.raw, io.RawIOBase)
        assert f.seekable() and f.readable()
        assert f.read(100) == data[:100]
        assert f.tell() == 100
        f.seek(2 * 1024 * 1024 + 3)
        assert f.read(5000) == data[2 * 1024 * 1024 + 3:2 * 1024 * 1024 + 5003]
        f.seek(-10, io.SEEK_END)
        assert f.read() == data[-10:]
        assert f.read(1) == b""
        f.seek(50)
        f.seek(25, io.SEEK_CUR)
        assert f.tell() == 75
        assert f.read() == data[75:]
    assert f.closed
    with pytest.raises(ValueError):
        f.read(1)


def test_sequential_reads_in_small_pieces(cluster, client):
    data = cluster.files["big/shard-1.bin"]
    out = bytearray()
    with client.open(cluster.path("big/shard-1.bin"), buffering=0) as raw:
        while True:
            chunk = raw.read(77_777)
            if not chunk:
                break
            out += chunk
    assert bytes(out) == data


def test_readinto_bytearray_memoryview_numpy(cluster, client):
    np = pytest.importorskip("numpy")
    data = cluster.files["big/shard-0.bin"]
    raw = client.open(cluster.path("big/shard-0.bin"), buffering=0)
    buf = bytearray(1 << 20)
    assert raw.readinto(buf) == len(buf)
    assert buf == data[: 1 << 20]
    view = memoryview(bytearray(3000))
    raw.seek(4 * 1024 * 1024 - 1000)
    assert raw.readinto(view[1000:]) == 2000
    assert view[1000:].tobytes() == data[4 * 1024 * 1024 - 1000:4 * 1024 * 1024 + 1000]
    arr = np.zeros(len(data) // 4, dtype=np.uint32)
    raw.seek(0)
    assert raw.readinto(arr) == arr.nbytes
    assert arr.tobytes() == data[: arr.nbytes]
    with pytest.raises((TypeError, BufferError)):
        raw.readinto(b"read-only bytes")  # not writable: refused, nothing read
    with pytest.raises((TypeError, BufferError, ValueError)):
        raw.readinto(np.zeros((100, 100), dtype=np.uint8)[:, ::2])  # not contiguous
    raw.close()


def test_client_readinto_whole_files_and_offsets(cluster, client):
    np = pytest.importorskip("numpy")
    data = cluster.files["big/shard-0.bin"]
    buf = bytearray(len(data) + 100)
    assert client.readinto(cluster.path("big/shard-0.bin"), buf) == len(data)  # short only at the end
    assert buf[: len(data)] == data
    arr = np.zeros(1000, dtype=np.uint8)
    assert client.readinto(cluster.path("big/shard-0.bin"), arr, 2 * 1024 * 1024 - 500) == 1000
    assert arr.tobytes() == data[2 * 1024 * 1024 - 500:2 * 1024 * 1024 + 500]
    small = cluster.files["train/1/img0001.bin"]
    view = memoryview(bytearray(64 * 1024))
    n = client.readinto(cluster.path("train/1/img0001.bin"), view)
    assert view[:n].tobytes() == small
    with pytest.raises(FileNotFoundError):
        client.readinto("/data/none", buf)
    with pytest.raises(IsADirectoryError):
        client.readinto("/data/train", buf)
    with pytest.raises((TypeError, BufferError)):
        client.readinto(cluster.path("notes/readme.txt"), b"immutable")


def test_readinto_releases_the_gil(cluster, client):
    # Several threads reading at once must all get their own bytes right.
    names = [n for n in cluster.files if n.startswith("train/")][:32]
    errors = []

    def reader(part):
        try:
            for n in part:
                assert client.read(cluster.path(n)) == cluster.files[n]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(names[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_read_many_and_readinto_many_return_each_files_bytes(cluster, client):
    np = pytest.importorskip("numpy")
    names = ["train/0/img0000.bin", "big/shard-0.bin", "train/empty.bin", "notes/readme.txt", "train/0/img0000.bin"]
    names += [n for n in cluster.files if n.startswith("train/")][:70]  # more than one group of 64
    got = client.read_many([cluster.path(n) for n in names])
    assert got == [cluster.files[n] for n in names]
    assert client.read_many([]) == []

    big = cluster.files["big/shard-0.bin"]
    small = cluster.files["notes/readme.txt"]
    arr = np.zeros(1000, dtype=np.uint8)
    whole = bytearray(len(big) + 10)
    view = memoryview(bytearray(len(small)))
    counts = client.readinto_many([
        (cluster.path("big/shard-0.bin"), whole),
        (cluster.path("big/shard-0.bin"), arr, 2 * 1024 * 1024 - 500),
        [cluster.path("notes/readme.txt"), view],
        (cluster.path("notes/readme.txt"), bytearray(10), len(small) + 5),
    ])
    assert counts == [len(big), 1000, len(small), 0]
    assert whole[:len(big)] == big
    assert arr.tobytes() == big[2 * 1024 * 1024 - 500:2 * 1024 * 1024 + 500]
    assert view.tobytes() == small
    assert client.readinto_many([]) == []


def test_read_many_matches_a_read_loop_in_any_order_and_batch_size(cluster, client):
    # read_many opens a group of files (about 1 MiB of them) while it copies the last one: the bytes
    # must come back in the order asked whatever the grouping, at every batch size the datasets use.
    names = [n for n in cluster.files if not n.startswith("big/")] * 3 + ["big/shard-1.bin", "train/empty.bin"]
    random.Random(7).shuffle(names)
    paths = [cluster.path(n) for n in names]
    expected = [client.read(p) for p in paths]
    assert expected == [cluster.files[n] for n in names]
    for batch in (1, 8, 32, 64, len(paths)):
        got = []
        for i in range(0, len(paths), batch):
            got += client.read_many(paths[i:i + batch])
        assert got == expected, batch


def test_read_many_error_in_a_later_group_names_its_path(cluster, client):
    names = [n for n in cluster.files if n.startswith("train/")]
    paths = [cluster.path(n) for n in names] * 2  # well past one group of opens
    with pytest.raises(FileNotFoundError) as e:
        client.read_many(paths[:150] + ["/data/train/0/missing.bin"] + paths[150:])
    assert "/data/train/0/missing.bin" in str(e.value)
    assert client.read_many(paths[:150]) == [cluster.files[n] for n in names * 2][:150]  # usable after


def test_read_many_and_readinto_many_errors(cluster, client):
    ok = cluster.path("notes/readme.txt")
    with pytest.raises(FileNotFoundError) as e:
        client.read_many([ok, "/data/no/such/file", ok])
    assert "/data/no/such/file" in str(e.value)
    with pytest.raises(IsADirectoryError):
        client.read_many(["/data/train"])
    with pytest.raises(TypeError, match="not one path"):
        client.read_many(ok)
    first = bytearray(2000)
    with pytest.raises(FileNotFoundError) as e:
        client.readinto_many([(ok, first), ("/data/none", bytearray(10)), (ok, bytearray(10))])
    assert "/data/none" in str(e.value)
    assert first[:len(cluster.files["notes/readme.txt"])] == cluster.files["notes/readme.txt"]  # filled before it
    with pytest.raises(IsADirectoryError):
        client.readinto_many([("/data/train", bytearray(10))])
    with pytest.raises(TypeError, match="item 1"):
        client.readinto_many([(ok, bytearray(10)), ok])
    with pytest.raises(ValueError, match="negative offset"):
        client.readinto_many([(ok, bytearray(10), -1)])
    with pytest.raises((TypeError, BufferError)):
        client.readinto_many([(ok, b"immutable")])


def _progress_during(call, attempts=20):
    """Whether a Python thread ran while `call` was in C++ (the GIL released). The switch
    interval is made so long that the main thread is never preempted: the other thread can
    only run while the main thread blocks with the GIL released (in `call`)."""
    count = 0
    stop = threading.Event()

    def counter():
        nonlocal count
        while not stop.is_set():
            count += 1
            time.sleep(0.0001)  # releases the GIL each time round

    old = sys.getswitchinterval()
    t = threading.Thread(target=counter)
    t.start()
    try:
        deadline = time.monotonic() + 60
        while count == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        sys.setswitchinterval(100)
        for _ in range(attempts):  # on a loaded machine the counter may not be scheduled in time
            before = count
            call()
            if count != before:
                return True
        return False
    finally:
        sys.setswitchinterval(old)
        stop.set()
        t.join()


def test_batch_reads_release_the_gil(cluster, client):
    shard = cluster.path("big/shard-0.bin")
    size = len(cluster.files["big/shard-0.bin"])
    bufs = [bytearray(size) for _ in range(8)]
    assert _progress_during(lambda: client.readinto_many([(shard, b) for b in bufs]))
    assert all(b == cluster.files["big/shard-0.bin"] for b in bufs)
    assert _progress_during(lambda: client.read_many([shard] * 8))
    # The check itself: a call that holds the GIL lets the other thread make no progress.
    assert not _progress_during(lambda: sum(range(200_000)), attempts=3)


def test_formats_numpy_tarfile_torch(cluster, client):
    np = pytest.importorskip("numpy")
    with client.open(cluster.path("formats/array.npy")) as f:
        arr = np.load(f)
    assert arr.shape == (600, 500) and arr[599, 499] == 299_999
    with client.open(cluster.path("formats/archive.tar")) as f:
        with tarfile.open(fileobj=f, mode="r:") as tar:
            members = tar.getmembers()
            assert [m.name for m in members] == [f"member{i}.bin" for i in range(5)]
            assert tar.extractfile(members[3]).read() == bytes([3]) * 40_000
    torch = pytest.importorskip("torch")
    with client.open(cluster.path("formats/model.pt")) as f:
        state = torch.load(f)
    assert state["step"] == 7 and float(state["w"].sum()) == sum(range(1000))


def test_pil_if_installed(cluster, client):
    pytest.importorskip("PIL.Image")
    from PIL import Image

    with client.open(cluster.path("formats/image.png")) as f:
        with Image.open(f) as img:
            assert img.size == (17, 9)
            assert img.convert("RGB").getpixel((3, 4)) == (10, 200, 30)


@pytest.mark.parametrize(
    "path,exc",
    [
        ("/data/no/such/file", FileNotFoundError),
        ("/elsewhere/x", FileNotFoundError),
    ],
)
def test_errors_are_python_exceptions(client, path, exc):
    with pytest.raises(exc) as e:
        client.stat(path)
    assert path in str(e.value)
    with pytest.raises(exc):
        client.open(path)
    with pytest.raises(exc):
        client.read(path)


def test_open_default_buffer_is_read_buffer(cluster, client):
    # A record reader's small header read fills READ_BUFFER (64 KiB) in one request; peek shows the
    # buffer filled by one read.
    name = "big/shard-1.bin"
    with client.open(cluster.path(name)) as f:
        f.seek(1024 * 1024 + 100)
        got = f.peek(1)
        assert len(got) == shoal.client.READ_BUFFER == 64 * 1024
        assert got == cluster.files[name][1024 * 1024 + 100:][:64 * 1024]
    with client.open(cluster.path(name), buffering=16384) as f:
        f.seek(5000)
        assert len(f.peek(1)) == 16384


def test_open_directory_is_isadirectoryerror(client):
    with pytest.raises(IsADirectoryError):
        client.open("/data/train")


def test_open_mode_other_than_rb_wb_xb_is_refused(client, cluster):
    for mode in ("ab", "r+b", "rt"):
        with pytest.raises(ValueError, match="mode"):
            client.open(cluster.path("notes/readme.txt"), mode)


def test_write_read_back_and_replace(cluster, client):
    np = pytest.importorskip("numpy")
    path = "/data/written/one.bin"
    data = os.urandom(3 * 1024 * 1024 + 5)  # spans shards of the 1 MiB shard size
    with client.open(path, "wb") as f:
        assert isinstance(f, io.BufferedIOBase) and f.writable()
        f.write(data[:10])  # buffered
        f.write(memoryview(data)[10:2 * 1024 * 1024])  # a large write goes straight through
        f.write(np.frombuffer(data[2 * 1024 * 1024:], dtype=np.uint8))  # any contiguous buffer
        assert f.tell() == len(data)
    assert f.status.size == len(data) and f.status.version
    assert client.read(path) == data
    assert client.stat(path).version == f.status.version
    w = client.create(path)  # overwrite
    w.write(b"short")
    st = w.close()
    assert st.size == 5 and client.read(path) == b"short"
    with pytest.raises(FileExistsError):
        client.open(path, "xb")
    client.delete(path)
    with pytest.raises(FileNotFoundError):
        client.stat(path)
    with pytest.raises(FileNotFoundError):
        client.delete(path)


def test_write_aborted_by_exception_abort_or_drop_is_invisible(client):
    with pytest.raises(RuntimeError):
        with client.open("/data/written/aborted.bin", "wb") as f:
            f.write(b"x" * 100)
            raise RuntimeError("stop")
    w = client.create("/data/written/aborted2.bin")
    w.write(b"y" * 100)
    w.abort()
    assert w.closed
    with pytest.warns(ResourceWarning):
        w = client.create("/data/written/dropped.bin")
        w.write(b"z")
        del w
        import gc

        gc.collect()
    for name in ("aborted.bin", "aborted2.bin", "dropped.bin"):
        assert not client.exists(f"/data/written/{name}")
    with pytest.raises(ValueError):
        f.write(b"after close")


def test_mkdir_rmdir_rename(client):
    client.mkdir("/data/dirs/a/b")
    assert client.stat("/data/dirs/a/b").is_dir
    with pytest.raises(FileExistsError):
        client.mkdir("/data/dirs/a/b")
    with client.open("/data/dirs/a/b/f.bin", "wb") as f:
        f.write(b"content")
    with pytest.raises(OSError) as e:
        client.rmdir("/data/dirs/a/b")
    assert e.value.errno == 39  # ENOTEMPTY
    with pytest.raises(IsADirectoryError):
        client.delete("/data/dirs/a/b")
    client.rename("/data/dirs/a/b/f.bin", "/data/dirs/a/g.bin")
    assert client.read("/data/dirs/a/g.bin") == b"content"
    assert not client.exists("/data/dirs/a/b/f.bin")
    client.rmdir("/data/dirs/a/b")
    client.delete("/data/dirs/a/g.bin")
    assert not client.exists("/data/dirs/a/b")


@pytest.mark.parametrize(
    "code,exc,errno_",
    [
        ("NotFound", FileNotFoundError, 2),
        ("PermissionDenied", PermissionError, 13),
        ("ReadOnly", PermissionError, 30),
        ("Timeout", TimeoutError, 110),
        ("Unavailable", ConnectionError, 111),
        ("IsDirectory", IsADirectoryError, 21),
        ("NotDirectory", NotADirectoryError, 20),
        ("AlreadyExists", FileExistsError, 17),
        ("NotEmpty", OSError, 39),
        ("Internal", OSError, 5),
    ],
)
def test_status_code_mapping(code, exc, errno_):
    with pytest.raises(exc) as e:
        _shoal._raise_status(code, "what failed: /p", "/p")
    assert e.value.errno == errno_
    assert "what failed: /p" in str(e.value)
    assert e.value.shoal_code == code


def test_unreachable_cluster_is_connection_or_timeout_error(tmp_path):
    # A config naming a port nobody listens on (bound then closed), no fallback to a store.
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    cfg = tmp_path / "dead.yaml"
    cfg.write_text(
        "cluster:\n  workers: [127.0.0.1:%d]\n"
        "mounts:\n  - {path: /data, ufs: 'file://%s/'}\n"
        "client:\n  timeout: 3s\n  connect_timeout: 200ms\n  ufs_fallback: false\n" % (port, tmp_path)
    )
    c = shoal.Client(cfg)
    with pytest.raises((ConnectionError, TimeoutError)) as e:
        c.stat("/data/x")
    assert "127.0.0.1:%d" % port in str(e.value)


def test_pickle_client_and_raw_file(cluster, client):
    c2 = pickle.loads(pickle.dumps(client))
    assert c2.config == client.config
    name = "big/shard-0.bin"
    raw = client.open(cluster.path(name), buffering=0)
    raw.seek(1234)
    raw2 = pickle.loads(pickle.dumps(raw))
    assert raw2.tell() == 1234
    assert raw2.read(100) == cluster.files[name][1234:1334]
    with client.open(cluster.path(name)) as f:
        f.seek(777)
        f2 = pickle.loads(pickle.dumps(f))
        assert f2.read(10) == cluster.files[name][777:787]


def _child_reads(client, raw, names, expected, q):
    try:
        for n in names:
            assert client.read(f"/data/{n}") == expected[n]
        raw.seek(10)
        assert raw.read(20) == expected["big/shard-0.bin"][10:30]
        q.put("ok")
    except BaseException as e:  # noqa: BLE001 - sent to the parent
        q.put(repr(e))


def test_fork_child_uses_a_fresh_client(cluster, client):
    # Used in the parent first, so the parent's C++ client has threads and connections.
    names = ["train/0/img0000.bin", "big/shard-1.bin", "notes/readme.txt"]
    for n in names:
        assert client.read(cluster.path(n)) == cluster.files[n]
    raw = client.open(cluster.path("big/shard-0.bin"), buffering=0)
    raw.read(5)
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_child_reads, args=(client, raw, names, cluster.files, q)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == ["ok", "ok"]
    assert all(p.exitcode == 0 for p in procs)
    # The parent's client still works after its children.
    assert client.read(cluster.path(names[0])) == cluster.files[names[0]]
    assert raw.read(5) == cluster.files["big/shard-0.bin"][5:10]


def test_client_from_spawned_process_by_pickle(cluster, client):
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    raw = client.open(cluster.path("big/shard-0.bin"), buffering=0)
    p = ctx.Process(target=_child_reads, args=(client, raw, ["notes/readme.txt"], cluster.files, q))
    p.start()
    assert q.get(timeout=120) == "ok"
    p.join(timeout=60)
    assert p.exitcode == 0


def test_a_token_given_in_code_names_the_user(cluster):
    """shoal.Client(token=...) sends the token instead of the config's credential, and
    keeps it across pickling (a DataLoader worker reads as the same user)."""
    import pickle
    import subprocess

    import shoal
    from conftest import SHOAL_BIN

    issued = subprocess.run(
        [SHOAL_BIN, "token", "issue", "--config", cluster.config, "--user", "alice", "--groups", "ml,vision"],
        capture_output=True, text=True, check=True, timeout=60)
    token = issued.stdout.strip().splitlines()[-1]
    c = shoal.Client(cluster.config, token=token)
    assert c.whoami() == {"user": "alice", "groups": ["ml", "vision"], "proof": "token", "via": "",
                          "may_act_for_others": False}
    name = "notes/readme.txt"
    assert c.read(cluster.path(name)) == cluster.files[name]
    assert pickle.loads(pickle.dumps(c)).whoami()["user"] == "alice"
    # Without one, the config's own credential (`shoal up` writes the cluster secret).
    assert shoal.Client(cluster.config).whoami()["proof"] == "cluster secret"
    # One character of the signature changed: its first, a whole 6 bits (a changed last
    # character can leave bits that base64url forbids, which is refused as malformed instead).
    head, sig = token.rsplit(".", 1)
    forged = head + "." + ("A" if sig[0] != "A" else "B") + sig[1:]
    with pytest.raises(PermissionError) as e:
        shoal.Client(cluster.config, token=forged).whoami()
    assert "forged" in str(e.value)
    with pytest.raises(OSError) as e:
        shoal.Client(cluster.config, token="not a token")
    assert e.value.errno == 22  # EINVAL
