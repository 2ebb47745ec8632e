#!/usr/bin/python3
"""The Grafana dashboard against a real Prometheus (CTest: grafana_dashboard_test).

  tests/grafana_dashboard_test.py SHOAL_BINARY

Starts `shoal up` with 3 workers and Debian's `prometheus` scraping their
/metrics every second (job "shoal", as the dashboard expects), reads files
through the cluster (cold, then warm), and evaluates every PromQL expression
of every panel in deploy/grafana/*.json through Prometheus's HTTP API
(Grafana's $__rate_interval as 30s): each must be accepted and return data.
"""
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from shoal_up import ShoalUp, stop_process

HERE = os.path.dirname(os.path.abspath(__file__))
DASHBOARDS = glob.glob(os.path.join(HERE, "..", "deploy", "grafana", "*.json"))
PROMETHEUS = "/usr/bin/prometheus"


def fail(msg):
    raise AssertionError(msg)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def query(base, expr):
    body = json.loads(get(base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    if body.get("status") != "success":
        fail("prometheus refused %r: %s" % (expr, body))
    return body["data"]["result"]


def wait_for(what, check, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass  # not listening yet
        time.sleep(0.2)  # a poll interval
    fail("timed out waiting for " + what)


def variables(dash):
    """The dashboard's own text variables ($price), as Grafana fills them in."""
    return {v["name"]: v.get("query", "") for v in dash.get("templating", {}).get("list", [])
            if v.get("type") in ("textbox", "constant")}


def exprs():
    out = []
    if not DASHBOARDS:
        fail("no dashboard in deploy/grafana")
    for path in DASHBOARDS:
        dash = json.load(open(path))
        if not dash.get("panels"):
            fail(path + " has no panels")
        for panel in dash["panels"]:
            targets = panel.get("targets") or fail("panel %r has no targets" % panel.get("title"))
            for t in targets:
                expr = t["expr"]
                for name, value in variables(dash).items():
                    expr = expr.replace("$" + name, value)
                out.append((os.path.basename(path), panel["title"], expr))
    return out


def main():
    shoal = os.path.abspath(sys.argv[1])
    if not os.access(PROMETHEUS, os.X_OK):
        fail(PROMETHEUS + " is missing: run scripts/bootstrap (Debian's prometheus)")
    tmp = tempfile.mkdtemp(prefix="shoal-grafana-")
    up = prom = None
    try:
        all_exprs = exprs()
        up = ShoalUp(shoal, tmp, files=12, workers=3, cache_size="128MiB", err=os.path.join(tmp, "up.err"))
        config, addresses = up.config, list(up.workers)

        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: shoal\n    static_configs:\n      - targets: [%s]\n"
                    % ", ".join('"%s"' % a for a in addresses))
        for attempt in range(3):  # the free port may be taken before prometheus binds it
            port = free_port()
            base = "http://127.0.0.1:%d" % port
            prom = subprocess.Popen([PROMETHEUS, "--config.file=" + os.path.join(tmp, "prometheus.yml"),
                                     "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
                                     "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
                                    stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "prom.log"), "w"))
            try:
                wait_for("prometheus to be ready", lambda: prom.poll() is not None or "Ready" in get(base + "/-/ready"),
                         60)
            except AssertionError:
                pass
            if prom.poll() is None:
                break
        else:
            fail("prometheus did not start: " + open(os.path.join(tmp, "prom.log")).read())
        wait_for("3 workers scraped", lambda: len([r for r in query(base, 'up{job="shoal"} == 1')]) == 3, 60)

        # Cold, then warm: reads over every door the CLI uses.
        for epoch in range(2):
            for i in range(12):
                subprocess.run([shoal, "cat", "--config", config, "/data/train/f%02d.bin" % i],
                               stdout=subprocess.DEVNULL, check=True, timeout=120)
        # rate() needs two scrapes after the reads.
        wait_for("scrapes after the reads",
                 lambda: query(base, 'sum(increase(shoal_served_bytes_total[30s])) > 0') != [], 60)

        problems = []
        for dash, title, expr in all_exprs:
            e = expr.replace("$__rate_interval", "30s")
            result = query(base, e)
            if not result:
                problems.append("%s / %s: no data for %s" % (dash, title, e))
            else:
                print("ok: %s / %s: %d series" % (dash, title, len(result)))
        if problems:
            fail("\n".join(problems))
        print("every expression of %d returned data" % len(all_exprs))
    finally:
        stop_process(prom)
        if up:
            up.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
