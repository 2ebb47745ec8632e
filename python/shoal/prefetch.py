"""Clairvoyant prefetch: warm the cluster in the order a job will read.

A training job knows the order of its next epoch (the sampler's permutation).
A Prefetcher is given that order and keeps the owning workers ahead of the
reader: threads read the next files through the cluster (the workers fetch and
cache them; the bytes are dropped here), never more than `window_files` files
or `window_bytes` bytes ahead of the reader's position, and only files of the
plan, each once. When the reader then opens a file, it is a cache hit; if it
arrives while the prefetch of that file is still in flight, the worker's
single-flight fetch serves both, so the store is read once either way.

    with client.prefetch(paths) as pf:
        for i, p in enumerate(paths):
            pf.advance(i)          # the reader is at item i
            data = client.read(p)

close() (or leaving the `with`, or a new epoch in ShoalSampler) cancels what is
not started yet and waits for the reads in flight, each bounded by the client's
deadline. A failed prefetch is counted and ignored: the reader's own read will
report the error if it persists.
"""

from __future__ import annotations

import threading


class Prefetcher:
    def __init__(self, client, paths, window_files=512, window_bytes=256 << 20, threads=64):
        if window_files < 1 or window_bytes < 1 or threads < 1:
            raise ValueError(
                f"prefetch: window_files ({window_files}), window_bytes ({window_bytes}) and threads ({threads}) "
                "must be at least 1"
            )
        self._client = client
        self._paths = list(paths)
        self.window_files = window_files
        self.window_bytes = window_bytes
        self._nthreads = min(threads, window_files)
        self._cond = threading.Condition()
        self._reader = 0  # the reader's position in the plan
        self._next = 0  # the next item to prefetch
        self._sizes = {}  # item -> bytes, for items prefetched at or after the reader
        self._ahead_bytes = 0  # sum of _sizes
        self._in_flight = 0
        self._stopped = False
        self._threads = []
        self.files_done = 0
        self.bytes_done = 0
        self.errors = 0
        self.skipped = 0  # items the reader reached before they were prefetched

    def __len__(self):
        return len(self._paths)

    def start(self):
        for i in range(self._nthreads):
            t = threading.Thread(target=self._run, name=f"shoal-prefetch-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def advance(self, position):
        """The reader has reached item `position` of the plan (items before it are done)."""
        with self._cond:
            if position <= self._reader:
                return
            for i in range(self._reader, min(position, self._next)):
                self._ahead_bytes -= self._sizes.pop(i, 0)
            self._reader = position
            self._cond.notify_all()

    def close(self):
        """Cancels what has not started and waits for the reads in flight."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        for t in self._threads:
            t.join()
        self._threads = []

    def idle(self):
        """True when nothing is in flight and the window (or the plan) allows nothing more."""
        with self._cond:
            return self._in_flight == 0 and not self._may_start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _may_start(self):
        nxt = max(self._next, self._reader)
        return (
            not self._stopped
            and nxt < len(self._paths)
            and nxt < self._reader + self.window_files
            and self._ahead_bytes < self.window_bytes
        )

    def _run(self):
        while True:
            with self._cond:
                while not self._may_start():
                    if self._stopped or max(self._next, self._reader) >= len(self._paths):
                        return
                    self._cond.wait()
                if self._next < self._reader:
                    self.skipped += self._reader - self._next
                    self._next = self._reader
                item = self._next
                self._next += 1
                self._in_flight += 1
            size, ok = 0, True
            try:
                size = self._client.warm(self._paths[item])
            except OSError:
                ok = False
            with self._cond:
                self._in_flight -= 1
                if ok:
                    self.files_done += 1
                    self.bytes_done += size
                    if item >= self._reader:
                        self._sizes[item] = size
                        self._ahead_bytes += size
                else:
                    self.errors += 1
                self._cond.notify_all()
