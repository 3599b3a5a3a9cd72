"""The browser half of tests/e2e/webview/webview_test.sh (docs/web-view.md): opens the web view in headless
chromium and checks what the page shows against the scheduler's snapshot, then that it follows changes live.

Environment: URL (the scheduler's metrics address), KUBECTL, KUBECONFIG, VCCTL, ART (screenshot directory),
FAULT_NODE (a node to fault: one the running gang is not on), NEW_JOB_YAML (a vcjob created while the page
is open). Argument: chromium's log file.
"""

import json
import os
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

URL = os.environ["URL"]
ART = os.environ["ART"]
FAULT_NODE = os.environ["FAULT_NODE"]


def note(msg):
    print("--- " + msg, file=sys.stderr, flush=True)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def snapshot():
    with urllib.request.urlopen(URL + "/ui/api/v1/snapshot", timeout=10) as r:
        return json.load(r)


def kubectl(*args):
    subprocess.run([os.environ.get("KUBECTL", "kubectl"), "--request-timeout", "20s", *args], check=True,
                   stdout=subprocess.DEVNULL)


def js(s):
    return json.dumps(s)  # a JavaScript string literal


def main():
    b = cdp.Browser(sys.argv[1])
    shots = []
    try:
        b.navigate(URL + "/ui/")
        b.wait_for("the first snapshot on the page", "Number(document.getElementById('counter').textContent) >= 1", 30)
        # A marker a reload would lose: the live checks below prove the page was never reloaded.
        b.eval("window.__tephraMarker = 'kept'; true")
        snap = snapshot()
        text = b.eval("document.body.innerText")

        # -- queues and shares: the rendered bar label is the snapshot's share
        for q in snap["queues"]:
            if q["name"] not in ("default", "research"):
                continue
            row = b.eval("(() => { const r = document.querySelector('#queues tr[data-queue=' + %s + ']');"
                         " return r ? Array.from(r.cells).map(c => c.innerText) : null; })()" % js(json.dumps(q["name"])))
            if not row:
                fail("queue %s is not in the queue table: %s" % (q["name"], text[:2000]))
            if q["share"] is not None:
                want = "%d%%" % round(q["share"] * 100)
                if not row[3].startswith(want):
                    fail("queue %s: share cell %r, snapshot share %s" % (q["name"], row[3], q["share"]))
        research = next(q for q in snap["queues"] if q["name"] == "research")
        if research["share"] is None or research["share"] <= 0 or research["running"] != 1:
            fail("research queue in the snapshot: %s" % research)
        note("queues default and research with their shares (research %.0f%%)" % (research["share"] * 100))

        # -- the waiting job: position 1, the scheduler's reason and message, on the page
        huge = next((j for j in snap["pending"] if j["name"].startswith("huge-")), None)
        if not huge:
            fail("huge is not waiting in the snapshot: %s" % snap["pending"])
        key = huge["namespace"] + "/" + huge["name"]
        row = b.wait_for("huge's row", "(() => { const r = document.querySelector('#pending tr[data-job=' + %s + ']');"
                         " return r ? Array.from(r.cells).map(c => c.innerText) : null; })()" % js(json.dumps(key)), 10)
        if row[0] != "default" or row[1] != "1" or key not in row[2]:
            fail("huge's row: %s" % row)
        if huge["reason"] not in row[5] or huge["reason"] not in ("NotEnoughResources", "OverClusterCapacity"):
            fail("huge's reason: page %r, snapshot %r" % (row[5], huge["reason"]))
        if huge["message"][:40] not in row[5]:
            fail("huge's message not on the page: %r vs %r" % (row[5], huge["message"]))
        note("%s waits at position 1: %s" % (key, huge["reason"]))

        # -- the running gang: 4/4, two nodes with 2 pods each, one leaf
        train = next((j for j in snap["running"] if j["name"].startswith("train")), None)
        if not train or len(train["placement"]) != 2 or sorted(train["placement"].values()) != [2, 2] or len(train["leaves"]) != 1:
            fail("train in the snapshot: %s" % train)
        tkey = train["namespace"] + "/" + train["name"]
        row = b.eval("(() => { const r = document.querySelector('#running tr[data-job=' + %s + ']');"
                     " return r ? Array.from(r.cells).map(c => c.innerText) : null; })()" % js(json.dumps(tkey)))
        if not row or row[2] != "4/4" or train["leaves"][0] not in row[4]:
            fail("train's row: %s" % row)
        for node in train["placement"]:
            if node + " × 2" not in row[3]:
                fail("train's placement on the page lacks %s: %r" % (node, row[3]))
        note("%s runs 4/4 on %s in %s" % (tkey, ", ".join(sorted(train["placement"])), train["leaves"][0]))

        # -- the map: spine-0 holding leaf-a and leaf-b, two node tiles each
        leaves = b.eval("Object.fromEntries(Array.from(document.querySelectorAll('#map .group[data-group=\"spine-0\"] .leaf'))"
                        ".map(l => [l.dataset.leaf, Array.from(l.querySelectorAll('.tile')).map(t => t.dataset.node)]))")
        want = {"leaf-a": ["tephra-sim-0", "tephra-sim-1"], "leaf-b": ["tephra-sim-2", "tephra-sim-3"]}
        if leaves != want:
            fail("cluster map: %s, want %s" % (leaves, want))
        busy_tiles = b.eval("Array.from(document.querySelectorAll('.tile')).filter(t => t.innerText.includes('gpu 4/4')).length")
        if busy_tiles != 2:
            fail("tiles showing gpu 4/4: %s, want the gang's 2 nodes" % busy_tiles)
        note("map: spine-0 > leaf-a (tephra-sim-0, 1), leaf-b (tephra-sim-2, 3); the gang's nodes full")
        shots.append(b.screenshot(os.path.join(ART, "webview-1-initial.png")))

        # -- live: a new job and a node fault, with no reload
        seen = b.eval("Number(document.getElementById('counter').textContent)")
        subprocess.run([os.environ["VCCTL"], "job", "run", "-f", os.environ["NEW_JOB_YAML"]], check=True,
                       stdout=subprocess.DEVNULL)
        kubectl("annotate", "node", FAULT_NODE, "tephra.io/sim-fail=true")
        t0 = time.time()
        b.wait_for("huge-later waiting at position 2 on the page",
                   "Array.from(document.querySelectorAll('#pending tr[data-job]')).some(r =>"
                   " r.dataset.job.includes('/huge-later-') && r.cells[1].innerText === '2')", 90)
        note("new job on the page after %.1fs" % (time.time() - t0))
        b.wait_for("the fault of %s in the list" % FAULT_NODE,
                   "Array.from(document.querySelectorAll('#faults li')).some(l => l.dataset.node === %s &&"
                   " l.dataset.kind === 'fault' && l.innerText.includes('NotReady'))" % js(FAULT_NODE), 90)
        b.wait_for("%s's tile marked faulted" % FAULT_NODE,
                   "(() => { const t = document.querySelector('.tile[data-node=' + %s + ']');"
                   " return t && t.classList.contains('faulted'); })()" % js(json.dumps(FAULT_NODE)), 30)
        note("fault of %s on the page after %.1fs" % (FAULT_NODE, time.time() - t0))
        if b.eval("window.__tephraMarker") != "kept":
            fail("the page was reloaded")
        after = b.eval("Number(document.getElementById('counter').textContent)")
        if after <= seen:
            fail("the snapshot counter did not move (%s -> %s)" % (seen, after))
        if not b.eval("document.getElementById('updated').textContent.startsWith('updated ')"):
            fail("no 'updated <time>' in the header")
        shots.append(b.screenshot(os.path.join(ART, "webview-2-live.png")))
        note("live: counter %s -> %s, no reload" % (seen, after))

        problems = b.problems()
        if problems:
            fail("the page reported problems:\n  " + "\n  ".join(problems))
        note("no console errors, no exceptions")
    finally:
        b.close()
        for s in shots:
            print("screenshot: " + s, flush=True)


if __name__ == "__main__":
    main()
