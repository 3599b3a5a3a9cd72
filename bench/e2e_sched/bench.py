#!/usr/bin/env python3
"""Scheduler end-to-end bench (run inside tests/e2e/run-with-cluster.sh via bench/e2e_sched/run.sh).

Same cluster, same nodesim nodes, PODS pods of 1 cpu each, several binders in turn (BINDERS):
  tephra   `tephra scheduler` on the SHAPE below; pods (and PodGroups/vcjobs) exist first, then it starts
  kube     kube-scheduler v1.20.2 on the same number of plain pods, pods first, then it starts
  poster   a bare client (this script, THREADS keep-alive HTTPS connections) that only POSTs pods/binding:
           the API server's binding ceiling
  baseline (BINDERS=...,baseline) another tephra build, TEPHRA_BASELINE_BIN, and/or other scheduler flags,
           BASELINE_SCHED_ARGS, for before/after in one run
SHAPE (Tephra's input):
  gang     PodGroups of GANG pods (minMember GANG), pods annotated with their group; scheduler only
  plain    bare pods (schedulerName volcano, no PodGroup, no owner); `tephra controller` and the scheduler
           start together, so the controller creates the PodGroups while the scheduler binds
  vcjob    vcjobs of one task with one replica (as stored after the mutating webhook); `tephra controller`
           and the scheduler start together (pods exist only after the scheduler admits the PodGroup)
Schedulers get --kube-api-qps QPS / --kube-api-burst BURST unless DEFAULT_FLAGS=1 (each binary's defaults;
the controller always gets CONTROLLER_QPS/CONTROLLER_BURST, default 50/100 = its defaults, plus CONTROLLER_ARGS). Bound pods are
counted by polling a pod list every POLL s. Reported: pods bound per second (first bind -> last bind), per
gang the time from its first bound pod to its last, for tephra the CPU seconds each role used, and the API
requests its roles sent per bound pod (rest_client_requests_total from their /metrics; leader election excluded; all verbs, and writes only).
Each Tephra role's last /metrics page is kept as LOGS/metrics-<prefix>-<pid>.txt (workqueue and reconcile
histograms: where a role's time went); PERF=controller,scheduler records those roles with perf.
"""
import http.client, json, os, subprocess, sys, time

# The stdlib API client is shared with the e2e tests (tests/e2e/lib/apiclient.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e", "lib"))
from apiclient import conn, req
import apiclient

NODES = int(os.environ.get("NODES", "1000"))
SHAPE = os.environ.get("SHAPE", "gang")
GANG = int(os.environ.get("GANG", "128")) if SHAPE == "gang" else 1
GANGS = int(os.environ.get("GANGS", "0")) or int(os.environ.get("PODS", "1024")) // GANG
DEFAULT_FLAGS = os.environ.get("DEFAULT_FLAGS", "") == "1"
CONTROLLER_QPS = os.environ.get("CONTROLLER_QPS", "50")
CONTROLLER_BURST = os.environ.get("CONTROLLER_BURST", "100")
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


def free_port():
    import socket
    so = socket.socket()
    so.bind(("127.0.0.1", 0))
    port = so.getsockname()[1]
    so.close()
    return port


def container():
    return [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]


def pods_for(prefix, sched, with_group):
    out = []
    for g in range(GANGS):
        for i in range(GANG):
            md = {"name": "%s-%d-%d" % (prefix, g, i), "namespace": "default", "labels": {"bench": prefix, "gang": str(g)}}
            if with_group:
                md["annotations"] = {"scheduling.k8s.io/group-name": "%s-%d" % (prefix, g)}
            out.append(("/api/v1/namespaces/default/pods", {
                "apiVersion": "v1", "kind": "Pod", "metadata": md,
                "spec": {"schedulerName": sched, "containers": container()}}))
    return out


def vcjobs_for(prefix):
    return [("/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs", {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": "%s-%d" % (prefix, g), "namespace": "default"},
        # As stored after the mutating webhook (every default set), so the controller has no defaults to write.
        "spec": {"schedulerName": "volcano", "minAvailable": 1, "queue": "default", "maxRetry": 3, "tasks": [{
            "name": "t", "replicas": 1, "minAvailable": 1, "maxRetry": 3,
            "template": {"metadata": {"labels": {"bench": prefix, "gang": str(g)}},
                         "spec": {"containers": container(), "restartPolicy": "Never"}}}]}}) for g in range(GANGS)]


def count(c, path):
    s, d = req(c, "GET", path)
    return len(json.loads(d)["items"])


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


def delete_until_gone(c, path, query="", delete_query=""):
    # A collection DELETE can stop part way on a busy API server (its request timeout ends it after some of
    # the objects), so it is sent again until nothing is left; waiting without re-sending hung the 5,000-node
    # run with 298 pods that were never deleted.
    while True:
        req(c, "DELETE", path + query + delete_query)
        for _ in range(10):
            if not count(c, path + query):
                return
            time.sleep(1)


def delete_all(prefix):
    c = conn()
    q = "?labelSelector=bench%3D" + prefix
    if SHAPE == "vcjob":
        delete_until_gone(c, "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs")
    delete_until_gone(c, "/api/v1/namespaces/default/pods", q, "&gracePeriodSeconds=0")
    delete_until_gone(c, "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups")


def api_requests(port):
    """(all, writes) requests from a role's rest_client_requests_total, leader election excluded."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    total = writes = 0
    for line in text.splitlines():
        if not line.startswith("rest_client_requests_total{") or "leader-election" in line:
            continue
        n = float(line.rsplit(" ", 1)[1])
        total += n
        if 'method="GET"' not in line and 'method="WATCH"' not in line:
            writes += n
    return total, writes


def cpu_seconds(pid):
    """User+system CPU seconds a process has used (Linux /proc), or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def role(binary, name, prefix, args):
    port = free_port()
    # PERF=controller,scheduler: profile those roles (perf record, call graphs) into LOGS/perf-<role>.data.
    wrap = []
    if name in os.environ.get("PERF", "").split(","):
        wrap = ["perf", "record", "-F", "499", "-g", "-o", os.path.join(LOGS, "perf-%s.data" % name), "--"]
    return subprocess.Popen(wrap + [binary, name, "--kubeconfig", os.environ["KUBECONFIG"], "--leader-elect=false",
                             "--metrics-addr", "127.0.0.1:%d" % port, "--health-addr", "0"] + args,
                            stdout=open(os.path.join(LOGS, "bench-tephra-%s-%s.log" % (name, prefix)), "w"),
                            stderr=subprocess.STDOUT), port


def stop(procs):
    for p, _ in procs:
        p.terminate()
    for p, _ in procs:
        p.wait()


def run_tephra(binary=None, prefix="t", extra_sched_args=""):
    binary = binary or TEPHRA
    total = GANGS * GANG
    sched_args = ([] if DEFAULT_FLAGS else ["--kube-api-qps", QPS, "--kube-api-burst", BURST]) + \
        (os.environ.get("SCHED_ARGS", "") + " " + extra_sched_args).split()
    ctl_args = ["--kube-api-qps", CONTROLLER_QPS, "--kube-api-burst", CONTROLLER_BURST] + os.environ.get("CONTROLLER_ARGS", "").split()
    procs, names = [], []
    try:
        if SHAPE == "gang":
            create_all([("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", {
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "%s-%d" % (prefix, g), "namespace": "default"},
                "spec": {"minMember": GANG, "queue": "default"}}) for g in range(GANGS)])
            create_all(pods_for(prefix, "volcano", True))
        elif SHAPE == "plain":
            create_all(pods_for(prefix, "volcano", False))
            procs.append(role(binary, "controller", prefix, ctl_args))
            names.append("controller")
        elif SHAPE == "vcjob":
            # A vcjob's pods exist only once the scheduler has admitted its PodGroup (Inqueue), so the
            # controller and the scheduler start together and the whole path is measured: job -> PodGroup ->
            # enqueue -> pods -> binds.
            create_all(vcjobs_for(prefix))
            procs.append(role(binary, "controller", prefix, ctl_args))
            names.append("controller")
        else:
            sys.exit("unknown SHAPE " + SHAPE)
        procs.append(role(binary, "scheduler", prefix, sched_args))
        names.append("scheduler")
        out = measure(prefix, total)
        # The roles go on after the last bind (PodGroups of plain pods, status writes, Events): count until
        # their request counters stand still for 3 s (at most 120 s), so the cost per pod is the whole cost.
        reqs, still, deadline = None, 0, time.time() + 120
        while still < 3 and time.time() < deadline:
            now = [api_requests(port) for _, port in procs]
            still = still + 1 if now == reqs else 0
            reqs = now
            time.sleep(1)
        # Each role's last /metrics page, for reading the run afterwards (workqueue, reconcile, client stats).
        for proc, port in procs:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/metrics")
            with open(os.path.join(LOGS, "metrics-%s-%d.txt" % (prefix, proc.pid)), "w") as f:
                f.write(c.getresponse().read().decode())
        # CPU each role used for the whole run (start, sync, binds, trailing writes): on a 2-core machine
        # every CPU second a role spends is one the API server and etcd did not get.
        out["cpu_seconds"] = {n: round(cpu_seconds(proc.pid) or 0.0, 2) for n, (proc, _) in zip(names, procs)}
        out["api_requests_per_pod"] = round(sum(r[0] for r in reqs) / total, 2)
        out["api_writes_per_pod"] = round(sum(r[1] for r in reqs) / total, 2)
        return out
    finally:
        stop(procs)
        delete_all(prefix)


def run_tephra_baseline():
    # Another build of tephra (TEPHRA_BASELINE_BIN, default TEPHRA_BIN) and/or other scheduler flags
    # (BASELINE_SCHED_ARGS, after SCHED_ARGS), for before/after comparisons in one run.
    return run_tephra(os.environ.get("TEPHRA_BASELINE_BIN", TEPHRA), "u", os.environ.get("BASELINE_SCHED_ARGS", ""))


def run_kube():
    create_all(pods_for("k", "default-scheduler", False))
    flags = [] if DEFAULT_FLAGS else ["--kube-api-qps", QPS, "--kube-api-burst", BURST]
    p = subprocess.Popen([os.path.join(K8S_BIN, "kube-scheduler"), "--kubeconfig", KCFG_SCHED,
                          "--authentication-kubeconfig", KCFG_SCHED, "--authorization-kubeconfig", KCFG_SCHED,
                          "--authentication-skip-lookup", "--leader-elect=false", "--port", "0",
                          "--bind-address", "127.0.0.1", "--secure-port", "0"] + flags,
                         stdout=open(os.path.join(LOGS, "bench-kube-scheduler.log"), "w"), stderr=subprocess.STDOUT)
    try:
        return measure("k", GANGS * GANG)
    finally:
        p.terminate()
        p.wait()
        delete_all("k")


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
    delete_all("b")
    return {"pods": len(binds), "seconds": round(dt, 2), "rate": round(len(binds) / dt, 1)}


if __name__ == "__main__":
    res = {"nodes": NODES, "shape": SHAPE, "pods": GANGS * GANG, "gang_size": GANG,
           "qps": "default" if DEFAULT_FLAGS else QPS, "burst": "default" if DEFAULT_FLAGS else BURST,
           "controller_qps": CONTROLLER_QPS}
    which = os.environ.get("BINDERS", "tephra,kube,poster").split(",")
    for key, name, fn in (("tephra", "tephra", run_tephra), ("baseline", "tephra_baseline", run_tephra_baseline),
                          ("kube", "kube_scheduler", run_kube), ("poster", "bare_poster", run_poster)):
        if key in which:
            res[name] = fn()
            print(name, json.dumps(res[name]), flush=True)
    if "bare_poster" in res:
        for name in ("tephra", "tephra_baseline", "kube_scheduler"):
            if name in res:
                res[name]["of_ceiling"] = round(res[name]["rate"] / res["bare_poster"]["rate"], 2)
    print("RESULT " + json.dumps(res), flush=True)
