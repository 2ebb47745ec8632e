#!/usr/bin/python3
"""The status page in a real browser (CTest: status_page_browser_test).

  tests/status_page_browser_test.py SHOAL_BINARY OUTPUT_DIR

Starts `shoal up` with 3 workers, opens worker 0's page (GET /) in headless
Chromium (Debian's chromium and chromium-driver, driven by python3-selenium)
and checks what it shows against `shoal status --json`:
  - during a `shoal load`: every worker's row, the ring, "3 up";
  - after it: the cluster's hit ratio and egress saved as the document has them;
  - with a worker frozen (SIGSTOP): that worker's row says down, the others up,
    and the page keeps refreshing; killed (SIGKILL) and restarted by `shoal
    up`: all up again.
The browser's console must stay free of errors. Screenshots go to OUTPUT_DIR.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from shoal_up import ShoalUp

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def fail(msg):
    raise AssertionError(msg)


def wait_for(what, check, timeout=60):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            got = check()
            if got:
                return got
        except Exception as e:  # the page may be between two renders
            last = e
        time.sleep(0.2)  # a poll interval
    fail("timed out waiting for %s (last error: %s)" % (what, last))


def status_json(shoal, config):
    r = subprocess.run([shoal, "status", "--json", "--config", config], capture_output=True, text=True, timeout=120)
    if r.returncode not in (0, 5):  # 5: a worker is down
        fail("shoal status --json: exit %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)


def pct(x):
    return "%.1f%%" % (100 * x)


def size(b):
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    v, i = float(b), 0
    while v >= 1024 and i < len(units) - 1:
        v /= 1024
        i += 1
    return ("%.1f" % v if i else "%.0f" % v) + " " + units[i]


class Page:
    def __init__(self, url, out):
        self.out = out
        o = webdriver.ChromeOptions()
        for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                  "--disable-background-networking", "--disable-sync", "--disable-component-update",
                  "--disable-default-apps", "--disable-breakpad", "--metrics-recording-only",
                  "--window-size=1400,900", "--user-data-dir=" + os.path.join(out, "chromium-profile")]:
            o.add_argument(a)
        o.binary_location = CHROMIUM
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=o)
        self.driver.get(url)
        self.errors = []

    def rows(self):
        out = {}
        for tr in self.driver.find_elements(By.CSS_SELECTOR, "#workers tbody tr"):
            cells = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            out[tr.get_attribute("data-address")] = cells
        return out

    def card(self, key):
        return self.driver.find_element(By.CSS_SELECTOR, '#summary [data-key="%s"]' % key).text

    def updated(self):
        return self.driver.find_element(By.ID, "updated").text

    def screenshot(self, name):
        self.driver.save_screenshot(os.path.join(self.out, name + ".png"))

    def check_console(self):
        for entry in self.driver.get_log("browser"):
            if entry["level"] == "SEVERE":
                self.errors.append(entry["message"])
        if self.errors:
            fail("the page logged errors: %s" % self.errors)

    def close(self):
        self.driver.quit()


def main():
    shoal = os.path.abspath(sys.argv[1])
    out = os.path.abspath(sys.argv[2])
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for tool in (CHROMIUM, CHROMEDRIVER):
        if not os.access(tool, os.X_OK):
            fail(tool + " is missing: run scripts/bootstrap (Debian's chromium and chromium-driver)")
    tmp = tempfile.mkdtemp(prefix="shoal-status-page-")
    up = page = None
    try:
        up = ShoalUp(shoal, tmp, files=40, workers=3, cache_size="256MiB", err=os.path.join(out, "up.err"))
        config, pids = up.config, up.workers
        addresses = sorted(pids)

        # During a load: the page of worker 0 names every worker, up.
        load = subprocess.Popen([shoal, "load", "--config", config, "-r", "/data/train", "--bandwidth", "16MiB"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        page = Page("http://" + addresses[0] + "/", out)
        rows = wait_for("3 worker rows", lambda: len(page.rows()) == 3 and page.rows())
        if sorted(rows) != addresses:
            fail("the page shows %s, shoal up started %s" % (sorted(rows), addresses))
        wait_for("3 up", lambda: page.card("workers").endswith("3 up, 0 down"))
        # The load job, with its progress, as its workers report it.
        job = wait_for("the load job", lambda: page.driver.find_elements(By.CSS_SELECTOR, "#loads tbody tr[data-job]"))
        cells = [td.text for td in job[0].find_elements(By.TAG_NAME, "td")]
        if cells[1] != "/data/train" or cells[2] not in ("running", "done"):
            fail("load row %s" % cells)
        page.screenshot("during-load")
        if load.wait(timeout=240) != 0:
            fail("shoal load: " + load.stderr.read())

        # Read it all once (hits, after the load): the page, refreshed, shows the document's numbers.
        for i in range(40):
            subprocess.run([shoal, "cat", "--config", config, "/data/train/f%02d.bin" % i], stdout=subprocess.DEVNULL,
                           check=True, timeout=120)
        doc = status_json(shoal, config)
        s = doc["summary"]
        want_hit = pct(s["hit_ratio"])
        wait_for("the hit ratio " + want_hit, lambda: want_hit in page.card("hit_ratio"))
        wait_for("egress saved " + size(s["egress_saved_bytes"]),
                 lambda: page.card("egress_saved").startswith("Egress saved\n" + size(s["egress_saved_bytes"])))
        if "version %d" % doc["ring"]["version"] not in page.card("ring"):
            fail("ring card %r, document version %d" % (page.card("ring"), doc["ring"]["version"]))
        for w in doc["workers"]:
            cells = page.rows()[w["address"]]
            if cells[1] != "up" or cells[4] != pct(w["hit_ratio"]) or cells[10] != w["id"]:
                fail("row of %s shows %s; the document has %s" % (w["address"], cells, w))
        cells = [td.text for td in page.driver.find_elements(By.CSS_SELECTOR, "#loads tbody tr[data-job] td")]
        files = cells[3].split(" ") if len(cells) > 3 else []
        if cells[2] != "done" or len(files) < 3 or files[0] != files[2] or files[0] == "0":
            fail("the finished load shows %s" % cells)
        page.screenshot("after-load")
        page.check_console()

        # A refused request (no cluster secret) shows among the recent errors with its request id.
        refused = urllib.request.Request("http://%s/v1/stat?path=/data/nothing" % addresses[0],
                                         headers={"X-Shoal-Request-Id": "browser-check"})
        try:
            urllib.request.urlopen(refused, timeout=30)
            fail("a request without the cluster secret was served")
        except urllib.error.HTTPError as e:
            if e.code != 403:
                fail("a request without the cluster secret got HTTP %d, not 403" % e.code)
        wait_for("the refusal among the recent errors", lambda: any(
            "[request browser-check]" in td.text and "refused" in td.text
            for td in page.driver.find_elements(By.CSS_SELECTOR, "#errors tbody td")), timeout=60)

        # A worker frozen: its row goes down (it answers nothing), the others stay up.
        victim = addresses[2]
        os.kill(pids[victim], signal.SIGSTOP)
        wait_for("%s shown down" % victim, lambda: page.rows()[victim][1].startswith("down"), timeout=90)
        rows = page.rows()
        if any(rows[a][1] != "up" for a in addresses[:2]):
            fail("live workers not shown up: %s" % rows)
        doc = status_json(shoal, config)
        if [w["up"] for w in doc["workers"] if w["address"] == victim] != [False]:
            fail("shoal status --json does not agree that %s is down: %s" % (victim, doc["workers"]))
        page.screenshot("worker-down")
        # Killed: `shoal up` starts it again, and the page shows all three up.
        os.kill(pids[victim], signal.SIGKILL)
        os.kill(pids[victim], signal.SIGCONT)
        wait_for("3 up again", lambda: page.card("workers").endswith("3 up, 0 down"), timeout=120)
        page.screenshot("worker-restarted")
        page.check_console()
        print("ok: screenshots in " + out)
    finally:
        if page:
            page.close()
        if up:
            up.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
