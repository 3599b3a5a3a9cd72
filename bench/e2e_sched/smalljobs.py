#!/usr/bin/env python3
"""Small jobs the way CI pipelines send them (run inside tests/e2e/run-with-cluster.sh via
bench/e2e_sched/smalljobs.sh). Same cluster, same nodesim nodes, one path after another (PATHS):

  tephra  one-pod vcjobs (minAvailable 1, as stored after the mutating webhook) through `tephra controller` and
          `tephra scheduler`: job -> PodGroup -> Inqueue -> pod -> bind
  kube    one-pod batch/v1 Jobs through kube-controller-manager's job controller (started by the harness with
          the same client QPS, TEPHRA_E2E_KCM_ARGS) and kube-scheduler v1.20.2
  poster  the ceiling: a bare client that creates each job's pod and binds it itself
  baseline  another tephra build (TEPHRA_BASELINE_BIN) on the tephra path, for before/after in one run
TEPHRA_CONTROLLER_ARGS / TEPHRA_SCHEDULER_ARGS (BASELINE_... for the baseline) add flags to the roles;
PERF=<dir> records them with perf.

Each path: its roles start, one warm-up job goes all the way to a bound pod (so every role has synced), then
  burst   JOBS jobs created at once over THREADS connections
  steady  RATE jobs per second for STEADY_SECONDS (0: skipped)
and per job the time from its create request to its pod seen bound (pods polled every POLL s). Reported per
phase: jobs/s (first create -> last bound), create -> bound p50/p99; per path: the API requests its roles sent
per job by verb and resource (the audit log, by user agent), CPU seconds per job of each role and of the API
server and etcd. Thresholds: bench/thresholds.yaml, section e2e_small_jobs (bench/tools/check_thresholds.py
reads the RESULT line).
"""
import collections, http.client, json, os, signal, socket, subprocess, sys, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e", "lib"))
import apiclient
from apiclient import conn, req
from roles import free_port

NODES = int(os.environ.get("NODES", "1000"))
JOBS = int(os.environ.get("JOBS", "1000"))
RATE = float(os.environ.get("RATE", "20"))
STEADY_SECONDS = float(os.environ.get("STEADY_SECONDS", "30"))
THREADS = int(os.environ.get("THREADS", "16"))
QPS = os.environ.get("QPS", "1000")
BURST = os.environ.get("BURST", "1000")
POLL = 0.2
TEPHRA = os.environ["TEPHRA_BIN"]
K8S_BIN = os.environ["K8S_BIN"]
DIR = os.environ["TEPHRA_E2E_DIR"]
LOGS = os.environ.get("TEPHRA_E2E_LOG_DIR", "/tmp")
AUDIT = os.path.join(DIR, "logs", "audit.log")
KCFG_SCHED = os.path.join(DIR, "kube-scheduler.kubeconfig")
NS = "default"


def container():
    return [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]


def labels(prefix, i):
    return {"bench": prefix, "job": str(i)}


def vcjob(prefix, i):
    return ("/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs" % NS, {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": "%s-%d" % (prefix, i), "namespace": NS},
        "spec": {"schedulerName": "volcano", "minAvailable": 1, "queue": "default", "maxRetry": 3, "tasks": [{
            "name": "t", "replicas": 1, "minAvailable": 1, "maxRetry": 3,
            "template": {"metadata": {"labels": labels(prefix, i)},
                         "spec": {"containers": container(), "restartPolicy": "Never"}}}]}})


def kubejob(prefix, i):
    return ("/apis/batch/v1/namespaces/%s/jobs" % NS, {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "%s-%d" % (prefix, i), "namespace": NS},
        "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 0,
                 "template": {"metadata": {"labels": labels(prefix, i)},
                              "spec": {"containers": container(), "restartPolicy": "Never"}}}})


class Poster:
    """The ceiling: creates the job's pod and binds it (round-robin over the nodes)."""

    def __init__(self):
        c = conn()
        s, d = req(c, "GET", "/api/v1/nodes")
        self.nodes = [n["metadata"]["name"] for n in json.loads(d)["items"]]

    def __call__(self, c, prefix, i):
        name = "%s-%d" % (prefix, i)
        s, d = req(c, "POST", "/api/v1/namespaces/%s/pods" % NS, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": labels(prefix, i)},
            "spec": {"schedulerName": "nobody", "containers": container(), "restartPolicy": "Never"}})
        if s != 201:
            return s, d
        uid = json.loads(d)["metadata"]["uid"]
        return req(c, "POST", "/api/v1/namespaces/%s/pods/%s/binding" % (NS, name), {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.nodes[i % len(self.nodes)]}})


def submit(make, prefix, ids, threads, t_create, rate=None):
    """Creates jobs `ids` over `threads` connections (at `rate` per second when given), noting each create
    request's start time in t_create as it returns (a dict write is atomic: the watcher reads it meanwhile)."""
    errs, lock, next_n = [], threading.Lock(), [0]
    t0 = time.time()

    def work():
        c = conn()
        while True:
            with lock:
                n = next_n[0]
                if n >= len(ids):
                    return
                next_n[0] += 1
            i = ids[n]
            if rate:
                delay = t0 + n / rate - time.time()
                if delay > 0:
                    time.sleep(delay)  # pacing an open-loop arrival, not waiting for a result
            t = time.time()
            if isinstance(make, Poster):
                s, d = make(c, prefix, i)
            else:
                path, obj = make(prefix, i)
                s, d = req(c, "POST", path, obj)
            if s not in (200, 201):
                errs.append((s, d[:200]))
            t_create[i] = t
    ts = [threading.Thread(target=work) for _ in range(threads)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    if errs:
        print("create errors: %s" % errs[:3], flush=True)
        os._exit(1)


class BoundWatcher:
    """Watches the phase's pods (label bench=<prefix>) from before the first create and notes when each job's
    pod is first seen bound. A watch, not a polled list: a list of 1,000 pods every fraction of a second would
    load the API server that every path is measured against."""

    def __init__(self, prefix):
        self.bound, self.prefix = {}, prefix
        c = conn(timeout=900)
        s, d = req(c, "GET", "/api/v1/namespaces/%s/pods?labelSelector=bench%%3D%s" % (NS, prefix))
        self.rv = json.loads(d)["metadata"]["resourceVersion"]
        self.c = conn(timeout=900)
        self.c.request("GET", "/api/v1/namespaces/%s/pods?watch=1&labelSelector=bench%%3D%s&resourceVersion=%s&timeoutSeconds=900"
                       % (NS, prefix, self.rv), headers={"Authorization": "Bearer " + apiclient.TOKEN})
        self.r = self.c.getresponse()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while True:
            try:
                line = self.r.readline()
            except (OSError, ValueError, http.client.HTTPException):
                return
            if not line:
                return
            now = time.time()
            o = json.loads(line)["object"]
            if o.get("kind") != "Pod" or not o.get("spec", {}).get("nodeName"):
                continue
            i = int(o["metadata"]["labels"]["job"])
            self.bound.setdefault(i, now)

    def close(self):
        # shutdown, not close: close() waits for the buffer lock that the reader thread holds in readline().
        try:
            self.c.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.t.join()


def run_phase(make, prefix, ids, rate=None):
    """Creates jobs `ids` (at `rate` per second, or all at once) while a watch notes each bind."""
    w = BoundWatcher(prefix)
    t_create = {}
    t = threading.Thread(target=submit, args=(make, prefix, ids, THREADS, t_create, rate))
    t.start()
    want, deadline = set(ids), time.time() + 900
    while not (t_create.keys() >= want and w.bound.keys() >= want):
        if time.time() > deadline or not w.t.is_alive():
            print("%s: only %d/%d jobs bound" % (prefix, len(w.bound.keys() & want), len(want)), flush=True)
            os._exit(1)
        time.sleep(POLL)  # polling two dicts in this process, not the API server
    t.join()
    w.close()
    lat = sorted(w.bound[i] - t_create[i] for i in want)
    span = max(w.bound[i] for i in want) - min(t_create[i] for i in want)
    return {"jobs": len(want), "seconds": round(span, 2), "jobs_per_s": round(len(want) / max(span, 0.001), 1),
            "p50_s": round(lat[len(lat) // 2], 3), "p99_s": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 3),
            "max_s": round(lat[-1], 3)}


def cpu_of(pid):
    """User+system CPU seconds of process `pid` and, when it leads a process group (the harness starts each
    daemon in its own session), of every live process in that group (Linux /proc)."""
    total = 0.0
    tck = os.sysconf("SC_CLK_TCK")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(d) == pid or int(fields[2]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tck
    return total


def harness_pid(name):
    with open(os.path.join(DIR, "run", name + ".pid")) as f:
        return int(f.read())


def audit_offset():
    try:
        return os.path.getsize(AUDIT)
    except OSError:
        return 0


def audit_counts(offset, agents):
    """Requests in the audit log after `offset` whose user agent starts with one of `agents`:
    {"<agent> <verb> <resource>": n}, the agent as far as its first space (kube's agents carry their version)."""
    out = collections.Counter()
    with open(AUDIT, "rb") as f:
        f.seek(offset)
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("stage") != "ResponseComplete":
                continue
            ua = e.get("userAgent", "")
            if not any(ua.startswith(a) for a in agents):
                continue
            ref = e.get("objectRef") or {}
            res = ref.get("resource", "?") + ("/" + ref["subresource"] if ref.get("subresource") else "")
            if ref.get("resource") == "leases":
                continue
            out["%s %s %s" % (ua.split(" ")[0], e.get("verb"), res)] += 1
    return dict(out)


def start(name, argv):
    log = open(os.path.join(LOGS, "smalljobs-%s.log" % name), "w")
    # PERF=<dir>: record each Tephra role with perf (call graphs) into <dir>/perf-<name>.data.
    if os.environ.get("PERF") and name.startswith(("tephra-", "baseline-")):
        argv = ["perf", "record", "-F", "299", "-g", "-o", os.path.join(os.environ["PERF"], "perf-%s.data" % name), "--"] + argv
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def settle(agents, offset):
    """Waits until the roles' API requests stand still for 3 s (at most 120 s): the cost per job is the whole cost."""
    last, still, deadline = None, 0, time.time() + 120
    while still < 3 and time.time() < deadline:
        now = sum(audit_counts(offset, agents).values())
        still = still + 1 if now == last else 0
        last = now
        time.sleep(1)


def run_path(name, make, procs, agents, cpu_groups):
    prefix = {"baseline": "u"}.get(name, name[0])
    # Warm-up: one job all the way to a bound pod, so the roles' caches are synced before the clock starts.
    run_phase(make, prefix + "w", [0])
    offset = audit_offset()
    cpu0 = {k: cpu_of(g) for k, g in cpu_groups.items()}
    res = {"burst": run_phase(make, prefix + "b", list(range(JOBS)))}
    print(name, "burst", json.dumps(res["burst"]), flush=True)
    if STEADY_SECONDS > 0:
        n = int(RATE * STEADY_SECONDS)
        res["steady"] = run_phase(make, prefix + "s", list(range(n)), RATE)
        res["steady"]["rate"] = RATE
        print(name, "steady", json.dumps(res["steady"]), flush=True)
    total = JOBS + (int(RATE * STEADY_SECONDS) if STEADY_SECONDS > 0 else 0)
    if agents:
        settle(agents, offset)
        counts = audit_counts(offset, agents)
        res["requests_per_job"] = {k: round(v / total, 2) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])}
        res["writes_per_job"] = round(sum(v for k, v in counts.items() if k.split(" ")[1] not in ("get", "list", "watch")) / total, 2)
    res["cpu_ms_per_job"] = {k: round((cpu_of(g) - cpu0[k]) * 1000 / total, 2) for k, g in cpu_groups.items()}
    return res


def delete_all():
    c = apiclient.Client()
    for path in ("/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs" % NS, "/apis/batch/v1/namespaces/%s/jobs" % NS):
        c.delete(path + "?propagationPolicy=Background")
    for path in ("/api/v1/namespaces/%s/pods?gracePeriodSeconds=0" % NS,
                 "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups" % NS):
        c.delete(path)
    # Wait until the next path starts on an empty namespace (a collection DELETE may stop part way).
    while True:
        left = len(c.items("/api/v1/namespaces/%s/pods" % NS)) + \
            len(c.items("/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs" % NS)) + \
            len(c.items("/apis/batch/v1/namespaces/%s/jobs" % NS))
        if not left:
            return
        c.delete("/api/v1/namespaces/%s/pods?gracePeriodSeconds=0" % NS)
        time.sleep(1)


def stop(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait()


def server_groups():
    return {"kube-apiserver": harness_pid("kube-apiserver"), "etcd": harness_pid("etcd")}


def save_metrics(name, port):
    """The role's last /metrics page (workqueues, reconciles, status writes: where its time went), kept as
    <METRICS_DIR or the log directory>/metrics-<name>.txt."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/metrics")
        with open(os.path.join(os.environ.get("METRICS_DIR", LOGS), "metrics-%s.txt" % name), "w") as f:
            f.write(c.getresponse().read().decode())
    except OSError as e:
        print("metrics of %s: %s" % (name, e), flush=True)


def path_tephra(binary=TEPHRA, name="tephra"):
    procs, ports = [], {}
    for role, extra in (("controller", []), ("scheduler", [])):
        ports[role] = free_port()
        procs.append(start(name + "-" + role, [binary, role, "--kubeconfig", os.environ["KUBECONFIG"], "--leader-elect=false",
                                              "--metrics-addr", "127.0.0.1:%d" % ports[role], "--health-addr", "0",
                                              "--kube-api-qps", QPS, "--kube-api-burst", BURST] + extra +
                                             os.environ.get("%s_%s_ARGS" % (name.upper(), role.upper()), "").split()))
    try:
        groups = dict(server_groups(), **{name + "-controller": procs[0].pid, name + "-scheduler": procs[1].pid})
        res = run_path(name, vcjob, procs, ["tephra-controller", "tephra-scheduler"], groups)
        for role, port in ports.items():
            save_metrics(name + "-" + role, port)
        return res
    finally:
        stop(procs)
        delete_all()


def path_kube():
    p = start("kube-scheduler", [os.path.join(K8S_BIN, "kube-scheduler"), "--kubeconfig", KCFG_SCHED,
                                 "--authentication-kubeconfig", KCFG_SCHED, "--authorization-kubeconfig", KCFG_SCHED,
                                 "--authentication-skip-lookup", "--leader-elect=false", "--port", "0",
                                 "--bind-address", "127.0.0.1", "--secure-port", "0",
                                 "--kube-api-qps", QPS, "--kube-api-burst", BURST])
    try:
        # kube-controller-manager runs every controller of the harness; its CPU is counted whole.
        groups = dict(server_groups(), **{"kube-controller-manager": harness_pid("kube-controller-manager"),
                                          "kube-scheduler": p.pid})
        return run_path("kube", kubejob, [p], ["kube-controller-manager/", "kube-scheduler/"], groups)
    finally:
        stop([p])
        delete_all()


def path_poster():
    try:
        return run_path("poster", Poster(), [], [], server_groups())
    finally:
        delete_all()


if __name__ == "__main__":
    # The harness's timeout sends SIGTERM: unwind, so every path's `finally` stops the roles it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("smalljobs: terminated"))
    res = {"nodes": NODES, "jobs": JOBS, "threads": THREADS, "qps": QPS}
    for key in os.environ.get("PATHS", "tephra,kube,poster").split(","):
        res[key] = {"tephra": path_tephra, "kube": path_kube, "poster": path_poster,
                    # another build for before/after in one run (TEPHRA_BASELINE_BIN)
                    "baseline": lambda: path_tephra(os.environ["TEPHRA_BASELINE_BIN"], "baseline")}[key]()
    for key in ("tephra", "baseline", "kube"):
        if key in res and "poster" in res:
            res[key]["burst"]["of_ceiling"] = round(res[key]["burst"]["jobs_per_s"] / res["poster"]["burst"]["jobs_per_s"], 3)
        if key in res and key != "kube" and "kube" in res:
            res[key]["burst"]["of_kube"] = round(res[key]["burst"]["jobs_per_s"] / res["kube"]["burst"]["jobs_per_s"], 2)
    for key in ("tephra", "baseline"):
        if key in res:
            res[key]["role_cpu_ms_per_job"] = round(
                sum(v for k, v in res[key]["cpu_ms_per_job"].items() if k.startswith(key + "-")), 2)
    print("RESULT " + json.dumps(res), flush=True)
    # BENCH_JSON=<file>: the paths' numbers as Google Benchmark runs, for bench/tools/check_thresholds.py.
    if os.environ.get("BENCH_JSON"):
        runs = []
        for key in ("tephra", "kube", "poster", "baseline"):
            if key not in res:
                continue
            r = res[key]
            run = {"name": "SmallJobs/%s" % key, "run_type": "iteration", "time_unit": "ms",
                   "real_time": r["burst"]["seconds"] * 1000, "cpu_time": 0,
                   "burst_jobs_per_s": r["burst"]["jobs_per_s"], "burst_p99_s": r["burst"]["p99_s"]}
            for k in ("of_kube", "of_ceiling"):
                if k in r["burst"]:
                    run[k] = r["burst"][k]
            if "steady" in r:
                run["steady_p99_s"] = r["steady"]["p99_s"]
            if "writes_per_job" in r:
                run["writes_per_job"] = r["writes_per_job"]
            if "role_cpu_ms_per_job" in r:
                run["role_cpu_per_job_ms"] = r["role_cpu_ms_per_job"]
            runs.append(run)
        with open(os.environ["BENCH_JSON"], "w") as f:
            json.dump({"benchmarks": runs}, f, indent=1)
