"""The prefetch against a reader that outruns it: it never fetches what the reader passed, it jumps
ahead of the reader, and its counters agree with the workers' own (real 3-worker cluster)."""

import threading
import time

from shoal.prefetch import Prefetcher


def _train(cluster):
    return ["/data/" + n for n in sorted(cluster.files) if n.startswith("train/")]


def _size(cluster, path):
    return len(cluster.files[path[len("/data/"):]])


def _wait_for(cond, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class _Recorder:
    """The client as the prefetch sees it: each warm() is recorded, with whether the reader had already
    finished reading that file, and (fault injection: a slow link) delayed by `delay` seconds."""

    def __init__(self, client, delay=0.0):
        self._client = client
        self._delay = delay
        self._lock = threading.Lock()
        self._read = set()
        self.warmed = []  # paths, in the order warm() was called
        self.late = []  # paths warm() was called for after the reader had read them

    def reader_read(self, path):
        with self._lock:
            self._read.add(path)

    def calls(self):
        with self._lock:
            return len(self.warmed)

    def warm(self, path):
        with self._lock:
            self.warmed.append(path)
            if path in self._read:
                self.late.append(path)
        if self._delay:
            time.sleep(self._delay)
        return self._client.warm(path)


def _read_in_order(cluster, client, rec, pf, paths, readers):
    """`readers` threads take the plan's items in turn, as a DataLoader's workers do; every byte checked."""
    lock = threading.Lock()
    nxt = iter(range(len(paths)))
    wrong = []

    def reader():
        while True:
            with lock:
                i = next(nxt, None)
            if i is None:
                return
            pf.advance(i)
            data = client.read(paths[i])
            rec.reader_read(paths[i])
            if data != cluster.files[paths[i][len("/data/"):]]:
                wrong.append(paths[i])

    threads = [threading.Thread(target=reader) for _ in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_a_reader_faster_than_the_prefetch_gets_no_file_fetched_after_it_passed_it(cluster, client):
    paths = _train(cluster)
    client.refresh("/data", recursive=True, data=True)
    before = cluster.ufs_read_bytes()
    # Every fetch of the prefetch takes 50 ms more than the reader's own read of a file.
    rec = _Recorder(client, delay=0.05)
    with Prefetcher(rec, paths, threads=2).start() as pf:
        assert _wait_for(lambda: rec.calls() == 2)  # its first fetches (before any rate is known) are out
        _read_in_order(cluster, client, rec, pf, paths, readers=1)
    st = pf.stats()
    # The reader got there first, and the prefetch noticed.
    assert st.reached == len(paths)
    assert st.overtaken + st.passed > 0
    # Yet nothing the reader had passed was fetched: by its own count and by what it asked the client.
    assert st.late_fetches == 0
    assert rec.late == []
    # It jumped ahead of the reader instead of following behind it.
    assert st.jumped > 0
    assert st.fetched + st.errors == len(rec.warmed) == len(set(rec.warmed))
    # Every file reached is counted once: cached before, fetch in flight, or left to the reader.
    assert st.ready + st.overtaken + st.passed == len(paths)
    assert st.ready + st.overtaken == len(rec.warmed)
    assert st.passed == len(paths) - len(rec.warmed)
    # Each file came from the store once, whoever fetched it.
    assert cluster.ufs_read_bytes() - before == sum(_size(cluster, p) for p in paths)


def test_prefetch_counters_agree_with_the_workers(cluster, client):
    paths = _train(cluster)[::2]
    client.refresh("/data", recursive=True, data=True)
    before = cluster.ufs_read_bytes()
    rec = _Recorder(client)
    with Prefetcher(rec, paths, window_files=16, threads=4).start() as pf:
        _read_in_order(cluster, client, rec, pf, paths, readers=4)
        assert _wait_for(pf.idle)
    st = pf.stats()
    assert st.errors == 0 and st.late_fetches == 0 and rec.late == []
    assert st.fetched == len(rec.warmed) == len(set(rec.warmed))
    assert st.fetched_bytes == sum(_size(cluster, p) for p in rec.warmed)
    assert st.ready + st.overtaken + st.passed == st.reached == len(paths)
    assert st.passed == len(paths) - len(rec.warmed)
    assert 0 <= st.lead_mean <= st.lead_max <= len(paths)
    assert 1 <= st.in_flight_max <= 4
    # The workers read from the store exactly the planned files, each once (prefetch and reader together).
    assert cluster.ufs_read_bytes() - before == sum(_size(cluster, p) for p in paths)


def test_a_slow_reader_finds_the_files_ready(cluster, client):
    paths = _train(cluster)[1::4]
    client.refresh("/data", recursive=True, data=True)
    before = cluster.ufs_read_bytes()
    rec = _Recorder(client)
    with Prefetcher(rec, paths, window_files=8, threads=2).start() as pf:
        for i, p in enumerate(paths):
            # The reader consumes an item only once the window ahead of it is cached (a reader slower than
            # the prefetch): then every item it reaches is ready, none overtaken, none left to it.
            assert _wait_for(pf.idle)
            pf.advance(i)
            assert client.read(p) == cluster.files[p[len("/data/"):]]
    st = pf.stats()
    assert (st.ready, st.overtaken, st.passed, st.jumped) == (len(paths), 0, 0, 0)
    assert st.fetched == len(paths) and st.lead_max == 8 - 1
    assert cluster.ufs_read_bytes() - before == sum(_size(cluster, p) for p in paths)
