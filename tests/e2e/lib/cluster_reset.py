#!/usr/bin/env python3
"""Puts a shared e2e control plane back to the state it had when it came up, so the next scenario cannot see
what the last one left (docs/e2e.md, "Shared control planes").

  cluster_reset.py snapshot <file>   record every object the cluster holds now (its baseline)
  cluster_reset.py reset <file>      delete every object that is not in the baseline, and wait until it is gone

Reads the cluster from the harness's environment (TEPHRA_E2E_API_URL, TEPHRA_E2E_TOKEN_FILE, TEPHRA_E2E_CA_FILE).

What a reset does, in order (each step exists because the loopback control plane has no kubelet and the roles
that own finalizers are stopped by then):
  1. workload controllers first (Deployments, ReplicaSets, Jobs, vcjobs, ...), so nothing re-creates pods;
  2. every other object not in the baseline; pods with gracePeriodSeconds 0, since no kubelet will confirm a
     graceful stop; namespaces last;
  3. then, until two lists in a row find nothing left: objects still there with a deletionTimestamp lose their
     finalizers (their controller is gone), and anything created meanwhile (a late Event, a pod a controller
     made before it saw its owner go) is deleted too.
Our own CRDs (group *.volcano.sh) stay: every scenario installs the same ones, and re-creating them costs each
scenario a discovery round. Objects that were in the baseline are left as they are."""
import concurrent.futures
import http.client
import json
import os
import ssl
import sys
import time

API = os.environ["TEPHRA_E2E_API_URL"].replace("https://", "")
HOST, PORT = API.split(":")
TOKEN = open(os.environ["TEPHRA_E2E_TOKEN_FILE"]).read().strip()
CTX = ssl.create_default_context(cafile=os.environ["TEPHRA_E2E_CA_FILE"])
THREADS = 8

# Kinds listed but never deleted: the API server regenerates or owns them, or they cannot be deleted.
SKIP = {
    ("", "componentstatuses"),
    ("apiregistration.k8s.io", "apiservices"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
    ("events.k8s.io", "events"),  # the same objects as core/v1 events, deleted there
}
# Deleted first, so that none of them re-creates a pod deleted in the next step.
WORKLOADS = {"deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "cronjobs",
             "replicationcontrollers"}


class Api:
    def __init__(self):
        self._c = None

    def request(self, method, path, body=None, ctype="application/json"):
        for attempt in range(5):
            try:
                if self._c is None:
                    self._c = http.client.HTTPSConnection(HOST, int(PORT), context=CTX, timeout=30)
                h = {"Authorization": "Bearer " + TOKEN, "Accept": "application/json", "Content-Type": ctype}
                self._c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
                r = self._c.getresponse()
                raw = r.read()
                try:
                    return r.status, json.loads(raw) if raw else None
                except ValueError:
                    return r.status, None
            except (OSError, http.client.HTTPException):
                self._c = None
                time.sleep(0.2 * (attempt + 1))
        raise ConnectionError("%s %s failed 5 times" % (method, path))


def resources(pool):
    """(group, version, base path, resource, namespaced) of every listable and deletable kind the server serves."""
    groups = [("", "v1", "/api/v1")]
    api = pool.get()
    try:
        s, d = api.request("GET", "/apis")
    finally:
        pool.put(api)
    if s == 200:
        for g in d.get("groups", []):
            v = g["preferredVersion"]["version"]
            groups.append((g["name"], v, "/apis/%s/%s" % (g["name"], v)))

    def one(api, g):
        group, version, base = g
        s, d = api.request("GET", base)
        if s != 200:
            return []  # a CRD still being established
        out = []
        for r in d.get("resources", []):
            if "/" in r["name"] or (group, r["name"]) in SKIP:
                continue
            if {"list", "delete"} <= set(r.get("verbs", [])):
                out.append((group, version, base, r["name"], r["namespaced"]))
        return out
    return [r for rs in each(pool, one, groups) for r in rs]


def list_all(api_pool, res):
    """{key: (path, deleting, finalizers)} for every object of every kind; key = group/resource/ns/name."""
    def one(r):
        group, version, base, name, namespaced = r
        api = api_pool.get()
        try:
            s, d = api.request("GET", "%s/%s" % (base, name))
        finally:
            api_pool.put(api)
        found = {}
        if s != 200:
            return found
        for o in d.get("items") or []:
            m = o.get("metadata", {})
            ns = m.get("namespace", "")
            path = "%s/namespaces/%s/%s/%s" % (base, ns, name, m["name"]) if ns else "%s/%s/%s" % (base, name, m["name"])
            found["%s/%s/%s/%s" % (group, name, ns, m["name"])] = (path, "deletionTimestamp" in m, m.get("finalizers") or [])
        return found
    objs = {}
    with concurrent.futures.ThreadPoolExecutor(THREADS) as ex:
        for f in ex.map(one, res):
            objs.update(f)
    return objs


class Pool:
    def __init__(self, n):
        import queue
        self.q = queue.Queue()
        for _ in range(n):
            self.q.put(Api())

    def get(self):
        return self.q.get()

    def put(self, a):
        self.q.put(a)


# The control plane's own namespaces: their ServiceAccounts, token Secrets and ConfigMaps belong to the
# controller-manager (one ServiceAccount per controller, whose tokens appear a little after `up`, maybe after the
# baseline was taken). Deleting such a token would revoke a controller's credentials, so they are never touched.
SYSTEM_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease"}
SYSTEM_KEPT = {"serviceaccounts", "secrets", "configmaps"}
# Deleted before anything else: a webhook that is registered but no longer served could refuse the deletions.
FIRST = {"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}


def kept(key):
    group, resource, ns, name = key.split("/", 3)
    if group == "apiextensions.k8s.io" and resource == "customresourcedefinitions":
        return name.split(".", 1)[-1].endswith("volcano.sh")
    if ns in SYSTEM_NAMESPACES and group == "" and resource in SYSTEM_KEPT:
        return True
    return False


def each(pool, fn, items):
    def run(x):
        api = pool.get()
        try:
            return fn(api, x)
        finally:
            pool.put(api)
    with concurrent.futures.ThreadPoolExecutor(THREADS) as ex:
        return list(ex.map(run, items))


def delete(api, item):
    key, (path, deleting, finalizers) = item
    resource = key.split("/")[1]
    if resource == "namespaces" and deleting:
        # Everything in it was listed and deleted in this round's earlier stages (and the next list checks), so
        # its `kubernetes` finalizer is lifted here rather than after the namespace controller's own sweep,
        # which takes seconds.
        s, ns = api.request("GET", path)
        if s == 200 and (ns.get("spec") or {}).get("finalizers"):
            ns["spec"]["finalizers"] = []
            api.request("PUT", path + "/finalize", ns)
        return
    if deleting and finalizers:
        api.request("PATCH", path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
        return
    if deleting:
        return
    body = {"propagationPolicy": "Background"}
    if resource == "pods":
        body["gracePeriodSeconds"] = 0
    s, _ = api.request("DELETE", path, body)
    if s == 200 and finalizers:
        # Its owner is stopped: nothing else will ever take the finalizer off.
        api.request("PATCH", path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")


def snapshot(path):
    pool = Pool(THREADS)
    res = resources(pool)
    objs = list_all(pool, res)
    with open(path, "w") as f:
        json.dump(sorted(objs), f)
    print("cluster_reset: baseline of %d objects in %d kinds" % (len(objs), len(res)))


def reset(path, timeout):
    base = set(json.load(open(path)))
    pool = Pool(THREADS)
    deadline = time.time() + timeout
    clean_lists = 0
    deleted = 0
    rounds = 0
    # Discovery once: the scenario that made new kinds (its own CRDs) is over, and the kinds it made are seen now.
    res = resources(pool)
    while True:
        objs = list_all(pool, res)
        left = {k: v for k, v in objs.items() if k not in base and not kept(k)}
        if not left:
            clean_lists += 1
            if clean_lists >= 2:
                break
            continue
        clean_lists = 0
        rounds += 1
        if time.time() > deadline:
            sample = sorted(left)[:20]
            sys.exit("cluster_reset: %d objects still there after %ds, e.g. %s" % (len(left), timeout, sample))
        # Webhook configurations, workloads, then everything but namespaces, then namespaces (their controller
        # finds them empty).
        kind = lambda i: i[0].split("/")[1]  # noqa: E731
        stages = [
            [i for i in left.items() if kind(i) in FIRST],
            [i for i in left.items() if kind(i) in WORKLOADS],
            [i for i in left.items() if kind(i) not in WORKLOADS | FIRST | {"namespaces"}],
            [i for i in left.items() if kind(i) == "namespaces"],
        ]
        for items in stages:
            each(pool, delete, items)
            deleted += sum(1 for _, v in items if not v[1])
        time.sleep(0.2 if rounds < 5 else 1.0)
    print("cluster_reset: clean (%d deletions, %d rounds)" % (deleted, rounds))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("snapshot", "reset"):
        sys.exit("usage: cluster_reset.py snapshot|reset <baseline-file>")
    if sys.argv[1] == "snapshot":
        snapshot(sys.argv[2])
    else:
        reset(sys.argv[2], int(os.environ.get("TEPHRA_E2E_RESET_TIMEOUT", "90")))


if __name__ == "__main__":
    main()
