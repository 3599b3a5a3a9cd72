#!/usr/bin/env python3
"""Randomized, seeded churn e2e test: every vcjob converges on the real control plane (docs/churn.md).

Run through tests/e2e/run-with-cluster.sh (churn_test.sh does). Python 3 stdlib only.

  CHURN_SEED      seed (default: from the clock); printed first, replay with the same value
  CHURN_JOBS      vcjobs submitted during the churn (default 48)
  CHURN_SECONDS   length of the churn phase in seconds (default 130)
  CHURN_NODES     nodesim nodes (default 6), CHURN_NODE_CPU cpus per node (default 4)
  CHURN_CONVERGE_SECONDS  bound on convergence after the churn (default 180)
  `churn.py --plan-only` prints the plan for the seed (no cluster needed).

The plan (job shapes, submit times, the moments and kinds of every disruption, their parameters) is a pure
function of the seed and the sizes, and its digest is printed. Which pod/job a disruption hits is drawn by a
per-event RNG (also seeded) from the objects that exist at that moment, so that part follows the cluster's
timing; the action log records every choice.
"""
import copy, dataclasses, datetime, hashlib, heapq, json, os, random, signal, subprocess, sys, tempfile, time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from roles import Role, free_port, iso_now, scrape  # noqa: E402

NS = "default"
P_JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs" % NS
P_PODS = "/api/v1/namespaces/%s/pods" % NS
P_PGS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups" % NS
P_QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
P_CMDS = "/apis/bus.volcano.sh/v1alpha1/namespaces/%s/commands" % NS
P_NODES = "/api/v1/nodes"
P_EVENTS = "/api/v1/namespaces/%s/events" % NS
P_PLUGIN_OBJS = {
    "ConfigMap": "/api/v1/namespaces/%s/configmaps" % NS,
    "Service": "/api/v1/namespaces/%s/services" % NS,
    "Secret": "/api/v1/namespaces/%s/secrets" % NS,
    "NetworkPolicy": "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies" % NS,
}

FINISHED = {"Completed", "Failed", "Terminated"}
GONE = "<deleted>"
QUEUE_NAMES = ["default", "churn-a", "churn-b", "churn-c"]
ACTIONS_RESTART = ["RestartJob", "RestartTask", "RestartPod"]
ACTIONS_END = ["AbortJob", "TerminateJob", "CompleteJob"]
# The phase each ending action leads to (docs/job-controller.md; state_machine.cc: Pending/Running + Abort ->
# Aborting -> Aborted once idle, Terminate -> Terminating -> Terminated, Complete -> Completing -> Completed).
END_PHASE = {"AbortJob": "Aborted", "TerminateJob": "Terminated", "CompleteJob": "Completed"}


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


class Config:
    def __init__(self):
        s = os.environ.get("CHURN_SEED", "").strip()
        self.seed = int(s) if s else int(time.time() * 1000) % 1_000_000_007
        self.jobs = env_int("CHURN_JOBS", 48)
        self.seconds = env_int("CHURN_SECONDS", 130)
        self.nodes = env_int("CHURN_NODES", 6)
        self.node_cpu = env_int("CHURN_NODE_CPU", 4)
        self.converge = env_int("CHURN_CONVERGE_SECONDS", 180)

    def replay(self):
        return "CHURN_SEED=%d CHURN_JOBS=%d CHURN_SECONDS=%d CHURN_NODES=%d CHURN_NODE_CPU=%d" % (
            self.seed, self.jobs, self.seconds, self.nodes, self.node_cpu)


# ------------------------------------------------------------------------------------------------------ plan
@dataclasses.dataclass
class TaskPlan:
    name: str
    replicas: int
    min_available: int
    cpu_m: int
    mem_mi: int
    run_s: object          # float seconds, or None: the pod runs until deleted
    exit_code: int
    depends_on: object     # task name or None
    grace: int
    policies: list


@dataclasses.dataclass
class JobPlan:
    idx: int
    name: str
    family: str
    outcome: str           # succeed | fail | long | mixed
    trigger: object        # PodEvicted | PodFailed | exitCode | anyOf | TaskCompleted | None
    action: object         # lifecycle action of the job's policy, or None
    at: float              # submit time (s after the churn starts)
    queue: str
    tasks: list
    min_available: int
    max_retry: int
    policies: list         # job-level
    plugins: list
    ttl: object
    policy_scope: list     # tasks whose pods the policy covers
    natural: str           # the phase the job reaches when nothing disturbs it
    alt: list = dataclasses.field(default_factory=list)  # [phase, why]: other phases its own timing allows

    def total(self):
        return sum(t.replicas for t in self.tasks)

    def cpu_m(self):
        return sum(t.replicas * t.cpu_m for t in self.tasks)


# (outcome, trigger, action choices): every family appears at least once when CHURN_JOBS >= len(FAMILIES).
FAMILIES = (
    [("succeed", None, [None])]
    + [("succeed", "PodEvicted", [a]) for a in ACTIONS_RESTART + ACTIONS_END]
    + [("fail", None, [None])]
    + [("fail", "PodFailed", [a]) for a in ACTIONS_RESTART + ACTIONS_END]
    + [("fail", "exitCode", ["RestartJob", "AbortJob", "TerminateJob", "CompleteJob"]),
       ("fail", "anyOf", ACTIONS_RESTART + ACTIONS_END),
       ("long", None, [None]),
       ("long", "PodEvicted", ACTIONS_RESTART),
       ("long", "PodEvicted", ACTIONS_END),
       ("mixed", "TaskCompleted", ["CompleteJob", "CompleteJob", "TerminateJob", "AbortJob"])])
SHORT = {None: "none", "RestartJob": "rj", "RestartTask": "rt", "RestartPod": "rp", "AbortJob": "abort",
         "TerminateJob": "term", "CompleteJob": "compl"}
TRIG = {None: "", "PodEvicted": "ev-", "PodFailed": "", "exitCode": "exit-", "anyOf": "any-", "TaskCompleted": "tc-"}


def all_finished_phase(j):
    """Planner::ApplyCheck, kRunningEval, once succeeded + failed == total (no minSuccess): what a job whose
    pods all ran once (the failing task's pods failed, the others succeeded) ends in without policies."""
    succ = {t.name: (t.replicas if t.exit_code == 0 else 0) for t in j.tasks}
    if j.min_available >= sum(t.min_available for t in j.tasks):
        for t in j.tasks:
            if succ[t.name] < t.min_available:
                return "Failed"
    return "Completed" if sum(succ.values()) >= j.min_available else "Failed"


def make_job(idx, at, fam, rng, long_budget_m, cap_m):
    outcome, trigger, actions = fam
    action = rng.choice(actions)
    ntasks = 2 if outcome == "mixed" else rng.choices([1, 2, 3], [50, 35, 15])[0]
    left = 8
    tasks = []
    for k in range(ntasks):
        rep = rng.randint(1, max(1, min(4, left - (ntasks - k - 1))))
        left -= rep
        cpu = rng.choice([250, 500, 1000])
        tasks.append(TaskPlan("t%d" % k, rep, rep, cpu, rng.choice([64, 128, 256]), None, 0, None,
                              rng.choice([0, 1, 5, 30]), []))
    # Keep a gang well below the cluster: it must fit next to the long-running jobs.
    while sum(t.replicas * t.cpu_m for t in tasks) > cap_m:
        big = max(tasks, key=lambda t: t.cpu_m)
        if big.cpu_m == 250:
            big.replicas = max(1, big.replicas - 1)
            big.min_available = big.replicas
        else:
            big.cpu_m //= 2
    if outcome in ("succeed", "fail"):
        for t in tasks:
            t.run_s = round(rng.uniform(2, 7), 1)
    elif outcome == "mixed":
        tasks[0].run_s = round(rng.uniform(2, 7), 1)
    # Never-ending pods must fit what is left of their budget: shrink them (cpu first), or give up.
    while sum(t.replicas * t.cpu_m for t in tasks if t.run_s is None) > long_budget_m:
        lt = [t for t in tasks if t.run_s is None]
        big = max(lt, key=lambda t: (t.cpu_m, t.replicas))
        if big.cpu_m > 250:
            big.cpu_m //= 2
        elif max(t.replicas for t in lt) > 1:
            big = max(lt, key=lambda t: t.replicas)
            big.replicas -= 1
            big.min_available = big.replicas
        else:
            return None
    for t in tasks:
        if rng.random() < 0.3:
            t.min_available = rng.randint(1, t.replicas)
    if outcome == "fail":
        tasks[-1].exit_code = rng.choice([1, 2, 3, 42])
    # dependsOn: a task waits for the previous one (the failing task is last, so nothing waits for a
    # failure; a job whose dependency fails would wait forever, in Volcano too).
    deps = outcome != "mixed" and ntasks > 1 and rng.random() < 0.35
    if deps:
        for k in range(1, ntasks):
            tasks[k].depends_on = tasks[k - 1].name
    total = sum(t.replicas for t in tasks)
    if deps:
        # The gang must be satisfiable before the dependent tasks have pods: minAvailable covers task 0 only
        # (below the sum of the task minimums, so the per-task gang check is off, as in Volcano).
        min_av = tasks[0].min_available
    else:
        min_av = total if rng.random() < 0.5 else rng.randint(1, total)
    name = "c%03d-%s-%s%s" % (idx, outcome[0], TRIG[trigger], SHORT[action])
    job = JobPlan(idx, name, "%s/%s/%s" % (outcome, trigger, action), outcome, trigger, action, at,
                  rng.choice(QUEUE_NAMES), tasks, min_av, 1, [], [], None, [], "")
    # Policies.
    pol = None
    if trigger == "PodEvicted":
        pol = {"event": "PodEvicted", "action": action}
    elif trigger == "PodFailed":
        pol = {"event": "PodFailed", "action": action}
        if action in ACTIONS_RESTART and rng.random() < 0.25:
            pol["timeout"] = "2s"
    elif trigger == "exitCode":
        pol = {"exitCode": tasks[-1].exit_code, "action": action}
    elif trigger == "anyOf":
        pol = {"events": ["PodFailed", "PodEvicted"], "action": action}
    elif trigger == "TaskCompleted":
        pol = {"event": "TaskCompleted", "action": action}
    if pol is not None:
        if trigger == "TaskCompleted":
            owner = tasks[0]
        elif trigger == "PodEvicted":
            owner = rng.choice(tasks)
        else:
            owner = tasks[-1]
        if rng.random() < 0.5:
            owner.policies.append(pol)
            job.policy_scope = [owner.name]
        else:
            job.policies.append(pol)
            job.policy_scope = [t.name for t in tasks]
    # maxRetry (explicit: there is no admission webhook to default it to 3). Restarts and ResumeJob count.
    if outcome == "fail" and action in ACTIONS_RESTART:
        job.max_retry = rng.randint(1, 3)
    else:
        job.max_retry = rng.randint(2, 4)
    if total > 1:
        job.plugins = sorted(p for p in ("svc", "env", "ssh") if rng.random() < 0.3)
    if outcome in ("succeed", "fail") and rng.random() < 0.15:
        job.ttl = rng.randint(3, 10)
    # What the job ends in when nothing disturbs it (docs/job-controller.md, state_machine.cc):
    if outcome == "succeed":
        job.natural = "Completed"        # kRunningEval: every pod Succeeded
    elif outcome == "long":
        job.natural = "Running"
    elif outcome == "mixed":
        job.natural = END_PHASE[action]  # TaskCompleted of t0 -> the policy's action; t1 is killed
    elif action is None:
        job.natural = all_finished_phase(job)
    elif action in ACTIONS_RESTART:
        job.natural = "Failed"           # every run fails again: retryCount reaches maxRetry (MaxRetryReached)
        if pol.get("timeout"):
            # The restart waits for the timeout; if every pod has finished meanwhile, the Running evaluation
            # ends the job first (a finished job ignores the delayed action; Volcano's delay queue alike).
            job.alt.append([all_finished_phase(job), "PodFailed policy has timeout %s: the job may finish "
                            "(all pods done) before the delayed restart" % pol["timeout"]])
    else:
        job.natural = END_PHASE[action]
    return job


@dataclasses.dataclass
class Ev:
    at: float
    kind: str
    idx: int
    args: dict


EVENT_RATES = {  # per second of churn
    "evict": 1 / 4.0, "suspend": 1 / 9.0, "delete": 1 / 30.0, "close_queue": 1 / 25.0,
    "kill_controller": 1 / 45.0, "kill_scheduler": 1 / 45.0,
}


def make_plan(cfg):
    rng = random.Random("churn-plan/%d" % cfg.seed)
    cluster_m = cfg.nodes * cfg.node_cpu * 1000
    long_budget = cluster_m // 4                   # long-running pods never end: at most a quarter of the cpu
    cap_m = min(8000, cluster_m * 35 // 100)       # largest gang
    # Arrivals: 85% single jobs, 15% bursts of 3-8 copies of one finite job shape submitted together (a
    # parameter sweep): their gangs are enqueued, run, fail and restart at the same moments, which is when state
    # shared between jobs is stressed most (e.g. PodGroups deleted and re-created under the same name by
    # RestartJob, the scheduler's per-PodGroup status). PodFailed -> RestartJob jobs are drawn twice as often.
    groups = []
    n = 0
    while n < cfg.jobs:
        # At least one group per family (the coverage order below hands out one family per group).
        slack = cfg.jobs - n - max(0, len(FAMILIES) - len(groups) - 1)
        size = min(rng.randint(3, 8), slack) if rng.random() < 0.15 and slack >= 3 else 1
        groups.append((round(rng.uniform(0, cfg.seconds * 0.8), 2), size))
        n += size
    groups.sort()
    order = list(range(len(FAMILIES)))
    rng.shuffle(order)
    weights = [5 if f[0] == "succeed" else 4 if f[0] == "fail" else 3 if f[0] == "long" else 4 for f in FAMILIES]
    weights[FAMILIES.index(("fail", "PodFailed", ["RestartJob"]))] = 8
    jobs = []
    g = 0                          # position in the coverage order: one family per arrival group
    while len(jobs) < cfg.jobs:
        if g < len(groups):
            at, size = groups[g]
        else:
            at, size = round(rng.uniform(0, cfg.seconds * 0.8), 2), 1
        size = min(size, cfg.jobs - len(jobs))
        if size > 1 and g < len(order):
            # No bursts of never-ending pods: bring the next finite family of the coverage order forward.
            k = next((k for k in range(g, len(order)) if FAMILIES[order[k]][0] in ("succeed", "fail")), None)
            if k is not None:
                order.insert(g, order.pop(k))
        while True:
            fam = FAMILIES[order[g]] if g < len(order) else rng.choices(FAMILIES, weights)[0]
            if size > 1 and fam[0] not in ("succeed", "fail"):
                size = 1
            # One job's never-ending pods take at most a quarter of the budget, so every such family fits.
            # A burst is shrunk so that all its copies run at once (60% of the cluster).
            j = make_job(len(jobs), at, fam, rng, min(long_budget, cluster_m // 16),
                         min(cap_m, cluster_m * 6 // 10 // size))
            if j is not None:
                break
            if g < len(order):
                del order[g]  # a family with long-running pods that no longer fits: take the next one
        g += 1
        long_budget -= sum(t.replicas * t.cpu_m for t in j.tasks if t.run_s is None)
        jobs += [j] + [copy.deepcopy(j) for _ in range(1, size)]
    # Names in submit order: c<index>-<outcome>-<policy>.
    jobs.sort(key=lambda j: j.at)
    for idx, j in enumerate(jobs):
        j.idx = idx
        j.name = "c%03d-%s" % (idx, j.name.split("-", 1)[1])
    events = []
    for kind, rate in sorted(EVENT_RATES.items()):
        krng = random.Random("churn-events/%d/%s" % (cfg.seed, kind))
        ts = []
        t = 3.0
        while True:
            t += krng.expovariate(rate)
            if t > cfg.seconds - 2:
                break
            ts.append(round(t, 2))
        if not ts:
            ts = [round(krng.uniform(3, max(4, cfg.seconds - 2)), 2)]
        for n, t in enumerate(ts):
            a = {}
            if kind == "evict":
                a["prefer_policy"] = krng.random() < 0.5
            elif kind == "suspend":
                a["resume_after"] = None if krng.random() < 0.35 else round(krng.uniform(3, 25), 1)
            elif kind == "delete":
                a["propagation"] = krng.choice(["Background", "Foreground"])
            elif kind == "close_queue":
                a["queue"] = "root" if krng.random() < 0.15 else krng.choice(QUEUE_NAMES)
                # Closing root closes every queue: always reopened, and soon.
                a["reopen_after"] = round(krng.uniform(3, 10), 1) if a["queue"] == "root" else \
                    None if krng.random() < 0.2 else round(krng.uniform(3, 20), 1)
            else:
                a["downtime"] = round(krng.uniform(0, 5), 1)
            events.append(Ev(t, kind, n, a))
    events.sort(key=lambda e: (e.at, e.kind, e.idx))
    qrng = random.Random("churn-queues/%d" % cfg.seed)
    weights = {"churn-a": qrng.choice([2, 3]), "churn-b": qrng.choice([4, 6]), "churn-c": 1}
    return jobs, events, weights


def plan_digest(jobs, events, weights):
    blob = json.dumps([[dataclasses.asdict(j) for j in jobs], [dataclasses.asdict(e) for e in events], weights],
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def job_object(j):
    tasks = []
    for t in j.tasks:
        ann = {"tephra.io/sim-exit-code": str(t.exit_code)}
        if t.run_s is not None:
            ann["tephra.io/sim-run-seconds"] = "%g" % t.run_s
        res = {"cpu": "%dm" % t.cpu_m, "memory": "%dMi" % t.mem_mi}
        task = {"name": t.name, "replicas": t.replicas, "minAvailable": t.min_available,
                "template": {"metadata": {"labels": {"tephra.io/churn": "1"}, "annotations": ann},
                             "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": t.grace,
                                      "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "inf"],
                                                      "resources": {"requests": res, "limits": res}}]}}}
        if t.policies:
            task["policies"] = t.policies
        if t.depends_on:
            task["dependsOn"] = {"name": [t.depends_on]}
        tasks.append(task)
    spec = {"schedulerName": "volcano", "queue": j.queue, "minAvailable": j.min_available, "maxRetry": j.max_retry,
            "tasks": tasks}
    if j.policies:
        spec["policies"] = j.policies
    if j.plugins:
        spec["plugins"] = {p: [] for p in j.plugins}
    if j.ttl is not None:
        spec["ttlSecondsAfterFinished"] = j.ttl
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": j.name, "namespace": NS, "labels": {"tephra.io/churn-family": j.outcome}},
            "spec": spec}


def describe_job(j):
    ts = []
    for t in j.tasks:
        s = "%sx%d(min %d, %dm, %s%s%s)" % (t.name, t.replicas, t.min_available, t.cpu_m,
                                           "run %gs" % t.run_s if t.run_s is not None else "long",
                                           ", exit %d" % t.exit_code if t.exit_code else "",
                                           ", after %s" % t.depends_on if t.depends_on else "")
        if t.policies:
            s += " policies=%s" % json.dumps(t.policies, separators=(",", ":"))
        ts.append(s)
    return "queue=%s minAvailable=%d maxRetry=%d%s%s%s tasks=[%s] expect=%s" % (
        j.queue, j.min_available, j.max_retry,
        " policies=%s" % json.dumps(j.policies, separators=(",", ":")) if j.policies else "",
        " plugins=%s" % ",".join(j.plugins) if j.plugins else "", " ttl=%d" % j.ttl if j.ttl is not None else "",
        "; ".join(ts), "|".join([j.natural] + [a[0] for a in j.alt if a[0] != j.natural]))


# ---------------------------------------------------------------------------------------------- utilities
def parse_time(s):
    if not s:
        return None
    try:
        return datetime.datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return None


_SUFFIX = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}


def quantity(s):
    s = str(s).strip()
    for suf in sorted(_SUFFIX, key=len, reverse=True):
        if s.endswith(suf) and s[:-len(suf)].replace(".", "", 1).lstrip("-").isdigit():
            return float(s[:-len(suf)]) * _SUFFIX[suf]
    return float(s)


def ann(o, k):
    return ((o.get("metadata") or {}).get("annotations") or {}).get(k)


def owner_uid(o, kind=None):
    for r in (o.get("metadata") or {}).get("ownerReferences") or []:
        if r.get("controller") and (kind is None or r.get("kind") == kind):
            return r.get("uid")
    return None


def phase_of(job):
    return ((job.get("status") or {}).get("state") or {}).get("phase", "")


def pod_phase(p):
    return (p.get("status") or {}).get("phase", "")


def deleting(o):
    return bool((o.get("metadata") or {}).get("deletionTimestamp"))


# ------------------------------------------------------------------------------------------------ driver
class JobRT:
    """What the driver did to one job and what it saw of it."""

    def __init__(self, plan):
        self.plan = plan
        self.uid = None
        self.submitted = False
        self.deleted = False
        self.evictions = {}        # task -> pods the driver deleted
        self.resumes = 0           # ResumeJob commands that took effect
        self.aborts = 0
        self.last_op = None        # "abort" | "resume" (the last command that took effect)
        self.op = None             # the command in flight
        self.notes = []            # why the expected set is wider than `natural`
        self.last_phase = None
        self.phases_seen = []
        self.failures = []         # violations found while the churn ran


class Churn:
    def __init__(self, cfg):
        self.cfg = cfg
        self.jobs_plan, self.events, self.weights = make_plan(cfg)
        self.rt = {j.name: JobRT(j) for j in self.jobs_plan}
        self.t0 = None
        self.logdir = os.environ.get("TEPHRA_E2E_LOG_DIR") or tempfile.mkdtemp(prefix="churn-logs.")
        os.makedirs(self.logdir, exist_ok=True)
        self.action_log_path = os.path.join(self.logdir, "churn-actions.log")
        self.alog = open(self.action_log_path, "a")
        import apiclient
        self.api = apiclient.Client(timeout=30)
        self.roles = {}
        self.kills = {"controller": [], "scheduler": []}   # wall times of SIGKILLs
        self.global_failures = []
        self.snap = None
        self.queue_state = {}
        self.pg_phase = {}
        self.cmd_seq = 0
        self.dyn = []              # heap of (t, seq, kind, args): resumes, queue reopenings, role restarts
        self.dyn_seq = 0
        self.counts = {}           # what the churn actually did, for the summary line

    def count(self, what, n=1):
        self.counts[what] = self.counts.get(what, 0) + n

    def summary(self):
        return ", ".join("%s %d" % kv for kv in sorted(self.counts.items()))

    # -- logging
    def el(self):
        return time.monotonic() - self.t0 if self.t0 else 0.0

    def log(self, msg):
        line = "[%+8.1fs %s] %s" % (self.el(), iso_now(), msg)
        self.alog.write(line + "\n")
        self.alog.flush()

    def out(self, msg):
        print(msg, flush=True)

    # -- API helpers
    def must(self, method, path, body=None, ok=(200, 201, 202)):
        s, d = self.api.request(method, path, body,
                                "application/merge-patch+json" if method == "PATCH" else "application/json")
        if s not in ok:
            raise RuntimeError("%s %s -> %s %s" % (method, path, s, json.dumps(d)[:400]))
        return d

    def wait_for(self, what, timeout, fn, interval=0.5):
        deadline = time.monotonic() + timeout
        while True:
            try:
                v = fn()
            except Exception as e:  # transient API errors count as "not yet"
                v, last = None, e
            if v:
                return v
            if time.monotonic() > deadline:
                raise RuntimeError("timed out after %ds waiting for %s" % (timeout, what))
            time.sleep(interval)

    # ------------------------------------------------------------------------------------------ set-up
    def setup(self):
        kubectl = os.environ.get("KUBECTL", "kubectl")
        src = os.environ["TEPHRA_SOURCE_DIR"]
        subprocess.run([kubectl, "apply", "-f", os.path.join(src, "crds") + "/"], check=True,
                       stdout=subprocess.DEVNULL)
        self.wait_for("CRDs Established", 90, lambda: subprocess.run(
            [kubectl, "wait", "--for", "condition=Established", "--timeout", "10s", "crd", "--all"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0)
        kc = os.environ["KUBECONFIG"]
        L = self.logdir
        self.roles["nodesim"] = Role("nodesim", ["--kubeconfig", kc, "--nodes", str(self.cfg.nodes), "--cpu",
                                                 str(self.cfg.node_cpu), "--memory", "8Gi", "--gpus", "0"],
                                     os.path.join(L, "nodesim.log"))
        self.roles["nodesim"].start()

        def nodes_ready():
            items = self.api.items(P_NODES)
            ready = [n for n in items if any(c.get("type") == "Ready" and c.get("status") == "True"
                                             for c in (n.get("status") or {}).get("conditions") or [])]
            return len(ready) >= self.cfg.nodes and items
        nodes = self.wait_for("%d nodes Ready" % self.cfg.nodes, 120, nodes_ready)
        # Admission taints new nodes not-ready:NoSchedule; the harness has no node lifecycle controller to lift it.
        def untainted(name):
            s, n = self.api.get(P_NODES + "/" + name)
            taints = (n.get("spec") or {}).get("taints") or [] if s == 200 else []
            keep = [t for t in taints if not t.get("key", "").startswith("node.kubernetes.io/")]
            if s != 200 or len(keep) == len(taints):
                return s == 200
            s, _ = self.api.request("PATCH", P_NODES + "/" + name,
                                    {"metadata": {"resourceVersion": n["metadata"]["resourceVersion"]},
                                     "spec": {"taints": keep or None}}, "application/merge-patch+json")
            return False  # read it again: done once the taints are gone (a 409 just retries)
        for n in nodes:
            self.wait_for("node %s untainted" % n["metadata"]["name"], 30, lambda: untainted(n["metadata"]["name"]))
        sp, sh = free_port(), free_port()
        self.roles["scheduler"] = Role("scheduler", ["--kubeconfig", kc, "--leader-elect=false", "--listen-address",
                                                     "127.0.0.1:%d" % sp, "--health-addr", "127.0.0.1:%d" % sh],
                                       os.path.join(L, "scheduler.log"), sh)
        self.sched_metrics = sp
        self.roles["scheduler"].start()
        self.wait_for("scheduler /readyz", 60, self.roles["scheduler"].ready)
        self.wait_for("queues root and default", 60,
                      lambda: self.api.get(P_QUEUES + "/root")[0] == 200 and self.api.get(P_QUEUES + "/default")[0] == 200)
        for q, w in sorted(self.weights.items()):
            self.must("POST", P_QUEUES, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                         "metadata": {"name": q},
                                         "spec": {"weight": w, "reclaimable": True, "parent": "root"}})
        cp, ch = free_port(), free_port()
        self.roles["controller"] = Role("controller", ["--kubeconfig", kc, "--leader-elect=false", "--metrics-addr",
                                                       "127.0.0.1:%d" % cp, "--health-addr", "127.0.0.1:%d" % ch],
                                        os.path.join(L, "controller.log"), ch)
        self.ctrl_metrics = cp
        self.roles["controller"].start()
        self.wait_for("controller /readyz", 60, self.roles["controller"].ready)

        def queues_open():
            st = {q["metadata"]["name"]: (q.get("status") or {}).get("state") for q in self.api.items(P_QUEUES)}
            return all(st.get(q) == "Open" for q in ["root"] + QUEUE_NAMES)
        self.wait_for("every queue Open", 60, queues_open)
        self.log("setup: %d nodes x %d cpu, queues %s, roles started" % (self.cfg.nodes, self.cfg.node_cpu,
                                                                        json.dumps(self.weights, sort_keys=True)))

    # ------------------------------------------------------------------------------------------ observe
    def snapshot(self, full=False):
        s = {"jobs": self.api.items(P_JOBS), "pods": self.api.items(P_PODS), "pgs": self.api.items(P_PGS),
             "queues": self.api.items(P_QUEUES), "cmds": self.api.items(P_CMDS), "t": time.time()}
        if full:
            for kind, path in P_PLUGIN_OBJS.items():
                s[kind] = self.api.items(path)
        s["jobs_by_name"] = {j["metadata"]["name"]: j for j in s["jobs"]}
        s["cmd_names"] = {c["metadata"]["name"] for c in s["cmds"]}
        self.snap = s
        return s

    def observe(self, s):
        for name, rt in self.rt.items():
            if not rt.submitted:
                continue
            j = s["jobs_by_name"].get(name)
            if j is None or (rt.uid and j["metadata"]["uid"] != rt.uid):
                ph = GONE
            else:
                st = j.get("status") or {}
                ph = phase_of(j) or "''"
                key = (ph, st.get("retryCount", 0), st.get("version", 0))
                if rt.last_phase != key:
                    self.log("observe job %s: %s retryCount=%s version=%s%s" % (
                        name, ph, key[1], key[2],
                        " reason=%s" % st["state"]["reason"] if (st.get("state") or {}).get("reason") else ""))
                    rt.last_phase = key
                    rt.phases_seen.append((time.time(), ph))
                continue
            if rt.last_phase != GONE:
                self.log("observe job %s: gone" % name)
                rt.last_phase = GONE
        for pg in s["pgs"]:
            k = pg["metadata"]["name"]
            ph = (pg.get("status") or {}).get("phase", "") or "''"
            if self.pg_phase.get(k) != ph:
                self.log("observe podgroup %s: %s" % (k, ph))
                self.pg_phase[k] = ph
        seen = {pg["metadata"]["name"] for pg in s["pgs"]}
        for k in list(self.pg_phase):
            if k not in seen:
                self.log("observe podgroup %s: gone" % k)
                del self.pg_phase[k]
        for q in s["queues"]:
            k = q["metadata"]["name"]
            st = (q.get("status") or {}).get("state", "")
            if self.queue_state.get(k) != st:
                self.log("observe queue %s: %s" % (k, st or "''"))
                self.queue_state[k] = st
        # Safety, at every tick: never two live pods for one (job, task, index).
        live = {}
        for p in s["pods"]:
            if pod_phase(p) in ("Succeeded", "Failed") or deleting(p):
                continue
            key = (owner_uid(p, "Job"), ann(p, "volcano.sh/task-spec"), ann(p, "volcano.sh/task-index"))
            if key[0] and key in live:
                msg = "two live pods for job uid %s task %s index %s: %s and %s" % (key + (live[key], p["metadata"]["name"]))
                if msg not in self.global_failures:
                    self.global_failures.append(msg)
            live[key] = p["metadata"]["name"]

    # ---------------------------------------------------------------------------------------- commands
    def command(self, action, target, why):
        self.cmd_seq += 1
        name = "churn-%03d-%s" % (self.cmd_seq, action.lower())
        body = {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                "metadata": {"name": name, "namespace": NS}, "action": action, "reason": "ChurnTest",
                "message": why, "target": target}
        self.must("POST", P_CMDS, body)
        return name

    def job_target(self, job):
        return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": job["metadata"]["name"],
                "uid": job["metadata"]["uid"]}

    def queue_command(self, action, q, why):
        s, obj = self.api.get(P_QUEUES + "/" + q)
        if s != 200:
            self.log("skip %s %s: queue GET %s" % (action, q, s))
            return
        name = self.command(action, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": q,
                                     "uid": obj["metadata"]["uid"]}, why)
        self.count(action + " sent")
        self.log("%s queue %s (state %s) command %s" % (action, q, (obj.get("status") or {}).get("state", "''"), name))

    def resolve_ops(self, s, final=False):
        """Decides, from what is visible, whether each AbortJob / ResumeJob command took effect.

        AbortJob is only sent to a job seen Pending or Running right before. It takes effect (Aborting/Aborted)
        unless, when the controller applied it, the job had just entered Restarting (the state machine's
        Restarting row turns every full-kill action into finishing the restart: state_machine.cc, as Volcano's
        restarting state does) or had finished (finished phases ignore it), or the controller was SIGKILLed
        between consuming the Command and applying it (docs/controllers.md: a consumed Command lives only in
        memory until applied). Each excuse needs evidence: the job's condition for that phase with a
        transition time inside the window, or a recorded SIGKILL. Anything else is a failure."""
        now = time.time()
        for name, rt in self.rt.items():
            op = rt.op
            if op is None:
                continue
            j = s["jobs_by_name"].get(name)
            if op["cmd"] in s["cmd_names"]:
                if now - op["t"] > 60:
                    rt.failures.append("%s command %s not consumed after 60s" % (op["action"], op["cmd"]))
                    rt.op = None
                continue
            if op.get("consumed") is None:
                op["consumed"] = now
            if j is None or j["metadata"]["uid"] != rt.uid:
                rt.op = None  # TTL deletion: the job is gone, the expectation covers it
                continue
            ph = phase_of(j)
            killed = [k for k in self.kills["controller"] if op["t"] - 1 <= k <= now]
            if op["action"] == "AbortJob":
                if ph in ("Aborting", "Aborted"):
                    self.log("AbortJob %s took effect (%s)" % (name, ph))
                    self.count("AbortJob effective")
                    rt.last_op, rt.aborts, rt.op = "abort", rt.aborts + 1, None
                    continue
                if "evidence" not in op:
                    for c in (j.get("status") or {}).get("conditions") or []:
                        t = parse_time(c.get("lastTransitionTime"))
                        if c.get("status") in {"Restarting", "Completing", "Terminating"} | FINISHED and t and \
                                op["t"] - 2 <= t <= op["consumed"] + 2:
                            op["evidence"] = "job entered %s at %s, when the AbortJob arrived" % (
                                c["status"], c["lastTransitionTime"])
                if now - op["consumed"] < 20 and not final:
                    continue
                why = op.get("evidence") or ("controller SIGKILLed at %s after the command was sent" % ", ".join(
                    time.strftime("%H:%M:%S", time.gmtime(k)) for k in killed) if killed else None)
                if why:
                    self.log("AbortJob %s did not take effect (%s): %s" % (name, ph, why))
                    self.count("AbortJob without effect (excused)")
                    rt.notes.append("AbortJob %s had no effect: %s" % (op["cmd"], why))
                else:
                    rt.failures.append("AbortJob %s consumed but the job stayed %s for %ds (no Restarting/finish "
                                       "transition in the window, no controller kill)" % (op["cmd"], ph,
                                                                                         now - op["consumed"]))
                rt.op = None
            else:  # ResumeJob, sent only to a job seen Aborted after our AbortJob
                if ph != "Aborted":
                    self.log("ResumeJob %s took effect (%s)" % (name, ph))
                    self.count("ResumeJob effective")
                    rt.last_op, rt.resumes, rt.op = "resume", rt.resumes + 1, None
                    continue
                if now - op["consumed"] < 20 and not final:
                    continue
                if killed:
                    self.log("ResumeJob %s did not take effect (controller SIGKILLed)" % name)
                    rt.notes.append("ResumeJob %s lost with a controller kill: the job stays Aborted" % op["cmd"])
                else:
                    rt.failures.append("ResumeJob %s consumed but the job stayed Aborted for %ds" % (
                        op["cmd"], now - op["consumed"]))
                rt.op = None

    # ------------------------------------------------------------------------------------------ actions
    def do_submit(self, j):
        body = job_object(j)
        s, d = self.api.request("POST", P_JOBS, body)
        if s == 409:  # the first POST landed and the answer was lost (Client retried it)
            s, d = self.api.get(P_JOBS + "/" + j.name)
        if s not in (200, 201):
            raise RuntimeError("submit %s: %s %s" % (j.name, s, json.dumps(d)[:300]))
        rt = self.rt[j.name]
        rt.uid = d["metadata"]["uid"]
        rt.submitted = True
        self.log("submit %s uid=%s %s" % (j.name, rt.uid, describe_job(j)))

    def live_jobs(self):
        return sorted(n for n, rt in self.rt.items() if rt.submitted and not rt.deleted)

    def do_evict(self, ev, rng):
        pods = [p for p in self.snap["pods"] if not deleting(p)
                and p["metadata"].get("labels", {}).get("volcano.sh/job-name") in self.rt]
        if ev.args["prefer_policy"]:
            pref = [p for p in pods if self.rt[p["metadata"]["labels"]["volcano.sh/job-name"]].plan.trigger
                    in ("PodEvicted", "anyOf")]
            pods = pref or pods
        if not pods:
            self.log("evict #%d: no pod to evict" % ev.idx)
            return
        p = rng.choice(sorted(pods, key=lambda p: p["metadata"]["name"]))
        n = p["metadata"]["name"]
        s, _ = self.api.request("DELETE", P_PODS + "/" + n, {"kind": "DeleteOptions", "apiVersion": "v1",
                                                             "preconditions": {"uid": p["metadata"]["uid"]}})
        job = p["metadata"]["labels"]["volcano.sh/job-name"]
        task = ann(p, "volcano.sh/task-spec")
        if s in (200, 202):
            rt = self.rt[job]
            rt.evictions[task] = rt.evictions.get(task, 0) + 1
            self.count("evictions")
        self.log("evict #%d pod %s (job %s task %s, phase %s, node %s, version %s) -> %s" % (
            ev.idx, n, job, task, pod_phase(p), p["spec"].get("nodeName", "-"), ann(p, "volcano.sh/job-version"), s))

    def do_suspend(self, ev, rng):
        cands = [n for n in self.live_jobs() if self.rt[n].op is None
                 and phase_of(self.snap["jobs_by_name"].get(n, {})) in ("Pending", "Running")]
        if not cands:
            self.log("suspend #%d: no Pending/Running job" % ev.idx)
            return
        name = rng.choice(cands)
        s, job = self.api.get(P_JOBS + "/" + name)
        if s != 200 or phase_of(job) not in ("Pending", "Running"):
            self.log("suspend #%d: %s no longer Pending/Running (%s)" % (ev.idx, name, phase_of(job) if s == 200 else s))
            return
        t = time.time()
        cmd = self.command("AbortJob", self.job_target(job), "churn suspend #%d" % ev.idx)
        rt = self.rt[name]
        rt.op = {"action": "AbortJob", "cmd": cmd, "t": t, "resume_after": ev.args["resume_after"]}
        self.count("AbortJob sent")
        self.log("suspend #%d job %s (phase %s retryCount=%s) command %s; resume %s" % (
            ev.idx, name, phase_of(job), (job.get("status") or {}).get("retryCount", 0), cmd,
            "after %ss" % ev.args["resume_after"] if ev.args["resume_after"] is not None else "never"))
        if ev.args["resume_after"] is not None:
            self.push(self.el() + ev.args["resume_after"], "resume", {"job": name, "suspend": ev.idx})

    def do_resume(self, args):
        name = args["job"]
        rt = self.rt[name]
        if rt.deleted or rt.op is not None or rt.last_op != "abort":
            # Not (yet) known to be aborted by our command: try again shortly, while the churn lasts.
            if not rt.deleted and rt.op is not None:
                self.push(self.el() + 2, "resume", args)
            else:
                self.log("resume (suspend #%d) %s: skipped (last effective op %s)" % (args["suspend"], name, rt.last_op))
            return
        s, job = self.api.get(P_JOBS + "/" + name)
        if s != 200 or phase_of(job) != "Aborted":
            self.log("resume %s: skipped, phase %s" % (name, phase_of(job) if s == 200 else s))
            return
        cmd = self.command("ResumeJob", self.job_target(job), "churn resume after suspend #%d" % args["suspend"])
        rt.op = {"action": "ResumeJob", "cmd": cmd, "t": time.time()}
        self.count("ResumeJob sent")
        self.log("resume job %s command %s" % (name, cmd))

    def do_delete(self, ev, rng):
        cands = [n for n in self.live_jobs() if self.rt[n].op is None and n in self.snap["jobs_by_name"]]
        if not cands:
            self.log("delete #%d: no job" % ev.idx)
            return
        name = rng.choice(cands)
        rt = self.rt[name]
        s, _ = self.api.request("DELETE", P_JOBS + "/" + name, {
            "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": ev.args["propagation"],
            "preconditions": {"uid": rt.uid}})
        if s in (200, 202):
            rt.deleted = True
            self.count("job deletes")
        self.log("delete #%d job %s (phase %s, %s) -> %s" % (ev.idx, name, phase_of(self.snap["jobs_by_name"][name]),
                                                            ev.args["propagation"], s))

    def do_close(self, ev):
        q = ev.args["queue"]
        self.queue_command("CloseQueue", q, "churn close #%d" % ev.idx)
        if ev.args["reopen_after"] is not None:
            self.push(self.el() + ev.args["reopen_after"], "open_queue", {"queue": q, "close": ev.idx})

    def do_kill(self, role, ev):
        r = self.roles[role]
        if not r.alive():
            self.log("kill %s #%d: not running" % (role, ev.idx))
            return
        pid = r.proc.pid
        r.kill()
        self.count("%s SIGKILLs" % role)
        self.kills[role].append(time.time())
        self.log("SIGKILL %s (pid %d) #%d; restart in %ss" % (role, pid, ev.idx, ev.args["downtime"]))
        self.push(self.el() + ev.args["downtime"], "restart", {"role": role})

    def push(self, t, kind, args):
        self.dyn_seq += 1
        heapq.heappush(self.dyn, (t, self.dyn_seq, kind, args))

    def check_roles(self):
        for name, r in self.roles.items():
            rc = r.check()
            if rc is not None:
                self.log("tephra %s exited by itself (code %s); restarting it" % (name, rc))
                r.start()

    def role_failures(self):
        out = []
        for name, r in sorted(self.roles.items()):
            if r.unexpected_exits:
                codes = sorted({rc for _, rc in r.unexpected_exits})
                out.append("tephra %s exited by itself %d time(s) (exit codes %s; negative = killed by that signal), "
                           "first at %s, last at %s; see %s" % (name, len(r.unexpected_exits), codes,
                                                                r.unexpected_exits[0][0], r.unexpected_exits[-1][0],
                                                                r.logf))
        return out

    # ------------------------------------------------------------------------------------------- churn
    def churn(self):
        self.t0 = time.monotonic()
        self.log("churn starts: %d jobs over %ds, %d disruptions" % (len(self.jobs_plan), self.cfg.seconds,
                                                                   len(self.events)))
        todo = [(j.at, 0, "submit", j) for j in self.jobs_plan] + [(e.at, 1, e.kind, e) for e in self.events]
        todo.sort(key=lambda x: (x[0], x[1], x[2], getattr(x[3], "idx", 0)))
        i = 0
        next_progress = 15
        while True:
            el = self.el()
            if el >= self.cfg.seconds and i >= len(todo):
                break
            self.check_roles()
            s = self.snapshot()
            self.observe(s)
            self.resolve_ops(s)
            el = self.el()
            while i < len(todo) and todo[i][0] <= el:
                _, _, kind, x = todo[i]
                i += 1
                try:
                    self.run_event(kind, x)
                except Exception as e:  # an API hiccup must not end the churn; it is logged
                    self.log("%s failed: %s" % (kind, e))
            while self.dyn and self.dyn[0][0] <= self.el():
                _, _, kind, args = heapq.heappop(self.dyn)
                if kind != "restart" and self.el() >= self.cfg.seconds:
                    continue  # resumes / reopenings after the churn: not done (queues are reopened below)
                try:
                    self.run_dyn(kind, args)
                except Exception as e:
                    self.log("%s failed: %s" % (kind, e))
            if self.el() >= next_progress:
                next_progress += 15
                self.progress("churn")
            # Pacing: one observation per second, or the next planned action if sooner.
            nxt = min([self.el() + 1.0] + ([todo[i][0]] if i < len(todo) else []) + ([self.dyn[0][0]] if self.dyn else []))
            time.sleep(max(0.05, nxt - self.el()))
        # Roles killed near the end come back now; nothing else is restarted or resumed.
        for kind in [d for d in self.dyn if d[2] == "restart"]:
            self.run_dyn("restart", kind[3])
        self.dyn = []
        self.log("churn ends: %s" % self.summary())
        self.out("churn did: %s" % self.summary())

    def run_event(self, kind, x):
        rng = random.Random("churn-pick/%d/%s/%d" % (self.cfg.seed, kind, getattr(x, "idx", 0)))
        if kind == "submit":
            self.do_submit(x)
        elif kind == "evict":
            self.do_evict(x, rng)
        elif kind == "suspend":
            self.do_suspend(x, rng)
        elif kind == "delete":
            self.do_delete(x, rng)
        elif kind == "close_queue":
            self.do_close(x)
        elif kind == "kill_controller":
            self.do_kill("controller", x)
        elif kind == "kill_scheduler":
            self.do_kill("scheduler", x)

    def run_dyn(self, kind, args):
        if kind == "restart":
            r = self.roles[args["role"]]
            if not r.alive():
                r.start()
                self.log("restart %s (pid %d)" % (args["role"], r.proc.pid))
        elif kind == "resume":
            self.do_resume(args)
        elif kind == "open_queue":
            self.queue_command("OpenQueue", args["queue"], "churn reopen after close #%d" % args["close"])

    def progress(self, stage):
        by = {}
        for n, rt in self.rt.items():
            if rt.submitted:
                k = GONE if rt.last_phase == GONE else (rt.last_phase[0] if rt.last_phase else "?")
                by[k] = by.get(k, 0) + 1
        self.out("  [%s %+6.0fs] jobs by phase: %s; pods %d, podgroups %d" % (
            stage, self.el(), ", ".join("%s %d" % kv for kv in sorted(by.items())), len(self.snap["pods"]),
            len(self.snap["pgs"])))

    # ---------------------------------------------------------------------------------------- converge
    def reopen_queues(self):
        """Every queue is reopened once (root first: OpenQueue on a child of a closed parent is refused)."""
        for group in (["root"], QUEUE_NAMES):
            sent = []
            for q in group:
                s, obj = self.api.get(P_QUEUES + "/" + q)
                if s == 200 and (obj.get("status") or {}).get("state") != "Open":
                    self.queue_command("OpenQueue", q, "churn: reopen every queue")
                    sent.append(q)

            def all_open():
                st = {q["metadata"]["name"]: (q.get("status") or {}).get("state") for q in self.api.items(P_QUEUES)}
                return all(st.get(q) == "Open" for q in group)
            try:
                self.wait_for("queues %s Open" % ",".join(group), 60, all_open)
            except RuntimeError as e:
                self.global_failures.append(str(e))

    def expected(self, rt):
        """The set of phases the job may end in, and why (docs/churn.md, "Expected phase")."""
        j = rt.plan
        why = list(rt.notes)
        if rt.deleted:
            return {GONE}, ["deleted by the test"]
        if rt.last_op == "abort":
            # Aborted is sticky: only ResumeJob leaves it (state_machine.cc, Aborting/Aborted rows).
            return {"Aborted"}, why + ["last command AbortJob took effect"]
        S = {j.natural}
        for phase, reason in j.alt:
            S.add(phase)
            why.append(reason)
        # Evictions (DELETE of a pod): a policy on PodEvicted fires only if the controller sees the pod with its
        # deletionTimestamp (terminationGracePeriodSeconds 0 or a finished pod: gone at once; a controller
        # that is down misses the window), so its effect is possible, never certain.
        ev_in_scope = sum(n for t, n in rt.evictions.items() if t in j.policy_scope) \
            if j.trigger in ("PodEvicted", "anyOf") else 0
        if ev_in_scope:
            why.append("%d pod(s) evicted under its PodEvicted policy" % ev_in_scope)
            if j.action in END_PHASE:
                S.add(END_PHASE[j.action])
        elif rt.evictions:
            why.append("%d pod(s) evicted (no PodEvicted policy: recreated)" % sum(rt.evictions.values()))
        # Every restart and every ResumeJob counts one retry; at maxRetry the restart check fails the job.
        retries = rt.resumes + (ev_in_scope if j.action in ACTIONS_RESTART else 0)
        if retries >= j.max_retry:
            S.add("Failed")
            why.append("%d retries possible >= maxRetry %d: MaxRetryReached possible" % (retries, j.max_retry))
        if rt.resumes:
            why.append("resumed %d time(s)" % rt.resumes)
            # ResumeJob keeps the finished pods of the aborted run (soft kill) and does not recreate them
            # (same names); they are not of the current run, so they trigger no policy but count in the
            # Running evaluation: a failing job may end Completed or Failed, and a mixed job whose first task
            # had already succeeded never sees TaskCompleted again and stays Running (Volcano alike).
            if j.outcome == "fail":
                S |= {"Completed", "Failed"}
            if j.outcome == "mixed":
                S.add("Running")
        if j.ttl is not None and S & FINISHED:
            S.add(GONE)
            why.append("ttlSecondsAfterFinished %d" % j.ttl)
        return S, why

    def check(self, s, metrics):
        """All end-state invariants. Returns ({job: [problems]}, [global problems])."""
        jf, gf = {}, []
        jobs_uid = {j["metadata"]["uid"]: j for j in s["jobs"]}
        pods_by = {}
        for p in s["pods"]:
            pods_by.setdefault(owner_uid(p, "Job"), []).append(p)
        pg_by = {}
        for pg in s["pgs"]:
            pg_by.setdefault(owner_uid(pg, "Job"), []).append(pg)
        objs_by = {}
        for kind in P_PLUGIN_OBJS:
            for o in s.get(kind, []):
                for r in o["metadata"].get("ownerReferences") or []:
                    objs_by.setdefault(r.get("uid"), []).append("%s/%s" % (kind, o["metadata"]["name"]))
        for name, rt in sorted(self.rt.items()):
            if not rt.submitted:
                continue
            probs = list(rt.failures)
            if rt.op is not None:
                probs.append("%s command %s still unresolved" % (rt.op["action"], rt.op["cmd"]))
            exp, why = self.expected(rt)
            j = s["jobs_by_name"].get(name)
            if j is not None and j["metadata"]["uid"] != rt.uid:
                j = None
            ph = GONE if j is None else phase_of(j)
            if ph not in exp:
                probs.append("phase %s, expected %s%s" % (ph or "''", " or ".join(sorted(exp)),
                                                         " (%s)" % "; ".join(why) if why else ""))
            if ph == GONE and GONE in exp and rt.plan.ttl is not None and not rt.deleted:
                last = [p for _, p in rt.phases_seen if p != GONE]
                if last and last[-1] not in exp:
                    probs.append("deleted by TTL after phase %s, expected %s" % (last[-1], " or ".join(sorted(exp))))
            pods = pods_by.get(rt.uid, [])
            pgs = pg_by.get(rt.uid, [])
            if ph == GONE:
                if pods:
                    probs.append("job gone but %d pod(s) left: %s" % (len(pods), ", ".join(
                        p["metadata"]["name"] for p in pods)))
                if pgs:
                    probs.append("job gone but PodGroup %s left" % pgs[0]["metadata"]["name"])
                if objs_by.get(rt.uid):
                    probs.append("job gone but plugin objects left: %s" % ", ".join(objs_by[rt.uid]))
            else:
                probs += self.check_job(rt, j, pods, pgs, objs_by.get(rt.uid, []))
            if probs:
                jf[name] = probs
        # Global invariants.
        for pg in s["pgs"]:
            ou = owner_uid(pg, "Job")
            if ou not in jobs_uid:
                gf.append("orphan PodGroup %s (owner uid %s has no vcjob)" % (pg["metadata"]["name"], ou))
        for p in s["pods"]:
            ou = owner_uid(p, "Job")
            if ou and ou not in jobs_uid:
                gf.append("pod %s left for deleted job uid %s (phase %s)" % (p["metadata"]["name"], ou, pod_phase(p)))
        live = {}
        for p in s["pods"]:
            if pod_phase(p) in ("Succeeded", "Failed"):
                continue
            key = (owner_uid(p, "Job"), ann(p, "volcano.sh/task-spec"), ann(p, "volcano.sh/task-index"))
            if key in live:
                gf.append("two non-terminated pods for job uid %s task %s index %s: %s, %s" % (
                    key + (live[key], p["metadata"]["name"])))
            live[key] = p["metadata"]["name"]
        for c in s["cmds"]:
            gf.append("Command %s (%s on %s) never consumed" % (c["metadata"]["name"], c.get("action"),
                                                                (c.get("target") or {}).get("name")))
        gf += self.check_queues(s, metrics)
        return jf, gf

    def check_job(self, rt, j, pods, pgs, objs):
        probs = []
        st = j.get("status") or {}
        ph = phase_of(j)
        version = st.get("version", 0)
        live = [p for p in pods if pod_phase(p) in ("Pending", "Running", "") or deleting(p)]
        if len(pgs) > 1:
            probs.append("%d PodGroups" % len(pgs))
        pg = pgs[0] if pgs else None
        if ph in FINISHED or ph == "Aborted":
            # Finished and aborted jobs are soft-killed: only Succeeded/Failed pods stay; PodGroup and plugin
            # objects are deleted (Volcano's KillJob, Planner::Kill).
            if live:
                probs.append("%s job has live pods: %s" % (ph, ", ".join(
                    "%s(%s%s)" % (p["metadata"]["name"], pod_phase(p), ",deleting" if deleting(p) else "") for p in live)))
            if pg is not None:
                probs.append("%s job still has PodGroup %s (phase %s)" % (ph, pg["metadata"]["name"],
                                                                       (pg.get("status") or {}).get("phase", "''")))
            if objs:
                probs.append("%s job still has plugin objects: %s" % (ph, ", ".join(objs)))
        elif ph == "Running":
            for t in rt.plan.tasks:
                tp = [p for p in pods if ann(p, "volcano.sh/task-spec") == t.name]
                running = [p for p in tp if pod_phase(p) == "Running" and not deleting(p)]
                if t.run_s is None:
                    stale = [p["metadata"]["name"] for p in running if ann(p, "volcano.sh/job-version") != str(version)]
                    if len(running) != t.replicas or len(tp) != t.replicas or stale:
                        probs.append("task %s: %d Running pod(s) of %d (pods: %s)%s" % (
                            t.name, len(running), t.replicas, ", ".join(
                                "%s=%s%s" % (p["metadata"]["name"], pod_phase(p) or "''", ",deleting" if deleting(p)
                                             else "") for p in tp) or "none",
                            " version != %d: %s" % (version, stale) if stale else ""))
                elif any(pod_phase(p) != "Succeeded" for p in tp) or len(tp) != t.replicas:
                    probs.append("task %s (finite) of a Running job: pods %s" % (t.name, ", ".join(
                        "%s=%s" % (p["metadata"]["name"], pod_phase(p)) for p in tp) or "none"))
            if pg is None:
                probs.append("Running job has no PodGroup")
            elif (pg.get("status") or {}).get("phase") != "Running":
                probs.append("Running job's PodGroup %s has phase %s" % (pg["metadata"]["name"],
                                                                        (pg.get("status") or {}).get("phase", "''")))
        # A live job's PodGroup must have been given a phase by the scheduler.
        if ph not in FINISHED and ph != "Aborted" and pg is not None and not (pg.get("status") or {}).get("phase"):
            probs.append("PodGroup %s of the %s job has no status.phase (created %s)" % (
                pg["metadata"]["name"], ph or "''", pg["metadata"].get("creationTimestamp")))
        # Status counters = the pods (Planner::CountPods): nothing terminating once converged.
        want = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0}
        for p in pods:
            if deleting(p):
                continue
            k = {"Pending": "pending", "": "pending", "Running": "running", "Succeeded": "succeeded",
                 "Failed": "failed"}.get(pod_phase(p))
            if k:
                want[k] += 1
        have = {k: st.get(k, 0) for k in want}
        if have != want or st.get("terminating", 0):
            probs.append("status counts %s terminating=%s, pods say %s" % (have, st.get("terminating", 0), want))
        return probs

    def check_queues(self, s, metrics):
        gf = []
        pgq = {}
        for pg in s["pgs"]:
            q = (pg.get("spec") or {}).get("queue") or "default"
            ph = (pg.get("status") or {}).get("phase") or "Pending"
            pgq.setdefault(q, {}).setdefault(ph, 0)
            pgq[q][ph] += 1
        jq = {j["metadata"]["uid"]: (j.get("spec") or {}).get("queue") or "default" for j in s["jobs"]}
        alloc = {}
        for p in s["pods"]:
            if not p["spec"].get("nodeName") or pod_phase(p) in ("Succeeded", "Failed"):
                continue
            q = jq.get(owner_uid(p, "Job"))
            if q is None:
                continue
            a = alloc.setdefault(q, [0, 0])
            for c in p["spec"].get("containers", []):
                req = (c.get("resources") or {}).get("requests") or {}
                a[0] += round(quantity(req.get("cpu", "0")) * 1000)
                a[1] += round(quantity(req.get("memory", "0")))
        (ctrl, err), (sched, _) = metrics
        for q in s["queues"]:
            name = q["metadata"]["name"]
            st = q.get("status") or {}
            if st.get("state") != "Open":
                gf.append("queue %s state %s after reopening" % (name, st.get("state") or "''"))
            want = pgq.get(name, {})
            # The queue controller writes only status.state; the per-phase PodGroup counts are its gauges
            # (docs/controllers.md). Counters in status (Volcano < 1.12 wrote them) must agree if present.
            for phase in ("Inqueue", "Pending", "Running", "Unknown", "Completed"):
                n = want.get(phase, 0)
                if ctrl is None:
                    continue
                g = ctrl.get('volcano_queue_pod_group_%s_count{queue_name="%s"}' % (phase.lower(), name))
                if g is None or int(g) != n:
                    gf.append("queue %s: gauge volcano_queue_pod_group_%s_count = %s, PodGroups in %s: %d" % (
                        name, phase.lower(), g, phase, n))
                if phase.lower() in st and int(st[phase.lower()]) != n:
                    gf.append("queue %s: status.%s = %s, PodGroups in %s: %d" % (name, phase.lower(),
                                                                                st[phase.lower()], phase, n))
            a = alloc.get(name, [0, 0])
            got = st.get("allocated") or {}
            gc, gm = round(quantity(got.get("cpu", "0")) * 1000), round(quantity(got.get("memory", "0")))
            if (gc, gm) != tuple(a):
                g = lambda m: (sched or {}).get('volcano_queue_allocated_%s{queue_name="%s"}' % (m, name))
                gf.append("queue %s: status.allocated %s, bound unfinished pods request cpu %dm memory %d "
                          "(scheduler gauges: volcano_queue_allocated_milli_cpu %s, _memory_bytes %s)" % (
                              name, json.dumps(got, sort_keys=True), a[0], a[1], g("milli_cpu"), g("memory_bytes")))
        if ctrl is None:
            gf.append("controller /metrics unreadable: %s" % err)
        return gf

    def converge(self):
        t_start = time.monotonic()
        self.out("churn over after %.0fs; reopening queues, then waiting up to %ds for convergence" % (
            self.el(), self.cfg.converge))
        self.reopen_queues()
        deadline = t_start + self.cfg.converge
        next_progress = time.monotonic() + 15
        while True:
            self.check_roles()
            s = self.snapshot(full=True)
            self.observe(s)
            self.resolve_ops(s, final=time.monotonic() > deadline - 25)
            metrics = (scrape(self.ctrl_metrics), scrape(self.sched_metrics))
            jf, gf = self.check(s, metrics)
            gf = self.role_failures() + self.global_failures + gf
            if not jf and not gf:
                took = time.monotonic() - t_start
                self.log("converged in %.1fs" % took)
                return took, jf, gf
            if time.monotonic() > deadline:
                return None, jf, gf
            if time.monotonic() > next_progress:
                next_progress += 15
                self.progress("converge")
                self.out("    %d job(s) not converged%s; %d global problem(s)%s" % (
                    len(jf), ", e.g. " + "; ".join("%s: %s" % (n, p[0]) for n, p in list(jf.items())[:2]) if jf else "",
                    len(gf), ", e.g. " + gf[0] if gf else ""))
            time.sleep(2)

    # ---------------------------------------------------------------------------------------- reporting
    def report(self, jf, gf):
        s = self.snap
        self.out("")
        self.out("FAIL: %d job(s) did not converge, %d global problem(s) (churn seed %d)" % (len(jf), len(gf),
                                                                                          self.cfg.seed))
        with open(self.action_log_path) as f:
            actions = f.read().splitlines()
        evs = []
        try:
            evs = self.api.items(P_EVENTS)
        except Exception as e:
            self.out("(events unreadable: %s)" % e)
        logs = {}
        for r in ("controller", "scheduler"):
            try:
                with open(self.roles[r].logf, errors="replace") as f:
                    logs[r] = f.read().splitlines()
            except OSError:
                logs[r] = []
        shown = 0
        for name, probs in sorted(jf.items()):
            rt = self.rt[name]
            self.out("")
            self.out("=== job %s (%s; %s) uid %s" % (name, rt.plan.family, describe_job(rt.plan), rt.uid))
            for p in probs:
                self.out("  PROBLEM: %s" % p)
            shown += 1
            if shown > 12:
                continue  # problems of every job, details of the first dozen
            j = s["jobs_by_name"].get(name)
            if j is not None:
                st = j.get("status") or {}
                self.out("  status: %s" % json.dumps({k: v for k, v in st.items() if k != "conditions"}, sort_keys=True))
                self.out("  conditions: %s" % ", ".join("%s@%s" % (c.get("status"), c.get("lastTransitionTime"))
                                                        for c in st.get("conditions") or []))
            for pg in s["pgs"]:
                if owner_uid(pg, "Job") == rt.uid:
                    self.out("  podgroup %s created %s job-version %s minMember %s queue %s status %s" % (
                        pg["metadata"]["name"], pg["metadata"].get("creationTimestamp"),
                        ann(pg, "tephra.io/job-version"), pg["spec"].get("minMember"), pg["spec"].get("queue"),
                        json.dumps(pg.get("status"), sort_keys=True) if pg.get("status") else "NONE"))
            for p in s["pods"]:
                if owner_uid(p, "Job") == rt.uid:
                    self.out("  pod %s phase %s node %s version %s retry %s created %s%s%s" % (
                        p["metadata"]["name"], pod_phase(p) or "''", p["spec"].get("nodeName", "-"),
                        ann(p, "volcano.sh/job-version"), ann(p, "volcano.sh/job-retry-count"),
                        p["metadata"].get("creationTimestamp"),
                        " deleting since %s" % p["metadata"]["deletionTimestamp"] if deleting(p) else "",
                        " out-of-sync" if ann(p, "volcano.sh/controller-out-of-sync") == "true" else ""))
            mine = [e for e in evs if (e.get("involvedObject") or {}).get("name", "").startswith(name)]
            mine.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
            for e in mine[-10:]:
                io = e.get("involvedObject") or {}
                self.out("  event %s %s/%s %s: %s (x%s)" % (e.get("lastTimestamp") or e.get("eventTime"),
                                                            io.get("kind"), io.get("name"), e.get("reason"),
                                                            (e.get("message") or "")[:160], e.get("count")))
            for line in [l for l in actions if name in l][-15:]:
                self.out("  action %s" % line)
            for r in ("controller", "scheduler"):
                lines = [l for l in logs[r] if name in l]
                for line in lines[-8:]:
                    self.out("  %s.log %s" % (r, line[:300]))
        for g in gf:
            self.out("GLOBAL PROBLEM: %s" % g)
        self.out("")
        self.out("--- tail of the action log (%s) ---" % self.action_log_path)
        for line in actions[-40:]:
            self.out(line)
        self.out("")
        self.out("FAIL: churn seed %d (replay: %s bash tests/e2e/churn/churn_test.sh via run-with-cluster.sh)" % (
            self.cfg.seed, self.cfg.replay()))

    def stop_roles(self):
        for r in ("controller", "scheduler", "nodesim"):
            if r in self.roles:
                self.roles[r].stop()


def main():
    cfg = Config()
    print("churn seed: %d (replay: %s)" % (cfg.seed, cfg.replay()), flush=True)
    if "--plan-only" in sys.argv:
        jobs, events, weights = make_plan(cfg)
        print("plan digest %s; queue weights %s" % (plan_digest(jobs, events, weights), weights))
        for j in jobs:
            print("  +%6.1fs %-24s %s" % (j.at, j.name, describe_job(j)))
        for e in events:
            print("  +%6.1fs %-16s #%d %s" % (e.at, e.kind, e.idx, json.dumps(e.args, sort_keys=True)))
        return 0
    for v in ("KUBECONFIG", "TEPHRA_BIN", "TEPHRA_SOURCE_DIR", "TEPHRA_E2E_API_URL"):
        if not os.environ.get(v):
            sys.exit("%s is not set: run me through tests/e2e/run-with-cluster.sh" % v)
    c = Churn(cfg)
    fams = {}
    for j in c.jobs_plan:
        fams[j.outcome] = fams.get(j.outcome, 0) + 1
    kinds = {}
    for e in c.events:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    print("plan digest %s: %d jobs (%s), %d disruptions (%s), churn %ds, %d nodes x %d cpu; logs in %s" % (
        plan_digest(c.jobs_plan, c.events, c.weights), len(c.jobs_plan),
        ", ".join("%s %d" % kv for kv in sorted(fams.items())), len(c.events),
        ", ".join("%s %d" % kv for kv in sorted(kinds.items())), cfg.seconds, cfg.nodes, cfg.node_cpu, c.logdir),
          flush=True)

    def on_term(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_term)
    rc = 1
    try:
        t = time.monotonic()
        c.setup()
        print("set-up done in %.1fs" % (time.monotonic() - t), flush=True)
        c.churn()
        took, jf, gf = c.converge()
        if took is not None:
            states = {}
            for rt in c.rt.values():
                k = GONE if rt.last_phase == GONE else rt.last_phase[0] if rt.last_phase else "?"
                states[k] = states.get(k, 0) + 1
            print("PASS: every job converged %.1fs after the churn ended (%s); churn seed %d" % (
                took, ", ".join("%s %d" % kv for kv in sorted(states.items())), cfg.seed), flush=True)
            rc = 0
        else:
            c.report(jf, gf)
    except KeyboardInterrupt as e:
        print("interrupted (%s); churn seed %d" % (e, cfg.seed), flush=True)
        rc = 130
    except Exception as e:
        import traceback
        traceback.print_exc()
        print("ERROR: %s; churn seed %d (replay: %s)" % (e, cfg.seed, cfg.replay()), flush=True)
    finally:
        c.stop_roles()
    return rc


if __name__ == "__main__":
    sys.exit(main())
