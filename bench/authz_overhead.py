#!/usr/bin/python3
"""What authorization costs warm reads (issue 28: >= 0.97x of the same with it
off, native and S3 endpoint, one run).

Two `shoal up` clusters on the same files, one with `--policies` (a group's
allow on a recursive path among 1,000 other policies, audit of denials on)
and one without, read by the same user: a token in the native client
(Python SDK, a loop of `read`, short circuit on as a client on the workers'
host has it, and over TCP), and an S3 key (boto3 GetObject). Rounds alternate
between the clusters; medians of the rounds. Every byte is checked.

    /usr/bin/python3 bench/authz_overhead.py --shoal build/shoal [--files 1000] [--rounds 5]

Prints a markdown table; PYTHONPATH must reach the shoal package (build/python).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import boto3
import botocore.config
import yaml

import shoal

ap = argparse.ArgumentParser()
ap.add_argument("--shoal", required=True)
ap.add_argument("--files", type=int, default=1000)
ap.add_argument("--size", type=int, default=128 * 1024)
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--control", action="store_true",
                help="A/A: the second cluster without policies too, to see the spread of the method itself")
a = ap.parse_args()

tmp = tempfile.mkdtemp(prefix="shoal-authz-bench-")
procs = []


def policies(path):
    ps = [{"id": 1, "name": "ml reads data",
           "resources": {"path": {"values": ["/data"], "isRecursive": True}},
           "policyItems": [{"accesses": [{"type": "read", "isAllowed": True},
                                         {"type": "execute", "isAllowed": True}], "groups": ["ml"]}],
           "denyPolicyItems": [{"accesses": [{"type": "read", "isAllowed": True}], "users": ["eve"]}]}]
    for i in range(2, 1001):
        ps.append({"id": i, "name": "p%d" % i,
                   "resources": {"path": {"values": ["/data/proj%d/*.rec" % i], "isRecursive": i % 2 == 0}},
                   "policyItems": [{"accesses": [{"type": "read", "isAllowed": True}], "groups": ["g%d" % (i % 50)]}]})
    with open(path, "w") as f:
        json.dump({"serviceName": "bench", "policyVersion": 1, "policies": ps}, f)


def up(name, extra):
    state = os.path.join(tmp, name)
    creds = os.path.join(tmp, "s3-credentials")
    err = open(os.path.join(tmp, name + ".err"), "w")
    p = subprocess.Popen([a.shoal, "up", "--ufs", os.path.join(tmp, "ufs"), "--workers", "2", "--state-dir", state,
                          "--cache-size", "1GiB", "--s3", "0", "--s3-credentials", creds] + extra,
                         stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
    procs.append(p)
    config = endpoint = None
    pids = [p.pid]
    while config is None:
        line = p.stdout.readline()
        if not line:
            sys.exit("shoal up (%s) ended: %s" % (name, open(err.name).read()))
        m = re.match(r"worker \d+: \S+ id=\S+ pid=(\d+)", line)
        if m:
            pids.append(int(m.group(1)))
        if line.startswith("s3: endpoint="):
            endpoint = line.split()[1].split("=", 1)[1]
        if line.startswith("ready: config="):
            config = line.strip().split("=", 1)[1]
    token = subprocess.run([a.shoal, "token", "issue", "--config", config, "--user", "alice", "--groups", "ml"],
                           capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    return config, endpoint, token, pids


def cpu_seconds(pids):
    """utime + stime of `shoal up` (its S3 endpoint) and its workers."""
    total = 0
    for pid in pids:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


try:
    train = os.path.join(tmp, "ufs", "train")
    os.makedirs(train)
    data = {}
    for i in range(a.files):
        b = os.urandom(a.size)
        data["train/f%05d.bin" % i] = b
        with open(os.path.join(tmp, "ufs", "train/f%05d.bin" % i), "wb") as f:
            f.write(b)
    with open(os.path.join(tmp, "s3-credentials"), "w") as f:
        f.write("AKBENCHALICE bench-alice-secret-0123456789 alice ml\n")
    os.chmod(os.path.join(tmp, "s3-credentials"), 0o600)
    policies(os.path.join(tmp, "policies.json"))
    clusters = {"off": up("off", []),
                "on": up("on", [] if a.control else ["--policies", os.path.join(tmp, "policies.json")])}
    names = sorted(data)

    def native(config, token, tcp):
        cfg = config
        if tcp:  # short circuit off: a reader on another host
            cfg = config + ".tcp.yaml"
            with open(config) as f:
                c = yaml.safe_load(f)
            c.setdefault("client", {})["short_circuit"] = False
            with open(cfg, "w") as f:
                yaml.safe_dump(c, f)
        c = shoal.Client(cfg, token=token)

        def run():
            t = time.perf_counter()
            for n in names:
                if c.read("/data/" + n) != data[n]:
                    sys.exit("wrong bytes for " + n)
            return len(names) / (time.perf_counter() - t)
        return run

    def s3(endpoint):
        cl = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="AKBENCHALICE", aws_secret_access_key="bench-alice-secret-0123456789",
                          config=botocore.config.Config(signature_version="s3v4", retries={"max_attempts": 1}))

        def run():
            t = time.perf_counter()
            for n in names:
                if cl.get_object(Bucket="data", Key=n)["Body"].read() != data[n]:
                    sys.exit("wrong bytes for " + n)
            return len(names) / (time.perf_counter() - t)
        return run

    rows = [("native client, short circuit (files/s)", lambda c: native(c[0], c[2], False)),
            ("native client over TCP (files/s)", lambda c: native(c[0], c[2], True)),
            ("S3 endpoint, boto3 GetObject (files/s)", lambda c: s3(c[1]))]
    if a.control:
        print("| A/A control: both clusters without policies, %d files of %d KiB | cluster 1 | cluster 2 | "
              "2 / 1 | target |" % (a.files, a.size // 1024))
    else:
        print("| warm reads, %d files of %d KiB, user alice (group ml) | authz off | authz on (1,000 policies, "
              "audit of denials) | on / off | target |" % (a.files, a.size // 1024))
    print("|---|---|---|---|---|")
    for label, make in rows:
        runs = {k: make(v) for k, v in clusters.items()}
        for r in runs.values():
            r()  # warm: every page cached, every connection made
        got = {"off": [], "on": []}
        cpu = {"off": 0.0, "on": 0.0}
        for i in range(a.rounds):
            for k in (("off", "on") if i % 2 == 0 else ("on", "off")):
                before = cpu_seconds(clusters[k][3])
                got[k].append(runs[k]())
                cpu[k] += cpu_seconds(clusters[k][3]) - before
        off, on = statistics.median(got["off"]), statistics.median(got["on"])
        us = {k: cpu[k] / (a.rounds * len(names)) * 1e6 for k in cpu}
        print("| %s | %.0f (%.0f us CPU) | %.0f (%.0f us CPU) | %.3f | >= 0.97: %s |" % (
            label, off, us["off"], on, us["on"], on / off, "met" if on / off >= 0.97 else "missed"))
    print("\nus CPU: the workers' and `shoal up`'s (S3 endpoint) CPU per file read, from /proc, all rounds.")
    print("\n%d rounds alternated between the clusters, medians; 2 workers each; %s UTC" %
          (a.rounds, time.strftime("%Y-%m-%d %H:%M", time.gmtime())))
finally:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
    shutil.rmtree(tmp, ignore_errors=True)
