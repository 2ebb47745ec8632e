"""`shoal up` for the Python end-to-end tests (tests/*_test.py run by CTest).

    up = ShoalUp(shoal, tmp, files=12, workers=3, cache_size="128MiB", err=path)
    up.config            # the client config of its `ready:` line
    up.workers           # {address: pid}, in the order `shoal up` printed them
    up.stop()            # SIGTERM, then SIGKILL after 60 s

The dataset is FILES random 1 MiB files under TMP/ufs/train (/data/train in
the namespace).
"""
import os
import re
import signal
import subprocess


def stop_process(proc, grace=60):
    """SIGTERM, then SIGKILL after `grace` seconds; the exit status."""
    if proc is None or proc.poll() is not None:
        return None if proc is None else proc.returncode
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


class ShoalUp:
    def __init__(self, shoal, tmp, files, workers, cache_size, err):
        ufs = os.path.join(tmp, "ufs", "train")
        os.makedirs(ufs)
        for i in range(files):
            with open(os.path.join(ufs, "f%02d.bin" % i), "wb") as f:
                f.write(os.urandom(1 << 20))
        self.proc = subprocess.Popen(
            [shoal, "up", "--ufs", os.path.join(tmp, "ufs"), "--workers", str(workers), "--state-dir",
             os.path.join(tmp, "state"), "--cache-size", cache_size],
            stdout=subprocess.PIPE, stderr=open(err, "w"), text=True)
        self.workers = {}
        self.config = None
        lines = []
        while self.config is None:
            line = self.proc.stdout.readline()
            if not line:
                stop_process(self.proc)
                raise AssertionError("shoal up ended before it was ready: %s%s" % ("".join(lines), open(err).read()))
            lines.append(line)
            m = re.match(r"worker \d+: (\S+) id=\S+ pid=(\d+)", line)
            if m:
                self.workers[m.group(1)] = int(m.group(2))
            if line.startswith("ready: config="):
                self.config = line.strip().split("=", 1)[1]
        if len(self.workers) != workers:
            stop_process(self.proc)
            raise AssertionError("expected %d workers in shoal up's output: %s" % (workers, "".join(lines)))

    def stop(self):
        return stop_process(self.proc)
