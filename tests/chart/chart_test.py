#!/usr/bin/env python3
"""Static checks of charts/tephra that need a YAML parser (run by chart_test.sh; no cluster).

  render   `helm template` for a matrix of values; every render parses, every object passes the basic checks
           (kinds, names, labels, namespaces, images, securityContext, probes, ports, references between
           objects, RBAC shape) and each case's own expectations hold
  schema   values.schema.json (and the templates' own checks) refuse bad values, naming the key
  webhook  the chart's webhook configurations equal `tephra webhook --print-configurations` for the flags of the
           chart's own webhook Deployment (and with --print-match-conditions for a 1.28+ API server)
  flags    each role's binary accepts the exact arguments of the chart's Deployment (run for a moment against an
           unreachable API server: a flag it does not know, or a scheduler configuration it refuses, ends it
           at once)

usage: chart_test.py --helm HELM --chart DIR --values-dir DIR --tephra BIN [--only SUBSTRING] [--part render|schema|webhook|flags]...
Prints one line per check ("ok ..." / "FAIL ..."); exits 1 when a check failed.
"""
import argparse
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import yaml

RELEASE = "tephra"
NAMESPACE = "tephra-system"
OLD_KUBE = "1.20.2"   # the e2e control plane; no matchConditions, policy/v1beta1
NEW_KUBE = "1.30.0"

ROLES = {  # component -> (suffix of its Deployment and ServiceAccount, role of the binary)
    "controller": ("controllers", "controller"),
    "scheduler": ("scheduler", "scheduler"),
    "admission": ("admission", "webhook"),
}
KNOWN_KINDS = {
    "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service",
    "ConfigMap", "Secret", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Queue",
    "PodDisruptionBudget", "ServiceMonitor", "Lease", "Issuer", "Certificate", "FlowSchema", "PriorityLevelConfiguration",
    "NetworkPolicy",
}
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration",
                  "ValidatingWebhookConfiguration", "Queue", "FlowSchema", "PriorityLevelConfiguration"}
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
IMAGE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+:[A-Za-z0-9_][A-Za-z0-9_.-]*$")
ALL_PATHS = ["/jobs/mutate", "/jobs/validate", "/queues/mutate", "/queues/validate", "/podgroups/mutate",
             "/podgroups/validate", "/pods/mutate", "/pods/validate", "/jobflows/validate",
             "/hypernodes/validate", "/cronjobs/validate"]
DEFAULT_PATHS = ["/jobs/mutate", "/jobs/validate", "/queues/mutate", "/queues/validate", "/podgroups/mutate",
                 "/pods/mutate", "/pods/validate"]

results = []  # (ok, name, detail)
CHART_DIR = [""]  # --chart, for checks that compare a render with the chart's own files


def report(ok, name, detail=""):
    results.append((ok, name, detail))
    line = ("ok   " if ok else "FAIL ") + name
    if detail and not ok:
        line += "\n       " + detail.replace("\n", "\n       ")
    print(line, flush=True)


class Checker:
    """Collects problems of one check."""

    def __init__(self):
        self.problems = []

    def expect(self, cond, msg):
        if not cond:
            self.problems.append(msg)
        return cond


# ----------------------------------------------------------------------------------------------------- helm

def helm_template(a, sets=(), files=(), kube=OLD_KUBE, namespace=NAMESPACE, release=RELEASE):
    cmd = [a.helm, "template", release, a.chart, "-n", namespace, "--kube-version", kube]
    for f in files:
        cmd += ["-f", os.path.join(a.values_dir, f)]
    for s in sets:
        cmd += ["--set-json" if s.startswith("json:") else "--set", s[5:] if s.startswith("json:") else s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def parse(text):
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    return docs


def index(objs):
    by = {}
    for o in objs:
        by.setdefault(o["kind"], {})[o["metadata"]["name"]] = o
    return by


def flag_values(args, flag):
    out = []
    for x in args:
        if x.startswith(flag + "="):
            out.append(x[len(flag) + 1:])
    return out


def flag(args, name, default=None):
    v = flag_values(args, name)
    return v[-1] if v else default


# ------------------------------------------------------------------------------------------- basic checks

def basic_checks(objs, c, namespace=NAMESPACE, release=RELEASE, default_sc=True):
    by = index(objs)
    seen = set()
    for o in objs:
        kind, meta = o.get("kind"), o.get("metadata", {})
        name = meta.get("name", "")
        key = (kind, meta.get("namespace"), name)
        c.expect(key not in seen, f"duplicate object {key}")
        seen.add(key)
        c.expect(o.get("apiVersion"), f"{kind}/{name}: no apiVersion")
        c.expect(kind in KNOWN_KINDS, f"{kind}/{name}: unexpected kind")
        c.expect(name and DNS1123.match(name) and len(name) <= 253, f"{kind}/{name}: bad name")
        if kind == "Service":
            c.expect(len(name) <= 63, f"Service/{name}: longer than 63")
        if kind in CLUSTER_SCOPED:
            c.expect("namespace" not in meta, f"{kind}/{name}: cluster-scoped object with a namespace")
        elif kind == "ConfigMap" and meta.get("labels", {}).get("app.kubernetes.io/component") == "dashboards":
            pass  # custom.grafana_dashboards_namespace may put them elsewhere (exp_dashboards checks it)
        elif kind in ("Role", "RoleBinding") and name == f"{release}-scheduler-device-info":
            # The one deliberate exception: the Ascend device plugins' ConfigMaps live in kube-system, and the
            # scheduler may read ConfigMaps there and nowhere else (docs/devices.md).
            c.expect(meta.get("namespace") == "kube-system", f"{kind}/{name}: namespace {meta.get('namespace')}")
        else:
            c.expect(meta.get("namespace") == namespace, f"{kind}/{name}: namespace {meta.get('namespace')}")
        labels = meta.get("labels") or {}
        c.expect(labels.get("app.kubernetes.io/instance") == release and
                 labels.get("app.kubernetes.io/managed-by") == "Helm" and
                 labels.get("app.kubernetes.io/name") == "tephra", f"{kind}/{name}: missing chart labels")
        for k, v in labels.items():
            c.expect(isinstance(v, str), f"{kind}/{name}: label {k} is not a string")

    sas = by.get("ServiceAccount", {})
    roles = {**{("ClusterRole", n): o for n, o in by.get("ClusterRole", {}).items()},
             **{("Role", n): o for n, o in by.get("Role", {}).items()}}
    for kind in ("ClusterRole", "Role"):
        for n, r in by.get(kind, {}).items():
            c.expect(r.get("rules"), f"{kind}/{n}: no rules")
            for rule in r.get("rules", []):
                c.expect(rule.get("verbs") and set(rule["verbs"]) <= VERBS,
                         f"{kind}/{n}: verbs {rule.get('verbs')} (no wildcards, known verbs only)")
                c.expect(rule.get("resources") and "*" not in rule["resources"], f"{kind}/{n}: resources")
                c.expect(rule.get("apiGroups") is not None and "*" not in rule["apiGroups"], f"{kind}/{n}: apiGroups")
                if "resourceNames" in rule:
                    c.expect(rule["resourceNames"], f"{kind}/{n}: empty resourceNames would grant every name")
                    c.expect("create" not in rule["verbs"] and "list" not in rule["verbs"],
                             f"{kind}/{n}: create/list cannot be limited by resourceNames")
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for n, b in by.get(kind, {}).items():
            ref = b["roleRef"]
            c.expect((ref["kind"], ref["name"]) in roles, f"{kind}/{n}: roleRef {ref} not rendered")
            if kind == "ClusterRoleBinding":
                c.expect(ref["kind"] == "ClusterRole", f"{kind}/{n}: binds a Role")
            for s in b.get("subjects", []):
                c.expect(s["kind"] == "ServiceAccount" and s["name"] in sas and s.get("namespace") == namespace,
                         f"{kind}/{n}: subject {s} is not a ServiceAccount of the chart")
    # Every Role/ClusterRole is bound.
    bound = {(b["roleRef"]["kind"], b["roleRef"]["name"]) for k in ("ClusterRoleBinding", "RoleBinding")
             for b in by.get(k, {}).values()}
    for key in roles:
        c.expect(key in bound, f"{key[0]}/{key[1]}: not bound")

    pod_labels = []
    for n, d in by.get("Deployment", {}).items():
        comp = next((k for k, (suf, _) in ROLES.items() if n == f"{release}-{suf}"), None)
        c.expect(comp, f"Deployment/{n}: not one of the chart's roles")
        if not comp:
            continue
        spec = d["spec"]
        tmpl = spec["template"]
        pod = tmpl["spec"]
        sel = spec["selector"]["matchLabels"]
        labels = tmpl["metadata"]["labels"]
        pod_labels.append((n, labels, pod))
        c.expect(sel == {"app": f"volcano-{comp}"}, f"Deployment/{n}: selector {sel} is not Volcano's")
        c.expect(all(labels.get(k) == v for k, v in sel.items()), f"Deployment/{n}: selector does not match pods")
        c.expect(isinstance(spec.get("replicas"), int) and spec["replicas"] >= 0, f"Deployment/{n}: replicas")
        c.expect(pod.get("serviceAccountName") in sas, f"Deployment/{n}: serviceAccountName not rendered")
        c.expect(pod.get("serviceAccountName") == f"{release}-{ROLES[comp][0]}", f"Deployment/{n}: SA name")
        psc = pod.get("securityContext") or {}
        c.expect(psc.get("runAsNonRoot") is True, f"Deployment/{n}: pod runAsNonRoot")
        c.expect((psc.get("seccompProfile") or {}).get("type") == "RuntimeDefault", f"Deployment/{n}: seccomp")
        if default_sc:
            c.expect(psc.get("runAsUser") == 65532 and psc.get("runAsGroup") == 65532,
                     f"Deployment/{n}: runAsUser/runAsGroup {psc.get('runAsUser')}/{psc.get('runAsGroup')}")
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        cms = by.get("ConfigMap", {})
        for v in volumes.values():
            if "configMap" in v:
                c.expect(v["configMap"]["name"] in cms, f"Deployment/{n}: volume {v['name']}: ConfigMap not rendered")
        containers = pod.get("containers", []) + pod.get("initContainers", [])
        c.expect(len(pod.get("containers", [])) == 1, f"Deployment/{n}: one container expected")
        for ctr in containers:
            cn = f"Deployment/{n}/{ctr.get('name')}"
            img = ctr.get("image") or ""
            c.expect(IMAGE.match(img), f"{cn}: image {img!r}")
            c.expect(ctr.get("imagePullPolicy") in ("Always", "IfNotPresent", "Never"), f"{cn}: imagePullPolicy")
            csc = ctr.get("securityContext") or {}
            c.expect(csc.get("readOnlyRootFilesystem") is True, f"{cn}: readOnlyRootFilesystem")
            c.expect(csc.get("allowPrivilegeEscalation") is False, f"{cn}: allowPrivilegeEscalation")
            c.expect("ALL" in ((csc.get("capabilities") or {}).get("drop") or []), f"{cn}: capabilities drop ALL")
            c.expect(csc.get("privileged") is not True, f"{cn}: privileged")
            args = ctr.get("args") or []
            c.expect(args and args[0] == ROLES[comp][1], f"{cn}: first argument {args[:1]} is not the role")
            c.expect(not ctr.get("command"), f"{cn}: command overrides the image's entry point")
            for x in args[1:]:
                c.expect(isinstance(x, str) and x.startswith("--") and ("=" in x or x in ("--help",)),
                         f"{cn}: argument {x!r} is not --flag=value")
            ports = {p["name"]: p for p in ctr.get("ports", [])}
            c.expect(len(ports) == len(ctr.get("ports", [])), f"{cn}: duplicate port names")
            health = flag(args, "--health-addr")
            c.expect(health and "health" in ports and health.endswith(f":{ports['health']['containerPort']}"),
                     f"{cn}: --health-addr {health} vs port 'health'")
            metrics = flag(args, "--metrics-addr")
            if metrics and metrics != "0":
                c.expect("metrics" in ports and metrics.endswith(f":{ports['metrics']['containerPort']}"),
                         f"{cn}: --metrics-addr {metrics} vs port 'metrics'")
            else:
                c.expect("metrics" not in ports, f"{cn}: metrics port without --metrics-addr")
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                hg = (ctr.get(probe) or {}).get("httpGet") or {}
                c.expect(hg.get("path") == path and hg.get("port") == "health", f"{cn}: {probe} {hg}")
            mounts = ctr.get("volumeMounts", [])
            for m in mounts:
                c.expect(m["name"] in volumes, f"{cn}: mount {m['name']} has no volume")
            # Read-only root: every directory a role writes to must be a writable mount.
            for f in ("--cert-dir",):
                d = flag(args, f)
                if d:
                    ok = any((d + "/").startswith(m["mountPath"].rstrip("/") + "/") and not m.get("readOnly") and
                             "emptyDir" in volumes.get(m["name"], {}) for m in mounts)
                    c.expect(ok, f"{cn}: {f}={d} is not on a writable emptyDir")
            for f in ("--tls-cert-file", "--tls-private-key-file", "--ca-cert-file", "--scheduler-conf"):
                p = flag(args, f)
                if p:
                    c.expect(any(p.startswith(m["mountPath"].rstrip("/") + "/") for m in mounts),
                             f"{cn}: {f}={p} is not under a mounted volume")
            c.expect(isinstance(ctr.get("resources", {}), dict), f"{cn}: resources")

    for n, s in by.get("Service", {}).items():
        sel = s["spec"].get("selector") or {}
        match = [p for (dn, labels, p) in pod_labels if sel and all(labels.get(k) == v for k, v in sel.items())]
        c.expect(match, f"Service/{n}: selector {sel} matches no Deployment of the chart")
        for port in s["spec"].get("ports", []):
            tp = port.get("targetPort")
            for pod in match:
                names = {p["name"]: p["containerPort"] for ctr in pod["containers"] for p in ctr.get("ports", [])}
                c.expect(tp in names or tp in names.values(), f"Service/{n}: targetPort {tp} not a container port")

    # Webhook configurations point at the chart's Service (or a URL).
    svc_name = f"{release}-admission-service"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for n, w in by.get(kind, {}).items():
            for h in w.get("webhooks", []):
                cc = h["clientConfig"]
                c.expect("caBundle" not in cc, f"{kind}/{n}: caBundle rendered by the chart")
                if "service" in cc:
                    c.expect(cc["service"]["name"] == svc_name and cc["service"]["namespace"] == namespace and
                             cc["service"]["port"] == 443 and svc_name in by.get("Service", {}),
                             f"{kind}/{n}: clientConfig.service {cc['service']}")
                    c.expect(n == f"{svc_name}-{cc['service']['path'][1:].replace('/', '-')}", f"{kind}/{n}: name")
                else:
                    c.expect(cc.get("url", "").startswith("https://"), f"{kind}/{n}: clientConfig {cc}")
                c.expect(h["timeoutSeconds"] == 5 and h["sideEffects"] == "None" and
                         h["matchPolicy"] == "Equivalent" and h["admissionReviewVersions"] == ["v1", "v1beta1"],
                         f"{kind}/{n}: timeout/sideEffects/matchPolicy/versions")
    return by


def component_objects(objs, comp, release=RELEASE):
    return [o for o in objs if (o["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == comp]


def args_of(by, comp, release=RELEASE):
    d = by.get("Deployment", {}).get(f"{release}-{ROLES[comp][0]}")
    return d["spec"]["template"]["spec"]["containers"][0]["args"] if d else None


def rules_of(by, kind, name):
    out = set()
    for r in (by.get(kind, {}).get(name) or {}).get("rules", []):
        for g in r["apiGroups"]:
            for res in r["resources"]:
                for v in r["verbs"]:
                    out.add((g, res, v, tuple(r.get("resourceNames", []))))
    return out


def grants(by, kind, name):
    return {(g, res, v) for (g, res, v, _) in rules_of(by, kind, name)}


# ------------------------------------------------------------------------------------ per-case expectations

# The scheduler's grants on storage objects: exactly what scheduler-ext uses. Informers (list, watch) on claims,
# volumes, classes and CSINodes; the binder's PreBind for WaitForFirstConsumer claims patches the claim
# (selected-node) and reads and updates the chosen volume (claimRef). Nothing on CSIDrivers or attachments.
SCHEDULER_STORAGE_GRANTS = {
    ("", "persistentvolumeclaims", "list"), ("", "persistentvolumeclaims", "watch"),
    ("", "persistentvolumeclaims", "patch"),
    ("", "persistentvolumes", "get"), ("", "persistentvolumes", "list"), ("", "persistentvolumes", "watch"),
    ("", "persistentvolumes", "update"),
    ("storage.k8s.io", "storageclasses", "list"), ("storage.k8s.io", "storageclasses", "watch"),
    ("storage.k8s.io", "csinodes", "list"), ("storage.k8s.io", "csinodes", "watch"),
}
STORAGE_RESOURCES = {"persistentvolumeclaims", "persistentvolumes", "storageclasses", "csinodes", "csidrivers",
                     "volumeattachments", "csistoragecapacities"}
# Default container resources: requests for CPU and memory, a memory limit, no CPU limit (throttling would
# stall the scheduling cycle and the webhook's answers).
DEFAULT_RESOURCES = {
    "controller": {"requests": {"cpu": "200m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
    "scheduler": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
    "admission": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
}


def webhook_ha(by, c, want):
    """The webhook's high availability when it fails closed: 2 replicas, a PDB minAvailable 1, a preferred
    anti-affinity across nodes; none of it when `want` is False."""
    d = by["Deployment"][f"{RELEASE}-admission"]
    pdb = by.get("PodDisruptionBudget", {}).get(f"{RELEASE}-admission")
    aff = d["spec"]["template"]["spec"].get("affinity") or {}
    if want:
        c.expect(d["spec"]["replicas"] == 2, f"admission: replicas {d['spec']['replicas']}, want 2 (fails closed)")
        c.expect(pdb and pdb["spec"] == {"minAvailable": 1, "selector": d["spec"]["selector"]},
                 f"admission: PDB minAvailable 1 on the Deployment's selector: {pdb and pdb['spec']}")
        pref = aff.get("podAntiAffinity", {}).get("preferredDuringSchedulingIgnoredDuringExecution", [])
        c.expect(len(pref) == 1 and pref[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname" and
                 pref[0]["podAffinityTerm"]["labelSelector"]["matchLabels"] == d["spec"]["selector"]["matchLabels"],
                 f"admission: preferred anti-affinity across nodes: {aff}")
        c.expect("requiredDuringSchedulingIgnoredDuringExecution" not in aff.get("podAntiAffinity", {}),
                 "admission: anti-affinity must be preferred (a one-node cluster runs both)")
    else:
        c.expect(pdb is None, "admission: a PDB without HA")
        c.expect("podAntiAffinity" not in aff, f"admission: anti-affinity without HA: {aff}")


def exp_defaults(by, objs, c):
    for comp, (suf, _) in ROLES.items():
        d = by["Deployment"].get(f"{RELEASE}-{suf}")
        want = 2 if comp == "admission" else 1
        c.expect(d and d["spec"]["replicas"] == want, f"{comp}: default replicas {want}")
        res = d["spec"]["template"]["spec"]["containers"][0].get("resources")
        c.expect(res == DEFAULT_RESOURCES[comp], f"{comp}: default resources {res}")
        pod = d["spec"]["template"]["spec"]
        c.expect(pod.get("priorityClassName") == "system-cluster-critical", f"{comp}: priorityClassName")
        c.expect(pod["containers"][0]["image"] == "docker.io/tephra/tephra:0.1.0",
                 f"{comp}: image {pod['containers'][0]['image']!r}")
        c.expect(pod["containers"][0]["imagePullPolicy"] == "IfNotPresent", f"{comp}: pull policy")
        for x in ("ServiceAccount", "ClusterRole", "Deployment"):
            c.expect(f"{RELEASE}-{suf}" in by.get(x, {}), f"{x} {RELEASE}-{suf} missing")
        c.expect(f"{RELEASE}-{suf}-role" in by.get("ClusterRoleBinding", {}), f"ClusterRoleBinding {RELEASE}-{suf}-role")
    for comp in ("controller", "scheduler"):
        a = args_of(by, comp)
        c.expect("--leader-elect=true" in a and f"--lock-object-namespace={NAMESPACE}" in a, f"{comp}: leader election")
        suf = ROLES[comp][0]
        c.expect(f"{RELEASE}-{suf}" in by.get("Role", {}), f"{comp}: lease Role")
        lease = rules_of(by, "Role", f"{RELEASE}-{suf}")
        lock = "vc-controller-manager" if comp == "controller" else "vc-scheduler"
        # The chart owns the Lease (no create: a stopping replica can never leave one behind an uninstall).
        c.expect(lock in by.get("Lease", {}), f"{comp}: the chart's Lease {lock}")
        c.expect(("coordination.k8s.io", "leases", "create", ()) not in lease and
                 ("coordination.k8s.io", "leases", "get", (lock,)) in lease and
                 ("coordination.k8s.io", "leases", "update", (lock,)) in lease, f"{comp}: lease rules {lease}")
        c.expect(f"{RELEASE}-{suf}-service" in by.get("Service", {}), f"{comp}: metrics Service")
        svc = by["Service"][f"{RELEASE}-{suf}-service"]
        ann = svc["metadata"].get("annotations", {})
        c.expect(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/path") == "/metrics",
                 f"{comp}: prometheus annotations")
    # Admission
    a = args_of(by, "admission")
    c.expect(f"--enabled-admission={','.join(DEFAULT_PATHS)}" in a, f"admission: --enabled-admission {a}")
    c.expect("--manage-webhook-configurations=ca-bundle" in a and "--cert-dir=/tmp/certs" in a and
             "--cert-secret-name=volcano-admission-secret" in a and f"--webhook-namespace={NAMESPACE}" in a and
             f"--webhook-service-name={RELEASE}-admission-service" in a and "--failure-policy=Fail" in a,
             f"admission: self-signed flags {a}")
    sec = by.get("Secret", {}).get("volcano-admission-secret")
    c.expect(sec and sec.get("type") == "Opaque" and not sec.get("data"), "admission: empty Opaque Secret")
    svc = by["Service"].get(f"{RELEASE}-admission-service")
    c.expect(svc and any(p["port"] == 443 and p["targetPort"] == 8443 for p in svc["spec"]["ports"]),
             "admission Service 443 -> 8443")
    secret_rules = rules_of(by, "Role", f"{RELEASE}-admission")
    c.expect(("", "secrets", "get", ("volcano-admission-secret",)) in secret_rules and
             ("", "secrets", "update", ("volcano-admission-secret",)) in secret_rules and
             not any(r[2] == "create" for r in secret_rules), "admission: Secret rules (no create)")
    names = sorted(by.get("MutatingWebhookConfiguration", {})) + sorted(by.get("ValidatingWebhookConfiguration", {}))
    want = sorted(f"{RELEASE}-admission-service-{p[1:].replace('/', '-')}" for p in DEFAULT_PATHS if p != "/pods/mutate")
    c.expect(sorted(names) == want, f"webhook configurations {names} != {want}")
    c.expect(f"{RELEASE}-admission-service-pods-mutate" not in by.get("MutatingWebhookConfiguration", {}),
             "/pods/mutate must not be registered")
    adm = rules_of(by, "ClusterRole", f"{RELEASE}-admission")
    for kind, res in (("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
                      ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations")):
        for v in ("get", "update"):
            c.expect(("admissionregistration.k8s.io", res, v, tuple(by.get(kind, {}))) in adm,
                     f"admission: {v} {res} limited to the chart's configurations")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for n, w in by.get(kind, {}).items():
            h = w["webhooks"][0]
            pods = h["rules"][0]["resources"] == ["pods"]
            c.expect(h["failurePolicy"] == ("Ignore" if kind.startswith("Mutating") or pods else "Fail"),
                     f"{n}: failurePolicy {h['failurePolicy']}")
            c.expect(h["namespaceSelector"] == {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", NAMESPACE]}]},
                f"{n}: namespaceSelector {h['namespaceSelector']}")
            c.expect("matchConditions" not in h, f"{n}: matchConditions on a 1.20 API server")
    q = by.get("Queue", {}).get("default")
    c.expect(q and q["spec"] == {"weight": 1, "reclaimable": True} and
             q["metadata"].get("annotations", {}).get("helm.sh/resource-policy") == "keep", f"default Queue {q}")
    cm = by.get("ConfigMap", {}).get(f"{RELEASE}-scheduler-configmap")
    conf = yaml.safe_load(cm["data"]["volcano-scheduler.conf"]) if cm else {}
    c.expect(conf.get("actions") == "enqueue, allocate, backfill", f"scheduler conf actions {conf.get('actions')}")
    tiers = [[p["name"] for p in t["plugins"]] for t in conf.get("tiers", [])]
    c.expect(tiers == [["priority", "gang", "conformance"],
                       ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"]], f"tiers {tiers}")
    c.expect("--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf" in args_of(by, "scheduler"), "scheduler conf flag")
    for k in ("ServiceMonitor", "Issuer", "Certificate", "FlowSchema", "NetworkPolicy"):
        c.expect(k not in by, f"{k} rendered by default")
    c.expect(sorted(by.get("PodDisruptionBudget", {})) == [f"{RELEASE}-admission"],
             f"PDBs by default: only the webhook's: {sorted(by.get('PodDisruptionBudget', {}))}")
    webhook_ha(by, c, True)
    sched = grants(by, "ClusterRole", f"{RELEASE}-scheduler")
    storage = {g for g in sched if g[1] in STORAGE_RESOURCES}
    c.expect(storage == SCHEDULER_STORAGE_GRANTS,
             f"scheduler storage grants: missing {sorted(SCHEDULER_STORAGE_GRANTS - storage)}, "
             f"extra {sorted(storage - SCHEDULER_STORAGE_GRANTS)}")
    for comp in ("controller", "admission"):
        other = grants(by, "ClusterRole", f"{RELEASE}-{ROLES[comp][0]}")
        c.expect(not any(g[1] in ("persistentvolumes", "storageclasses", "csinodes") or
                         g[1] == "persistentvolumeclaims" and g[2] == "patch" for g in other),
                 f"{comp}: the scheduler's volume-binding grants leaked: {sorted(g for g in other if g[1] in STORAGE_RESOURCES)}")
    c.expect(not dashboard_configmaps(objs), "dashboard ConfigMaps rendered by default: "
             + ", ".join(o["metadata"]["name"] for o in dashboard_configmaps(objs)))
    # Helm creates unknown kinds alphabetically: the Queue before the ValidatingWebhookConfigurations (whose
    # webhook is not running yet at install time), after the mutating ones (which fail open).
    kinds = [o["kind"] for o in objs]
    vwc = [i for i, k in enumerate(kinds) if k == "ValidatingWebhookConfiguration"]
    c.expect("Queue" in kinds and vwc and kinds.index("Queue") < min(vwc),
             f"install order: the Queue must come before the ValidatingWebhookConfigurations: {kinds}")


def exp_new_kube(by, objs, c):
    pv = by["ValidatingWebhookConfiguration"][f"{RELEASE}-admission-service-pods-validate"]["webhooks"][0]
    names = [m["name"] for m in pv.get("matchConditions", [])]
    c.expect(names == ["tephra-scheduler-pods", "tephra-jdb-annotations"], f"pods-validate matchConditions {names}")
    c.expect("['volcano']" in pv["matchConditions"][0]["expression"], "matchConditions: scheduler names")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for n, w in by[kind].items():
            if w["webhooks"][0]["rules"][0]["resources"] != ["pods"]:
                c.expect("matchConditions" not in w["webhooks"][0], f"{n}: matchConditions on a non-pod webhook")


def exp_cert_secret(by, objs, c):
    a = args_of(by, "admission")
    for f in ("--tls-cert-file=/admission.local.config/certificates/tls.crt",
              "--tls-private-key-file=/admission.local.config/certificates/tls.key",
              "--ca-cert-file=/admission.local.config/certificates/ca.crt",
              "--manage-webhook-configurations=ca-bundle"):
        c.expect(f in a, f"admission: {f} missing")
    c.expect(not flag(a, "--cert-dir") and not flag(a, "--cert-secret-name"), "admission: self-signed flags in secret mode")
    c.expect("Secret" not in by, "secret mode: the chart must not render the user's Secret")
    c.expect(f"{RELEASE}-admission" not in by.get("Role", {}), "secret mode: no Secret Role")
    pod = by["Deployment"][f"{RELEASE}-admission"]["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in pod["volumes"]}
    c.expect(vols.get("admission-certs", {}).get("secret", {}).get("secretName") == "my-tls", "secret volume name")


def exp_cert_manager(by, objs, c):
    c.expect(sorted(by.get("Issuer", {})) == [f"{RELEASE}-admission-ca", f"{RELEASE}-admission-selfsigned"],
             f"Issuers {sorted(by.get('Issuer', {}))}")
    c.expect(sorted(by.get("Certificate", {})) == [f"{RELEASE}-admission-ca", f"{RELEASE}-admission-serving"],
             f"Certificates {sorted(by.get('Certificate', {}))}")
    ca = by["Certificate"][f"{RELEASE}-admission-ca"]["spec"]
    c.expect(ca.get("isCA") is True and ca["issuerRef"]["name"] == f"{RELEASE}-admission-selfsigned", "CA Certificate")
    sv = by["Certificate"][f"{RELEASE}-admission-serving"]["spec"]
    c.expect(sv["secretName"] == "volcano-admission-secret" and sv["issuerRef"]["name"] == f"{RELEASE}-admission-ca",
             "serving Certificate")
    c.expect(f"{RELEASE}-admission-service.{NAMESPACE}.svc" in sv["dnsNames"], "serving Certificate DNS names")
    want = f"{NAMESPACE}/{RELEASE}-admission-serving"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for n, w in by[kind].items():
            c.expect(w["metadata"].get("annotations", {}).get("cert-manager.io/inject-ca-from") == want,
                     f"{n}: inject-ca-from")
    a = args_of(by, "admission")
    c.expect("--manage-webhook-configurations=false" in a and not flag(a, "--ca-cert-file"), f"admission flags {a}")
    adm = grants(by, "ClusterRole", f"{RELEASE}-admission")
    c.expect(not any(g == "admissionregistration.k8s.io" for g, _, _ in adm),
             "cert-manager mode: the webhook needs no access to its configurations")
    c.expect("Secret" not in by and f"{RELEASE}-admission" not in by.get("Role", {}), "cert-manager: no Secret/Role")


def exp_issuer_ref(by, objs, c):
    c.expect("Issuer" not in by, "issuer ref: no Issuer of the chart")
    c.expect(list(by.get("Certificate", {})) == [f"{RELEASE}-admission-serving"], "issuer ref: only the serving Certificate")
    ref = by["Certificate"][f"{RELEASE}-admission-serving"]["spec"]["issuerRef"]
    c.expect(ref == {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}, f"issuerRef {ref}")


def exp_url(by, objs, c):
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for n, w in by[kind].items():
            cc = w["webhooks"][0]["clientConfig"]
            path = "/" + n[len(f"{RELEASE}-admission-service-"):].replace("-", "/")
            c.expect(cc == {"url": f"https://webhook.example.com:9443{path}"}, f"{n}: clientConfig {cc}")
    a = args_of(by, "admission")
    c.expect("--webhook-url=https://webhook.example.com:9443" in a, f"--webhook-url in {a}")
    c.expect("--cert-host=webhook.example.com" in a, "self-signed certificate names the URL's host")


def exp_disabled(comp):
    def f(by, objs, c):
        c.expect(not component_objects(objs, comp), f"{comp} disabled but rendered: "
                 + ", ".join(f"{o['kind']}/{o['metadata']['name']}" for o in component_objects(objs, comp)))
        for other in ROLES:
            if other != comp:
                c.expect(f"{RELEASE}-{ROLES[other][0]}" in by.get("Deployment", {}), f"{other} missing")
        if comp == "admission":
            c.expect("MutatingWebhookConfiguration" not in by and "ValidatingWebhookConfiguration" not in by and
                     "Secret" not in by, "admission disabled: webhook configurations/Secret rendered")
    return f


def exp_replicas0(by, objs, c):
    for comp, (suf, _) in ROLES.items():
        c.expect(by["Deployment"][f"{RELEASE}-{suf}"]["spec"]["replicas"] == 0, f"{comp}: replicas 0")
    # An explicit admission_replicas wins over the fail-closed default, and 0 replicas get no budget (the
    # full-stack e2e runs the roles outside the cluster this way).
    c.expect("PodDisruptionBudget" not in by, "a PDB with 0 replicas")


def exp_webhook_one_replica(by, objs, c):
    # Fail closed but one replica asked for: no budget (a drain would wait for ever), no anti-affinity.
    c.expect(by["Deployment"][f"{RELEASE}-admission"]["spec"]["replicas"] == 1, "admission_replicas=1 wins")
    webhook_ha(by, c, False)


def exp_webhook_ha_own_affinity(by, objs, c):
    # Three replicas, failing closed: a budget; the user's affinity replaces the chart's anti-affinity.
    d = by["Deployment"][f"{RELEASE}-admission"]
    c.expect(d["spec"]["replicas"] == 3, "admission_replicas=3")
    c.expect(f"{RELEASE}-admission" in by.get("PodDisruptionBudget", {}), "admission PDB with 3 replicas")
    aff = d["spec"]["template"]["spec"].get("affinity")
    c.expect(aff == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "role", "operator": "In", "values": ["infra"]}]}]}}},
        f"admission_affinity replaces the chart's: {aff}")


def exp_network_policy(by, objs, c):
    nps = by.get("NetworkPolicy", {})
    c.expect(sorted(nps) == sorted(f"{RELEASE}-{s}" for s, _ in ROLES.values()), f"NetworkPolicies {sorted(nps)}")
    prom = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}},
            "podSelector": {"matchLabels": {"app": "prometheus"}}}
    metrics_port = {"controller": 8081, "scheduler": 8080, "admission": 8081}
    for comp, (suf, _) in ROLES.items():
        np = nps.get(f"{RELEASE}-{suf}")
        if not np:
            continue
        spec = np["spec"]
        dep = by["Deployment"][f"{RELEASE}-{suf}"]
        c.expect(spec["podSelector"] == dep["spec"]["selector"], f"{suf}: podSelector {spec['podSelector']}")
        c.expect(spec["policyTypes"] == ["Ingress"], f"{suf}: policyTypes {spec['policyTypes']}")
        rules = spec.get("ingress") or []
        want = [{"from": [prom], "ports": [{"port": metrics_port[comp], "protocol": "TCP"}]}]
        if comp == "admission":
            want.insert(0, {"from": [{"ipBlock": {"cidr": "10.0.0.0/24"}}, {"ipBlock": {"cidr": "fd00::/64"}}],
                            "ports": [{"port": 8443, "protocol": "TCP"}]})
        c.expect(rules == want, f"{suf}: ingress {rules}\n want {want}")
        # Nothing else inbound: every rule names its sources and ports (a rule without `from` would admit
        # every pod), and the health port is never opened (the kubelet probes from the node).
        for r in rules:
            c.expect(r.get("from") and r.get("ports"), f"{suf}: a rule open to all sources or ports: {r}")
            c.expect(all(p["port"] != 11251 for p in r.get("ports", [])), f"{suf}: the health port opened")
        # Every port the rules open is a port of the container.
        ports = {p["containerPort"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]}
        c.expect(all(p["port"] in ports for r in rules for p in r["ports"]), f"{suf}: a rule for a port the pod lacks")


def exp_network_policy_open_webhook(by, objs, c):
    np = by["NetworkPolicy"][f"{RELEASE}-admission"]["spec"]["ingress"]
    # No CIDRs: the webhook port from any source (the API server is no pod); metrics still only Prometheus.
    c.expect(np[0] == {"ports": [{"port": 8443, "protocol": "TCP"}]}, f"webhook rule {np[0]}")
    c.expect(np[1] == {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                                 "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}],
                       "ports": [{"port": 8081, "protocol": "TCP"}]}, f"metrics rule (default selectors) {np[1]}")
    ctl = by["NetworkPolicy"][f"{RELEASE}-controllers"]["spec"].get("ingress")
    c.expect(not ctl, f"controller with metrics off: no ingress at all, got {ctl}")


def exp_leader_off(by, objs, c):
    for comp in ("controller", "scheduler"):
        a = args_of(by, comp)
        c.expect("--leader-elect=false" in a and not flag(a, "--lock-object-namespace"), f"{comp}: {a}")
        c.expect(f"{RELEASE}-{ROLES[comp][0]}" not in by.get("Role", {}), f"{comp}: lease Role without election")


def exp_monitoring(api):
    def f(by, objs, c):
        sm = by.get("ServiceMonitor", {}).get(f"{RELEASE}-tephra")
        c.expect(sm and sm["spec"]["endpoints"][0]["port"] == "metrics", "ServiceMonitor")
        c.expect(sm and sm["metadata"]["labels"].get("release") == "prom", "ServiceMonitor labels")
        pdbs = by.get("PodDisruptionBudget", {})
        c.expect(sorted(pdbs) == sorted(f"{RELEASE}-{s}" for s, _ in ROLES.values()), f"PDBs {sorted(pdbs)}")
        for n, p in pdbs.items():
            c.expect(p["apiVersion"] == api and p["spec"]["minAvailable"] == 1, f"PDB {n}: {p['apiVersion']}")
            dep = by["Deployment"][n]
            c.expect(p["spec"]["selector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"], f"PDB {n} selector")
        fs = by.get("FlowSchema", {}).get(f"{RELEASE}-scheduler")
        pl = by.get("PriorityLevelConfiguration", {}).get(f"{RELEASE}-scheduler")
        c.expect(fs and pl, "flowcontrol objects")
        if fs and pl:
            subj = fs["spec"]["rules"][0]["subjects"][0]["serviceAccount"]
            c.expect(subj == {"namespace": NAMESPACE, "name": f"{RELEASE}-scheduler"}, f"FlowSchema subject {subj}")
            want = "flowcontrol.apiserver.k8s.io/v1beta1" if api == "policy/v1beta1" else "flowcontrol.apiserver.k8s.io/v1"
            c.expect(fs["apiVersion"] == want and pl["apiVersion"] == want, f"flowcontrol apiVersion {fs['apiVersion']}")
            shares = "assuredConcurrencyShares" if want.endswith("v1beta1") else "nominalConcurrencyShares"
            c.expect(shares in pl["spec"]["limited"], f"PriorityLevelConfiguration field {shares}")
    return f


def dashboard_configmaps(objs):
    return [o for o in objs if o["kind"] == "ConfigMap" and "dashboard" in o["metadata"]["name"]]


def exp_dashboards(namespace, label, value):
    """One ConfigMap per charts/tephra/dashboards/*.json, in <namespace>, labelled <label>=<value>, carrying
    the file unchanged (as JSON)."""
    def f(by, objs, c):
        folder = os.path.join(CHART_DIR[0], "dashboards")
        files = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
        c.expect(len(files) >= 6, f"only {len(files)} dashboards in {folder}")
        cms = {o["metadata"]["name"]: o for o in dashboard_configmaps(objs)}
        want = {f"{RELEASE}-dashboard-{n[:-5]}": n for n in files}
        c.expect(sorted(cms) == sorted(want), f"dashboard ConfigMaps {sorted(cms)} != {sorted(want)}")
        for name, fn in want.items():
            cm = cms.get(name)
            if not cm:
                continue
            meta = cm["metadata"]
            c.expect(meta.get("namespace") == namespace, f"{name}: namespace {meta.get('namespace')} != {namespace}")
            c.expect(meta["labels"].get(label) == value, f"{name}: label {label}={meta['labels'].get(label)!r}, want {value!r}")
            c.expect(list(cm.get("data", {})) == [fn], f"{name}: data keys {list(cm.get('data', {}))}")
            with open(os.path.join(folder, fn)) as fh:
                want_json = json.load(fh)
            try:
                got = json.loads(cm["data"][fn])
            except (KeyError, ValueError) as e:
                c.expect(False, f"{name}: data[{fn}] is not the dashboard's JSON: {e}")
                continue
            c.expect(got == want_json, f"{name}: data[{fn}] differs from charts/tephra/dashboards/{fn}")
        for k in ("Deployment", "Service"):
            c.expect(k in by, f"dashboards on: {k} objects missing (the roles must still render)")
    return f


def exp_volcano(by, objs, c):
    ctl, sch, adm = args_of(by, "controller"), args_of(by, "scheduler"), args_of(by, "admission")
    for a in (ctl, sch, adm):
        c.expect(flag_values(a, "--scheduler-name") == ["volcano", "kube-batch"], f"--scheduler-name in {a}")
    c.expect("--kube-api-qps=80" in ctl and "--kube-api-burst=160" in ctl and "--worker-threads=6" in ctl and
             "--worker-threads-for-podgroup=7" in ctl, f"controller flags {ctl}")
    c.expect("--controllers=*,-jobflow-controller" in ctl, "controller --controllers")
    c.expect("--kube-api-qps=1500" in sch and "--kube-api-burst=1600" in sch and "--schedule-period=500ms" in sch,
             f"scheduler flags {sch}")
    c.expect("--log-level=debug" in ctl and "--log-level=info" in sch and "--log-level=trace" in adm,
             "klog numbers: controller 4 -> debug, scheduler 3 -> info, admission 5 -> trace")
    c.expect("--leader-elect=false" in ctl, "leader_elect_enable: false honoured")
    c.expect(f"--enabled-admission=/jobs/mutate,/jobs/validate,/podgroups/validate,/queues/mutate,"
             f"/queues/validate,/hypernodes/validate,/cronjobs/validate" in adm, "enabled_admissions")
    for suf, comp in (("controllers", "controller"), ("scheduler", "scheduler"), ("admission", "admission")):
        d = by["Deployment"][f"{RELEASE}-{suf}"]
        pod = d["spec"]["template"]["spec"]
        ctr = pod["containers"][0]
        c.expect(ctr["image"] == f"registry.example.com/mirror/{comp}-img:v1.15.0", f"{comp} image {ctr['image']}")
        c.expect(ctr["imagePullPolicy"] == "Always", f"{comp} pull policy")
        c.expect(pod.get("imagePullSecrets") == [{"name": "regcred"}], f"{comp} imagePullSecrets")
        c.expect(pod.get("nodeSelector") == {"nodetype": "criticalservices"}, f"{comp} nodeSelector")
        c.expect(pod.get("tolerations") == [{"key": "example-key1", "operator": "Exists", "effect": "NoSchedule"}],
                 f"{comp} tolerations")
        c.expect("podAntiAffinity" in (pod.get("affinity") or {}), f"{comp} affinity")
        c.expect(d["spec"]["template"]["metadata"]["labels"].get("team") == "batch", f"{comp} common label on pods")
        c.expect(d["metadata"]["labels"].get("team") == "batch", f"{comp} common label on Deployment")
    c.expect(by["Deployment"][f"{RELEASE}-scheduler"]["spec"]["template"]["metadata"]["labels"].get("tier") == "sched",
             "scheduler_podLabels")
    c.expect(by["Deployment"][f"{RELEASE}-controllers"]["metadata"]["labels"].get("owner") == "ml-platform",
             "controller_labels")
    c.expect(by["Deployment"][f"{RELEASE}-admission"]["spec"]["template"]["spec"]["containers"][0]
             .get("resources") == {"limits": {"cpu": "300m", "memory": "300Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
             "admission_resources merged with the chart's requests")
    conf = yaml.safe_load(by["ConfigMap"][f"{RELEASE}-scheduler-configmap"]["data"]["volcano-scheduler.conf"])
    c.expect(conf["actions"] == "enqueue, allocate, backfill, reclaim", f"scheduler_config_override {conf}")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for n, w in by[kind].items():
            exprs = w["webhooks"][0]["namespaceSelector"]["matchExpressions"]
            c.expect(len(exprs) == 2 and exprs[1] == {"key": "workload-type", "operator": "In", "values": ["batch"]},
                     f"{n}: webhooks_namespace_selector_expressions {exprs}")
    svc = by["Service"][f"{RELEASE}-admission-service"]["spec"]
    c.expect(svc.get("ipFamilyPolicy") == "PreferDualStack" and svc.get("ipFamilies") == ["IPv4", "IPv6"], "service.*")
    c.expect(sorted(by.get("MutatingWebhookConfiguration", {})) ==
             sorted([f"{RELEASE}-admission-service-jobs-mutate", f"{RELEASE}-admission-service-queues-mutate"]),
             "mutating configurations")


def exp_security(by, objs, c):
    for suf in ("controllers", "scheduler", "admission"):
        pod = by["Deployment"][f"{RELEASE}-{suf}"]["spec"]["template"]["spec"]
        psc, csc = pod["securityContext"], pod["containers"][0]["securityContext"]
        c.expect(psc.get("seLinuxOptions") == {"level": "s0:c123,c456"} and psc.get("runAsUser") == 65532,
                 f"{suf}: default_sc merged over the chart's: {psc}")
        want_user = 2000 if suf == "scheduler" else None
        c.expect(csc.get("runAsUser") == want_user, f"{suf}: container runAsUser {csc.get('runAsUser')}")
        c.expect("priorityClassName" not in pod, f"{suf}: priority_class_name '' leaves none")
    sch = args_of(by, "scheduler")
    c.expect("--min-schedule-interval=50ms" in sch and sch[-1] == "--min-schedule-interval=50ms", "scheduler_extra_args")
    c.expect("--metrics-addr=0" in args_of(by, "controller"), "controller_metrics_enable=false -> --metrics-addr=0")
    c.expect(f"{RELEASE}-controllers-service" not in by.get("Service", {}), "no controller metrics Service")


def exp_all_admissions(by, objs, c):
    a = args_of(by, "admission")
    names = sorted(list(by.get("MutatingWebhookConfiguration", {})) + list(by.get("ValidatingWebhookConfiguration", {})))
    want = sorted(f"{RELEASE}-admission-service-{p[1:].replace('/', '-')}" for p in ALL_PATHS if p != "/pods/mutate")
    c.expect(names == want, f"configurations {names}")
    c.expect("--failure-policy=Ignore" in a, "--failure-policy")
    # Failing open, the webhook keeps Volcano's one replica, with no budget and no anti-affinity.
    c.expect(by["Deployment"][f"{RELEASE}-admission"]["spec"]["replicas"] == 1, "admission: 1 replica when failing open")
    webhook_ha(by, c, False)
    for n, w in by["ValidatingWebhookConfiguration"].items():
        c.expect(w["webhooks"][0]["failurePolicy"] == "Ignore", f"{n}: failurePolicy")
    sel = by["ValidatingWebhookConfiguration"][f"{RELEASE}-admission-service-jobs-validate"]["webhooks"][0]["namespaceSelector"]
    c.expect(sel["matchExpressions"][0]["values"] == ["kube-system"], f"release in kube-system: {sel}")


def exp_image_tags(by, objs, c):
    imgs = {s: by["Deployment"][f"{RELEASE}-{s}"]["spec"]["template"]["spec"]["containers"][0]["image"]
            for s in ("controllers", "scheduler", "admission")}
    c.expect(imgs == {"controllers": "docker.io/tephra/tephra:0.2.0", "scheduler": "docker.io/tephra/tephra:sched-1",
                      "admission": "docker.io/tephra/tephra:0.2.0"}, f"images {imgs}")


# (name, --set values, values files, kube version, release namespace, expectations)
CASES = [
    ("defaults", [], [], OLD_KUBE, NAMESPACE, exp_defaults),
    ("defaults-kube-1.30", [], [], NEW_KUBE, NAMESPACE, exp_new_kube),
    ("cert-mode-secret", ["custom.admission_cert_mode=secret", "basic.admission_secret_name=my-tls"], [], OLD_KUBE,
     NAMESPACE, exp_cert_secret),
    ("cert-mode-cert-manager", ["custom.admission_cert_mode=cert-manager"], [], NEW_KUBE, NAMESPACE, exp_cert_manager),
    ("cert-manager-issuer-ref", ["custom.admission_cert_mode=cert-manager",
                                 "custom.cert_manager_issuer_ref.name=corp-ca",
                                 "custom.cert_manager_issuer_ref.kind=ClusterIssuer"], [], OLD_KUBE, NAMESPACE,
     exp_issuer_ref),
    ("admission-url", ["custom.admission_url=https://webhook.example.com:9443/"], [], OLD_KUBE, NAMESPACE, exp_url),
    ("controller-disabled", ["custom.controller_enable=false"], [], OLD_KUBE, NAMESPACE, exp_disabled("controller")),
    ("scheduler-disabled", ["custom.scheduler_enable=false"], [], OLD_KUBE, NAMESPACE, exp_disabled("scheduler")),
    ("admission-disabled", ["custom.admission_enable=false"], [], OLD_KUBE, NAMESPACE, exp_disabled("admission")),
    ("replicas-0", ["custom.controller_replicas=0", "custom.scheduler_replicas=0", "custom.admission_replicas=0"], [],
     OLD_KUBE, NAMESPACE, exp_replicas0),
    ("leader-election-off", ["custom.leader_elect_enable=false"], [], OLD_KUBE, NAMESPACE, exp_leader_off),
    ("webhook-one-replica", ["custom.admission_replicas=1"], [], OLD_KUBE, NAMESPACE, exp_webhook_one_replica),
    ("webhook-ha-own-affinity", ["custom.admission_replicas=3",
                                 "json:custom.admission_affinity={\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                                 "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"role\",\"operator\":\"In\","
                                 "\"values\":[\"infra\"]}]}]}}}"], [], NEW_KUBE, NAMESPACE, exp_webhook_ha_own_affinity),
    ("network-policy", ["custom.network_policy_enable=true",
                        "json:custom.network_policy_api_server_cidrs=[\"10.0.0.0/24\",\"fd00::/64\"]",
                        "json:custom.network_policy_prometheus_namespace_selector={\"matchLabels\":"
                        "{\"kubernetes.io/metadata.name\":\"observability\"}}",
                        "json:custom.network_policy_prometheus_pod_selector={\"matchLabels\":{\"app\":\"prometheus\"}}"],
     [], NEW_KUBE, NAMESPACE, exp_network_policy),
    ("network-policy-open-webhook", ["custom.network_policy_enable=true", "custom.controller_metrics_enable=false"],
     [], OLD_KUBE, NAMESPACE, exp_network_policy_open_webhook),
    ("monitoring-kube-1.20", [], ["monitoring.yaml"], OLD_KUBE, NAMESPACE, exp_monitoring("policy/v1beta1")),
    ("monitoring-kube-1.30", [], ["monitoring.yaml"], NEW_KUBE, NAMESPACE, exp_monitoring("policy/v1")),
    ("volcano-values", [], ["volcano.yaml"], OLD_KUBE, NAMESPACE, exp_volcano),
    ("security-and-extras", [], ["security.yaml"], OLD_KUBE, NAMESPACE, exp_security),
    ("all-admissions-kube-system", ["custom.enabled_admissions=" + "\\,".join(ALL_PATHS),
                                    "custom.admission_failure_policy=Ignore"], [], OLD_KUBE, "kube-system",
     exp_all_admissions),
    ("dashboards", ["custom.grafana_dashboards_enable=true"], [], OLD_KUBE, NAMESPACE,
     exp_dashboards(NAMESPACE, "grafana_dashboard", "1")),
    # Volcano's key turns them on as well; the namespace and the sidecar's label are the user's.
    ("dashboards-metrics-enable", ["custom.metrics_enable=true", "custom.grafana_dashboards_namespace=monitoring",
                                   "custom.grafana_dashboards_label=grafana.io/dashboard",
                                   "custom.grafana_dashboards_label_value=tephra"], [], NEW_KUBE, NAMESPACE,
     exp_dashboards("monitoring", "grafana.io/dashboard", "tephra")),
    ("image-tags", ["basic.image_tag_version=0.2.0", "basic.scheduler_image_tag_version=sched-1"], [], OLD_KUBE,
     NAMESPACE, exp_image_tags),
]


def run_render(a):
    for name, sets, files, kube, ns, exp in CASES:
        if a.only and a.only not in f"render {name}" and a.only not in f"lint --strict {name}":
            continue
        rc, out, err = helm_template(a, sets, files, kube, ns)
        if rc != 0:
            report(False, f"render {name}", err.strip())
            continue
        try:
            objs = parse(out)
        except yaml.YAMLError as e:
            report(False, f"render {name}", f"output does not parse as YAML: {e}")
            continue
        c = Checker()
        try:
            by = basic_checks(objs, c, namespace=ns, default_sc=name != "security-and-extras")
            exp(by, objs, c)
        except Exception as e:  # a missing object or field: a failure of this case, not of the test
            tb = traceback.extract_tb(e.__traceback__)[-1]
            c.problems.append(f"check stopped at chart_test.py:{tb.lineno} ({tb.line}): {type(e).__name__}: {e}")
        report(not c.problems, f"render {name} ({len(objs)} objects, kube {kube})", "\n".join(c.problems[:20]))
        # helm lint of the same values (the strict lint of the defaults is in chart_test.sh)
        if sets or files:
            cmd = [a.helm, "lint", "--strict", a.chart, "--kube-version", kube, "-n", ns]
            for f in files:
                cmd += ["-f", os.path.join(a.values_dir, f)]
            for s in sets:
                cmd += ["--set-json" if s.startswith("json:") else "--set", s[5:] if s.startswith("json:") else s]
            p = subprocess.run(cmd, capture_output=True, text=True)
            report(p.returncode == 0, f"lint --strict {name}", (p.stdout + p.stderr).strip())


# ------------------------------------------------------------------------------------------------- schema

BAD = [
    # (values, what the error must name)
    (["custom.admission_cert_mode=foo"], "admission_cert_mode"),
    (["custom.controller_replicas=-1"], "controller_replicas"),
    (["custom.scheduler_replicas=1.5"], "scheduler_replicas"),
    (["custom.scheduler_log_level=verbose"], "scheduler_log_level"),
    (["custom.admission_log_level=11"], "admission_log_level"),
    (["custom.admission_failure_policy=fail"], "admission_failure_policy"),
    (["custom.enabled_admissions=/jobs/mutate\\,/pods/nope"], "enabled_admissions"),
    (["custom.controller_enable=yes"], "controller_enable"),
    (["custom.contoller_replicas=2"], "contoller_replicas"),
    (["basic.image_pull_policy=Sometimes"], "image_pull_policy"),
    (["basic.admission_port=70000"], "admission_port"),
    (["custom.metrics_enable=yes"], "metrics_enable"),
    (["custom.grafana_dashboards_enable=1"], "grafana_dashboards_enable"),
    (["custom.grafana_dashboards_label=bad key"], "grafana_dashboards_label"),
    (["custom.grafana_dashboards_namespace=Monitoring"], "grafana_dashboards_namespace"),
    (["custom.scheduler_plugins_dir=/plugins"], "scheduler_plugins_dir"),
    (["custom.admission_url=http://insecure:8443"], "admission_url"),
    (["custom.scheduler_schedule_period=1h"], "scheduler_schedule_period"),
    (["custom.controller_enabled_controllers=*\\,-gc-controller"], "controller_enabled_controllers"),
    (["custom.scheduler_name=Volcano_Scheduler"], "scheduler_name"),
    (["json:custom.default_tolerations=[{\"key\":\"a\",\"operater\":\"Exists\"}]"], "operater"),
    (["json:custom.webhooks_namespace_selector_expressions=[{\"key\":\"a\",\"operator\":\"Maybe\"}]"], "operator"),
    (["custom.cert_manager_issuer_ref.kind=Vault"], "cert_manager_issuer_ref"),
    (["custom.hypernode_controller_mode=standalone"], "hypernode_controller_mode"),
    (["custom.scheduler_config_override=actions: [enqueue"], "scheduler_config_override"),
    (["custom.scheduler_config_override=tiers: []"], "scheduler_config_override"),
    (["custom.controller_kube_api_qps=0"], "controller_kube_api_qps"),
    (["custom.admission_replicas=-1"], "admission_replicas"),
    (["custom.network_policy_enable=yes"], "network_policy_enable"),
    (["json:custom.network_policy_api_server_cidrs=[\"10.0.0.0\"]"], "network_policy_api_server_cidrs"),
    (["json:custom.network_policy_prometheus_pod_selector={\"matchLabel\":{\"a\":\"b\"}}"], "matchLabel"),
    (["json:service.ipFamilies=[\"IPv5\"]"], "ipFamilies"),
]


def run_schema(a):
    for sets, key in BAD:
        name = f"schema rejects {' '.join(s[5:] if s.startswith('json:') else s for s in sets)}"
        if a.only and a.only not in name:
            continue
        rc, out, err = helm_template(a, sets)
        ok = rc != 0 and key in err
        report(ok, name, f"rc={rc}; stderr does not name {key!r}: {err.strip()[:600]}" if not ok else "")


# ---------------------------------------------------------------------------------------- webhook drift

def normalize(cfg):
    """kind, name and the webhooks: what both the chart and the role decide (labels and annotations differ on
    purpose: Helm's vs the role's; caBundle is filled in at run time)."""
    hooks = copy.deepcopy(cfg.get("webhooks", []))
    for h in hooks:
        h.get("clientConfig", {}).pop("caBundle", None)
    return {"kind": cfg["kind"], "apiVersion": cfg["apiVersion"], "name": cfg["metadata"]["name"], "webhooks": hooks}


def diff(a, b, path=""):
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append(f"{path}.{k}: only in the binary's: {json.dumps(b[k])}")
            elif k not in b:
                out.append(f"{path}.{k}: only in the chart's: {json.dumps(a[k])}")
            else:
                out += diff(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}[{i}]")
    elif a != b:
        out.append(f"{path}: chart {json.dumps(a)} != binary {json.dumps(b)}")
    return out


DRIFT = [  # (name, --set values, values files, release namespace)
    ("defaults", [], [], NAMESPACE),
    ("admission-url", ["custom.admission_url=https://127.0.0.1:9443"], [], NAMESPACE),
    ("all-paths-ignore-names", ["custom.enabled_admissions=" + "\\,".join(ALL_PATHS),
                                "custom.admission_failure_policy=Ignore",
                                "custom.scheduler_name=volcano\\,team-a"], [], NAMESPACE),
    ("release-in-kube-system", [], [], "kube-system"),
    # Volcano's values, without the extra namespace selector expressions (the role has no such flag).
    ("volcano-values", ["custom.webhooks_namespace_selector_expressions=null"], ["volcano.yaml"], NAMESPACE),
]
PRINT_FLAGS = ("--webhook-url", "--webhook-namespace", "--webhook-service-name", "--enabled-admission",
               "--failure-policy", "--scheduler-name")


def run_webhook_drift(a):
    if a.only and not any(a.only in f"webhook drift {d[0]} (kube {k})" for d in DRIFT for k in (OLD_KUBE, NEW_KUBE)):
        return
    if not a.tephra or not os.access(a.tephra, os.X_OK):
        report(False, "webhook drift", f"no tephra binary ({a.tephra!r}); set TEPHRA_BIN")
        return
    for name, sets, files, ns in DRIFT:
        for kube, match in ((OLD_KUBE, False), (NEW_KUBE, True)):
            check = f"webhook drift {name} (kube {kube})"
            if a.only and a.only not in check:
                continue
            rc, out, err = helm_template(a, sets, files, kube, ns)
            if rc != 0:
                report(False, check, err.strip())
                continue
            by = index(parse(out))
            args = args_of(by, "admission")
            flags = [x for x in args[1:] if x.split("=", 1)[0] in PRINT_FLAGS]
            cmd = [a.tephra, "webhook", "--print-configurations"] + (["--print-match-conditions"] if match else []) + flags
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                report(False, check, f"`{' '.join(cmd)}` exited {p.returncode}: {p.stderr.strip()[:500]} "
                                     "(the binary must support --print-configurations)")
                continue
            try:
                lst = json.loads(p.stdout)
                assert lst.get("kind") == "List" and isinstance(lst.get("items"), list)
            except (ValueError, AssertionError):
                report(False, check, f"`{' '.join(cmd)}` did not print a JSON List: {p.stdout[:300]}")
                continue
            chart = {(o["kind"], o["metadata"]["name"]): normalize(o) for kind in
                     ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
                     for o in by.get(kind, {}).values()}
            binary = {(o["kind"], o["metadata"]["name"]): normalize(o) for o in lst["items"]}
            problems = []
            for k in sorted(set(chart) - set(binary)):
                problems.append(f"{k[0]} {k[1]}: rendered by the chart, not registered by the role")
            for k in sorted(set(binary) - set(chart)):
                problems.append(f"{k[0]} {k[1]}: registered by the role, missing from the chart")
            for k in sorted(set(chart) & set(binary)):
                problems += [f"{k[1]}{d}" for d in diff(chart[k], binary[k])]
            if not chart:
                problems.append("the chart rendered no webhook configuration")
            report(not problems, f"{check}: {len(chart)} configurations", "\n".join(problems[:30]))


# ------------------------------------------------------------------------------------ flags of the roles

FLAG_CASES = [("defaults", [], []), ("volcano-values", [], ["volcano.yaml"]),
              ("security-and-extras", [], ["security.yaml"]),
              ("cert-mode-secret", ["custom.admission_cert_mode=secret"], []),
              ("cert-mode-cert-manager", ["custom.admission_cert_mode=cert-manager"], []),
              ("admission-url", ["custom.admission_url=https://webhook.example.com:9443"], []),
              ("leader-election-off", ["custom.leader_elect_enable=false"], [])]


def run_flags(a):
    if a.only and not any(a.only in f"role flags {n}: tephra {r}" for n, _, _ in FLAG_CASES for _, r in ROLES.values()):
        return
    if not a.tephra or not os.access(a.tephra, os.X_OK):
        report(False, "role flags", f"no tephra binary ({a.tephra!r}); set TEPHRA_BIN")
        return
    work = tempfile.mkdtemp(prefix="tephra-chart-flags-")
    jobs = []
    for name, sets, files in FLAG_CASES:
        if a.only and a.only not in f"role flags {name}":
            continue
        rc, out, err = helm_template(a, sets, files)
        if rc != 0:
            report(False, f"role flags {name}", err.strip())
            continue
        by = index(parse(out))
        for comp, (suf, role) in ROLES.items():
            args = list(args_of(by, comp))
            # What only exists inside the pod: the listen addresses (off here, so nothing binds a port), the
            # mounted scheduler configuration (written from the rendered ConfigMap), the certificate files.
            out_args = []
            for x in args[1:]:
                f, _, v = x.partition("=")
                if f in ("--metrics-addr", "--health-addr"):
                    x = f + "=0"
                elif f == "--scheduler-conf":
                    path = os.path.join(work, f"{name}-volcano-scheduler.conf")
                    with open(path, "w") as fh:
                        fh.write(by["ConfigMap"][f"{RELEASE}-scheduler-configmap"]["data"]["volcano-scheduler.conf"])
                    x = f"{f}={path}"
                elif f == "--cert-dir":
                    x = f"{f}={os.path.join(work, name + '-certs')}"
                out_args.append(x)
            cmd = [a.tephra, role] + out_args + ["--master=http://127.0.0.1:9", "--graceful-shutdown-seconds=1"]
            jobs.append((f"role flags {name}: tephra {role}", cmd))
    # A configuration or flag error ends the process within a few hundred milliseconds (exit 2, or CLI11's
    # code); a process still running after 1.5 s accepted its arguments and is waiting for the API server.
    procs = []
    for check, cmd in jobs:
        log = tempfile.TemporaryFile()
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append((check, cmd, p, log))
    time.sleep(1.5)
    running = {id(p): p.poll() is None for _, _, p, _ in procs}
    for _, _, p, _ in procs:
        if running[id(p)]:
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.time() + 10
    for _, _, p, _ in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    shutil.rmtree(work, ignore_errors=True)
    for check, cmd, p, log in procs:
        log.seek(0)
        text = log.read().decode(errors="replace")
        log.close()
        ok = running[id(p)]
        detail = "" if ok else f"exited {p.returncode} at once: {' '.join(cmd)}\n" + \
            "\n".join(text.strip().splitlines()[-8:])
        report(ok, check, detail)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", required=True)
    ap.add_argument("--chart", required=True)
    ap.add_argument("--values-dir", required=True)
    ap.add_argument("--tephra", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--part", action="append", choices=["render", "schema", "webhook", "flags"])
    a = ap.parse_args()
    CHART_DIR[0] = a.chart
    parts = a.part or ["render", "schema", "webhook", "flags"]
    if "render" in parts:
        run_render(a)
    if "schema" in parts:
        run_schema(a)
    if "webhook" in parts:
        run_webhook_drift(a)
    if "flags" in parts:
        run_flags(a)
    failed = [r for r in results if not r[0]]
    print(f"chart_test.py: {len(results) - len(failed)} passed, {len(failed)} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
