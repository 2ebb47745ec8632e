#!/usr/bin/python3
"""The systemd units in deploy/systemd (CTest: systemd_units_test).

  tests/systemd_units_test.py SHOAL_BINARY

1. `systemd-analyze verify` accepts each unit (ExecStart pointed at the built
   binary), and warns about nothing in it.
2. The worker config shipped beside them is one `shoal worker --check-config`
   accepts.
3. Readiness as systemd sees it (Type=notify): each unit's ExecStart, run with
   NOTIFY_SOCKET set to a socket this test listens on, sends READY=1 once the
   worker serves and once the mount is up; SIGTERM (systemd's stop) ends each
   with exit 0 and the mount gone.
"""
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
UNITS = os.path.join(HERE, "..", "deploy", "systemd")
INSTALLED = "/usr/local/bin/shoal"


def fail(msg):
    print("systemd_units_test: " + msg, file=sys.stderr)
    sys.exit(1)


def exec_start(unit_text, shoal):
    line = next(l for l in unit_text.splitlines() if l.startswith("ExecStart="))
    argv = shlex.split(line[len("ExecStart="):])
    if argv[0] != INSTALLED:
        fail("ExecStart does not run " + INSTALLED + ": " + line)
    return [shoal] + argv[1:]


def verify(unit, shoal, tmp):
    text = open(os.path.join(UNITS, unit)).read()
    path = os.path.join(tmp, unit)
    with open(path, "w") as f:
        f.write(text.replace(INSTALLED, shoal))
    if shutil.which("systemd-analyze") is None:
        fail("systemd-analyze is missing (Debian's systemd package)")
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", path], capture_output=True, text=True, timeout=120)
    # Lines about this unit (others come from the host's own units) are findings.
    ours = [l for l in (r.stdout + r.stderr).splitlines() if unit in l]
    if r.returncode != 0 or ours:
        fail("systemd-analyze verify %s: exit %d\n%s%s" % (unit, r.returncode, r.stdout, r.stderr))
    print("verified: " + unit)
    return text


class Notify:
    """A datagram socket where systemd would listen for sd_notify."""

    def __init__(self, tmp):
        self.path = os.path.join(tmp, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)

    def wait_ready(self, proc, what, log, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                fail("%s exited (%d) before READY=1: %s" % (what, proc.returncode, open(log).read()[-2000:]))
            self.sock.settimeout(0.5)
            try:
                msg = self.sock.recv(4096).decode()
            except socket.timeout:
                continue
            if "READY=1" in msg.split("\n"):
                print("%s: %s" % (what, msg.replace("\n", " ")))
                return msg
        fail("%s sent no READY=1 within %ds" % (what, timeout))


def stop(proc, what):
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        fail(what + " did not stop within 60 s of SIGTERM")
    if rc != 0:
        fail("%s exited %d on SIGTERM" % (what, rc))


def main():
    shoal = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="shoal-systemd-")
    procs = []
    mnt = os.path.join(tmp, "mnt")
    try:
        worker_unit = verify("shoal-worker.service", shoal, tmp)
        fuse_unit = verify("shoal-fuse.service", shoal, tmp)

        r = subprocess.run([shoal, "worker", "--config", os.path.join(UNITS, "worker.yaml"), "--check-config"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or not r.stdout.startswith("config ok: "):
            fail("the shipped worker.yaml: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        print(r.stdout.strip())
        bad = os.path.join(tmp, "bad.yaml")
        with open(bad, "w") as f:
            f.write("worker:\n  page_size: 3KiB\n")
        r = subprocess.run([shoal, "worker", "--config", bad, "--check-config"], capture_output=True, text=True,
                           timeout=60)
        if r.returncode == 0:
            fail("--check-config accepted a page size of 3KiB")

        # The worker's ExecStart with the shipped config, its paths moved under tmp
        # and no etcd (static membership): ready once it serves.
        cfg = yaml.safe_load(open(os.path.join(UNITS, "worker.yaml")))
        os.makedirs(os.path.join(tmp, "ufs"))
        with open(os.path.join(tmp, "ufs", "hello.txt"), "w") as f:
            f.write("hello from the store\n")
        cfg["worker"]["listen"] = "127.0.0.1:0"
        cfg["worker"]["local_socket"] = os.path.join(tmp, "worker.sock")
        cfg["worker"]["cache_dirs"] = [{"path": os.path.join(tmp, "cache"), "capacity": "64MiB"}]
        cfg["mounts"][0]["ufs"] = "file://" + os.path.join(tmp, "ufs") + "/"
        del cfg["cluster"]
        config = os.path.join(tmp, "worker.yaml")
        with open(config, "w") as f:
            yaml.safe_dump(cfg, f)
        argv = [config if a == "/etc/shoal/worker.yaml" else a for a in exec_start(worker_unit, shoal)]
        notify = Notify(tmp)
        env = dict(os.environ, NOTIFY_SOCKET=notify.path)
        worker = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, "worker.log"), "w"),
                                  text=True)
        procs.append(worker)
        msg = notify.wait_ready(worker, "shoal-worker", os.path.join(tmp, "worker.log"))
        m = re.search(r"STATUS=serving on (\S+)", msg)
        if not m:
            fail("READY=1 without the address it serves on: " + msg)
        address = m.group(1)

        # The FUSE unit's ExecStart against it: ready once mounted.
        client = os.path.join(tmp, "client.yaml")
        with open(client, "w") as f:
            yaml.safe_dump({"cluster": {"workers": [address]}, "mounts": cfg["mounts"]}, f)
        os.makedirs(mnt)
        argv = [client if a == "/etc/shoal/client.yaml" else mnt if a == "/mnt/shoal" else a
                for a in exec_start(fuse_unit, shoal)]
        fuse = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(tmp, "fuse.log"), "w"))
        procs.append(fuse)
        notify.wait_ready(fuse, "shoal-fuse", os.path.join(tmp, "fuse.log"))
        got = open(os.path.join(mnt, "data", "hello.txt")).read()
        if got != "hello from the store\n":
            fail("read %r through the mount" % got)
        stop(fuse, "shoal-fuse")
        if os.path.ismount(mnt):
            fail(mnt + " is still mounted after the FUSE unit stopped")
        stop(worker, "shoal-worker")
        print("ok")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", mnt])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
