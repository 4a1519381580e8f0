"""webdriver.py -- a small W3C WebDriver client for the browser tests: it
starts Debian's chromedriver on a free port, opens headless Chromium
through it, loads pages, runs scripts in them, reads the browser console
and saves screenshots.  Only the Python standard library: the test needs
no package beyond chromium and chromium-driver.
"""
import base64
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class WebDriverError(Exception):
    pass


class Browser:
    """Headless Chromium driven by chromedriver; use as a context manager so
    both processes stop (by PID) whatever happens."""

    def __init__(self, chromium="/usr/bin/chromium", chromedriver="/usr/bin/chromedriver", width=1400, height=1000):
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.proc = subprocess.Popen([chromedriver, "--port=%d" % self.port],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.session = None
        deadline = time.time() + 30
        while True:
            try:
                if self._call("GET", "/status").get("ready"):
                    break
            except (OSError, WebDriverError):
                pass
            if time.time() > deadline or self.proc.poll() is not None:
                self.close()
                raise WebDriverError("chromedriver did not start")
            time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--no-first-run", "--window-size=%d,%d" % (width, height)],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}}
        try:
            self.session = self._call("POST", "/session", caps)["sessionId"]
        except Exception:
            self.close()
            raise

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                out = json.loads(r.read().decode() or "{}")
        except urllib.error.HTTPError as e:
            raise WebDriverError("%s %s: %s" % (method, path, e.read().decode(errors="replace")[:500]))
        v = out.get("value", out) if isinstance(out, dict) else out
        if isinstance(v, dict) and "sessionId" in v and "capabilities" in v:
            return v
        return v if path != "/status" else out.get("value", {})

    def _s(self, path):
        return "/session/%s%s" % (self.session, path)

    def get(self, url):
        self._call("POST", self._s("/url"), {"url": url})

    def run(self, script, *args):
        """The value of `script` (a function body) run in the page."""
        return self._call("POST", self._s("/execute/sync"), {"script": script, "args": list(args)})

    def console(self):
        """Browser console entries since the last call: [{level, message}]."""
        return self._call("POST", self._s("/se/log"), {"type": "browser"})

    def screenshot(self, path):
        png = base64.b64decode(self._call("GET", self._s("/screenshot")))
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(png)
        return len(png)

    def close(self):
        if self.session:
            try:
                self._call("DELETE", self._s(""))
            except Exception:
                pass
            self.session = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
