#!/usr/bin/env python3
"""Chaos e2e for the fault-controller (docs/faults.md): seeded random faults of every kind nodesim can inject,
hitting running vcjobs of several shapes, with the controller and the scheduler SIGKILLed mid-recovery and a
burst past the node budget. Run by faults_chaos_test.sh through tests/e2e/run-with-cluster.sh; Python 3 stdlib.

  SEED    seed of every choice the test makes (default 1); printed first, replay with the same value
  FAULTS  faults injected one after another (default 20), on top of the burst of BURST (8) at once

What is checked, all the time (from watches of nodes, pods and vcjobs, so no state between two polls is missed):
  * no job lost: every vcjob exists and its phase stays Pending, Running or Restarting;
  * never more than the node budget (6 of 64) cordoned by Tephra (tephra.io/fault-cordoned), nor marked;
  * a job none of whose pods was on a faulted node keeps its pod uids (no restart for another job's fault);
  * a pod on a held node (tephra.io/fault-held) is never deleted while the node stays held;
and per fault: it is recorded (tephra.io/fault names the signal) within bounds (a dead node after its 5 s
NotReady grace) or, in the burst only, held; once recorded, what the fault strands is gone from the node: every
batch pod for a dead node, a condition or a taint; for one unhealthy GPU, the pod holding it (nodesim fails it,
docs/nodesim.md), so that the node's pods then ask no more than the 7 healthy GPUs; when they asked no more
than that from the start, none may go. Every job that lost pods runs all its replicas again, a networkTopology
hard tier-1 job inside one leaf; when healed, the node is unmarked and uncordoned.
"""
import dataclasses, datetime, json, math, os, random, signal, socket, subprocess, sys, tempfile, threading, time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import apiclient  # noqa: E402
from roles import Role, free_port, iso_now  # noqa: E402

NS = "default"
P_NODES = "/api/v1/nodes"
P_PODS = "/api/v1/namespaces/%s/pods" % NS
P_JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs" % NS
P_EVENTS = "/api/v1/namespaces/default/events"

NODES, PER_LEAF, LEAVES_PER_SPINE, GPUS, CPUS = 64, 8, 4, 8, 16
BUDGET = max(1, int(math.floor(0.1 * NODES + 1e-9)))   # --fault-max-node-fraction 0.1 (the default)
AVOID_S = 30          # --fault-avoid-seconds: healed nodes come back soon enough to be reused in the run
MAX_ACTIVE = 3        # faults injected and not yet cleared, outside the burst
BURST = 8             # nodes faulted at once: BURST - BUDGET of them must be held
SEED = int(os.environ.get("SEED", "").strip() or 1)
FAULTS = int(os.environ.get("FAULTS", "").strip() or 20)

A_FAULT, A_CORDONED, A_HELD, A_AVOID = ("tephra.io/fault", "tephra.io/fault-cordoned", "tephra.io/fault-held",
                                        "tephra.io/fault-avoid-until")
XID_TAINT = "nvidia.com/gpu-xid-error"
# kind -> (what nodesim/kubectl is told, the signal tephra.io/fault must name)
KINDS = {
    "death": ("tephra.io/sim-fail", "true", "NotReady"),
    "gpu": ("tephra.io/sim-unhealthy-gpus", "1", "DeviceUnhealthy:nvidia.com/gpu"),
    "xid": ("tephra.io/sim-conditions", "GpuXidError", "GpuXidError"),
    "nic": ("tephra.io/sim-conditions", "NetworkUnavailable", "NetworkUnavailable"),
    "taint": (None, None, "taint:" + XID_TAINT),
}
OK_PHASES = {"", "Pending", "Running", "Restarting"}

# Bounds (seconds). Generous for a loaded 2-core machine; each is far above what a working system needs.
T_RECORD = 8          # inject -> tephra.io/fault (a condition, a taint, a GPU: about a second) ...
T_RECORD_DEATH = 10   # ... and for a dead node, whose 5 s NotReady grace (--fault-not-ready-grace) comes first
T_EMPTY = 30          # recorded -> no batch pod on the node
T_WHOLE = 120         # a job loses pods -> all its replicas Running again
T_CLEAR = 30          # heal -> unmarked, uncordoned
RESYNC = 15           # a restarted role lists the cluster again: bounds stretch by its downtime and this


class Failed(Exception):
    pass


def now():
    return time.monotonic()


def parse_rfc3339(s):
    try:
        return datetime.datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    except (TypeError, ValueError):
        return None


def gpu_of(pod):
    n = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        r = c.get("resources") or {}
        v = (r.get("limits") or {}).get("nvidia.com/gpu") or (r.get("requests") or {}).get("nvidia.com/gpu")
        n += int(v or 0)
    return n


# ------------------------------------------------------------------------------------------------ watches
class Watch(threading.Thread):
    """LIST then WATCH `path`, feeding every object to `apply(kind, obj)` ("SYNC" with the list, then ADDED /
    MODIFIED / DELETED) under the shared lock. Events of one resource arrive in resourceVersion order, so the
    checks made in `apply` see every state the objects went through. A watch that ends is resumed from the last
    resourceVersion; only an error (410 Gone) re-lists, which is counted and reported."""

    def __init__(self, chaos, path, apply):
        super().__init__(daemon=True)
        self.chaos, self.path, self.apply = chaos, path, apply
        self.synced = threading.Event()
        self.relists = 0

    def run(self):
        api = apiclient.Client(timeout=60)
        rv = None
        while not self.chaos.stopping:
            try:
                if rv is None:
                    s, d = api.get(self.path)
                    if s != 200:
                        raise RuntimeError("LIST %s: %s" % (self.path, s))
                    rv = d["metadata"]["resourceVersion"]
                    with self.chaos.lock:
                        self.apply("SYNC", d.get("items") or [])
                    if self.synced.is_set():
                        self.relists += 1
                        self.chaos.log("watch %s: re-listed" % self.path)
                    self.synced.set()
                c = apiclient.conn(timeout=150)
                c.request("GET", self.path + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=90&resourceVersion=" + rv,
                          headers={"Authorization": "Bearer " + apiclient.TOKEN, "Accept": "application/json"})
                r = c.getresponse()
                if r.status != 200:
                    r.read()
                    c.close()
                    rv = None
                    time.sleep(0.5)
                    continue
                while not self.chaos.stopping:
                    line = r.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    obj = ev.get("object") or {}
                    if ev.get("type") == "ERROR":
                        rv = None
                        break
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if ev.get("type") == "BOOKMARK":
                        continue
                    with self.chaos.lock:
                        self.apply(ev["type"], obj)
                c.close()
            except Exception as e:  # transport trouble: start over from a fresh list
                if self.chaos.stopping:
                    return
                self.chaos.log("watch %s: %s; re-listing" % (self.path, e))
                rv = None
                time.sleep(0.5)


# ------------------------------------------------------------------------------------------------ model
@dataclasses.dataclass
class JobSpec:
    name: str
    shape: str          # topo | restart | spread | single
    replicas: int
    gpu: int            # per pod
    cpu: int
    topo: bool = False
    restart_policy: bool = False


@dataclasses.dataclass
class Fault:
    idx: str            # "7" or "B3" (burst)
    kind: str
    node: str
    burst: bool
    t_inject: float
    mode: str           # evict: every pod must leave the node; keep: one bad GPU no pod can be holding, every
                        # pod must stay; card: one bad GPU under a pod, which fails and is replaced
    demand: int         # GPUs the node's pods asked for at injection
    pods0: dict         # uid -> pod name, on the node at injection
    affected: set = dataclasses.field(default_factory=set)       # jobs that lost (or will lose) pods to it
    recovered_jobs: dict = dataclasses.field(default_factory=dict)  # job -> monotonic time whole again
    t_recorded: float = None
    t_held: float = None
    t_empty: float = None
    t_recovered: float = None
    t_heal: float = None
    t_cleared: float = None
    heal_after: float = 0.0   # seconds after recovery the test heals it
    kill: str = ""            # the role SIGKILLed right after injecting it

    @property
    def signal(self):
        return KINDS[self.kind][2]

    def label(self):
        return "fault %s (%s on %s)" % (self.idx, self.kind, self.node)


class Chaos:
    def __init__(self):
        self.rng = random.Random("faults-chaos/%d" % SEED)
        self.lock = threading.RLock()
        self.stopping = False
        self.logdir = os.environ.get("TEPHRA_E2E_LOG_DIR") or tempfile.mkdtemp(prefix="faults-chaos.")
        os.makedirs(self.logdir, exist_ok=True)
        self.alog = open(os.path.join(self.logdir, "faults-chaos.log"), "a")
        self.api = apiclient.Client(timeout=30)
        self.t0 = now()
        self.roles = {}
        self.jobs = {}             # name -> JobSpec
        # watch caches
        self.nodes = {}            # name -> node object
        self.pods = {}             # uid -> pod object
        self.vcjobs = {}           # name -> job object
        self.leaf = {}             # node -> leaf
        # bookkeeping
        self.faults = []
        self.stable = {}           # job -> frozenset of pod uids while the job is whole and untouched
        self.unstable_since = {}   # job -> monotonic time it lost pods (or was marked affected)
        self.violations = []       # found in watch callbacks; raised by the main thread
        self.suspect_held = []     # (pod name, uid, job, node): deleted while its node looked held
        self.max_cordoned = 0
        self.max_marked = 0
        self.kills = []            # (role, fault idx, mid-recovery note)
        self.pending_restart = None  # (role, monotonic time)
        self.kill_times = []        # (monotonic time, downtime) of each SIGKILL
        self.restarts_done = []
        self.held_pods_total = 0

    # ---------------------------------------------------------------------------------------- logging
    def log(self, msg):
        line = "[%+7.1fs %s] %s" % (now() - self.t0, iso_now(), msg)
        self.alog.write(line + "\n")
        self.alog.flush()

    def note(self, msg):
        self.log(msg)
        print("--- " + msg, file=sys.stderr, flush=True)

    def fail(self, msg, jobs=(), nodes=()):
        self.log("FAIL: " + msg)
        raise Failed(msg + self.dump(jobs, nodes))

    def dump(self, jobs=(), nodes=()):
        out = []
        with self.lock:
            for j in sorted(set(jobs)):
                o = self.vcjobs.get(j)
                st = (o or {}).get("status") or {}
                out.append("  job %s: phase %s, retryCount %s, stable %s" % (
                    j, (st.get("state") or {}).get("phase") if o else "<missing>", st.get("retryCount"),
                    j in self.stable))
                for p in self.pods_of(j):
                    m, s = p["metadata"], p.get("status") or {}
                    n = p["spec"].get("nodeName") or ""
                    out.append("    pod %s uid %s phase %s%s on %s (leaf %s, fault %s)" % (
                        m["name"], m["uid"][:8], s.get("phase"), " deleting" if m.get("deletionTimestamp") else "",
                        n or "-", self.leaf.get(n, "-"), self.ann(n, A_FAULT)))
            for n in sorted(set(nodes)):
                o = self.nodes.get(n) or {}
                a = (o.get("metadata") or {}).get("annotations") or {}
                out.append("  node %s: %s unschedulable=%s pods=%s" % (
                    n, {k: v for k, v in a.items() if k.startswith("tephra.io/")}, (o.get("spec") or {}).get("unschedulable"),
                    [p["metadata"]["name"] for p in self.pods_on(n)]))
        return ("\n" + "\n".join(out)) if out else ""

    # ---------------------------------------------------------------------------------------- API
    def must(self, method, path, body=None, ok=(200, 201)):
        s, d = self.api.request(method, path, body,
                                "application/merge-patch+json" if method == "PATCH" else "application/json")
        if s not in ok:
            raise RuntimeError("%s %s -> %s %s" % (method, path, s, json.dumps(d)[:300]))
        return d

    def kubectl(self, *args):
        r = subprocess.run([os.environ.get("KUBECTL", "kubectl"), "--request-timeout", "20s"] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError("kubectl %s: %s" % (" ".join(args), r.stdout.strip()))
        return r.stdout

    # ---------------------------------------------------------------------------------------- cache views
    def ann(self, node, key):
        return (((self.nodes.get(node) or {}).get("metadata") or {}).get("annotations") or {}).get(key)

    def pods_of(self, job):
        return sorted((p for p in self.pods.values() if (p["metadata"].get("labels") or {}).get("volcano.sh/job-name") == job),
                      key=lambda p: p["metadata"]["name"])

    def pods_on(self, node):
        """Unfinished pods bound to `node`."""
        return [p for p in self.pods.values() if p["spec"].get("nodeName") == node
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]

    def job_of(self, pod):
        return (pod["metadata"].get("labels") or {}).get("volcano.sh/job-name")

    def live_faults(self):
        return [f for f in self.faults if f.t_cleared is None]

    def evicting_nodes(self):
        """Nodes whose injected fault may cost them pods, not healed yet."""
        return {f.node for f in self.faults if f.t_heal is None and f.mode != "keep"}

    def stranding_nodes(self):
        """Nodes a job is not whole on: an injected fault that strands every pod, not healed, and not held by
        the budget (a pod may run on a held node: the scheduler does not avoid it, and nothing may be deleted
        there) until the node is taken up; and a bad GPU under a pod until that pod has failed and gone."""
        return {f.node for f in self.faults if f.t_heal is None and (
            (f.mode == "evict" and not (f.t_held is not None and f.t_recorded is None))
            or (f.mode == "card" and f.t_empty is None))}

    def node_ready(self, n):
        for c in ((self.nodes.get(n) or {}).get("status") or {}).get("conditions") or []:
            if c.get("type") == "Ready":
                return c.get("status") == "True"
        return False

    def usable(self, n, exclude=()):
        """A node the scheduler may put a replacement on now (conservative: avoided nodes do not count)."""
        o = self.nodes.get(n)
        if o is None or n in exclude or not self.node_ready(n) or (o.get("spec") or {}).get("unschedulable"):
            return False
        if any(f.node == n for f in self.live_faults()):
            return False
        a = o["metadata"].get("annotations") or {}
        if a.get(A_FAULT) or a.get(A_HELD):
            return False
        until = parse_rfc3339(a.get(A_AVOID))
        return not (until and until > time.time() - 1)

    def free_gpu(self, n):
        return GPUS - sum(gpu_of(p) for p in self.pods_on(n))

    # ---------------------------------------------------------------------------------------- watch callbacks
    def on_node(self, kind, obj):
        if kind == "SYNC":
            self.nodes = {o["metadata"]["name"]: o for o in obj}
        elif kind == "DELETED":
            self.nodes.pop(obj["metadata"]["name"], None)
        else:
            self.nodes[obj["metadata"]["name"]] = obj
        for o in ([obj] if kind != "SYNC" else obj):
            lf = (o["metadata"].get("labels") or {}).get("tephra.io/leaf")
            if lf:
                self.leaf[o["metadata"]["name"]] = lf
        cordoned = sorted(n for n, o in self.nodes.items() if (o["metadata"].get("annotations") or {}).get(A_CORDONED) == "true")
        marked = sorted(n for n, o in self.nodes.items() if (o["metadata"].get("annotations") or {}).get(A_FAULT))
        self.max_cordoned = max(self.max_cordoned, len(cordoned))
        self.max_marked = max(self.max_marked, len(marked))
        if len(cordoned) > BUDGET:
            self.violations.append(("%d nodes cordoned by Tephra at once, budget %d: %s" % (len(cordoned), BUDGET, cordoned), cordoned))
        if len(marked) > BUDGET and now() - self.t0 < 590:  # every mark is inside the 600 s budget window
            self.violations.append(("%d nodes marked tephra.io/fault at once, budget %d: %s" % (len(marked), BUDGET, marked), marked))

    def on_pod(self, kind, obj):
        if kind == "SYNC":
            fresh = {o["metadata"]["uid"]: o for o in obj}
            for uid, o in list(self.pods.items()):
                if uid not in fresh:
                    self._pod_gone(o)
            self.pods = fresh
            for o in obj:
                self._pod_seen(o)
            return
        uid = obj["metadata"]["uid"]
        if kind == "DELETED":
            old = self.pods.pop(uid, None)
            self._pod_gone(old or obj)
            return
        old = self.pods.get(uid)
        self.pods[uid] = obj
        self._pod_seen(obj)
        if obj["metadata"].get("deletionTimestamp") and not (old or {}).get("metadata", {}).get("deletionTimestamp"):
            self._pod_gone(obj)

    def _pod_seen(self, p):
        """A pod bound to a node under an injected fault: its job is one the fault may restart."""
        n = p["spec"].get("nodeName")
        if not n or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        job = self.job_of(p)
        for f in self.faults:
            if f.node != n or f.t_heal is not None:
                continue
            if f.mode != "keep" or p["metadata"]["uid"] not in f.pods0:
                # keep: a pod that landed after the injection (before the scheduler saw the node marked) may
                # be refused at admission (no healthy GPU left for it) and replaced; the others must stay.
                self._affect(f, job)

    def _affect(self, f, job):
        if job is None:
            return
        f.affected.add(job)
        f.recovered_jobs.pop(job, None)
        if job in self.stable:
            del self.stable[job]
            self.unstable_since[job] = now()

    def _pod_gone(self, p):
        """A pod deleted (or being deleted). From a node under an injected fault, its job is that fault's (a
        held node taken up deletes pods of jobs that became whole there meanwhile; the node watch may show the
        node marked only after this). Never while the node is held by the budget: checked against the node
        itself by check_held_delete."""
        n = p["spec"].get("nodeName")
        if not n:
            return
        for f in self.faults:
            if f.node == n and f.t_heal is None and f.mode != "keep":
                self._affect(f, self.job_of(p))
        if self.ann(n, A_HELD) and not self.ann(n, A_FAULT):
            self.suspect_held.append((p["metadata"]["name"], p["metadata"]["uid"], self.job_of(p), n))

    def on_job(self, kind, obj):
        if kind == "SYNC":
            self.vcjobs = {o["metadata"]["name"]: o for o in obj}
            objs = obj
        elif kind == "DELETED":
            self.vcjobs.pop(obj["metadata"]["name"], None)
            if obj["metadata"]["name"] in self.jobs:
                self.violations.append(("job %s was deleted" % obj["metadata"]["name"], []))
            return
        else:
            self.vcjobs[obj["metadata"]["name"]] = obj
            objs = [obj]
        for o in objs:
            ph = ((o.get("status") or {}).get("state") or {}).get("phase", "")
            if o["metadata"]["name"] in self.jobs and ph not in OK_PHASES:
                self.violations.append(("job %s reached phase %s (%s)" % (
                    o["metadata"]["name"], ph, ((o.get("status") or {}).get("state") or {}).get("message", "")), []))

    # ---------------------------------------------------------------------------------------- set-up
    def wait_ready(self, role):
        r = self.roles[role]
        if r.proc is not None and r.proc.poll() is not None:
            self.fail_exit(role)
        self.wait_for("tephra %s /readyz" % role, 60, lambda: r.ready() or (r.proc.poll() is not None and self.fail_exit(role)),
                      tick=False)

    def fail_exit(self, role):
        r = self.roles[role]
        with open(r.logf) as f:
            tail = f.read().splitlines()[-8:]
        self.fail("tephra %s exited by itself with %s; last lines of %s:\n    %s" % (
            role, r.proc.returncode, r.logf, "\n    ".join(tail)))

    def wait_for(self, what, timeout, fn, tick=True):
        deadline = now() + timeout
        while True:
            if tick:
                self.tick()
            try:
                with self.lock:
                    v = fn()
            except Failed:
                raise
            except Exception as e:
                v, last = None, e
            if v:
                return v
            if now() > deadline:
                raise Failed("timed out after %ds waiting for %s" % (timeout, what))
            time.sleep(0.25)

    def setup(self):
        src = os.environ["TEPHRA_SOURCE_DIR"]
        kc = os.environ["KUBECONFIG"]
        L = self.logdir
        self.kubectl("apply", "-f", os.path.join(src, "crds") + "/")
        self.wait_for("CRDs Established", 90, lambda: subprocess.run(
            [os.environ.get("KUBECTL", "kubectl"), "wait", "--for", "condition=Established", "--timeout", "10s", "crd", "--all"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0, tick=False)
        self.roles["nodesim"] = Role("nodesim", ["--kubeconfig", kc, "--nodes", str(NODES), "--cpu", str(CPUS),
                                                 "--gpus", str(GPUS), "--nodes-per-leaf", str(PER_LEAF),
                                                 "--leaves-per-spine", str(LEAVES_PER_SPINE)],
                                     os.path.join(L, "nodesim.log"), None)
        self.roles["nodesim"].start()

        def nodes_ready():
            items = self.api.items(P_NODES)
            ready = [n for n in items if any(c.get("type") == "Ready" and c.get("status") == "True"
                                             for c in (n.get("status") or {}).get("conditions") or [])]
            return len(ready) >= NODES
        self.wait_for("%d nodes Ready" % NODES, 120, nodes_ready, tick=False)
        # Admission taints new nodes not-ready:NoSchedule; the harness runs no node lifecycle controller to lift it.
        subprocess.run([os.environ.get("KUBECTL", "kubectl"), "--request-timeout", "60s", "taint", "nodes", "--all",
                        "node.kubernetes.io/not-ready:NoSchedule-"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ch = free_port()
        self.ctrl_metrics = free_port()
        self.roles["controller"] = Role("controller", [
            "--kubeconfig", kc, "--leader-elect=false", "--metrics-addr", "127.0.0.1:%d" % self.ctrl_metrics,
            "--health-addr", "127.0.0.1:%d" % ch, "--fault-cordon=true", "--fault-avoid-seconds", str(AVOID_S)],
            os.path.join(L, "controller.log"), ch)
        sh = free_port()
        self.roles["scheduler"] = Role("scheduler", [
            "--kubeconfig", kc, "--leader-elect=false", "--listen-address", "127.0.0.1:%d" % free_port(),
            "--health-addr", "127.0.0.1:%d" % sh, "--topology-label-keys", "tephra.io/leaf,tephra.io/spine"],
            os.path.join(L, "scheduler.log"), sh)
        for r in ("controller", "scheduler"):
            self.roles[r].start()
        for r in ("controller", "scheduler"):
            self.wait_ready(r)
        self.wait_for("queue default", 60, lambda: self.api.get(
            "/apis/scheduling.volcano.sh/v1beta1/queues/default")[0] == 200, tick=False)
        self.watches = [Watch(self, P_NODES, self.on_node), Watch(self, P_PODS, self.on_pod), Watch(self, P_JOBS, self.on_job)]
        for w in self.watches:
            w.start()
        for w in self.watches:
            if not w.synced.wait(60):
                raise Failed("watch %s never listed" % w.path)
        self.note("seed %d: %d nodes (%d leaves of %d), controller --fault-cordon --fault-avoid-seconds %d, budget %d nodes"
                  % (SEED, NODES, NODES // PER_LEAF, PER_LEAF, AVOID_S, BUDGET))

    # ---------------------------------------------------------------------------------------- workload
    def job_object(self, j):
        labels = {"tephra.io/chaos-shape": j.shape, "tephra.io/chaos-job": j.name}
        if j.topo:
            # One topology job per leaf: placed by name order, two of them would fill a leaf, leaving no
            # node in it for a replacement (a gang that cannot be made whole is the gang timeout's case).
            term = {"labelSelector": {"matchExpressions": [
                {"key": "tephra.io/chaos-shape", "operator": "In", "values": ["topo"]},
                {"key": "tephra.io/chaos-job", "operator": "NotIn", "values": [j.name]}]},
                "topologyKey": "tephra.io/leaf"}
        else:
            # The other jobs stay out of the topology jobs' leaves (binpack would fill their spare nodes).
            term = {"labelSelector": {"matchLabels": {"tephra.io/chaos-shape": "topo"}}, "topologyKey": "tephra.io/leaf"}
        spec = {"schedulerName": "volcano", "queue": "default", "minAvailable": j.replicas, "maxRetry": 1000,
                "tasks": [{"name": "w", "replicas": j.replicas, "template": {
                    "metadata": {"labels": labels, "annotations": {"tephra.io/sim-run-seconds": "3600"}},
                    "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                             "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
                             "containers": [{"name": "c", "image": "busybox", "resources": {
                                 "limits": {"cpu": str(j.cpu), "memory": "1Gi", "nvidia.com/gpu": str(j.gpu)}}}]}}}]}
        if j.topo:
            spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
        if j.restart_policy:
            spec["policies"] = [{"event": "PodEvicted", "action": "RestartJob"}]
        return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                "metadata": {"name": j.name, "namespace": NS}, "spec": spec}

    def whole(self, job):
        """(True, pods) when the job runs all its replicas, none being deleted, none on a node whose injected
        fault strands pods; a topology job must then be inside one leaf (else a violation)."""
        j = self.jobs[job]
        o = self.vcjobs.get(job)
        if o is None or ((o.get("status") or {}).get("state") or {}).get("phase") != "Running":
            return False
        pods = [p for p in self.pods_of(job) if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        if len(pods) != j.replicas:
            return False
        bad = self.stranding_nodes()
        for p in pods:
            if (p["status"].get("phase") != "Running" or p["metadata"].get("deletionTimestamp")
                    or not p["spec"].get("nodeName") or p["spec"]["nodeName"] in bad):
                return False
        if j.topo:
            leaves = {self.leaf.get(p["spec"]["nodeName"]) for p in pods}
            if len(leaves) != 1:
                self.fail("job %s (networkTopology hard, tier 1) runs across leaves %s" % (job, sorted(leaves)), [job])
        return True

    def submit_jobs(self):
        specs = [JobSpec("topo-%d" % i, "topo", 4, 8, 4, topo=True) for i in range(5)]
        specs += [JobSpec("restart-%d" % i, "restart", 2, 4, 2, restart_policy=True) for i in range(3)]
        specs += [JobSpec("spread-%d" % i, "spread", 4, 2, 1) for i in range(3)]
        specs += [JobSpec("single-%d" % i, "single", 1, g, 2) for i, g in enumerate([8, 6, 3, 1])]
        self.jobs = {j.name: j for j in specs}
        total = sum(j.replicas * j.gpu for j in specs)
        # The topology jobs first, so that the others' anti-affinity sees them.
        for phase in (True, False):
            for j in specs:
                if j.topo == phase:
                    self.must("POST", P_JOBS, self.job_object(j))
            names = [j.name for j in specs if j.topo == phase]
            self.wait_for("jobs %s running" % ",".join(names), 180, lambda: all(self.whole(n) for n in names), tick=False)
        with self.lock:
            topo_leaf = {}
            for j in specs:
                if j.topo:
                    topo_leaf[j.name] = self.leaf[self.pods_of(j.name)[0]["spec"]["nodeName"]]
            if len(set(topo_leaf.values())) != len(topo_leaf):
                self.fail("topology jobs share a leaf: %s (their pod anti-affinity was ignored)" % topo_leaf, list(topo_leaf))
            self.topo_leaves = set(topo_leaf.values())
            for j in specs:
                if not j.topo:
                    for p in self.pods_of(j.name):
                        if self.leaf[p["spec"]["nodeName"]] in self.topo_leaves:
                            self.fail("pod %s landed in a topology job's leaf (anti-affinity ignored)" % p["metadata"]["name"], [j.name])
            for j in specs:
                self.stable[j.name] = frozenset(p["metadata"]["uid"] for p in self.pods_of(j.name))
            used = {p["spec"]["nodeName"] for p in self.pods.values()}
        self.note("%d vcjobs, %d pods, %d of %d GPUs, all running on %d nodes; topology jobs in leaves %s" % (
            len(specs), sum(j.replicas for j in specs), total, NODES * GPUS, len(used),
            ", ".join("%s=%s" % kv for kv in sorted(topo_leaf.items()))))

    # ---------------------------------------------------------------------------------------- checks
    def tick(self):
        """Every invariant, from the watch caches; also restarts a SIGKILLed role when its downtime is over."""
        if self.pending_restart and now() >= self.pending_restart[1]:
            role = self.pending_restart[0]
            self.pending_restart = None
            self.roles[role].start()
            self.log("restarted tephra %s (pid %d)" % (role, self.roles[role].proc.pid))
            self.restarts_done.append(role)
        for r in ("controller", "scheduler", "nodesim"):
            role = self.roles.get(r)
            if role and role.proc is not None and role.proc.poll() is not None:
                self.fail_exit(r)
        with self.lock:
            if self.violations:
                msg, nodes = self.violations[0]
                self.fail(msg, nodes=nodes)
            while self.suspect_held:
                name, uid, job, node = self.suspect_held.pop(0)
                self.check_held_delete(name, uid, job, node)
            t = now()
            # Jobs: whole again -> stable with its new pods; stable -> the same pods.
            for name in self.jobs:
                if name not in self.vcjobs:
                    self.fail("job %s is gone" % name, [name])
                cur = [p for p in self.pods_of(name) if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
                if name in self.stable:
                    uids = frozenset(p["metadata"]["uid"] for p in cur)
                    deleting = [p["metadata"]["name"] for p in cur if p["metadata"].get("deletionTimestamp")]
                    if uids != self.stable[name] or deleting:
                        self.fail("job %s lost or replaced pods without a fault on any of its nodes (pods before: %s; "
                                  "deleting: %s)" % (name, sorted(u[:8] for u in self.stable[name]), deleting), [name])
                    continue
                if self.whole(name):
                    self.stable[name] = frozenset(p["metadata"]["uid"] for p in cur)
                    since = self.unstable_since.pop(name, t)
                    self.log("job %s whole again after %.1f s on %s" % (name, t - since, sorted(
                        {p["spec"]["nodeName"] for p in cur})))
                    for f in self.faults:
                        if name in f.affected and name not in f.recovered_jobs:
                            f.recovered_jobs[name] = t
                elif t - self.unstable_since.get(name, t) > T_WHOLE + self.allowance(self.unstable_since.get(name, t)):
                    self.fail("job %s not whole again %d s after it lost pods" % (name, T_WHOLE), [name])
            for f in self.faults:
                self.check_fault(f, t)

    def check_held_delete(self, name, uid, job, node):
        """A pod went while its node looked held in our cache. The controller writes the node's mark before it
        deletes, so read the node itself: still held and unmarked means the pod was deleted over the budget;
        its job restarting for a fault of its own elsewhere (RestartJob) is fine."""
        s, n = self.api.get(P_NODES + "/" + node)
        a = (n.get("metadata") or {}).get("annotations") or {} if s == 200 else {}
        if a.get(A_FAULT) or not a.get(A_HELD):
            return
        for f in self.faults:
            if job in f.affected and f.node != node and f.t_recorded is not None:
                self.log("pod %s on held %s went with its job's restart for %s" % (name, node, f.label()))
                return
        self.fail("pod %s (%s) deleted from %s while the node budget held it (%s=%s)" % (
            name, uid[:8], node, A_HELD, a.get(A_HELD)), [job] if job else [], [node])

    def check_fault(self, f, t):
        a = ((self.nodes.get(f.node) or {}).get("metadata") or {}).get("annotations") or {}
        if f.t_heal is None:
            sig = a.get(A_FAULT)
            if f.t_recorded is None and sig:
                if f.signal not in sig.split(","):
                    self.fail("%s: tephra.io/fault=%s does not name %s" % (f.label(), sig, f.signal), nodes=[f.node])
                f.t_recorded = t
                self.log("%s recorded after %.1f s%s" % (f.label(), t - f.t_inject,
                                                          " (held %.1f s)" % (t - f.t_held) if f.t_held else ""))
                if f.t_held is not None:  # held until now: its jobs only start losing pods
                    for j in f.affected:
                        if j in self.unstable_since:
                            self.unstable_since[j] = t
            if f.t_recorded is None and a.get(A_HELD) and f.t_held is None:
                if not f.burst:
                    self.fail("%s held by the node budget with only %d faults live (budget %d)" % (
                        f.label(), len(self.live_faults()), BUDGET), nodes=[f.node] + [g.node for g in self.live_faults()])
                f.t_held = t
                self.log("%s held by the budget" % f.label())
            bound = T_RECORD_DEATH if f.kind == "death" else T_RECORD
            if f.t_recorded is None and f.t_held is None and t - f.t_inject > bound + self.allowance(f.t_inject):
                self.fail("%s neither recorded nor held %d s after injection" % (f.label(), bound), nodes=[f.node])
            if f.t_recorded is not None:
                # What must be gone from the node: evict, every pod; card, the pods failed by the bad card (and
                # the node's live pods then ask no more than the 7 healthy GPUs); keep, pods refused at
                # admission. A pod bound after the record gets its own T_EMPTY.
                on = self.pods_on(f.node) if f.mode == "evict" else []
                on += [p for p in self.pods.values() if p["spec"].get("nodeName") == f.node
                       and (p.get("status") or {}).get("phase") == "Failed" and self.job_of(p)]
                demand = sum(gpu_of(p) for p in self.pods_on(f.node) if not p["metadata"].get("deletionTimestamp"))
                if f.mode == "card" and demand > GPUS - 1:
                    on += [p for p in self.pods_on(f.node) if p not in on]
                if not on and f.t_empty is None:
                    f.t_empty = t
                late = [p for p in on if t - max(f.t_recorded, self.first_seen(p)) > T_EMPTY + self.allowance(f.t_recorded)]
                if late:
                    self.fail("%s recorded %.0f s ago, but pods stay on the node%s: %s" % (
                        f.label(), t - f.t_recorded,
                        " asking %d GPUs, more than the 7 healthy ones" % demand if f.mode == "card" and demand > GPUS - 1 else "",
                        ["%s (%s)" % (p["metadata"]["name"], p["status"].get("phase")) for p in late]),
                        [self.job_of(p) for p in late], [f.node])
            if f.t_recorded is not None and f.mode == "keep":
                # One unhealthy GPU, and the node's pods ask for no more than the 7 healthy ones: none may go.
                gone = [n for u, n in f.pods0.items() if u not in self.pods or self.pods[u]["metadata"].get("deletionTimestamp")]
                gone = [n for n in gone if not any(self.job_of_name(n) in g.affected for g in self.faults if g is not f)]
                if gone:
                    self.fail("%s: the node's pods asked for %d GPUs, no more than the 7 healthy ones, yet %s went" % (
                        f.label(), f.demand, gone), [self.job_of_name(n) for n in gone], [f.node])
            if f.t_recovered is None and f.t_recorded is not None:
                done = f.t_empty is not None and all(j in f.recovered_jobs for j in f.affected)
                if done:
                    f.t_recovered = max([f.t_recorded] + list(f.recovered_jobs.values()))
                    self.log("%s recovered %.1f s after injection (jobs %s; of its pods, gone: %s)" % (
                        f.label(), f.t_recovered - f.t_inject, sorted(f.affected),
                        sorted(n for u, n in f.pods0.items() if u not in self.pods)))
        elif f.t_cleared is None:
            o = self.nodes.get(f.node) or {}
            if not a.get(A_FAULT) and not a.get(A_HELD) and not a.get(A_CORDONED) and not (o.get("spec") or {}).get("unschedulable"):
                f.t_cleared = t
                self.log("%s cleared %.1f s after healing" % (f.label(), t - f.t_heal))
            elif t - f.t_heal > T_CLEAR + self.allowance(f.t_heal):
                self.fail("%s healed %d s ago, node still marked or cordoned" % (f.label(), T_CLEAR), nodes=[f.node])

    def job_of_name(self, pod_name):
        return pod_name.rsplit("-w-", 1)[0]

    def first_seen(self, p):
        return self._first_seen.setdefault(p["metadata"]["uid"], now())

    def allowance(self, since):
        """Extra seconds for a deadline that started at `since`: the part of it a SIGKILLed role spent down or
        resyncing (RESYNC seconds after its restart)."""
        return sum(max(0.0, t_kill + down + RESYNC - max(since, t_kill)) for t_kill, down in self.kill_times)

    # ---------------------------------------------------------------------------------------- faults
    def feasible(self, extra):
        """Whether every job would still find room for its replacements with the live faults' nodes and
        `extra` out: a topology job inside its own leaf, the others in the other leaves (their anti-affinity)."""
        out = {f.node for f in self.live_faults()} | set(extra)
        evict_out = self.evicting_nodes() | set(extra)
        free_nodes = [n for n in self.nodes if self.usable(n, out)]
        need_small = []
        for name, j in self.jobs.items():
            pods = [p for p in self.pods_of(name) if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                    and not p["metadata"].get("deletionTimestamp") and p["spec"].get("nodeName")
                    and p["spec"]["nodeName"] not in evict_out]
            missing = j.replicas - len(pods)
            if missing <= 0:
                continue
            if j.topo:
                lf = self.leaf[pods[0]["spec"]["nodeName"]] if pods else None
                room = [n for n in free_nodes if self.leaf[n] == lf and self.free_gpu(n) >= j.gpu] if lf else []
                if len(room) < missing:
                    return False
            else:
                need_small += [j.gpu] * (j.replicas if j.restart_policy else missing)
        cap = sorted((self.free_gpu(n) for n in free_nodes if self.leaf[n] not in self.topo_leaves), reverse=True)
        for g in sorted(need_small, reverse=True):
            for i, c in enumerate(cap):
                if c >= g:
                    cap[i] -= g
                    break
            else:
                return False
        return True

    def pick_node(self, kind, busy, exclude=(), want_demand=None, avoid_jobs=()):
        """A node for a new fault: `busy` (running pods) or idle; for gpu, want_demand 'careful' (the pods ask
        1..7 GPUs) or 'full' (8). Every choice keeps the cluster able to recover (feasible)."""
        out = {f.node for f in self.live_faults()} | set(exclude)
        cands = []
        for n in sorted(self.nodes):
            if n in out or not self.node_ready(n) or (self.nodes[n].get("spec") or {}).get("unschedulable"):
                continue
            a = self.nodes[n]["metadata"].get("annotations") or {}
            if a.get(A_FAULT) or a.get(A_HELD):
                continue
            pods = self.pods_on(n)
            if busy != bool(pods) or set(avoid_jobs) & {self.job_of(p) for p in pods}:
                continue
            if any(p["metadata"].get("deletionTimestamp") or p["status"].get("phase") != "Running" for p in pods):
                continue
            demand = sum(gpu_of(p) for p in pods)
            if kind == "gpu" and busy and want_demand == "careful" and not demand < GPUS:
                continue
            if kind == "gpu" and busy and want_demand == "full" and demand < GPUS:
                continue
            if busy and kind == "gpu" and demand < GPUS:
                if not self.feasible(list(exclude) + [n]):  # the node is lost to the others even if its pods stay
                    continue
            elif not self.feasible(list(exclude) + [n]):
                continue
            cands.append(n)
        return self.rng.choice(cands) if cands else None

    def inject(self, idx, kind, node, burst=False):
        """Registers the fault (so the pod watch marks any job that has a pod there from now on), then tells
        nodesim or the API server."""
        with self.lock:
            pods = self.pods_on(node)
            demand = sum(gpu_of(p) for p in pods)
            f = Fault(idx=str(idx), kind=kind, node=node, burst=burst, t_inject=now(),
                      mode="evict" if kind != "gpu" else "keep" if demand < GPUS else "card", demand=demand,
                      pods0={p["metadata"]["uid"]: p["metadata"]["name"] for p in pods},
                      heal_after=round(self.rng.uniform(1, 8), 1))
            self.faults.append(f)
            if f.mode != "keep":
                for p in pods:
                    self._affect(f, self.job_of(p))
        key, val, _ = KINDS[kind]
        if key:
            self.must("PATCH", P_NODES + "/" + node, {"metadata": {"annotations": {key: val}}})
        else:
            self.kubectl("taint", "node", node, "%s=true:NoSchedule" % XID_TAINT)
        self.log("inject %s: %s on %s (leaf %s), pods %s, GPUs asked %d%s" % (
            idx, kind, node, self.leaf.get(node), sorted(f.pods0.values()), demand,
            {"evict": "", "keep": " (<= 7 healthy: nothing may go)", "card": " (one holds the bad card)"}[f.mode]))
        return f

    def heal(self, f):
        key, _, _ = KINDS[f.kind]
        if key:
            self.must("PATCH", P_NODES + "/" + f.node, {"metadata": {"annotations": {key: None}}})
        else:
            self.kubectl("taint", "node", f.node, XID_TAINT + "-")
        with self.lock:
            f.t_heal = now()
            if f.mode == "keep":
                gone = [n for u, n in f.pods0.items() if u not in self.pods]
                gone = [n for n in gone if not any(self.job_of_name(n) in g.affected for g in self.faults if g is not f)]
                if gone:
                    self.fail("%s: pods went although they asked for no more than the healthy GPUs: %s" % (f.label(), gone))
        self.log("heal %s" % f.label())

    def heal_due(self, force_one=False):
        """Heals recovered faults whose time has come; with force_one, the oldest recovered one at least."""
        with self.lock:
            ready = [f for f in self.faults if not f.burst and f.t_heal is None and f.t_recovered is not None]
        t = now()
        healed = False
        for f in ready:
            if t >= f.t_recovered + f.heal_after:
                self.heal(f)
                healed = True
        if force_one and not healed and ready:
            self.heal(min(ready, key=lambda f: f.t_recovered))

    def sigkill(self, role, f):
        with self.lock:
            mid = [j for j in f.affected if j not in self.stable]
        pid = self.roles[role].kill()
        down = round(self.rng.uniform(1, 4), 1)
        self.pending_restart = (role, now() + down)
        self.kill_times.append((now(), down))
        f.kill = role
        self.kills.append((role, f.idx, mid))
        self.note("SIGKILL tephra %s (pid %d) right after injecting %s, jobs %s not whole; restart in %.1f s" % (
            role, pid, f.label(), sorted(mid), down))
        if not mid:
            self.fail("SIGKILL of %s was meant to land mid-recovery, but no job of %s was recovering" % (role, f.label()))

    def run_faults(self):
        kinds = [k for _ in range((FAULTS + 4) // 5) for k in ["death", "gpu", "xid", "nic", "taint"]][:FAULTS]
        self.rng.shuffle(kinds)
        # Not the first faults (the cluster is still quiet) nor the last ones (the restarted role must work).
        kill_ctrl, kill_sched = self.rng.sample(range(2, FAULTS - 2) if FAULTS >= 6 else range(1, FAULTS), 2)
        burst_at = self.rng.randrange(FAULTS // 3, max(FAULTS // 3 + 1, 2 * FAULTS // 3 + 1))
        gpu_turn = 0
        self.note("plan: kinds %s; SIGKILL controller at fault %d, scheduler at fault %d; burst before fault %d" % (
            ",".join(kinds), kill_ctrl + 1, kill_sched + 1, burst_at + 1))
        for i, kind in enumerate(kinds):
            if i == burst_at:
                self.run_burst()
            gap = self.rng.uniform(0.5, 4)
            self.wait_for("%.1f s gap" % gap, gap + 1, lambda s=now() + gap: now() >= s)
            busy = self.rng.random() < 0.8 or i in (kill_ctrl, kill_sched)
            want = None
            if kind == "gpu" and busy:
                want = "careful" if gpu_turn % 2 == 0 and i not in (kill_ctrl, kill_sched) else "full"
                gpu_turn += 1

            def room():
                self.heal_due()
                with self.lock:
                    if self.pending_restart or len(self.live_faults()) >= MAX_ACTIVE:
                        self.heal_due(force_one=True)
                        return None
                    n = self.pick_node(kind, busy, want_demand=want)
                    if n is None and want == "careful":
                        n = self.pick_node(kind, busy, want_demand="full")
                    if n is None and busy and i not in (kill_ctrl, kill_sched):  # a kill needs a recovery
                        n = self.pick_node(kind, False)
                    return n
            node = self.wait_for("room for fault %d" % (i + 1), 180, room)
            f = self.inject(i + 1, kind, node)
            if i == kill_ctrl:
                self.sigkill("controller", f)
            elif i == kill_sched:
                self.sigkill("scheduler", f)
        self.note("%d faults injected; waiting for the last recoveries" % len(kinds))

    def run_burst(self):
        """BURST nodes faulted at once: BUDGET are acted on, the rest held with their pods left alone until a
        healed node frees budget."""
        def quiet():
            with self.lock:
                for f in self.faults:
                    if f.t_heal is None and f.t_recovered is not None:
                        self.heal(f)
                return not self.live_faults() and not self.pending_restart
        self.wait_for("every fault healed before the burst", 180, quiet)
        with self.lock:
            picked = []
            busy_jobs = set()
            # Injected in this order, all within a second: half of the first BUDGET on busy nodes, with faults
            # seen at once (a dead node waits out its NotReady grace); the last ones, which the budget holds
            # most likely, on busy nodes with any fault, so that a held node has pods to leave alone.
            for k in range(BURST):
                last = k >= BUDGET
                kind = self.rng.choice(["death", "xid", "nic", "taint"] if last else ["xid", "nic", "taint"])
                busy = last or k < BUDGET // 2
                # No job with pods on two burst nodes: a held node's pods must be left alone, even by a
                # RestartJob that another burst node's fault triggers.
                n = self.pick_node(kind, busy, exclude=[p for p, _ in picked], avoid_jobs=busy_jobs)
                if n is None:
                    n = self.pick_node(kind, False, exclude=[p for p, _ in picked])
                if n is None:
                    self.fail("no node left for the burst (picked %s)" % picked)
                busy_jobs |= {self.job_of(p) for p in self.pods_on(n)}
                picked.append((n, kind))
        self.note("burst: %d nodes at once: %s" % (BURST, ", ".join("%s %s" % (k, n) for n, k in picked)))
        fs = [self.inject("B%d" % (k + 1), kind, n, burst=True) for k, (n, kind) in enumerate(picked)]

        def settled():
            with self.lock:
                rec = [f for f in fs if f.t_recorded is not None]
                held = [f for f in fs if f.t_held is not None and f.t_recorded is None]
                return len(rec) == BUDGET and len(held) == BURST - BUDGET
        self.wait_for("%d burst nodes acted on and %d held" % (BUDGET, BURST - BUDGET), T_RECORD_DEATH + 5, settled)
        held = [f for f in fs if f.t_recorded is None]
        held_pods = {f.node: dict(f.pods0) for f in held}
        self.held_pods_total = sum(len(p) for p in held_pods.values())
        self.note("burst: %d acted on, held: %s (pods %s)" % (BURST - len(held), [f.node for f in held],
                                                            {n: sorted(p.values()) for n, p in held_pods.items()}))
        # The controller plans a held node again every 10 s: across two of those, nothing may change there.
        t_end = now() + 22

        def still_held():
            for f in held:
                if f.t_recorded is not None:
                    self.fail("held %s was acted on with the budget still full (%s)" % (
                        f.label(), [g.node for g in fs if g.t_recorded is not None]), nodes=[g.node for g in fs])
            return now() >= t_end
        self.wait_for("the held nodes to stay held for 22 s", 30, still_held)
        with self.lock:
            for f in held:
                gone = [n for u, n in held_pods[f.node].items() if u not in self.pods or self.pods[u]["metadata"].get("deletionTimestamp")]
                if gone:
                    self.fail("held %s lost pods %s" % (f.node, gone), nodes=[f.node])
        for f in held:
            s, d = self.api.get(P_EVENTS + "?fieldSelector=involvedObject.kind%%3DNode,involvedObject.name%%3D%s,reason%%3DFaultActionsHeld" % f.node)
            if s != 200 or not (d.get("items") or []):
                self.fail("no FaultActionsHeld Event on held node %s" % f.node, nodes=[f.node])
        acted = [f for f in fs if f.t_recorded is not None]
        self.wait_for("the %d acted-on burst faults recovered" % BUDGET, T_WHOLE + 30,
                      lambda: all(f.t_recovered is not None for f in acted))
        freed = self.rng.sample(acted, len(held))
        for f in freed:
            self.heal(f)
        self.note("burst: healed %s, so the held nodes can be taken up" % [f.node for f in freed])
        self.wait_for("the held burst faults taken up and recovered", T_CLEAR + T_RECORD_DEATH + T_WHOLE,
                      lambda: all(f.t_recovered is not None for f in held))
        for f in fs:
            if f.t_heal is None:
                self.heal(f)
        self.wait_for("every burst fault cleared", T_CLEAR + 10, lambda: all(f.t_cleared is not None for f in fs))
        self.note("burst done: max %d nodes cordoned at once" % self.max_cordoned)

    def finish(self):
        def settled():
            with self.lock:
                for f in self.faults:
                    if f.t_heal is None and f.t_recovered is not None:
                        self.heal(f)
                return (all(f.t_cleared is not None for f in self.faults) and not self.pending_restart
                        and len(self.stable) == len(self.jobs))
        self.wait_for("every fault recovered and healed, every job whole", T_WHOLE + T_CLEAR + 60, settled)
        # A last look, a few scheduler/controller rounds later: still whole, nothing marked or cordoned.
        t_end = now() + 5
        self.wait_for("5 quiet seconds", 10, lambda: now() >= t_end)
        with self.lock:
            marked = [n for n in self.nodes if self.ann(n, A_FAULT) or self.ann(n, A_HELD) or self.ann(n, A_CORDONED)]
            if marked:
                self.fail("nodes still marked after every fault healed: %s" % marked, nodes=marked)
            if self.max_cordoned != BUDGET:
                self.fail("the burst cordoned at most %d nodes at once, want exactly the budget %d" % (self.max_cordoned, BUDGET))
        for r in ("controller", "scheduler"):
            if r not in self.restarts_done:
                self.fail("tephra %s was never SIGKILLed and restarted" % r)

    def summary(self):
        main = [f for f in self.faults if not f.burst]
        by = {}
        for f in main:
            by[f.kind] = by.get(f.kind, 0) + 1
        careful = sum(1 for f in main if f.mode == "keep")
        rec = sorted(f.t_recovered - f.t_inject for f in main if f.mode != "keep")
        det = sorted(f.t_recorded - f.t_inject for f in self.faults if f.t_held is None)
        burst_rec = sorted(f.t_recovered - f.t_inject for f in self.faults if f.burst)

        def p50(v):
            return v[(len(v) - 1) // 2] if v else float("nan")
        kills = "; ".join("%s at fault %s (mid-recovery of %s)" % (r, i, ",".join(sorted(m))) for r, i, m in self.kills)
        relists = sum(w.relists for w in self.watches)
        return ("faults-chaos seed %d: %d faults (%s; gpu with nothing to delete %d) + burst of %d (%d acted on, %d held "
                "with %d pods left alone); "
                "recovery p50 %.1f s max %.1f s (burst max %.1f s); detection p50 %.1f s max %.1f s; "
                "max %d cordoned, %d marked at once (budget %d); SIGKILL %s; %d watch re-lists; %.0f s" % (
                    SEED, len(main), ", ".join("%s %d" % kv for kv in sorted(by.items())), careful, BURST,
                    sum(1 for f in self.faults if f.burst and f.t_held is None),
                    sum(1 for f in self.faults if f.burst and f.t_held is not None), self.held_pods_total, p50(rec), max(rec or [float("nan")]), max(burst_rec or [float("nan")]), p50(det),
                    max(det or [float("nan")]), self.max_cordoned, self.max_marked, BUDGET, kills, relists, now() - self.t0))

    def run(self):
        self._first_seen = {}
        self.setup()
        self.submit_jobs()
        self.run_faults()
        self.finish()
        print(self.summary(), flush=True)
        self.log(self.summary())

    def stop(self):
        self.stopping = True
        for r in ("controller", "scheduler", "nodesim"):
            if r in self.roles:
                self.roles[r].stop()


def main():
    if FAULTS < 4:
        sys.exit("FAULTS=%d: want at least 4 (two of them SIGKILL the controller and the scheduler)" % FAULTS)
    print("faults-chaos: SEED=%d FAULTS=%d (replay with these)" % (SEED, FAULTS), flush=True)
    c = Chaos()
    rc = 0
    try:
        c.run()
        print("PASS", flush=True)
    except Failed as e:
        print("FAIL: %s" % e, file=sys.stderr, flush=True)
        print("FAIL (SEED=%d FAULTS=%d); action log %s" % (SEED, FAULTS, c.alog.name), file=sys.stderr, flush=True)
        rc = 1
    except Exception:
        import traceback
        traceback.print_exc()
        print("FAIL (SEED=%d FAULTS=%d): the driver itself broke; action log %s" % (SEED, FAULTS, c.alog.name),
              file=sys.stderr, flush=True)
        rc = 2
    finally:
        c.stop()
    sys.exit(rc)


if __name__ == "__main__":
    main()
