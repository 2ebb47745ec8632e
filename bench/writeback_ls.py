#!/usr/bin/python3
"""What the pending-write fan-out costs a listing on a write-back mount (issue 32).

    PYTHONPATH=build/python /usr/bin/python3 bench/writeback_ls.py [--files N] [--runs R] [--workers W]

A write-back client merges every live worker's pending writes into a listing
(one `/v1/list?pending_only=1` call per worker, in turn), so that files still
on their holders are listed. This times `Client.ls` of one directory of N files
(default 1000, made in the store directly) from one process, R times each
(default 50, interleaved), on two `shoal up` clusters of W workers (default 3)
over the same directory: write-back and cache-through. Both serve the listing
from the directory owner's metadata cache after the first (untimed) call, so
the difference is the fan-out. Medians and p90s in milliseconds.
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import shoal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHOAL = os.environ.get("SHOAL_BIN", os.path.join(ROOT, "build", "shoal"))


def up(work, name, store, workers, mode):
    state = os.path.join(work, name)
    out = open(os.path.join(work, name + ".out"), "w+")
    proc = subprocess.Popen(
        [SHOAL, "up", "--ufs", store, "--workers", str(workers), "--state-dir", state, "--write-mode", mode],
        stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        out.seek(0)
        for line in out.read().splitlines():
            if line.startswith("ready: config="):
                return proc, line[len("ready: config="):]
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    out.seek(0)
    proc.kill()
    sys.exit(f"writeback_ls: shoal up ({mode}) did not become ready: {out.read()[-500:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--workers", type=int, default=3)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="shoal-writeback-ls.")
    procs = []
    try:
        store = os.path.join(work, "store")
        os.makedirs(os.path.join(store, "dir"))
        for i in range(a.files):
            with open(os.path.join(store, "dir", "f%06d" % i), "wb") as f:
                f.write(b"x" * (i % 97))
        clients = {}
        for mode in ("cache-through", "write-back"):
            proc, config = up(work, mode, store, a.workers, mode)
            procs.append(proc)
            clients[mode] = shoal.Client(config)
        times = {m: [] for m in clients}
        for m, c in clients.items():
            assert len(c.ls("/data/dir")) == a.files  # untimed: fills the owner's cache
        for _ in range(a.runs):
            for m, c in clients.items():
                t = time.perf_counter()
                n = len(c.ls("/data/dir"))
                times[m].append((time.perf_counter() - t) * 1000)
                if n != a.files:
                    sys.exit(f"writeback_ls: {m} listed {n} files, not {a.files}")
        print(f"| `Client.ls` of {a.files} files, {a.workers} workers | median ms | p90 ms |")
        print("|---|---|---|")
        for m, v in times.items():
            v.sort()
            print(f"| {m} | {statistics.median(v):.2f} | {v[int(len(v) * 0.9) - 1]:.2f} |")
        wb = statistics.median(times["write-back"])
        ct = statistics.median(times["cache-through"])
        print(f"\nwrite-back - cache-through: {wb - ct:+.2f} ms per listing ({wb / ct:.2f}x); "
              f"{a.runs} runs each, interleaved; {os.cpu_count()} cores; "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGINT)
                p.wait(timeout=60)
            except Exception:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
