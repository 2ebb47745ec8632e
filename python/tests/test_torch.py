"""shoal.torch with real DataLoader workers (fork), and the prefetch's plan and window."""

import collections
import time

import pytest

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

import shoal  # noqa: E402
from shoal.prefetch import Prefetcher  # noqa: E402
from shoal.torch import ShoalIterableDataset, ShoalMapDataset, ShoalSampler  # noqa: E402


def _train(cluster):
    return sorted(n for n in cluster.files if n.startswith("train/"))


def _as_list(batch):
    return list(batch)


def _wait_for(cond, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_map_dataset_by_prefix_and_list(cluster, client):
    ds = ShoalMapDataset("/data/train", client=client)
    names = _train(cluster)
    assert ds.paths == ["/data/" + n for n in names]
    assert len(ds) == len(names)
    assert ds[5] == cluster.files[names[5]]
    ds2 = ShoalMapDataset(["/data/big/shard-1.bin"], transform=len, config=cluster.config)
    assert ds2[0] == 3 * 1024 * 1024
    # A DataLoader batch in one call (read_many), in the order asked, with the transform.
    assert ds.__getitems__([7, 2, 7]) == [cluster.files[names[i]] for i in (7, 2, 7)]
    ds3 = ShoalMapDataset("/data/train", transform=len, client=client)
    assert ds3.__getitems__([0, 3]) == [len(cluster.files[names[i]]) for i in (0, 3)]


def test_dataloader_two_fork_workers_reads_every_sample(cluster, client):
    # The parent's client has been used already: the workers must open their own.
    ds = ShoalMapDataset("/data/train", client=client)
    assert ds[0] == cluster.files[_train(cluster)[0]]
    ctx = torch.multiprocessing.get_context("fork")
    loader = DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context=ctx, collate_fn=_as_list,
                        shuffle=True, persistent_workers=True)
    expected = collections.Counter(cluster.files[n] for n in _train(cluster))
    for _epoch in range(2):
        got = collections.Counter(item for batch in loader for item in batch)
        assert got == expected


def test_iterable_dataset_shards_by_worker_and_rank(cluster, client):
    names = _train(cluster)
    expected = collections.Counter(cluster.files[n] for n in names)
    ctx = torch.multiprocessing.get_context("fork")
    got = collections.Counter()
    for rank in (0, 1):
        ds = ShoalIterableDataset("/data/train", client=client, rank=rank, world_size=2)
        loader = DataLoader(ds, batch_size=5, num_workers=2, multiprocessing_context=ctx, collate_fn=_as_list)
        part = collections.Counter(item for batch in loader for item in batch)
        assert sum(part.values()) in (len(names) // 2, len(names) // 2 + 1)
        got += part
    assert got == expected
    # Without sharding every reader sees everything.
    ds = ShoalIterableDataset("/data/train", client=client, enable_sharding=False)
    assert sum(1 for _ in ds) == len(names)
    with pytest.raises(ValueError, match="rank"):
        list(ShoalIterableDataset("/data/train", client=client, rank=3, world_size=2))


def _drop_cache(client):
    client.refresh("/data", recursive=True, data=True)


def _sizes(cluster, paths):
    return sum(len(cluster.files[p[len("/data/"):]]) for p in paths)


def test_prefetch_reads_only_the_plan_within_the_window(cluster, client):
    paths = ["/data/" + n for n in _train(cluster)][::3]  # a plan of every third file
    _drop_cache(client)
    before = cluster.ufs_read_bytes()
    pf = Prefetcher(client, paths, window_files=5, threads=3).start()
    try:
        assert _wait_for(lambda: pf.files_done == 5 and pf.idle())
        # The reader has not moved: nothing past the window was fetched from the store.
        assert cluster.ufs_read_bytes() - before == _sizes(cluster, paths[:5])
        for i, p in enumerate(paths):
            pf.advance(i)
            assert client.read(p) == cluster.files[p[len("/data/"):]]
    finally:
        pf.close()
    # Every planned file came from the store once; no other file did.
    assert cluster.ufs_read_bytes() - before == _sizes(cluster, paths)
    assert pf.errors == 0


def test_prefetch_byte_window(cluster, client):
    paths = ["/data/big/shard-1.bin", "/data/big/shard-0.bin", "/data/notes/readme.txt"]
    _drop_cache(client)
    before = cluster.ufs_read_bytes()
    with Prefetcher(client, paths, window_files=10, window_bytes=1, threads=1).start() as pf:
        assert _wait_for(lambda: pf.files_done == 1 and pf.idle())
        assert cluster.ufs_read_bytes() - before == 3 * 1024 * 1024  # one file, then the byte window is full
        pf.advance(1)
        assert _wait_for(lambda: pf.files_done == 2 and pf.idle())
    assert pf.files_done == 2  # closed before the reader moved on: the last file was never fetched


def test_prefetch_cancelled_when_the_epoch_ends_early(cluster, client):
    _drop_cache(client)
    before = cluster.ufs_read_bytes()
    ds = ShoalMapDataset("/data/train", client=client)
    sampler = ShoalSampler(ds, shuffle=True, window_files=4, threads=2)
    it = iter(sampler)
    first = [next(it) for _ in range(3)]
    pf = sampler.last_prefetcher
    assert _wait_for(lambda: pf.idle())
    it.close()
    done = pf.files_done
    assert done <= 3 + 4
    assert not any(t.is_alive() for t in pf._threads)
    assert cluster.ufs_read_bytes() - before == pf.bytes_done
    assert len(set(first)) == 3


def test_sampler_with_dataloader_workers_reads_everything_once_from_the_store(cluster, client):
    ds = ShoalMapDataset("/data/train", client=client)
    _drop_cache(client)
    before = cluster.ufs_read_bytes()
    sampler = ShoalSampler(ds, shuffle=True, window_files=16, threads=4)
    ctx = torch.multiprocessing.get_context("fork")
    loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2, multiprocessing_context=ctx,
                        collate_fn=_as_list)
    got = collections.Counter(item for batch in loader for item in batch)
    assert got == collections.Counter(cluster.files[n] for n in _train(cluster))
    assert sampler.last_prefetcher.errors == 0
    # Egress 1.0: the prefetch and the readers together read each file from the store once.
    assert cluster.ufs_read_bytes() - before == _sizes(cluster, ds.paths)


def test_save_then_load_round_trips_a_state_dict_from_another_client(cluster, client):
    from shoal.torch import load, save

    gen = torch.Generator().manual_seed(7)
    state = {
        "model": {"w": torch.randn(256, 1024, generator=gen), "b": torch.arange(1024, dtype=torch.int64)},
        "optimizer": {"step": 1234, "lr": 3e-4, "moments": [torch.randn(4096, generator=gen) for _ in range(8)]},
        "name": "epoch-3",
    }
    st = save(state, "/data/ckpt/rank-0.pt", client=client)
    assert st.size > 256 * 1024 * 4, st
    assert client.stat("/data/ckpt/rank-0.pt").version == st.version

    # Another process's client (a restarted rank) reads it back.
    other = shoal.Client(cluster.config)
    back = load("/data/ckpt/rank-0.pt", client=other)
    assert back["name"] == "epoch-3"
    assert back["optimizer"]["step"] == 1234
    assert torch.equal(back["model"]["w"], state["model"]["w"])
    assert torch.equal(back["model"]["b"], state["model"]["b"])
    for a, b in zip(back["optimizer"]["moments"], state["optimizer"]["moments"]):
        assert torch.equal(a, b)

    # The bytes Shoal stored are a checkpoint plain torch can read too.
    import io

    raw = other.read("/data/ckpt/rank-0.pt")
    assert torch.equal(torch.load(io.BytesIO(raw))["model"]["w"], state["model"]["w"])


def test_load_through_fsspec_and_shoal_load_match_a_local_load(cluster, client, tmp_path):
    # Many records, some smaller than the 64 KiB buffer and some spanning pages (256 KiB) and shards
    # (1 MiB in this cluster), at odd sizes: torch seeks to each record's header and reads the tensor
    # past the buffer's end straight into the tensor.
    import fsspec

    from shoal.torch import load

    gen = torch.Generator().manual_seed(11)
    state = {f"t{i}": torch.rand(n, generator=gen) for i, n in enumerate([3, 70_000, 1, 300_001, 16_383, 600_000])}
    local = tmp_path / "model.pt"
    torch.save(state, local)
    with client.open("/data/ckpt/records.pt", "wb") as f:
        f.write(local.read_bytes())
    fs = fsspec.filesystem("shoal", config=cluster.config)
    expected = torch.load(local)
    for got in (torch.load(fs.open("/data/ckpt/records.pt")), load("/data/ckpt/records.pt", client=client)):
        assert got.keys() == expected.keys()
        for k in expected:
            assert torch.equal(got[k], expected[k]), k


def test_a_failed_save_leaves_the_previous_checkpoint(cluster, client):
    from shoal.torch import load, save

    save({"v": torch.ones(16)}, "/data/ckpt/keep.pt", client=client)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("cannot pickle this")

    with pytest.raises(RuntimeError, match="cannot pickle this"):
        save({"v": torch.zeros(16), "bad": Unpicklable()}, "/data/ckpt/keep.pt", client=client)
    assert torch.equal(load("/data/ckpt/keep.pt", client=client)["v"], torch.ones(16))
    with pytest.raises(FileNotFoundError):
        load("/data/ckpt/never-saved.pt", client=client)
