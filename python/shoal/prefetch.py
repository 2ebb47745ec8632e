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
    print(pf.stats())

Staying ahead. A file the reader has reached is never fetched by the prefetch
(it is the reader's own read now; counted in `passed`). A fetch started for a
file the reader reaches before the fetch can finish saves the reader only part
of a fetch and copies the bytes twice, while the reader's own threads wait
behind it. So when the reader catches up (reaches files not cached yet), the
cursor jumps over the files it will reach by itself within one fetch
(`jumped`): margin = the reader's pace over its catch-ups (files/s) x the
quickest recent fetch (both measured), at most an eighth of the window (a
jump further leaves the prefetch's threads idle at the window's end while the
reader fetches alone: measured slower). The reader then fetches those with its
own threads while the prefetch works further ahead. Fetches in flight are
bounded by the threads and by twice the reader's rate x latency (Little's law,
with room to gain ground): a slow reader gets few fetches in flight.
(adaptive=False keeps the first version's behaviour, the cursor at the reader
and `threads` fetches in flight, for comparison.)

close() (or leaving the `with`, or a new epoch in ShoalSampler) cancels what is
not started yet and waits for the reads in flight, each bounded by the client's
deadline. A failed prefetch is counted and ignored: the reader's own read will
report the error if it persists.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import threading
import time

# Item states.
_NEW, _IN_FLIGHT, _DONE, _LEFT = 0, 1, 2, 3

_RATE_SAMPLES = 64  # advance() calls the reader's rate is measured over
_FRONT_SAMPLES = 32  # catch-ups (the reader reaching a file not cached yet) its rate at the front is measured over
_LATENCY_SAMPLES = 32  # fetches the quickest fetch is taken over
_MIN_WIDTH = 4  # fetches in flight allowed at least once the rates are known
_IDLE_WAIT = 0.5  # seconds: a backstop only, every change that allows a start notifies


@dataclasses.dataclass
class PrefetchStats:
    """What a Prefetcher did so far (Prefetcher.stats()). Counts of plan items (files).

    ready + overtaken + passed = the items the reader reached. A reader that
    outruns the prefetch shows as overtaken (reached while its fetch was in
    flight) and passed (reached before any fetch started; those are never
    fetched); late_fetches (fetches started for an item the reader had already
    reached) is 0 by design.
    """

    planned: int = 0  # items in the plan
    reached: int = 0  # items the reader has reached (advance)
    fetched: int = 0  # fetches that finished without error
    fetched_bytes: int = 0
    errors: int = 0  # fetches that failed (ignored; the reader's read reports)
    ready: int = 0  # reached after their fetch finished: cache hits
    overtaken: int = 0  # reached while their fetch was in flight
    passed: int = 0  # reached before their fetch started: left to the reader, never fetched
    jumped: int = 0  # items the cursor jumped over because the reader was about to reach them
    late_fetches: int = 0  # fetches started at or behind the reader (0 by design)
    lead_mean: float = 0.0  # files between the reader and the cursor, mean over advance()
    lead_max: int = 0
    in_flight_max: int = 0  # most fetches in flight at once
    width: int = 0  # fetches in flight allowed now
    margin: int = 0  # files past the reader the next fetch starts at, now
    fetch_secs: float = 0.0  # a fetch's latency (moving average)
    reader_rate: float = 0.0  # files/s the reader advances (over its last advances)

    @property
    def overtaken_fraction(self) -> float:
        """Share of the reached items the reader got to first (overtaken or passed)."""
        return (self.overtaken + self.passed) / self.reached if self.reached else 0.0


class Prefetcher:
    def __init__(self, client, paths, window_files=512, window_bytes=256 << 20, threads=64, adaptive=True):
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
        self._adaptive = adaptive  # False: the first version's cursor at the reader and `threads` in flight
        self._cond = threading.Condition()
        self._state = bytearray(len(self._paths))
        self._reached = 0  # items [0, _reached) the reader has reached
        self._next = 0  # the cursor: no item before it is started by the prefetch
        self._sizes = {}  # item -> bytes, for items prefetched and not reached yet
        self._ahead_bytes = 0  # sum of _sizes
        self._in_flight = 0
        self._stopped = False
        self._threads = []
        self._advances = collections.deque(maxlen=_RATE_SAMPLES)  # (time, _reached)
        self._rate = 0.0  # reader files/s
        self._catch_ups = collections.deque(maxlen=_FRONT_SAMPLES)  # times the reader reached a file not cached
        self._front_rate = 0.0  # reader files/s over its catch-ups: its pace where the prefetch has not helped
        self._latency = 0.0  # seconds per fetch, moving average (0: none finished yet)
        self._latencies = collections.deque(maxlen=_LATENCY_SAMPLES)
        self._lead_sum = 0
        self._lead_n = 0
        self._s = PrefetchStats(planned=len(self._paths))

    # Kept from the first version of the API.
    @property
    def files_done(self):
        return self._s.fetched

    @property
    def bytes_done(self):
        return self._s.fetched_bytes

    @property
    def errors(self):
        return self._s.errors

    @property
    def skipped(self):
        return self._s.passed

    def __len__(self):
        return len(self._paths)

    def start(self):
        for i in range(self._nthreads):
            t = threading.Thread(target=self._run, name=f"shoal-prefetch-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def advance(self, position):
        """The reader has reached item `position` of the plan (it reads it now; items before it are done)."""
        with self._cond:
            end = min(position + 1, len(self._paths))
            if end <= self._reached:
                return
            s = self._s
            state = self._state
            now = time.monotonic()
            for i in range(self._reached, end):
                st = state[i]
                if st == _DONE:
                    s.ready += 1
                    self._ahead_bytes -= self._sizes.pop(i, 0)
                    continue
                if st == _IN_FLIGHT:
                    s.overtaken += 1
                else:
                    s.passed += 1
                    state[i] = _LEFT
                self._catch_ups.append(now)
            moved = end - self._reached
            self._reached = end
            s.reached = end
            self._advances.append((now, end))
            t0, r0 = self._advances[0]
            if now > t0 and end > r0:
                self._rate = (end - r0) / (now - t0)
            c = self._catch_ups
            if len(c) >= 2 and c[-1] > c[0]:
                self._front_rate = (len(c) - 1) / (c[-1] - c[0])
            lead = max(0, self._next - end)
            self._lead_sum += lead
            self._lead_n += 1
            s.lead_max = max(s.lead_max, lead)
            self._cond.notify(moved)

    def stats(self) -> PrefetchStats:
        """A snapshot of the counters (PrefetchStats)."""
        with self._cond:
            s = dataclasses.replace(self._s)
            s.lead_mean = self._lead_sum / self._lead_n if self._lead_n else 0.0
            s.width = self._width()
            s.margin = self._margin()
            s.fetch_secs = self._latency
            s.reader_rate = self._rate
            return s

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
            return self._in_flight == 0 and self._startable() is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- under self._cond ------------------------------------------------------------------

    def _margin(self):
        """Files past the reader that it reaches by itself before a fetch started now could finish: its pace
        where it catches up (files it reached uncached, per second) x the quickest recent fetch (the average
        one is slowed by the prefetch's own queue: files past the quickest one's reach still gain from an
        early start); at most an eighth of the window."""
        if not self._adaptive or not self._latencies:
            return 0
        return min(self.window_files // 8, math.ceil(self._front_rate * min(self._latencies)))

    def _width(self):
        """Fetches in flight allowed: twice what keeps pace with the reader (Little's law: its rate x a
        fetch's latency), within the threads; all threads until both are measured."""
        if not self._adaptive or self._rate == 0.0 or self._latency == 0.0:
            return self._nthreads
        return max(min(_MIN_WIDTH, self._nthreads), min(self._nthreads, math.ceil(2 * self._rate * self._latency)))

    def _startable(self):
        """The item the next fetch would start (after a jump), or None when none may start now."""
        if self._stopped or self._in_flight >= self._width() or self._ahead_bytes >= self.window_bytes:
            return None
        item = max(self._next, self._reached + self._margin())
        if item >= len(self._paths) or item >= self._reached + self.window_files:
            return None
        return item

    def _finished(self):
        return self._stopped or max(self._next, self._reached) >= len(self._paths)

    def _run(self):
        while True:
            with self._cond:
                while True:
                    item = self._startable()
                    if item is not None:
                        break
                    if self._finished():
                        return
                    self._cond.wait(_IDLE_WAIT)
                s = self._s
                if item > self._next:
                    # Jump: leave the files the reader is about to reach to the reader.
                    for i in range(max(self._next, self._reached), item):
                        self._state[i] = _LEFT
                        s.jumped += 1
                    self._next = item
                if item < self._reached:
                    s.late_fetches += 1  # cannot happen: _startable starts at or past the reader
                self._next = item + 1
                self._state[item] = _IN_FLIGHT
                self._in_flight += 1
                s.in_flight_max = max(s.in_flight_max, self._in_flight)
            size, ok = 0, True
            t0 = time.monotonic()
            try:
                size = self._client.warm(self._paths[item])
            except OSError:
                ok = False
            secs = time.monotonic() - t0
            with self._cond:
                self._in_flight -= 1
                self._state[item] = _DONE if ok else _LEFT  # a failed fetch leaves the file to the reader
                if ok:
                    s.fetched += 1
                    s.fetched_bytes += size
                    self._latency = secs if self._latency == 0.0 else 0.8 * self._latency + 0.2 * secs
                    self._latencies.append(secs)
                    if item >= self._reached:  # finished in time: the reader will find it cached
                        self._sizes[item] = size
                        self._ahead_bytes += size
                else:
                    s.errors += 1
                self._cond.notify(2)
