#!/usr/bin/python3
"""bench/python_bench.py: the Python SDK beside the native client and beside direct S3, in one run.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [--quick] [--rounds R] [--out FILE]

It makes datasets of random bytes (bench/loadgen gen, an xxh3 per file), starts
s3rver behind the WAN emulator (bench/wan_proxy: 20 ms first byte, 25 MB/s per
connection, 200 MB/s in total) and a 2-worker `shoal up` over it, and runs, in
rounds interleaved A B A B, with every byte of every read checked against the
manifest's xxh3:

  warm:  small files (whole, 8 readers) and large shards (sequential, 4 readers),
         native client (loadgen's shoal reader) vs Python (Client.open + readinto
         into one reused buffer per reader, made before any timing as loadgen's is;
         the GIL released) in the same process layout; small files also with
         Client.readinto_many (one GIL release per 8 files), a row of its own;
  cold:  a first epoch over files nobody has read, 8 readers in a random order, with
         the store 20 ms and 100 ms away (first-byte delay):
         direct S3 through the emulator (loadgen's HTTP reader, and boto3), Shoal
         from Python without prefetch, and Shoal from Python with the epoch's order
         given to the prefetch (client.prefetch), and with the first version's fixed
         prefetch (cursor at the reader); egress = bytes the emulator carried from the
         store / the dataset's bytes; the prefetch's counters (Prefetcher.stats()).
         Each cold row also runs with the machine loaded (--load N: N busy-loop
         processes for the row's duration, default 2), interleaved with the idle ones.

Medians over the rounds, and ratios, go to stdout as a markdown section, and to
--out when given (bench/run passes docs/benchmarks.md's Python section file).
"""

import argparse
import concurrent.futures
import datetime
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKET = "pybench"
READERS_SMALL, READERS_LARGE, READERS_COLD = 8, 4, 8
CHUNK = 4 << 20  # as loadgen's shoal reader: one buffer of 4 MiB per reader
# First-byte delays of the store for the cold epoch: the emulator's default, and a store
# further away, where reading ahead has more latency to hide.
COLD_DELAYS = ["20ms", "100ms"]
WARM_EPOCHS = 4  # per warm measurement, so that each lasts seconds rather than a fraction of one
BATCH_FILES = 8  # at most, per Client.readinto_many call of the batched row (more leaves readers idle at
# the end of a quick epoch: 400 files in runs of ~30 are 13 calls for 8 readers)


def log(msg):
    print(f"[python_bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load_manifest(path):
    files = []
    with open(path) as f:
        header = f.readline()
        if not header.startswith("# shoal-bench manifest"):
            raise RuntimeError(f"{path} is not a loadgen manifest")
        for line in f:
            if line.strip():
                name, size, h = line.rstrip("\n").split("\t")
                files.append((name, int(size), int(h, 16)))
    return files


class Check:
    """Counts bytes read and verified, and the first mismatch."""

    def __init__(self):
        self.lock = threading.Lock()
        self.bytes = 0
        self.errors = []

    def add(self, name, n, digest, expected_size, expected_hash):
        with self.lock:
            if n != expected_size or (digest is not None and digest != expected_hash):
                self.errors.append(f"{name}: {n} bytes, xxh3 {digest:016x}; expected {expected_size}, "
                                   f"{expected_hash:016x}")
            self.bytes += n


def run_threads(n, order, read_one):
    """n threads take items of `order` in turn (read_one(item index, thread index)); returns the
    wall time."""
    nxt = iter(range(len(order)))
    lock = threading.Lock()
    errors = []

    def worker(k):
        try:
            while True:
                with lock:
                    i = next(nxt, None)
                if i is None:
                    return
                read_one(i, k)
        except Exception as e:  # noqa: BLE001 - reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"a reader failed: {errors[0]!r}")
    return secs


_reader_buffers = []


def reader_buffers(n):
    """One CHUNK buffer per reader, made (and its pages touched) once and reused by every
    later run, as loadgen's reader makes its buffer before its first epoch: a fresh 4 MiB
    buffer per timed run paid ~1000 page faults per reader inside the timing (tens of
    microseconds each on this paravirtualised VM), which the native side never pays."""
    while len(_reader_buffers) < n:
        _reader_buffers.append(memoryview(bytearray(CHUNK)))
    return _reader_buffers[:n]


def batches_of(files, order, limit=CHUNK, most=BATCH_FILES):
    """`order` cut into runs of consecutive items whose files fit together in one reader's
    buffer (at most `most` files): the calls of Client.readinto_many."""
    out, cur, used = [], [], 0
    for i in order:
        size = files[i][1]
        if cur and (used + size > limit or len(cur) == most):
            out.append(cur)
            cur, used = [], 0
        cur.append(i)
        used += size
    if cur:
        out.append(cur)
    return out


def python_shoal_read(client, prefix, files, order, readers, prefetch=None, verify=True, batched=False):
    """Whole files, `readers` threads; -> (secs, bytes). A file that fits the reader's 4 MiB buffer
    is one Client.readinto (open and read in one call without the GIL); a larger one is streamed
    through Client.open(...).readinto() in 4 MiB pieces, as loadgen's reader does. batched=True
    (small files only): one Client.readinto_many per run of files that fit the buffer together
    (batches_of, at most BATCH_FILES), so one GIL release per 8 files instead of one per file.
    verify=False only counts the bytes (sizes still checked): for timed warm epochs whose every
    byte was checked by a verified pass in the same run, as loadgen's `--verify first`; the python
    xxhash module holds the GIL while it hashes, so a per-read check in Python measures that
    module, not the SDK."""
    import xxhash

    check = Check()
    bufs = reader_buffers(readers)
    if not verify:
        def hash_of(view):
            return None

        class Hasher:
            def update(self, view):
                pass

            def intdigest(self):
                return None
    else:
        hash_of = xxhash.xxh3_64_intdigest
        Hasher = xxhash.xxh3_64

    def read_one(i, k):
        if prefetch is not None:
            prefetch.advance(i)
        name, size, h = files[order[i]]
        buf = bufs[k]
        if size <= CHUNK:
            n = client.readinto(f"{prefix}/{name}", buf[:size])
            check.add(name, n, hash_of(buf[:n]), size, h)
            return
        x = Hasher()
        done = 0
        with client.open(f"{prefix}/{name}", buffering=0) as raw:
            while True:
                n = raw.readinto(buf[:min(CHUNK, max(size - done, 1))])
                if n == 0:
                    break
                x.update(buf[:n])
                done += n
        check.add(name, done, x.intdigest(), size, h)

    if batched:
        runs = batches_of(files, order)

        def read_run(j, k):
            items, pos = [], 0
            for i in runs[j]:
                size = files[i][1]
                items.append((f"{prefix}/{files[i][0]}", bufs[k][pos:pos + size]))
                pos += size
            counts = client.readinto_many(items)
            for i, (_, view), n in zip(runs[j], items, counts):
                name, size, h = files[i]
                check.add(name, n, hash_of(view[:n]), size, h)

        secs = run_threads(readers, runs, read_run)
    else:
        secs = run_threads(readers, order, read_one)
    if check.errors:
        raise RuntimeError(f"{len(check.errors)} files read wrong, first: {check.errors[0]}")
    return secs, check.bytes


def python_epochs(client, files, epochs, readers, batched=False):
    """python_shoal_read of each epoch's order in turn, unverified, as loadgen runs its epochs;
    -> (secs, bytes) summed over the epochs after the first, which is not timed (loadgen's
    first epoch is not either)."""
    secs = nbytes = 0
    for e, order in enumerate(epochs):
        s, b = python_shoal_read(client, "/data", files, order, readers, verify=False, batched=batched)
        if e > 0:
            secs, nbytes = secs + s, nbytes + b
    return secs, nbytes


def python_processes_read(config, prefix, files, order, nprocs):
    """The warm reads of python_shoal_read split over `nprocs` forked processes, one reader thread and
    one shoal.Client each, as PyTorch DataLoader workers read (each its own interpreter and GIL).
    Each process first reads its whole share once, verified and untimed (connections, short circuit),
    then all start together; -> (secs from the first start to the last end, bytes)."""
    import multiprocessing as mp

    import shoal

    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(nprocs)
    pipes = [ctx.Pipe(duplex=False) for _ in range(nprocs)]

    def child(k):
        results = pipes[k][1]  # a pipe: send() is written before os._exit, unlike a Queue's feeder thread
        try:
            client = shoal.Client(config)
            share = order[k::nprocs]
            python_shoal_read(client, prefix, files, sorted(set(share)), 1)
            barrier.wait(timeout=300)
            t0 = time.perf_counter()
            _, nbytes = python_shoal_read(client, prefix, files, share, 1, verify=False)
            results.send((t0, time.perf_counter(), nbytes, None))
        except BaseException as e:  # noqa: BLE001 - reported by the parent
            results.send((0, 0, 0, repr(e)))
        finally:
            os._exit(0)

    procs = [ctx.Process(target=child, args=(k,)) for k in range(nprocs)]
    for p in procs:
        p.start()
    got = []
    for k, (receiver, _) in enumerate(pipes):
        if not receiver.poll(600):
            for p in procs:
                p.kill()
            raise RuntimeError(f"reader process {k} gave no result in 600 s")
        got.append(receiver.recv())
    for p in procs:
        p.join(timeout=60)
    failed = [g[3] for g in got if g[3]]
    if failed:
        raise RuntimeError(f"a reader process failed: {failed[0]}")
    return max(g[1] for g in got) - min(g[0] for g in got), sum(g[2] for g in got)


BULK_FILES = 512  # of the small set, in a shuffled order (issue 32: 512 of 2,000 warm files)
BULK_BATCHES = [1, 8, 32, 64]
BULK_PASSES = 4  # over the BULK_FILES per measurement, after one untimed pass
LOADER_WORKERS, LOADER_BATCH = 8, 32


def sub_manifest(manifest, files, picked, path):
    """A loadgen manifest of the files `picked` (indices into `files`): the native side reads exactly
    the files Python reads."""
    with open(manifest) as f:
        header = f.readline()
    with open(path, "w") as f:
        f.write(header)
        for i in picked:
            name, size, h = files[i]
            f.write(f"{name}\t{size}\t{h:016x}\n")


def _bulk_child(config, files, orders, batch, results):
    """python_bulk_read in a fresh interpreter (spawned): see bulk_in_fresh_process."""
    try:
        import shoal

        results.send(python_bulk_read(shoal.Client(config), files, orders, batch) + (None,))
    except BaseException as e:  # noqa: BLE001 - reported by the parent
        results.send((0, 0, repr(e)))


def bulk_in_fresh_process(config, files, orders, batch):
    """python_bulk_read in a new interpreter (multiprocessing spawn), whose memory allocator has seen
    nothing but this reader. A process that has freed a large block (this one made the checkpoint)
    has glibc thresholds raised high enough to hide what a batch's memory costs a reader that never
    did: the issue-32 cliff of read_many did not show in this process at all."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_bulk_child, args=(config, files, orders, batch, sender))
    p.start()
    try:
        if not receiver.poll(600):
            raise RuntimeError("bulk reader process gave no result in 600 s")
        secs, nbytes, err = receiver.recv()
    finally:
        p.join(timeout=60)
        if p.is_alive():
            p.kill()
            p.join()
    if err:
        raise RuntimeError(f"bulk reader process failed: {err}")
    return secs, nbytes


def shoal_client(config):
    import shoal

    return shoal.Client(config)


def python_bulk_read(client, files, orders, batch, verify=False):
    """One process, one thread: each order of `orders` read whole with a loop of Client.read (batch 0)
    or Client.read_many in batches of `batch`; -> (secs summed over the orders after the first, bytes).
    Sizes always checked; verify=True checks every file's xxh3 (an untimed pass)."""
    import xxhash

    secs = nbytes = 0
    for e, order in enumerate(orders):
        paths = [f"/data/{files[i][0]}" for i in order]
        t0 = time.perf_counter()
        if batch == 0:
            got = [len(client.read(p)) for p in paths] if not verify else [client.read(p) for p in paths]
        else:
            got = []
            for j in range(0, len(paths), batch):
                part = client.read_many(paths[j:j + batch])
                got += part if verify else [len(d) for d in part]
        t = time.perf_counter() - t0
        for i, g in zip(order, got):
            name, size, h = files[i]
            n = len(g) if verify else g
            if n != size or (verify and xxhash.xxh3_64_intdigest(g) != h):
                raise RuntimeError(f"{name}: read {n} bytes (batch {batch}), expected {size} with xxh3 {h:016x}")
        if e > 0:
            secs, nbytes = secs + t, nbytes + sum(files[i][1] for i in order)
    return secs, nbytes


_per_item_class = None


def _PerItemDataset():
    """ShoalMapDataset without __getitems__: DataLoader then fetches a batch item by item. A class of
    this module (for spawned DataLoader workers), made on first use (torch is imported only then)."""
    global _per_item_class
    if _per_item_class is None:
        from shoal.torch import ShoalMapDataset

        _per_item_class = type("PerItemDataset", (ShoalMapDataset,), {"__getitems__": None,
                                                                       "__module__": __name__})
        globals()["PerItemDataset"] = _per_item_class
    return _per_item_class


def __getattr__(name):  # a spawned DataLoader worker unpickling PerItemDataset
    if name == "PerItemDataset":
        return _PerItemDataset()
    raise AttributeError(name)


class _LocalFiles:
    """A map dataset over local files read with plain open(): the reference for the DataLoader rows."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            return len(f.read())


def loader_epochs(kind, config, data_dir, files, seed, epochs):
    """A PyTorch DataLoader with LOADER_WORKERS spawned workers (a fresh allocator each, see
    bulk_in_fresh_process) and batches of LOADER_BATCH over the
    small files in a shuffled order: `kind` "getitems" (ShoalMapDataset: one read_many per batch),
    "getitem" (the same dataset without __getitems__: a loop of Client.read per batch) or "open"
    (plain open() of the local source files, warm in the page cache). Items are the file sizes (the builtin len as
    transform), so the bytes are not pickled back to the parent; every epoch's sizes are checked.
    -> (secs of the epochs after the first, bytes)."""
    import torch.utils.data

    import shoal
    from shoal.torch import ShoalMapDataset

    sizes = {f"/data/{n}": s for n, s, _ in files}
    if kind == "open":
        ds = _LocalFiles([os.path.join(data_dir, n) for n, _, _ in files])
        expected = [s for _, s, _ in files]
    else:
        cls = _PerItemDataset() if kind == "getitem" else ShoalMapDataset
        ds = cls([f"/data/{n}" for n, _, _ in files], transform=len, client=shoal.Client(config))
        expected = [sizes[p] for p in ds.paths]
    g = torch.Generator()
    g.manual_seed(seed)
    loader = torch.utils.data.DataLoader(ds, batch_size=LOADER_BATCH, shuffle=True, generator=g,
                                         num_workers=LOADER_WORKERS, persistent_workers=True,
                                         multiprocessing_context="spawn", collate_fn=list)
    secs = nbytes = 0
    try:
        for e in range(epochs + 1):
            t0 = time.perf_counter()
            got = [n for b in loader for n in b]
            t = time.perf_counter() - t0
            if sorted(got) != sorted(expected):
                raise RuntimeError(f"DataLoader ({kind}) returned wrong sizes")
            if e > 0:
                secs, nbytes = secs + t, nbytes + sum(got)
    finally:
        del loader  # its workers end with it
    return secs, nbytes


def bulk_rows(args, config, client, manifests, files, data_dir, work, add):
    """The batch API beside the loop it replaces (1 process; 8 DataLoader worker processes), and
    torch.load of a checkpoint beside a local file."""
    if args.checkpoint_only:
        checkpoint_rows(args, client, data_dir, add)
        return
    small = files["small"]
    picked = random.Random(5).sample(range(len(small)), min(BULK_FILES, len(small)))
    sub = os.path.join(work, "bulk.manifest")
    sub_manifest(manifests["small"], small, picked, sub)
    log("bulk: verified pass of read and read_many")
    python_bulk_read(client, small, [picked], 0, verify=True)
    for b in BULK_BATCHES:
        python_bulk_read(client, small, [picked], b, verify=True)
    loadgen_run(args.build, sub, f"shoal:{config}:", "whole", 1, 1)  # verified
    # The same client config with the short circuit off: every read over TCP to the workers.
    import yaml

    with open(config) as f:
        tcp = yaml.safe_load(f)
    tcp.setdefault("client", {})["short_circuit"] = False
    tcp_config = os.path.join(work, "client-tcp.yaml")
    with open(tcp_config, "w") as f:
        yaml.safe_dump(tcp, f)
    python_bulk_read(shoal_client(tcp_config), small, [picked], 32, verify=True)
    nfiles = len(picked)
    for r in range(1, args.rounds + 1):
        log(f"bulk round {r}/{args.rounds}")
        rnd = random.Random(200 + r)
        orders = [rnd.sample(picked, nfiles) for _ in range(BULK_PASSES + 1)]
        sides = ["native", "loop"] + [f"b{b}" for b in BULK_BATCHES] + ["tcp_loop", "tcp_b32"]
        rnd.shuffle(sides)
        for side in sides:
            if side.startswith("tcp_"):
                s, b = bulk_in_fresh_process(tcp_config, small, orders, 0 if side == "tcp_loop" else 32)
                add(f"bulk_{side}", s, b, nfiles * BULK_PASSES)
            elif side == "native":
                s, b = loadgen_run(args.build, sub, f"shoal:{config}:", "whole", 1, 200 + r, epochs=BULK_PASSES + 1,
                                   verify="first")
                add("bulk_native", s, b, nfiles * BULK_PASSES)
            else:
                s, b = bulk_in_fresh_process(config, small, orders, 0 if side == "loop" else int(side[1:]))
                add(f"bulk_{side}", s, b, nfiles * BULK_PASSES)
        kinds = ["getitems", "getitem", "open"]
        rnd.shuffle(kinds)
        for kind in kinds:
            s, b = loader_epochs(kind, config, data_dir, small, 300 + r, 2)
            add(f"loader_{kind}", s, b, len(small) * 2)
    checkpoint_rows(args, client, data_dir, add)


CHECKPOINT_NAME = "ckpt/model.pt"


def make_checkpoint(data_dir, total_bytes):
    """A torch.save of a state dict of random float32 tensors, about total_bytes, in the data dir
    (uploaded with the datasets): 100 tensors, as a model's layers."""
    import torch

    g = torch.Generator()
    g.manual_seed(7)
    n = max(1, total_bytes // 4 // 100)
    state = {f"layer{i}.weight": torch.rand(n, generator=g) for i in range(100)}
    path = os.path.join(data_dir, CHECKPOINT_NAME)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(state, path)
    return path


def _checkpoint_loaders(config, local, shoal_path):
    """name -> a function doing one torch.load of the checkpoint that way."""
    import fsspec
    import torch

    import shoal
    import shoal.torch

    client = shoal.Client(config)
    fs = fsspec.filesystem("shoal", config=config)
    return {
        "local": lambda: torch.load(local),
        "fsspec": lambda: torch.load(fs.open(shoal_path)),
        "shoal_load": lambda: shoal.torch.load(shoal_path, client=client),
        "buf8k": lambda: torch.load(client.open(shoal_path, buffering=8 << 10)),
        "buf4m": lambda: torch.load(client.open(shoal_path, buffering=4 << 20)),
    }


def _checkpoint_child(name, config, local, shoal_path, results):
    try:
        load = _checkpoint_loaders(config, local, shoal_path)[name]
        t0 = time.perf_counter()
        load()
        results.send((time.perf_counter() - t0, None))
    except BaseException as e:  # noqa: BLE001 - reported by the parent
        results.send((0, repr(e)))


def checkpoint_in_fresh_process(name, config, local, shoal_path):
    """One torch.load in a new interpreter (spawn), timed there: a restore, every tensor's memory
    new to the process."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_checkpoint_child, args=(name, config, local, shoal_path, sender))
    p.start()
    try:
        if not receiver.poll(600):
            raise RuntimeError("checkpoint process gave no result in 600 s")
        secs, err = receiver.recv()
    finally:
        p.join(timeout=60)
        if p.is_alive():
            p.kill()
            p.join()
    if err:
        raise RuntimeError(f"torch.load ({name}) failed: {err}")
    return secs


def checkpoint_rows(args, client, data_dir, add):
    """torch.load of the checkpoint: a local warm file (reference), torch.load(fs.open(path)) with the
    default buffer, shoal.torch.load, and the buffers before issue 32 (io's 8 KiB default, and the 4 MiB
    shoal.torch.load used); each in a fresh process, and again in this one (its later loads reuse the
    memory of earlier ones). Every way compared with the local load, tensor by tensor, once."""
    import torch

    local = os.path.join(data_dir, CHECKPOINT_NAME)
    size = os.path.getsize(local)
    shoal_path = f"/data/{CHECKPOINT_NAME}"
    step = 8 << 20  # warmed in 8 MiB ranges from 8 threads: the emulator caps each connection
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda off: client.read(shoal_path, off, step), range(0, size, step)))
    loads = _checkpoint_loaders(client.config, local, shoal_path)
    ref = loads["local"]()
    for name, load in loads.items():
        got = load()
        if got.keys() != ref.keys() or not all(torch.equal(got[k], ref[k]) for k in ref):
            raise RuntimeError(f"torch.load ({name}) of the checkpoint differs from the local file")
    del ref, got
    for r in range(1, args.rounds + 1):
        log(f"checkpoint round {r}/{args.rounds}")
        names = list(loads)
        random.Random(400 + r).shuffle(names)
        for name in names:
            add(f"ckpt_fresh_{name}", checkpoint_in_fresh_process(name, client.config, local, shoal_path), size, 1)
        for name in names:
            t0 = time.perf_counter()
            loads[name]()
            add(f"ckpt_same_{name}", time.perf_counter() - t0, size, 1)


def boto3_read(endpoint, files, order, readers):
    """Whole files with boto3 GetObject, one client shared by `readers` threads; verified."""
    import boto3
    import botocore.config
    import xxhash

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER",
                      region_name="us-east-1",
                      config=botocore.config.Config(max_pool_connections=readers, s3={"addressing_style": "path"}))
    check = Check()

    def read_one(i, k):
        name, size, h = files[order[i]]
        body = s3.get_object(Bucket=BUCKET, Key=name)["Body"].read()
        check.add(name, len(body), xxhash.xxh3_64_intdigest(body), size, h)

    secs = run_threads(readers, order, read_one)
    if check.errors:
        raise RuntimeError(f"{len(check.errors)} files read wrong, first: {check.errors[0]}")
    return secs, check.bytes


def loadgen_run(build, manifest, spec, workload, readers, seed, epochs=1, verify="all"):
    """One loadgen run; (secs, bytes) summed over its epochs after the first when there are
    several (warm rows: the native client is then warm, connections and short circuit, as the
    long-lived Python client is), else of its one epoch."""
    out = subprocess.run([f"{build}/bench/loadgen", "run", "--manifest", manifest, "--reader", spec, "--workload",
                          workload, "--readers", str(readers), "--seed", str(seed), "--verify", verify, "--label",
                          "native", "--epochs", str(epochs)], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"loadgen failed: {out.stderr.strip()[-500:]}")
    results = [dict(f.split("=", 1) for f in line.split()[1:] if "=" in f) for line in out.stdout.splitlines()
               if line.startswith("result ")]
    if len(results) != epochs:
        raise RuntimeError(f"loadgen printed {len(results)} results for {epochs} epochs: {out.stdout[-300:]}")
    counted = results[1:] if epochs > 1 else results
    return sum(float(r["secs"]) for r in counted), sum(int(r["bytes"]) for r in counted)


def proxy_counters(stats_addr):
    """(bytes from the store, requests to it) so far, as the WAN emulator counted them."""
    with urllib.request.urlopen(f"http://{stats_addr}/", timeout=10) as r:
        kv = dict(f.split("=", 1) for f in r.read().decode().split() if "=" in f)
    return int(kv["bytes_down"]), int(kv["requests"])


def upload(endpoint, data_dir, prefixes):
    import boto3
    import botocore.config

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER",
                      region_name="us-east-1", config=botocore.config.Config(max_pool_connections=16))
    s3.create_bucket(Bucket=BUCKET)
    names = []
    for p in prefixes:
        for d, _, fs in os.walk(os.path.join(data_dir, p)):
            names += [os.path.relpath(os.path.join(d, f), data_dir) for f in fs]
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda n: s3.upload_file(os.path.join(data_dir, n), BUCKET, n), names))


def journaled_cache_fs(work):
    """A fresh ext4 as mkfs.ext4 makes it (with a journal) on a sparse loop file under `work`, mounted
    for the run (root only); returns its mount point. This VM's root file system is ext4 without a
    journal, where creating a file scans the inodes deleted in the last ~30 s, which costs a
    page-file-per-page store far more than on a cache disk formatted with the defaults
    (bench/services.sh, cache_fs_dir; docs/benchmarks.md)."""
    if os.geteuid() != 0:
        sys.exit("python_bench: --cache-fs ext4 needs root (a loop mount)")
    img, mnt = os.path.join(work, "cache-fs.img"), os.path.join(work, "cache-fs")
    os.mkdir(mnt)
    with open(img, "wb") as f:
        f.truncate(16 << 30)
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    subprocess.run(["mount", "-o", "loop", img, mnt], check=True)
    return mnt


class BusyLoad:
    """n processes spinning a busy loop until stop(): a machine loaded by other work."""

    def __init__(self, n):
        self._procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self._procs:
            p.kill()
            p.wait()
        self._procs = []


def prefetch_summary(stats):
    def med(f):
        return median([f(s) for s in stats])

    return (f"reader first on {100 * med(lambda s: s.overtaken_fraction):.0f}% (in flight "
            f"{100 * med(lambda s: s.overtaken / max(s.reached, 1)):.0f}%, passed "
            f"{100 * med(lambda s: s.passed / max(s.reached, 1)):.0f}%), jumped {med(lambda s: s.jumped):.0f}, "
            f"late {med(lambda s: s.late_fetches):.0f}, lead {med(lambda s: s.lead_mean):.0f} files "
            f"(max {med(lambda s: s.lead_max):.0f}), in flight ≤ {med(lambda s: s.in_flight_max):.0f}")


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small datasets, a few minutes")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", help="also write the markdown section to this file")
    ap.add_argument("--warm-only", action="store_true", help="only the warm rows (no cold epochs): for profiling")
    ap.add_argument("--checkpoint-only", action="store_true", help="with --bulk-only: only the torch.load rows")
    ap.add_argument("--bulk-only", action="store_true",
                    help="only the batch-API and torch.load rows (read_many vs read, DataLoader, checkpoint)")
    ap.add_argument("--build", default=os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--cold-only", action="store_true", help="only the cold rows (direct, no prefetch, prefetch)")
    ap.add_argument("--load", type=int, default=2, metavar="N",
                    help="the cold rows also run with N busy-loop processes loading the machine, interleaved with "
                         "the idle ones (0: no loaded rows)")
    ap.add_argument("--cache-fs", choices=["here", "ext4"], default="here",
                    help="the workers' caches under the work dir (here), or on a journaled ext4 made for the run")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    import shoal
    from shoal.testing import Servers

    small_n, large_n, cold_n = (400, 2, 300) if args.quick else (2000, 4, 1000)
    # The quick datasets are read in ~20 ms (2 shards) and ~40 ms (400 files) an epoch: more epochs,
    # so that a measurement is not a tenth of a second, which this shared machine's noise swamps.
    warm_epochs = WARM_EPOCHS * 4 if args.quick else WARM_EPOCHS
    large_size = "64MiB"
    work = tempfile.mkdtemp(prefix="shoal-pybench-")
    data = os.path.join(work, "data")
    lg = f"{args.build}/bench/loadgen"
    caches = journaled_cache_fs(work) if args.cache_fs == "ext4" else work
    try:
        with Servers(work) as servers:
            manifests = {}

            def gen(prefix, count, lo, hi, seed):
                manifests[prefix] = os.path.join(work, prefix + ".manifest")
                subprocess.run([lg, "gen", "--root", data, "--prefix", prefix, "--count", str(count), "--min-size", lo,
                                "--max-size", hi, "--seed", str(seed), "--manifest", manifests[prefix]], check=True,
                               stdout=subprocess.DEVNULL)

            log("making datasets")
            gen("small", small_n, "110KiB", "150KiB", 31)
            if not args.bulk_only and not args.cold_only:
                gen("large", large_n, large_size, large_size, 32)
            if not args.bulk_only:
                for r in range(1, args.rounds + 1):
                    gen(f"cold{r}", cold_n, "110KiB", "150KiB", 40 + r)
            manifests_and_ckpt = list(manifests)
            if not args.cold_only:
                log("making the checkpoint")
                make_checkpoint(data, (100 << 20) if args.quick else (500 << 20))
                manifests_and_ckpt.append(os.path.dirname(CHECKPOINT_NAME))
            os.mkdir(os.path.join(work, "s3"))
            s3_endpoint = servers.start_s3rver(ROOT, os.path.join(work, "s3"))
            log("uploading to s3rver")
            upload(s3_endpoint, data, manifests_and_ckpt)
            port = s3_endpoint.rsplit(":", 1)[1]
            def start_site(delay):
                """A WAN emulator with this first-byte delay in front of s3rver, and a cluster behind it."""
                proxy, line = servers.start(f"wan_proxy-{delay}", [f"{args.build}/bench/wan_proxy", "--upstream",
                                                                   f"127.0.0.1:{port}", "--delay", delay],
                                            "listening: ")
                endpoint = "http://127.0.0.1:" + line.rsplit(":", 1)[1].strip()
                stats = proxy.wait_for_line("stats: ").split("stats: ", 1)[1].strip()
                config = servers.start_shoal_up(
                    f"{args.build}/shoal", f"s3://{BUCKET}/", os.path.join(work, f"state-{delay}"),
                    ["--workers", "2", "--cache-size", "8GiB", "--cache-dir", os.path.join(caches, f"cache-{delay}"),
                     "--consistency", "ttl=1h", "-o", f"endpoint={endpoint}", "-o", "region=us-east-1", "-o",
                     "path_style=true", "-o", "credentials=anonymous"], name=f"shoal-up-{delay}")
                return endpoint, stats, config, shoal.Client(config)

            sites = {d: start_site(d) for d in (COLD_DELAYS[:1] if args.bulk_only else COLD_DELAYS)}
            _, _, config, client = sites[COLD_DELAYS[0]]
            files = {p: load_manifest(m) for p, m in manifests.items()}
            res = {}

            def add(key, secs, nbytes, nfiles):
                res.setdefault(key, []).append((nbytes / secs / 1e6, nfiles / secs))
                log(f"{key}: {nbytes / secs / 1e6:.1f} MB/s, {nfiles / secs:.1f} files/s")

            log("warming small and large")
            loadgen_run(args.build, manifests["small"], f"shoal:{config}:", "whole", READERS_SMALL, 1)
            if args.cold_only:
                pass
            elif args.bulk_only:
                bulk_rows(args, config, client, manifests, files, data, work, add)
            else:
                loadgen_run(args.build, manifests["large"], f"shoal:{config}:", "seq", READERS_LARGE, 1)
                # Every byte Python reads is checked once in this run (untimed); the timed warm epochs
                # below read without a per-read checksum on both sides (loadgen --verify first).
                python_shoal_read(client, "/data", files["small"], list(range(small_n)), READERS_SMALL)
                python_shoal_read(client, "/data", files["small"], list(range(small_n)), READERS_SMALL, batched=True)
                python_shoal_read(client, "/data", files["large"], list(range(large_n)), READERS_LARGE)
                for r in range(1, args.rounds + 1):
                    log(f"warm round {r}/{args.rounds}")
                    # Epochs in a fresh random order each, as loadgen's epochs are; like loadgen, Python reads
                    # them one after another (all readers finish an epoch before the next starts) and its
                    # first epoch is not timed, as loadgen's is not.
                    rnd = random.Random(r)
                    epochs_small = [rnd.sample(range(small_n), small_n) for _ in range(warm_epochs + 1)]
                    epochs_large = [rnd.sample(range(large_n), large_n) for _ in range(warm_epochs + 1)]
                    sides = ["native", "python"] if r % 2 else ["python", "native"]
                    for side in sides:
                        if side == "native":
                            s, b = loadgen_run(args.build, manifests["small"], f"shoal:{config}:", "whole", READERS_SMALL,
                                               r, epochs=warm_epochs + 1, verify="first")
                            add("warm_small_native", s, b, small_n * warm_epochs)
                            s, b = loadgen_run(args.build, manifests["large"], f"shoal:{config}:", "seq", READERS_LARGE, r,
                                               epochs=warm_epochs + 1, verify="first")
                            add("warm_large_native", s, b, large_n * warm_epochs)
                        else:
                            s, b = python_epochs(client, files["small"], epochs_small, READERS_SMALL)
                            add("warm_small_python", s, b, small_n * warm_epochs)
                            s, b = python_epochs(client, files["small"], epochs_small, READERS_SMALL, batched=True)
                            add("warm_small_python_batched", s, b, small_n * warm_epochs)
                            s, b = python_processes_read(config, "/data", files["small"],
                                                         [i for e in epochs_small[1:] for i in e], READERS_SMALL)
                            add("warm_small_python_procs", s, b, small_n * warm_epochs)
                            s, b = python_epochs(client, files["large"], epochs_large, READERS_LARGE)
                            add("warm_large_python", s, b, large_n * warm_epochs)

                bulk_rows(args, config, client, manifests, files, data, work, add)

            egress, pf_stats = {}, {}
            cold = [] if args.warm_only or args.bulk_only else sites.items()
            for delay, (proxy_endpoint, stats_addr, _, site_client) in cold:
                for r in range(1, args.rounds + 1):
                    prefix = f"cold{r}"
                    fl = files[prefix]
                    total = sum(f[1] for f in fl)
                    order = random.Random(100 + r).sample(range(cold_n), cold_n)
                    sides = ["direct", "boto3", "shoal", "shoal_prefetch", "shoal_prefetch_fixed"]
                    if args.load > 0:
                        sides += [s + "_loaded" for s in ("direct", "shoal", "shoal_prefetch", "shoal_prefetch_fixed")]
                    random.Random(r).shuffle(sides)
                    for key in sides:
                        log(f"cold {delay} round {r}/{args.rounds}: {key}")
                        side = key.removesuffix("_loaded")
                        if side.startswith("shoal"):
                            site_client.refresh(f"/data/{prefix}", recursive=True, data=True)  # nobody has read it
                        before = proxy_counters(stats_addr)
                        with BusyLoad(args.load if key.endswith("_loaded") else 0):
                            if side == "direct":
                                s, b = loadgen_run(args.build, manifests[prefix], f"http:{proxy_endpoint}/{BUCKET}",
                                                   "whole", READERS_COLD, 100 + r)
                            elif side == "boto3":
                                s, b = boto3_read(proxy_endpoint, fl, order, READERS_COLD)
                            elif side == "shoal":
                                s, b = python_shoal_read(site_client, "/data", fl, order, READERS_COLD)
                            else:
                                from shoal.prefetch import Prefetcher

                                paths = [f"/data/{fl[i][0]}" for i in order]
                                # The defaults, as ShoalSampler's; _fixed: the first version's fixed cursor and width.
                                adaptive = side != "shoal_prefetch_fixed"
                                with Prefetcher(site_client, paths, adaptive=adaptive).start() as pf:
                                    s, b = python_shoal_read(site_client, "/data", fl, order, READERS_COLD, prefetch=pf)
                                st = pf.stats()
                                pf_stats.setdefault(f"cold{delay}_{key}", []).append(st)
                                log(f"prefetch: {st}")
                        add(f"cold{delay}_{key}", s, b, cold_n)
                        after = proxy_counters(stats_addr)
                        egress.setdefault(f"{delay}_{key}", []).append(
                            ((after[0] - before[0]) / total, (after[1] - before[1]) / cold_n))
    finally:
        if caches != work:
            subprocess.run(["umount", caches], check=False)
        shutil.rmtree(work, ignore_errors=True)

    section = report(res, egress, pf_stats, args)
    print(section)
    if args.out:
        with open(args.out, "w") as f:
            f.write(section)


def report(res, egress, pf_stats, args):
    def m(key, i):
        return median([x[i] for x in res.get(key, [])])

    def ratio(a, b, i):
        return m(a, i) / m(b, i) if m(b, i) else float("nan")

    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    lines = [
        "## Python SDK",
        "",
        f"`bench/python_bench.py{' --quick' if args.quick else ''}`, {datetime.date.today()}, {os.cpu_count()} cores, "
        f"{mem:.0f} GiB, Linux {platform.release()}, Python {platform.python_version()}. Medians of {args.rounds} "
        "rounds run interleaved; every byte checked against the manifest's xxh3. A 2-worker `shoal up` on this host "
        "over s3rver behind the WAN emulator (20 ms first byte, or 100 ms in the last rows; 25 MB/s per connection, "
        "200 MB/s in total). s3rver runs on the same 2 cores (direct reads of these files reach about 2.4x the "
        "8-reader rate with 64 readers, idle), so the cold rows share the cores with the store. The workers' caches: "
        + ("on a journaled ext4 made for the run (`--cache-fs ext4`)." if args.cache_fs == "ext4"
           else "under the work dir, on this machine's root file system."),
        "",
        "| workload | contender | MB/s | files/s | vs reference | egress | store requests per file |",
        "|---|---|---|---|---|---|---|",
    ]

    def row(workload, key, label, ref_key=None, ref_label="", eg=None, ref2_key=None, ref2_label=""):
        if key not in res:
            return
        vs = f"{ratio(key, ref_key, 1):.2f}× {ref_label}" if ref_key else "reference"
        if ref2_key:
            vs += f"; {ratio(key, ref2_key, 1):.2f}× {ref2_label}"
        if key in pf_stats:
            vs += "; " + prefetch_summary(pf_stats[key])
        e = f"{median([x[0] for x in egress[eg]]):.2f}" if eg in egress else ""
        q = f"{median([x[1] for x in egress[eg]]):.2f}" if eg in egress else ""
        lines.append(f"| {workload} | {label} | {m(key, 0):.1f} | {m(key, 1):.1f} | {vs} | {e} | {q} |")

    row("warm small files (110-150 KiB, 8 readers)", "warm_small_native", "native client (loadgen)")
    row("warm small files (110-150 KiB, 8 readers)", "warm_small_python", "Python readinto", "warm_small_native",
        "native (goal ≥ 0.7)")
    row("warm small files (110-150 KiB, 8 readers)", "warm_small_python_batched",
        f"Python readinto_many (≤ {BATCH_FILES} files a call)", "warm_small_native", "native (goal ≥ 0.7)")
    row("warm small files (110-150 KiB, 8 readers)", "warm_small_python_procs",
        "Python readinto, 8 processes (as DataLoader workers)", "warm_small_native", "native (goal ≥ 0.7)")
    row("warm large shards (64 MiB, 4 readers)", "warm_large_native", "native client (loadgen)")
    row("warm large shards (64 MiB, 4 readers)", "warm_large_python", "Python readinto", "warm_large_native",
        "native (goal ≥ 0.8)")
    w = f"warm small files, {BULK_FILES} of them shuffled, 1 process, 1 thread"
    row(w, "bulk_native", "native client, a loop of OpenFile + Pread (loadgen, 1 reader)")
    row(w, "bulk_loop", "Python, a loop of Client.read", "bulk_native", "native")
    for b in BULK_BATCHES:
        row(w, f"bulk_b{b}", f"Python, Client.read_many in batches of {b}", "bulk_loop",
            "the read loop (goal ≥ 1.0; ≥ 0.8 at 32)" if b == 32 else "the read loop (goal ≥ 1.0)",
            ref2_key="bulk_native", ref2_label="native")
    w = f"warm small files, {BULK_FILES} of them shuffled, 1 process, 1 thread, over TCP (short circuit off)"
    row(w, "bulk_tcp_loop", "Python, a loop of Client.read")
    row(w, "bulk_tcp_b32", "Python, Client.read_many in batches of 32", "bulk_tcp_loop", "the read loop (goal ≥ 1.0)")
    w = f"warm small files, DataLoader: {LOADER_WORKERS} worker processes, batches of {LOADER_BATCH}"
    row(w, "loader_open", "plain open() of the local source files (page cache)")
    row(w, "loader_getitem", "ShoalMapDataset without __getitems__ (a read per item)", "loader_open", "open()")
    row(w, "loader_getitems", "ShoalMapDataset (__getitems__: a read_many per batch)", "loader_getitem",
        "the per-item loop (goal ≥ 1.0)", ref2_key="loader_open", ref2_label="open()")
    for where, what in (("fresh", "each load in a fresh process"), ("same", "loads repeated in one process")):
        w = f"torch.load of a {'100 MB' if args.quick else '500 MB'} checkpoint (100 float32 tensors), {what}"
        ref = f"ckpt_{where}_local"
        row(w, ref, "torch.load(local file, warm in the page cache)")
        row(w, f"ckpt_{where}_fsspec", "torch.load(fsspec.filesystem('shoal').open(path)), default buffer (64 KiB)",
            ref, "local (goal ≥ 0.8)")
        row(w, f"ckpt_{where}_shoal_load", "shoal.torch.load(path) (64 KiB buffer)", ref, "local (goal ≥ 0.8)")
        row(w, f"ckpt_{where}_buf8k", "torch.load(client.open(path)) with 8 KiB, the default before", ref, "local")
        row(w, f"ckpt_{where}_buf4m", "the same with 4 MiB, shoal.torch.load's before", ref, "local")
    for d in COLD_DELAYS:
        for sfx, what in (("", ""), ("_loaded", f", loaded: {args.load} busy processes")):
            w = f"cold first epoch, store {d} away (small files, 8 readers{what})"
            row(w, f"cold{d}_direct{sfx}", "direct S3 (loadgen HTTP)", eg=f"{d}_direct{sfx}")
            row(w, f"cold{d}_boto3{sfx}", "direct S3 (boto3 from Python)", f"cold{d}_direct{sfx}", "direct",
                f"{d}_boto3{sfx}")
            row(w, f"cold{d}_shoal{sfx}", "Shoal from Python, no prefetch", f"cold{d}_direct{sfx}", "direct",
                f"{d}_shoal{sfx}")
            row(w, f"cold{d}_shoal_prefetch{sfx}", "Shoal from Python, sampler-driven prefetch", f"cold{d}_direct{sfx}",
                "direct (goal ≥ 1.5, egress ≤ 1.01)", f"{d}_shoal_prefetch{sfx}", f"cold{d}_shoal{sfx}",
                "no prefetch (goal ≥ 1.0)")
            row(w, f"cold{d}_shoal_prefetch_fixed{sfx}", "the same with the first version's fixed prefetch "
                "(cursor at the reader, 64 fetches in flight)", f"cold{d}_direct{sfx}", "direct",
                f"{d}_shoal_prefetch_fixed{sfx}", f"cold{d}_shoal{sfx}", "no prefetch")
    lines += [
        "",
        "The prefetch is given the epoch's order (as ShoalSampler does) with its defaults: at most 512 files / 256 MiB "
        "ahead of the readers, 64 threads; the workers fetch each file once (egress above). Its counters "
        "(`Prefetcher.stats()`, medians over the rounds): *reader first* = files the reader reached before their "
        "prefetch finished (*in flight*: while it ran; *passed*: before it started, never fetched by the prefetch), "
        "*jumped* = files the cursor skipped because the reader was about to reach them, *late* = fetches started "
        "for a file the reader had reached, *lead* = files between the reader and the prefetch cursor (mean over "
        f"the reader's steps). Loaded rows: {args.load} processes spinning a busy loop (`nice` 0) for the whole "
        "measurement, interleaved with the idle rows in the same rounds. Each warm measurement is "
        f"{WARM_EPOCHS * 4 if args.quick else WARM_EPOCHS} epochs, after one untimed epoch, on both sides, "
        "epoch after epoch (Python's as loadgen's: every reader ends one before the next starts). The native warm rows are "
        "loadgen's Shoal reader (4 MiB buffer per reader; each run's epochs after its first, so that its client is warm "
        "as the long-lived Python one is), the Python rows the same reads from Python threads: "
        "`Client.readinto(path, buffer)` for a small file, `Client.open(...).readinto()` in 4 MiB pieces for a shard, "
        "into one 4 MiB buffer per reader made before any timing (as loadgen's). The `readinto_many` row reads the "
        f"same files with `Client.readinto_many([(path, buffer), ...])`: as many consecutive files of the order as "
        f"fit the reader's buffer together (at most {BATCH_FILES}) per call, one GIL release per call. "
        "The timed warm epochs carry no per-read checksum on either side: every byte was checked once earlier in the "
        "run (loadgen's first epoch, `--verify first`; one untimed verified Python pass per API), because the python xxhash "
        "module holds the GIL while it hashes, so a checksum per read in Python timed that module, not the SDK. "
        "The cold rows check every read. The 8-process row reads the same files from 8 forked processes, one thread "
        "and one `shoal.Client` each, as PyTorch DataLoader workers do (one GIL per process); each process reads its "
        "share once verified and untimed, then all start together.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
