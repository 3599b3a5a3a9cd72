#!/usr/bin/env python3
"""Scheduler end-to-end bench (run inside tests/e2e/run-with-cluster.sh via bench/e2e_sched/run.sh).

Same cluster, same nodesim nodes, same pods (1 cpu each, in gangs of GANG pods), three binders in turn:
  tephra   `tephra scheduler` (PodGroup minMember=GANG per gang), pods created first, then the scheduler starts
  kube     kube-scheduler v1.20.2 (plain pods), pods created first, then kube-scheduler starts
  poster   a bare client (this script, THREADS keep-alive HTTPS connections) that only POSTs pods/binding
  baseline (BINDERS=...,baseline) another tephra build, TEPHRA_BASELINE_BIN, for before/after in one run
Both schedulers get the same client --kube-api-qps/--kube-api-burst. Bound pods are counted by polling a
pod list every POLL s. Reported: pods bound per second (first bind -> last bind) and, per gang, the time from
its first bound pod to its last (the gang is enqueued and allocated in one cycle, so first bind ~ Inqueue).
"""
import json, os, subprocess, sys, time

# The stdlib API client is shared with the e2e tests (tests/e2e/lib/apiclient.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e", "lib"))
from apiclient import conn, req
import apiclient

NODES = int(os.environ.get("NODES", "1000"))
GANGS = int(os.environ.get("GANGS", "8"))
GANG = int(os.environ.get("GANG", "128"))
QPS = os.environ.get("QPS", "50")
BURST = os.environ.get("BURST", "100")
THREADS = int(os.environ.get("THREADS", "16"))
POLL = 0.25
TEPHRA = os.environ["TEPHRA_BIN"]
LOGS = os.environ.get("TEPHRA_E2E_LOG_DIR", "/tmp")
K8S_BIN = os.environ["K8S_BIN"]
KCFG_SCHED = os.path.join(os.environ["TEPHRA_E2E_DIR"], "kube-scheduler.kubeconfig")


def create_all(objs):
    apiclient.create_all(objs, THREADS)


def pods_for(prefix, sched, with_group):
    out = []
    for g in range(GANGS):
        for i in range(GANG):
            md = {"name": "%s-%d-%d" % (prefix, g, i), "namespace": "default", "labels": {"bench": prefix, "gang": str(g)}}
            if with_group:
                md["annotations"] = {"scheduling.k8s.io/group-name": "%s-%d" % (prefix, g)}
            out.append(("/api/v1/namespaces/default/pods", {
                "apiVersion": "v1", "kind": "Pod", "metadata": md,
                "spec": {"schedulerName": sched, "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]}}))
    return out


def bound_state(c, prefix):
    s, d = req(c, "GET", "/api/v1/namespaces/default/pods?labelSelector=bench%3D" + prefix)
    items = json.loads(d)["items"]
    per_gang = {}
    n = 0
    for p in items:
        if p["spec"].get("nodeName"):
            n += 1
            g = p["metadata"]["labels"]["gang"]
            per_gang[g] = per_gang.get(g, 0) + 1
    return n, per_gang


def measure(prefix, total, deadline_s=600):
    c = conn()
    t_first = None
    gang_first, gang_done = {}, {}
    start = time.time()
    while time.time() - start < deadline_s:
        n, per = bound_state(c, prefix)
        now = time.time()
        if n and t_first is None:
            t_first = now
        for g, k in per.items():
            gang_first.setdefault(g, now)
            if k >= GANG:
                gang_done.setdefault(g, now)
        if n >= total:
            lat = sorted(gang_done[g] - gang_first[g] for g in gang_done)
            return {"pods": total, "seconds": round(now - t_first, 2), "rate": round(total / max(now - t_first, POLL), 1),
                    "gang_p50": round(lat[len(lat) // 2], 2), "gang_p99": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 2),
                    "gang_max": round(lat[-1], 2)}
        time.sleep(POLL)
    sys.exit("%s: only %d/%d bound after %ds" % (prefix, n, total, deadline_s))


def delete_pods(prefix):
    c = conn()
    req(c, "DELETE", "/api/v1/namespaces/default/pods?labelSelector=bench%3D" + prefix + "&gracePeriodSeconds=0")
    while True:
        s, d = req(c, "GET", "/api/v1/namespaces/default/pods?labelSelector=bench%3D" + prefix)
        if not json.loads(d)["items"]:
            return
        time.sleep(1)


def run_tephra(binary=None, prefix="t"):
    objs = [("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "%s-%d" % (prefix, g), "namespace": "default"}, "spec": {"minMember": GANG, "queue": "default"}})
        for g in range(GANGS)]
    create_all(objs)
    create_all(pods_for(prefix, "volcano", True))
    p = subprocess.Popen([binary or TEPHRA, "scheduler", "--kubeconfig", os.environ["KUBECONFIG"], "--leader-elect=false",
                          "--listen-address", "0", "--health-addr", "0", "--kube-api-qps", QPS, "--kube-api-burst", BURST]
                         + os.environ.get("SCHED_ARGS", "").split(),
                         stdout=open(os.path.join(LOGS, "bench-tephra-scheduler-%s.log" % prefix), "w"), stderr=subprocess.STDOUT)
    try:
        return measure(prefix, GANGS * GANG)
    finally:
        p.terminate()
        p.wait()
        delete_pods(prefix)


def run_tephra_baseline():
    # Another build of tephra (TEPHRA_BASELINE_BIN), for before/after comparisons in one run.
    return run_tephra(os.environ["TEPHRA_BASELINE_BIN"], "u")


def run_kube():
    create_all(pods_for("k", "default-scheduler", False))
    p = subprocess.Popen([os.path.join(K8S_BIN, "kube-scheduler"), "--kubeconfig", KCFG_SCHED,
                          "--authentication-kubeconfig", KCFG_SCHED, "--authorization-kubeconfig", KCFG_SCHED,
                          "--authentication-skip-lookup", "--leader-elect=false", "--port", "0",
                          "--bind-address", "127.0.0.1", "--secure-port", "0",
                          "--kube-api-qps", QPS, "--kube-api-burst", BURST],
                         stdout=open(os.path.join(LOGS, "bench-kube-scheduler.log"), "w"), stderr=subprocess.STDOUT)
    try:
        return measure("k", GANGS * GANG)
    finally:
        p.terminate()
        p.wait()
        delete_pods("k")


def run_poster():
    create_all(pods_for("b", "nobody", False))
    c = conn()
    s, d = req(c, "GET", "/api/v1/nodes")
    nodes = [n["metadata"]["name"] for n in json.loads(d)["items"]]
    s, d = req(c, "GET", "/api/v1/namespaces/default/pods?labelSelector=bench%3Db")
    pods = [(p["metadata"]["name"], p["metadata"]["uid"]) for p in json.loads(d)["items"]]
    binds = [("/api/v1/namespaces/default/pods/%s/binding" % name, {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": nodes[i % len(nodes)]}}) for i, (name, uid) in enumerate(pods)]
    t0 = time.time()
    create_all(binds)
    dt = time.time() - t0
    delete_pods("b")
    return {"pods": len(binds), "seconds": round(dt, 2), "rate": round(len(binds) / dt, 1)}


if __name__ == "__main__":
    res = {"nodes": NODES, "gangs": GANGS, "gang_size": GANG, "qps": QPS, "burst": BURST}
    which = os.environ.get("BINDERS", "tephra,kube,poster").split(",")
    for key, name, fn in (("tephra", "tephra", run_tephra), ("baseline", "tephra_baseline", run_tephra_baseline),
                          ("kube", "kube_scheduler", run_kube), ("poster", "bare_poster", run_poster)):
        if key in which:
            res[name] = fn()
            print(name, json.dumps(res[name]), flush=True)
    print("RESULT " + json.dumps(res), flush=True)
