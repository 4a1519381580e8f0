"""check_ui.py MODE BASE_URL OUT_DIR -- look at ember's pages in headless
Chromium as a person would, and check what they show against the REST API
of the same server.

MODE "driver": BASE_URL is a running driver's UI (tests/ui/ui_app.c's
application); "history": a history server whose log directory holds that
application's finished log.  Every page must load with no error in the
browser's console; the jobs table has a row per job, the job page's DAG an
SVG node per stage, the stage page a row per task attempt (the speculative
copy and the killed original among them), the environment page the secret
redacted, the storage page the cached RDD and its page each cached
partition with the bytes the API gives, the executors page every
executor, the jobs page's timeline a bar per job.  A screenshot of each
page goes to OUT_DIR/<mode>-<page>.png.
Exits 1 naming the first check that failed.
"""
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webdriver import Browser  # noqa: E402

SECRET = "ui-test-secret-value"


def fail(msg):
    print("check_ui: " + msg)
    sys.exit(1)


def get_json(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read().decode())


class Checker:
    def __init__(self, b, mode, base, out):
        self.b, self.mode, self.base, self.out = b, mode, base.rstrip("/"), out
        self.pages = 0

    def visit(self, path, name):
        """Load a page, wait for it, check the console; returns its text."""
        url = self.base + path
        self.b.get(url)
        state = self.b.run("return document.readyState;")
        if state != "complete":
            fail("%s: not loaded (%s)" % (url, state))
        title = self.b.run("return document.title;")
        errors = [e for e in self.b.console() if e.get("level") == "SEVERE"]
        if errors:
            fail("%s: console errors: %s" % (url, errors))
        status = self.b.run("return document.body ? document.body.innerText : '';")
        if "not found" in status.lower()[:200] and "404" in title:
            fail("%s: a 404 page" % url)
        png = os.path.join(self.out, "%s-%s.png" % (self.mode, name))
        if self.b.screenshot(png) < 1000:
            fail("%s: an empty screenshot" % url)
        self.pages += 1
        return status

    def count(self, selector):
        return self.b.run("return document.querySelectorAll(arguments[0]).length;", selector)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("driver", "history"):
        print(__doc__)
        sys.exit(2)
    mode, base, out = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3]
    os.makedirs(out, exist_ok=True)
    apps = get_json(base + "/api/v1/applications")
    if len(apps) != 1:
        fail("%d applications listed, expected 1" % len(apps))
    app = apps[0]["id"]
    api = "%s/api/v1/applications/%s" % (base, app)
    jobs = get_json(api + "/jobs")
    stages = get_json(api + "/stages")
    execs = get_json(api + "/allexecutors")
    if len(jobs) != 5:
        fail("%d jobs in the API, expected 5" % len(jobs))
    prefix = "" if mode == "driver" else "/history/" + app
    with Browser() as b:
        c = Checker(b, mode, base, out)
        if mode == "history":
            text = c.visit("/", "applications")
            if app not in text:
                fail("the history server's page does not list %s" % app)
        text = c.visit(prefix + "/jobs/", "jobs")
        rows = c.count("table[id^=jobs] tbody tr")
        if rows != len(jobs):
            fail("the jobs page shows %d job rows, the API %d jobs" % (rows, len(jobs)))
        if "FAILED" not in text.upper():
            fail("the jobs page does not show the failed job")
        bars, failed = c.count("svg#jobs-timeline rect.job"), c.count("svg#jobs-timeline rect.job.failed")
        if bars != len(jobs) or failed != 1 or c.count("svg#jobs-timeline circle.added") < 1:
            fail("the jobs timeline shows %d job bars (%d failed), the API %d jobs (1 failed)"
                 % (bars, failed, len(jobs)))
        # The word count's job: two stages in its DAG.
        first = min(jobs, key=lambda j: j["jobId"])
        c.visit(prefix + "/jobs/job/?id=%d" % first["jobId"], "job")
        nodes = c.count("svg g.stage")
        if nodes != len(first["stageIds"]):
            fail("job %d's DAG has %d stage nodes, expected %d" % (first["jobId"], nodes, len(first["stageIds"])))
        c.visit(prefix + "/stages/", "stages")
        srows = c.count("table[id^=stages] tbody tr")
        if srows != len(stages):
            fail("the stages page shows %d rows, the API %d stage attempts" % (srows, len(stages)))
        # The speculation job's stage: 4 tasks and 2 more attempts (the copy
        # and the killed original).
        spec = [s for s in stages if s["numTasks"] == 4 and s["numKilledTasks"] >= 1]
        if not spec:
            fail("no stage with a killed attempt in the API")
        s = spec[0]
        tasks = get_json("%s/stages/%d/%d/taskList?length=1000" % (api, s["stageId"], s["attemptId"]))
        text = c.visit(prefix + "/stages/stage/?id=%d&attempt=%d" % (s["stageId"], s["attemptId"]), "stage")
        trows = c.count("table#tasks tbody tr")
        if trows != len(tasks):
            fail("the stage page shows %d task rows, the API %d" % (trows, len(tasks)))
        if "KILLED" not in text.upper():
            fail("the stage page does not show the killed attempt")
        text = c.visit(prefix + "/environment/", "environment")
        if SECRET in text or "*********(redacted)" not in text:
            fail("the environment page does not redact the secret")
        text = c.visit(prefix + "/executors/", "executors")
        erows = c.count("table[id^=executors] tbody tr")
        if erows < len([e for e in execs if e["id"] != "driver"]):
            fail("the executors page shows %d rows for %d executors" % (erows, len(execs)))
        text = c.visit(prefix + "/storage/", "storage")
        # The driver's: the RDD still cached. The history's: what the log
        # says at the application's end, as the API gives it.
        rdds = get_json(api + "/storage/rdd")
        shown = c.count("table[id^=storage] tbody tr")
        if shown != len(rdds) or (mode == "driver" and len(rdds) != 1):
            fail("the storage page shows %d cached RDDs, the API %d" % (shown, len(rdds)))
        for r in rdds:
            check_rdd(c, prefix, r)
        print("check_ui %s: %d pages, no console error, screenshots in %s" % (mode, c.pages, out))


def check_rdd(c, prefix, r):
    """A cached RDD's page against the API's record of it."""
    if r["numCachedPartitions"] != 2 or r["memoryUsed"] <= 0:
        fail("the cached RDD: %d partitions, %d bytes in memory" % (r["numCachedPartitions"], r["memoryUsed"]))
    c.visit(prefix + "/storage/rdd/?id=%d" % r["id"], "rdd")
    prows = c.count("table#rdd-partitions tbody tr")
    if prows != r["numCachedPartitions"] or c.count("table#rdd-distribution tbody tr") < 1:
        fail("the RDD page shows %d partitions, the API %d" % (prows, r["numCachedPartitions"]))
    shown = c.b.run("return Array.prototype.map.call(document.querySelectorAll("
                    "'table#rdd-partitions tbody td:nth-child(3)'), function(e) {"
                    "return parseInt(e.getAttribute('data-v'), 10); });")
    if sum(shown) != r["memoryUsed"]:
        fail("the RDD page's partitions hold %d bytes, the API %d" % (sum(shown), r["memoryUsed"]))


if __name__ == "__main__":
    main()
