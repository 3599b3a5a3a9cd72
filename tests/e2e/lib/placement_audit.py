#!/usr/bin/env python3
"""Placement audit for e2e suites (issue 40): every live bound pod against its node, on the real control plane.

Reads one JSON object holding Nodes and Pods (`kubectl get nodes,pods -A -o json`, a List) from a file or stdin,
and checks each pod that has spec.nodeName, is not Succeeded or Failed, and was scheduled by one of
--scheduler-names (default: volcano, the name Tephra answers to):
  - the node exists;
  - spec.nodeSelector: every label, with the same value;
  - required node affinity: one of the ORed nodeSelectorTerms (In, NotIn, Exists, DoesNotExist, Gt, Lt, and
    matchFields on metadata.name);
  - NoSchedule/NoExecute taints: each tolerated (taints whose key is in --ignore-taint are skipped: an e2e
    that taints a node after binding, on purpose, names them);
  - resources: the summed requests of the node's live pods (per pod: the larger of the containers' sum and
    the largest init container, plus spec.overhead) within status.allocatable, for every resource a pod asks.
Selectors and taints are IgnoredDuringExecution in Kubernetes: a suite that relabels or taints a node after
pods are bound must say so (--ignore-taint) or audit before. Prints one line per violation and exits 1 when
there is any; prints a one-line summary either way.
A suite that shrinks a node's allocatable after binding (a card lost on purpose) names it: --ignore-resource
nvidia.com/gpu@node-3.
usage: kubectl get nodes,pods -A -o json | placement_audit.py [--scheduler-names volcano,...] [--ignore-taint k]
       [--ignore-resource RESOURCE[@NODE]]
"""
import argparse
import json
import re
import sys
from decimal import Decimal

SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
          "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
          "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def quantity(s):
    """A Kubernetes quantity as a Decimal in base units (cpu in cores, memory in bytes)."""
    s = str(s).strip()
    m = re.fullmatch(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([A-Za-z]*)", s)
    if not m or m.group(2) not in SUFFIX:
        raise ValueError("not a quantity: %r" % s)
    return Decimal(m.group(1)) * Decimal(SUFFIX[m.group(2)])


def pod_requests(spec):
    """kube-scheduler's request of a pod: max(sum of containers, each init container) per resource, + overhead."""
    total = {}
    for c in spec.get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = total.get(k, 0) + quantity(v)
    for c in spec.get("initContainers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = max(total.get(k, 0), quantity(v))
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, 0) + quantity(v)
    return total


def requirement_matches(req, labels):
    key, op, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, IndexError, ValueError):
            return False
        return have > want if op == "Gt" else have < want
    return False  # an operator Kubernetes does not define matches nothing


def term_matches(term, node):
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False  # a term without requirements matches nothing
    labels = node["metadata"].get("labels") or {}
    name_field = {"metadata.name": node["metadata"]["name"]}
    return all(requirement_matches(r, labels) for r in exprs) and all(requirement_matches(r, name_field) for r in fields)


def tolerates(tol, taint):
    if tol.get("effect") and tol["effect"] != taint.get("effect"):
        return False
    if tol.get("operator") == "Exists":
        return not tol.get("key") or tol["key"] == taint.get("key")
    return tol.get("key") == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or "")


def audit(objs, scheduler_names, ignore_taints, ignore_resources=()):
    nodes = {o["metadata"]["name"]: o for o in objs if o.get("kind") == "Node"}
    pods = [o for o in objs if o.get("kind") == "Pod"]
    live = [p for p in pods if p["spec"].get("nodeName") and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
    bad, checked, used = [], 0, {}
    for p in live:
        node_name = p["spec"]["nodeName"]
        for k, v in pod_requests(p["spec"]).items():
            used.setdefault(node_name, {}).setdefault(k, [0, []])
            used[node_name][k][0] += v
            used[node_name][k][1].append(p)
    for p in live:
        if p["spec"].get("schedulerName", "default-scheduler") not in scheduler_names:
            continue
        checked += 1
        key = "%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
        node_name = p["spec"]["nodeName"]
        node = nodes.get(node_name)
        if node is None:
            bad.append("%s: bound to node %s, which does not exist" % (key, node_name))
            continue
        labels = node["metadata"].get("labels") or {}
        for k, v in (p["spec"].get("nodeSelector") or {}).items():
            if labels.get(k) != v:
                bad.append("%s: nodeSelector %s=%s, node %s has %s" % (key, k, v, node_name,
                                                                     "%s=%s" % (k, labels[k]) if k in labels else "no such label"))
        required = (((p["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
        if required is not None and not any(term_matches(t, node) for t in required):
            bad.append("%s: required node affinity not met by node %s" % (key, node_name))
        for taint in node["spec"].get("taints") or []:
            if taint.get("effect") not in ("NoSchedule", "NoExecute") or taint.get("key") in ignore_taints:
                continue
            if not any(tolerates(t, taint) for t in p["spec"].get("tolerations") or []):
                bad.append("%s: node %s has taint %s=%s:%s, not tolerated" % (key, node_name, taint.get("key"),
                                                                             taint.get("value", ""), taint.get("effect")))
    for node_name, per in used.items():
        node = nodes.get(node_name)
        if node is None:
            continue
        alloc = node.get("status", {}).get("allocatable") or {}
        for k, (total, holders) in per.items():
            if k in ignore_resources or "%s@%s" % (k, node_name) in ignore_resources:
                continue
            if k not in alloc:
                if total > 0:
                    bad.append("node %s: pods request %s %s, which it does not offer (%s)" %
                               (node_name, total, k, ", ".join(h["metadata"]["name"] for h in holders)))
                continue
            if total > quantity(alloc[k]):
                bad.append("node %s: pods request %s of %s, allocatable %s (%s)" %
                           (node_name, total, k, alloc[k], ", ".join(h["metadata"]["name"] for h in holders)))
    return bad, checked, len(nodes)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", help="the JSON List (default: stdin)")
    ap.add_argument("--scheduler-names", default="volcano")
    ap.add_argument("--ignore-taint", action="append", default=[])
    ap.add_argument("--ignore-resource", action="append", default=[],
                    help="RESOURCE or RESOURCE@NODE: a resource the suite shrank on purpose after binding (a lost card)")
    a = ap.parse_args()
    data = json.load(open(a.file) if a.file else sys.stdin)
    objs = data.get("items", [data]) if isinstance(data, dict) else data
    bad, checked, nodes = audit(objs, set(a.scheduler_names.split(",")), set(a.ignore_taint), set(a.ignore_resource))
    for b in bad:
        print("placement audit: " + b)
    print("placement audit: %d bound pod(s) on %d node(s) checked, %d violation(s)" % (checked, nodes, len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
