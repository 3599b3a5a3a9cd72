#!/usr/bin/env python3
"""`tephra controller` end-to-end bench (run inside tests/e2e/run-with-cluster.sh via bench/controller/run.sh).

No scheduler runs: this script plays the scheduler's half of Volcano's handshake by merge-patching every
PodGroup it sees to status.phase=Inqueue (the job controller creates pods only for a usable PodGroup), and the
kubelet's half by patching pod status to Running. No nodes are needed; pods stay unbound.
  1. big     one vcjob, 1 task x BIG replicas (ns ctrl-big): pods created per second by the controller
             (first pod seen -> all seen, pod list polled every POLL s), vs
     bare    the same pod objects (copied from the controller's pods) POSTed by this script with the same
             client QPS/BURST token bucket and the controller's create parallelism (8 connections), ns ctrl-bare.
  2. small   SMALL vcjobs of 1 task x 2 replicas submitted at once (16 connections, unthrottled), ns ctrl-small:
             time until all pods exist; then all pods patched Running: time until all jobs report Running.
             workqueue_depth{name="job-controller"} scraped from the controller's /metrics every 0.1 s: peak.
  3. latency   after step 2 (all SMALL jobs Running, caches full), SAMPLES reserved jobs one at a time: one pod
             patched Running, time until the vcjob's status.running reflects it (vcjob polled every 10 ms).
"""
import http.client, json, os, ssl, subprocess, sys, threading, time, urllib.request

API = os.environ["TEPHRA_E2E_API_URL"].replace("https://", "")
HOST, PORT = API.split(":")
TOKEN = open(os.environ["TEPHRA_E2E_TOKEN_FILE"]).read().strip()
CTX = ssl.create_default_context(cafile=os.environ["TEPHRA_E2E_CA_FILE"])
QPS = float(os.environ.get("QPS", "50"))
BURST = int(os.environ.get("BURST", "100"))
BIG = int(os.environ.get("BIG", "1000"))
SMALL = int(os.environ.get("SMALL", "1000"))
SAMPLES = int(os.environ.get("SAMPLES", "30"))
CREATE_PAR = 8  # JobReconcilerOptions::pod_create_parallelism (reconcilers/job/reconciler.h)
POLL = 0.1
TEPHRA = os.environ["TEPHRA_BIN"]
LOGS = os.environ.get("TEPHRA_E2E_LOG_DIR", "/tmp")
MPORT = int(os.environ.get("METRICS_PORT", "28181"))
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs"
PGS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups"
PODS = "/api/v1/namespaces/%s/pods"


def conn():
    return http.client.HTTPSConnection(HOST, int(PORT), context=CTX, timeout=60)


def req(c, method, path, body=None, ctype="application/json"):
    h = {"Authorization": "Bearer " + TOKEN, "Content-Type": ctype}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse()
    return r.status, r.read()


class Bucket:
    """client-go style token bucket: BURST tokens, refilled at QPS per second; take() blocks."""
    def __init__(self, qps, burst):
        self.qps, self.cap, self.tokens, self.t, self.lock = qps, burst, float(burst), time.time(), threading.Lock()

    def take(self):
        while True:
            with self.lock:
                now = time.time()
                self.tokens = min(self.cap, self.tokens + (now - self.t) * self.qps)
                self.t = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                wait = (1 - self.tokens) / self.qps
            time.sleep(wait)


def run_parallel(items, threads, fn):
    idx, lock, errs = [0], threading.Lock(), []

    def work():
        c = conn()
        while True:
            with lock:
                if idx[0] >= len(items):
                    return
                it = items[idx[0]]
                idx[0] += 1
            try:
                e = fn(c, it)
            except Exception as ex:  # a dropped keep-alive connection: reconnect and retry once
                c = conn()
                e = fn(c, it)
            if e:
                errs.append(e)
    ts = [threading.Thread(target=work) for _ in range(threads)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    return errs


def post(c, item):
    path, o = item
    s, d = req(c, "POST", path, o)
    return None if s in (200, 201) else (s, d[:200])


def items(c, path):
    s, d = req(c, "GET", path)
    if s != 200:
        sys.exit("GET %s: %s %s" % (path, s, d[:200]))
    return json.loads(d)["items"]


def count_until(ns, total, deadline_s=300, pred=None, what="pods"):
    """Polls the list until `total` items (matching pred) exist; returns (t_first, t_all)."""
    c, t_first, start = conn(), None, time.time()
    n = 0
    while time.time() - start < deadline_s:
        its = items(c, (PODS if what == "pods" else JOBS) % ns)
        n = sum(1 for i in its if pred is None or pred(i))
        now = time.time()
        if n and t_first is None:
            t_first = now
        if n >= total:
            return t_first, now
        time.sleep(POLL)
    sys.exit("%s/%s: only %d/%d after %ds" % (ns, what, n, total, deadline_s))


class PodGroupEnqueuer(threading.Thread):
    """Stands in for the scheduler's enqueue action: every PodGroup not yet Inqueue/Running gets Inqueue."""
    def __init__(self, namespaces):
        super().__init__(daemon=True)
        self.namespaces, self.stop, self.patched = namespaces, threading.Event(), 0

    def run(self):
        c = conn()
        while not self.stop.is_set():
            for ns in self.namespaces:
                todo = [p["metadata"]["name"] for p in items(c, PGS % ns)
                        if p.get("status", {}).get("phase") not in ("Inqueue", "Running")]

                def patch(cc, name, ns=ns):
                    s, d = req(cc, "PATCH", (PGS % ns) + "/" + name, {"status": {"phase": "Inqueue"}},
                               "application/merge-patch+json")
                    return None if s == 200 else (s, d[:200])
                if todo:
                    run_parallel(todo, 8, patch)
                    self.patched += len(todo)
            time.sleep(0.2)


class DepthScraper(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.stop, self.samples = threading.Event(), []

    def run(self):
        while not self.stop.is_set():
            try:
                txt = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % MPORT, timeout=5).read().decode()
                for line in txt.splitlines():
                    if line.startswith("workqueue_depth{") and 'name="job-controller"' in line:
                        self.samples.append((time.time(), float(line.split()[-1])))
            except Exception:
                pass
            time.sleep(0.1)


def job(ns, name, replicas, labels):
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulerName": "volcano", "queue": "default", "minAvailable": replicas,
                     "tasks": [{"name": "t", "replicas": replicas, "template": {
                         "metadata": {"labels": labels},
                         "spec": {"restartPolicy": "Never", "containers": [{
                             "name": "c", "image": "busybox",
                             "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "100m"}}}]}}}]}}


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else 0.0


def main():
    c = conn()
    for ns in ("ctrl-big", "ctrl-bare", "ctrl-small"):
        req(c, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    enq = PodGroupEnqueuer(["ctrl-big", "ctrl-small"])
    enq.start()
    depth = DepthScraper()
    ctrl = subprocess.Popen([TEPHRA, "controller", "--kubeconfig", os.environ["KUBECONFIG"], "--leader-elect=false",
                             "--listen-address", "127.0.0.1:%d" % MPORT, "--healthz-address", "0",
                             "--kube-api-qps", str(QPS), "--kube-api-burst", str(BURST)]
                            + os.environ.get("CTRL_ARGS", "").split(),
                            stdout=open(os.path.join(LOGS, "bench-tephra-controller.log"), "w"),
                            stderr=subprocess.STDOUT)
    res = {"qps": QPS, "burst": BURST, "ctrl_args": os.environ.get("CTRL_ARGS", "")}
    try:
        time.sleep(2)  # informers' initial lists; the metrics endpoint is up once this returns
        depth.start()
        # ---- 1. one big job vs the bare poster
        t0 = time.time()
        s, d = req(c, "POST", JOBS % "ctrl-big", job("ctrl-big", "big", BIG, {"bench": "big"}))
        if s != 201:
            sys.exit("create big job: %s %s" % (s, d[:300]))
        tf, ta = count_until("ctrl-big", BIG)
        res["big"] = {"pods": BIG, "first_pod_after_submit_s": round(tf - t0, 2), "seconds": round(ta - tf, 2),
                      "rate": round(BIG / max(ta - tf, POLL), 1), "submit_to_all_s": round(ta - t0, 2)}
        print("big:", res["big"], flush=True)
        tmpl = items(c, (PODS % "ctrl-big") + "?limit=1")[0]
        objs = []
        for i in range(BIG):
            md = {k: v for k, v in tmpl["metadata"].items() if k in ("labels", "annotations")}
            md.update({"name": "bare-%d" % i, "namespace": "ctrl-bare"})
            spec = dict(tmpl["spec"])
            objs.append((PODS % "ctrl-bare", {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}))
        bucket = Bucket(QPS, BURST)

        def throttled(cc, it):
            bucket.take()
            return post(cc, it)
        # The pod list is polled while the poster runs, exactly as for the controller.
        seen = {}
        poller = threading.Thread(target=lambda: seen.update(r=count_until("ctrl-bare", BIG)))
        poller.start()
        t0 = time.time()
        errs = run_parallel(objs, CREATE_PAR, throttled)
        tc = time.time()
        if errs:
            sys.exit("bare create errors: %s" % errs[:3])
        poller.join()
        tf, ta = seen["r"]
        res["bare"] = {"pods": BIG, "seconds": round(ta - tf, 2), "rate": round(BIG / max(ta - tf, POLL), 1),
                       "submit_to_all_s": round(ta - t0, 2), "client_side_s": round(tc - t0, 2)}
        res["big_vs_bare"] = round(res["big"]["rate"] / res["bare"]["rate"], 3)
        res["big_vs_bare_submit_to_all"] = round(res["bare"]["submit_to_all_s"] / res["big"]["submit_to_all_s"], 3)
        print("bare:", res["bare"], "controller/bare:", res["big_vs_bare"], flush=True)
        # Free the apiserver/informers before step 2.
        req(c, "DELETE", (JOBS % "ctrl-big") + "/big")
        req(c, "DELETE", (PODS % "ctrl-big") + "?gracePeriodSeconds=0")
        req(c, "DELETE", (PODS % "ctrl-bare") + "?gracePeriodSeconds=0")
        deadline = time.time() + 120
        while items(c, PODS % "ctrl-big") or items(c, PODS % "ctrl-bare"):
            if time.time() > deadline:
                sys.exit("step-1 pods not deleted after 120 s")
            time.sleep(0.5)
        time.sleep(1)
        # ---- 2. SMALL small jobs at once
        peak_before = max([v for _, v in depth.samples] or [0])
        t_small = time.time()
        errs = run_parallel([(JOBS % "ctrl-small", job("ctrl-small", "s-%d" % i, 2, {"bench": "small"}))
                             for i in range(SMALL)], 16, post)
        t_sub = time.time()
        if errs:
            sys.exit("small create errors: %s" % errs[:3])
        tf, ta = count_until("ctrl-small", 2 * SMALL, deadline_s=400)
        res["small"] = {"jobs": SMALL, "pods": 2 * SMALL, "submit_s": round(t_sub - t_small, 2),
                        "submit_to_all_pods_s": round(ta - t_small, 2)}
        print("small pods:", res["small"], flush=True)
        # ---- 2b + 3. patch pods Running (bulk), with latency samples in parallel
        pods = items(c, PODS % "ctrl-small")
        by_job = {}
        for p in pods:
            by_job.setdefault(p["metadata"]["annotations"].get("volcano.sh/job-name")
                              or p["metadata"]["labels"].get("volcano.sh/job-name"), []).append(p["metadata"]["name"])
        sample_jobs = ["s-%d" % i for i in range(SAMPLES)]
        bulk = [n for j, ns in by_job.items() if j not in sample_jobs for n in ns]

        def run_pod(cc, name):
            s, d = req(cc, "PATCH", (PODS % "ctrl-small") + "/" + name + "/status", {"status": {"phase": "Running"}},
                       "application/merge-patch+json")
            return None if s == 200 else (s, d[:200])
        t_run = time.time()
        errs = run_parallel(bulk, 16, run_pod)
        t_bulk = time.time()
        if errs:
            sys.exit("pod status patch errors: %s" % errs[:3])
        n_bulk_jobs = SMALL - SAMPLES
        _, ta = count_until("ctrl-small", n_bulk_jobs, deadline_s=300, what="jobs",
                            pred=lambda j: j.get("status", {}).get("state", {}).get("phase") == "Running")
        # 3. With all jobs and pods resident (the controller's caches hold SMALL jobs, 2*SMALL pods), one pod
        # change at a time: every pod change of the bulk above is already reflected, so this is the latency of
        # a change arriving at a loaded but not backlogged controller. (During the bulk the worst case is
        # patch_start_to_all_jobs_running_s: a FIFO backlog of SMALL status writes under the client QPS.)
        lat = []
        for j in sample_jobs:
            e = run_pod(c, by_job[j][0])
            if e:
                sys.exit("sample patch: %s" % (e,))
            t = time.time()
            while True:
                s, d = req(c, "GET", (JOBS % "ctrl-small") + "/" + j)
                if json.loads(d).get("status", {}).get("running", 0) >= 1:
                    lat.append(time.time() - t)
                    break
                if time.time() - t > 60:
                    sys.exit("job %s status did not reflect its running pod within 60 s" % j)
                time.sleep(0.01)
        depth.stop.set()
        vals = [v for _, v in depth.samples if _ >= t_small]
        res["small"].update({"pod_running_patches": len(bulk), "patch_s": round(t_bulk - t_run, 2),
                             "patch_start_to_all_jobs_running_s": round(ta - t_run, 2),
                             "total_s": round(ta - t_small, 2),
                             "workqueue_depth_peak": max(vals or [0]), "workqueue_depth_last": vals[-1] if vals else None,
                             "workqueue_depth_peak_step1": peak_before, "depth_samples": len(vals)})
        res["status_latency"] = {"samples": len(lat),
                                 "p50_ms": round(pct(lat, 0.5) * 1000, 1), "p99_ms": round(pct(lat, 0.99) * 1000, 1),
                                 "max_ms": round(max(lat, default=0) * 1000, 1)}
        res["enqueuer_patches"] = enq.patched
        print("small:", res["small"], flush=True)
        print("status latency:", res["status_latency"], flush=True)
        print("RESULT " + json.dumps(res), flush=True)
        limit = float(os.environ.get("MAX_LATENCY_MS", "0"))
        if limit and res["status_latency"]["p99_ms"] > limit:
            sys.exit("status latency p99 %.1f ms > MAX_LATENCY_MS %.0f" % (res["status_latency"]["p99_ms"], limit))
        floor = float(os.environ.get("MIN_RATIO", "0"))
        if floor and res["big_vs_bare"] < floor:
            sys.exit("controller/bare pod rate %.3f < MIN_RATIO %.2f" % (res["big_vs_bare"], floor))
    finally:
        depth.stop.set()
        enq.stop.set()
        ctrl.terminate()
        ctrl.wait()


if __name__ == "__main__":
    main()
