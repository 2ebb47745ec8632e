"""PyTorch datasets over Shoal, and a sampler that prefetches the epoch's order.

    from shoal.torch import ShoalMapDataset, ShoalIterableDataset, ShoalSampler, save, load

    ds = ShoalMapDataset("/data/train", transform=decode)   # every file under the prefix
    loader = DataLoader(ds, batch_size=32, num_workers=4, sampler=ShoalSampler(ds, shuffle=True))

Both datasets hold a shoal.Client, which pickles as its config path and opens a
fresh C++ client in each DataLoader worker (fork or spawn), so num_workers > 0
and persistent_workers=True work. Items are the file's bytes, or transform(bytes).
"""

from __future__ import annotations

import os

import torch.distributed
import torch.utils.data

from .client import Client


def _client(client, config):
    return client if client is not None else Client(config)



def save(obj, path, client=None, config=None, **kwargs):
    """torch.save(obj) into a Shoal path, through the writer (the mount's or the path
    rule's write_mode: with cache-through, a load right after reads from the cache).

    Nothing is visible under `path` until the save finished: an exception from
    torch.save leaves the old file (if any) in place. Returns the new FileStatus.
    kwargs go to torch.save (e.g. pickle_protocol).
    """
    c = _client(client, config)
    with c.open(path, "wb") as f:
        torch.save(obj, f, **kwargs)
    return f.status


def load(path, client=None, config=None, map_location=None, **kwargs):
    """torch.load of a Shoal path (a file written by save() or any torch.save).

    kwargs go to torch.load (e.g. weights_only where torch has it).
    """
    c = _client(client, config)
    # The default buffer (shoal.client.READ_BUFFER): torch reads a record's small header through
    # it and the tensor's bytes straight into the tensor; a buffer of MiBs copied each tensor's
    # first MiBs through it and ran at 0.38x a local file.
    with c.open(path, "rb") as f:
        return torch.load(f, map_location=map_location, **kwargs)


def _list_paths(client, prefix_or_paths):
    if isinstance(prefix_or_paths, (str, os.PathLike)):
        return [st.path for st in client.find(prefix_or_paths)]
    return [os.fspath(p) for p in prefix_or_paths]


class ShoalMapDataset(torch.utils.data.Dataset):
    """Item i is file paths[i] (read whole), through `transform` when given.

    prefix_or_paths: a directory/prefix (every file under it, sorted) or a list of paths.
    """

    def __init__(self, prefix_or_paths, transform=None, client=None, config=None):
        self.client = _client(client, config)
        self.paths = _list_paths(self.client, prefix_or_paths)
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        data = self.client.read(self.paths[index])
        return self.transform(data) if self.transform is not None else data

    def __getitems__(self, indices):
        """A DataLoader batch (torch >= 1.13 calls this when it exists): one read_many,
        so a worker releases the GIL per batch rather than per sample."""
        items = self.client.read_many([self.paths[i] for i in indices])
        return [self.transform(d) for d in items] if self.transform is not None else items


def _rank_and_world(rank, world_size):
    if rank is not None and world_size is not None:
        return rank, world_size
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


class ShoalIterableDataset(torch.utils.data.IterableDataset):
    """Yields the files under a prefix (or a list), each once across all readers.

    With enable_sharding (the default) the files are split by distributed rank
    (torch.distributed when initialised, else $RANK/$WORLD_SIZE, or the rank and
    world_size given) and then by DataLoader worker: reader k of n takes files
    k, k+n, k+2n, ... in path order.
    """

    def __init__(self, prefix_or_paths, transform=None, client=None, config=None, enable_sharding=True, rank=None,
                 world_size=None):
        self.client = _client(client, config)
        self.paths = _list_paths(self.client, prefix_or_paths)
        self.transform = transform
        self.enable_sharding = enable_sharding
        self.rank, self.world_size = rank, world_size

    def shard(self):
        """The paths this reader (rank, DataLoader worker) yields."""
        if not self.enable_sharding:
            return list(self.paths)
        rank, world = _rank_and_world(self.rank, self.world_size)
        info = torch.utils.data.get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        if not 0 <= rank < world:
            raise ValueError(f"ShoalIterableDataset: rank {rank} is outside world_size {world}")
        return self.paths[rank * workers + worker::world * workers]

    # Files read per Client.read_many call: the GIL is released per group, not per file.
    read_batch = 16

    def __iter__(self):
        paths = self.shard()
        for start in range(0, len(paths), self.read_batch):
            for data in self.client.read_many(paths[start:start + self.read_batch]):
                yield self.transform(data) if self.transform is not None else data


class ShoalSampler(torch.utils.data.Sampler):
    """A sampler that tells the cluster its order: each epoch's permutation is prefetched.

    Iterating yields the indices of `sampler` (default: a random permutation with
    shuffle=True, else 0..n-1) and, in the background, warms the files in that
    order, at most window_files / window_bytes ahead of the index last yielded
    (the DataLoader takes indices a little ahead of the workers reading them).
    A new epoch, or the iterator being closed or dropped, cancels the previous
    epoch's prefetch. Statistics of the last epoch: `last_prefetcher.stats()`
    (files ready when reached, overtaken, passed, the lead; shoal.prefetch).
    """

    def __init__(self, dataset, sampler=None, shuffle=True, generator=None, window_files=512,
                 window_bytes=256 << 20, threads=64):
        self.dataset = dataset
        if sampler is None:
            sampler = (torch.utils.data.RandomSampler(dataset, generator=generator) if shuffle
                       else torch.utils.data.SequentialSampler(dataset))
        self.sampler = sampler
        self.window_files, self.window_bytes, self.threads = window_files, window_bytes, threads
        self.last_prefetcher = None

    def __len__(self):
        return len(self.sampler)

    def __iter__(self):
        if self.last_prefetcher is not None:
            self.last_prefetcher.close()
        order = list(iter(self.sampler))
        pf = self.dataset.client.prefetch([self.dataset.paths[i] for i in order], window_files=self.window_files,
                                          window_bytes=self.window_bytes, threads=self.threads)
        self.last_prefetcher = pf
        return _PrefetchingIterator(order, pf)

    def __getstate__(self):  # a sampler copied into a worker does not take the prefetch threads
        state = dict(self.__dict__)
        state["last_prefetcher"] = None
        return state


class _PrefetchingIterator:
    def __init__(self, order, prefetcher):
        self._order = order
        self._pf = prefetcher
        self._pos = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self._pos >= len(self._order):
            self._pf.close()
            raise StopIteration
        self._pf.advance(self._pos)
        i = self._order[self._pos]
        self._pos += 1
        return i

    def close(self):
        self._pf.close()

    def __del__(self):
        self._pf.close()
