"""A small Chrome DevTools Protocol driver for the web view e2e (tests/e2e/webview, docs/web-view.md).

Starts Debian's chromium headless with a fresh profile and a free remote-debugging port, connects to its
page over a WebSocket (Debian's python3-websocket) and offers what the test needs: navigate, evaluate,
wait for a condition on the page, screenshots, and every console call and uncaught exception the page
produced (collected from Runtime.consoleAPICalled / Runtime.exceptionThrown by a reader thread, so nothing
between two commands is missed).
"""

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

import websocket  # python3-websocket (websocket-client)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class CdpError(Exception):
    pass


class Browser:
    """chromium --headless=new, one page. Use as a context manager: the process and profile go on exit."""

    def __init__(self, log_path, window=(1400, 1000), timeout=60):
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="tephra-webview-chromium-")
        self.log = open(log_path, "w")
        # Without the background-networking switches chromium dials out (component updates, sync, field
        # trials), which a sandboxed CI host refuses, and the refusals slow everything down.
        args = [
            shutil.which("chromium") or "chromium",
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--disable-extensions", "--mute-audio",
            "--user-data-dir=" + self.profile, "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=%d" % self.port, "--window-size=%d,%d" % window, "about:blank",
        ]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        self.ws = None
        self._next_id = 0
        self._pending = {}
        self._lock = threading.Lock()
        self.events = []  # (method, params) in arrival order
        self._events_cv = threading.Condition(self._lock)
        target = self._page_target(timeout)
        # No Origin header: chromium refuses DevTools WebSockets from origins it was not told to allow.
        self.ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            if self.ws:
                self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _page_target(self, timeout):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise CdpError("chromium exited with %s (see its log)" % self.proc.returncode)
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % self.port, timeout=2) as r:
                    for t in json.load(r):
                        if t.get("type") == "page" and t.get("webSocketDebuggerUrl"):
                            return t
            except OSError as e:
                last = e
            time.sleep(0.2)
        raise CdpError("no DevTools page target on port %d within %ss (%s)" % (self.port, timeout, last))

    def _read(self):
        while True:
            try:
                msg = json.loads(self.ws.recv())
            except Exception:
                with self._lock:
                    for slot in self._pending.values():
                        slot["error"] = "connection closed"
                        slot["done"].set()
                return
            with self._lock:
                if "id" in msg and msg["id"] in self._pending:
                    slot = self._pending.pop(msg["id"])
                    slot["result"] = msg.get("result")
                    slot["error"] = msg.get("error")
                    slot["done"].set()
                elif "method" in msg:
                    self.events.append((msg["method"], msg.get("params", {})))
                    self._events_cv.notify_all()

    def call(self, method, timeout=60, **params):
        with self._lock:
            self._next_id += 1
            mid = self._next_id
            slot = {"done": threading.Event()}
            self._pending[mid] = slot
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        if not slot["done"].wait(timeout):
            raise CdpError("%s: no answer within %ss" % (method, timeout))
        if slot.get("error"):
            raise CdpError("%s: %s" % (method, slot["error"]))
        return slot.get("result") or {}

    def wait_event(self, method, timeout, since=0):
        """The first event `method` at index >= since; its params."""
        deadline = time.time() + timeout
        with self._lock:
            while True:
                for m, p in self.events[since:]:
                    if m == method:
                        return p
                left = deadline - time.time()
                if left <= 0:
                    raise CdpError("no %s within %ss" % (method, timeout))
                self._events_cv.wait(left)

    def navigate(self, url, timeout=60):
        since = len(self.events)
        res = self.call("Page.navigate", url=url)
        if res.get("errorText"):
            raise CdpError("navigate %s: %s" % (url, res["errorText"]))
        self.wait_event("Page.loadEventFired", timeout, since)

    def eval(self, expression):
        """The JSON value of a JavaScript expression (awaited when it is a promise)."""
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            d = res["exceptionDetails"]
            raise CdpError("evaluate %r: %s" % (expression[:80], d.get("exception", {}).get("description", d.get("text"))))
        return res.get("result", {}).get("value")

    def wait_for(self, what, expression, timeout):
        """Polls until `expression` is truthy (every 250 ms, bounded); returns its value."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                last = self.eval(expression)
            except CdpError as e:
                last = str(e)
            else:
                if last:
                    return last
            time.sleep(0.25)
        raise CdpError("timed out after %ss waiting for %s (last value: %r)" % (timeout, what, last))

    def screenshot(self, path, full_page=True):
        params = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            m = self.call("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m.get("contentSize")
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = self.call("Page.captureScreenshot", **params)["data"]
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def problems(self):
        """Console errors and warnings, uncaught exceptions and error log entries the page produced."""
        out = []
        with self._lock:
            events = list(self.events)
        for method, p in events:
            if method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                out.append("console.%s: %s" % (p.get("type"), args))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                out.append("log (%s): %s %s" % (e.get("source"), e.get("text"), e.get("url", "")))
        return out
