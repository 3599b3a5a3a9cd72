#!/usr/bin/env python3
"""Gang latency on an otherwise idle cluster (run inside tests/e2e/run-with-cluster.sh via
`MODE=latency bash bench/e2e_sched/run.sh`).

`tephra scheduler` runs throughout (client QPS/BURST as given). ROUNDS times, one gang at a time:
  1. create GANG pods (1 cpu, schedulerName volcano, group annotation) and wait until all exist;
  2. t0 = just before POSTing the PodGroup (minMember GANG);
  3. a pod watch (opened before step 2, millisecond timestamps on arrival) sees spec.nodeName set on each pod;
  4. latency = arrival of the GANG-th bound pod - t0; then pods and PodGroup are deleted and gone before the
     next round.
"PodGroup created -> all bound" includes noticing the PodGroup, enqueueing it (Pending -> Inqueue) and
allocating it, so it bounds the issue's "Inqueue -> all bound" from above.
"""
import json, os, subprocess, sys, threading, time

# The stdlib API client is shared with the e2e tests (tests/e2e/lib/apiclient.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e", "lib"))
from apiclient import TOKEN, conn, create_all, req

GANG = int(os.environ.get("GANG", "128"))
ROUNDS = int(os.environ.get("ROUNDS", "20"))
QPS = os.environ.get("QPS", "1000")
BURST = os.environ.get("BURST", "1000")
THREADS = 8
TEPHRA = os.environ["TEPHRA_BIN"]
LOGS = os.environ.get("TEPHRA_E2E_LOG_DIR", "/tmp")
NS = "default"


def create_pods(rnd):
    create_all([("/api/v1/namespaces/%s/pods" % NS, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "g%d-%d" % (rnd, i), "labels": {"bench": "lat", "round": str(rnd)},
                     "annotations": {"scheduling.k8s.io/group-name": "lat-%d" % rnd}},
        "spec": {"schedulerName": "volcano", "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]}})
        for i in range(GANG)], THREADS)


def list_rv(c, rnd):
    s, d = req(c, "GET", "/api/v1/namespaces/%s/pods?labelSelector=round%%3D%d" % (NS, rnd))
    j = json.loads(d)
    return j["metadata"]["resourceVersion"], j["items"]


def one_round(rnd):
    create_pods(rnd)
    c = conn(120)
    rv, items = list_rv(c, rnd)
    if len(items) != GANG:
        sys.exit("round %d: %d pods listed, want %d" % (rnd, len(items), GANG))
    bound, done = {}, threading.Event()
    w = conn(120)
    w.request("GET", "/api/v1/namespaces/%s/pods?watch=1&labelSelector=round%%3D%d&resourceVersion=%s" % (NS, rnd, rv),
              headers={"Authorization": "Bearer " + TOKEN})
    resp = w.getresponse()

    def watch():
        while not done.is_set():
            line = resp.readline()
            if not line:
                return
            ev = json.loads(line)
            o = ev.get("object", {})
            if o.get("spec", {}).get("nodeName"):
                bound.setdefault(o["metadata"]["name"], time.time())
                if len(bound) >= GANG:
                    done.set()
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    t0 = time.time()
    s, d = req(c, "POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups" % NS, {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "lat-%d" % rnd}, "spec": {"minMember": GANG, "queue": "default"}})
    if s not in (200, 201):
        sys.exit("podgroup create: %s %s" % (s, d[:200]))
    if not done.wait(120):
        sys.exit("round %d: only %d/%d bound after 120 s" % (rnd, len(bound), GANG))
    lat = max(bound.values()) - t0
    first = min(bound.values()) - t0
    w.close()
    req(c, "DELETE", "/api/v1/namespaces/%s/pods?labelSelector=round%%3D%d&gracePeriodSeconds=0" % (NS, rnd))
    req(c, "DELETE", "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups/lat-%d" % (NS, rnd))
    while list_rv(c, rnd)[1]:
        time.sleep(0.2)
    return first, lat


if __name__ == "__main__":
    p = subprocess.Popen([TEPHRA, "scheduler", "--kubeconfig", os.environ["KUBECONFIG"], "--leader-elect=false",
                          "--listen-address", "0", "--health-addr", "0", "--kube-api-qps", QPS, "--kube-api-burst", BURST]
                         + os.environ.get("SCHED_ARGS", "").split(),
                         stdout=open(os.path.join(LOGS, "bench-latency-scheduler.log"), "w"), stderr=subprocess.STDOUT)
    try:
        time.sleep(3)  # informer sync on an empty cluster; round 0 is a warm-up and is not counted anyway
        firsts, lats = [], []
        for r in range(ROUNDS + 1):
            f, l = one_round(r)
            if r == 0:
                continue
            firsts.append(f)
            lats.append(l)
            print("round %d: first bind %.0f ms, all %d bound %.0f ms" % (r, f * 1000, GANG, l * 1000), flush=True)
        lats.sort()
        firsts.sort()
        pct = lambda a, q: a[min(len(a) - 1, int(len(a) * q))]
        print("RESULT " + json.dumps({"gang": GANG, "rounds": ROUNDS, "qps": QPS, "burst": BURST,
                                      "first_bind_p50_ms": round(pct(firsts, 0.5) * 1000),
                                      "all_bound_p50_ms": round(pct(lats, 0.5) * 1000),
                                      "all_bound_p99_ms": round(pct(lats, 0.99) * 1000),
                                      "all_bound_max_ms": round(lats[-1] * 1000)}), flush=True)
    finally:
        p.terminate()
        p.wait()
