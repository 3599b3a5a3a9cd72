#!/usr/bin/env python3
"""Least privilege, checked: what each role of the chart was granted against what it used.

Reads the API server's audit log (one JSON event per line, cluster.sh's policy logs every request at Metadata
level) and the release's manifest (`helm get manifest`). For each role (a ServiceAccount `<release>-<suffix>`):
  * used:    every (apiGroup, resource[/subresource], verb, namespace) the role requested;
  * granted: the rules of the ClusterRoles and Roles bound to its ServiceAccount in the manifest.
Fails when
  * a request of a role was forbidden (403), or was allowed by no rule of the chart (the role would be
    forbidden on a cluster that grants only what the chart does);
  * a granted (apiGroup, resource, verb) was never used in the run, unless the allow-list names it with a
    reason (docs/install.md, "RBAC allow-list": a table `| role | apiGroup | resource | verb | why |`);
  * a rule uses a wildcard.
usage: rbac_check.py --audit FILE --manifest FILE --release NAME --namespace NS --allow-list docs/install.md
"""
import argparse
import collections
import json
import re
import sys

import yaml

ROLES = ("controllers", "scheduler", "admission")


def load_allow_list(path):
    allowed = {}
    text = open(path).read()
    m = re.search(r"^#+\s*RBAC allow-list\s*$(.*?)(?=^#+\s|\Z)", text, re.M | re.S)
    if not m:
        sys.exit(f"rbac_check: no 'RBAC allow-list' section in {path}")
    for line in m.group(1).splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or cells[0] in ("role", "") or set(cells[0]) <= set("-: "):
            continue
        role, group, resource, verb, why = cells[:5]
        group = "" if group in ('""', "core", "(core)") else group
        if not why:
            sys.exit(f"rbac_check: allow-list entry {cells[:4]} has no reason")
        for v in verb.replace(" ", "").split(","):
            allowed[(role, group, resource, v)] = why
    return allowed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--release", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--allow-list", required=True)
    a = ap.parse_args()

    objs = [o for o in yaml.safe_load_all(open(a.manifest)) if o]
    roles_by_name = {(o["kind"], o["metadata"].get("namespace", a.namespace), o["metadata"]["name"]): o
                     for o in objs if o["kind"] in ("ClusterRole", "Role")}
    sa_user = {f"system:serviceaccount:{a.namespace}:{a.release}-{r}": r for r in ROLES}
    # grants[role] = list of (scope, group, resource, verb); scope None = cluster-wide, else a namespace.
    grants = collections.defaultdict(set)
    problems = []
    for b in objs:
        if b["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        bns = b["metadata"].get("namespace", a.namespace)
        ref = b["roleRef"]
        key = (ref["kind"], bns if ref["kind"] == "Role" else a.namespace, ref["name"])
        if ref["kind"] == "ClusterRole":
            key = ("ClusterRole", a.namespace, ref["name"])
        role_obj = roles_by_name.get(key)
        if role_obj is None:
            problems.append(f"{b['kind']} {b['metadata']['name']} refers to {ref['kind']} {ref['name']}, "
                            f"which the chart does not ship")
            continue
        scope = None if b["kind"] == "ClusterRoleBinding" else bns
        for s in b.get("subjects", []):
            user = f"system:serviceaccount:{s.get('namespace', bns)}:{s['name']}"
            if s.get("kind") != "ServiceAccount" or user not in sa_user:
                continue
            role = sa_user[user]
            for rule in role_obj.get("rules", []):
                for g in rule.get("apiGroups", [""]):
                    for res in rule.get("resources", []):
                        for v in rule.get("verbs", []):
                            if "*" in (g, res, v):
                                problems.append(f"{role}: wildcard in {role_obj['kind']} "
                                                f"{role_obj['metadata']['name']}: {g}/{res} {v}")
                            grants[role].add((scope, g, res, v))

    used = collections.defaultdict(collections.Counter)  # role -> (group, resource, verb, ns) -> count
    forbidden = []
    with open(a.audit) as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            role = sa_user.get(ev.get("user", {}).get("username", ""))
            ref = ev.get("objectRef")
            if role is None or ref is None or ev.get("stage") not in ("ResponseComplete", "ResponseStarted", "Panic"):
                continue
            res = ref.get("resource", "")
            if ref.get("subresource"):
                res += "/" + ref["subresource"]
            tup = (ref.get("apiGroup", ""), res, ev["verb"], ref.get("namespace"))
            used[role][tup] += 1
            if ev.get("responseStatus", {}).get("code") == 403:
                forbidden.append(f"{role}: {ev['verb']} {ref.get('apiGroup', '') or 'core'}/{res}"
                                 f"{' in ' + ref['namespace'] if ref.get('namespace') else ''} was forbidden")

    problems += sorted(set(forbidden))
    allow = load_allow_list(a.allow_list)
    for role in ROLES:
        if role not in grants and not used[role]:
            continue
        g = grants[role]
        for (group, res, verb, ns) in sorted(used[role], key=str):
            if (None, group, res, verb) in g or (ns is not None and (ns, group, res, verb) in g):
                continue
            problems.append(f"{role}: used {verb} {group or 'core'}/{res}"
                            f"{' in ' + ns if ns else ' (cluster scope)'} ({used[role][(group, res, verb, ns)]}x), "
                            f"which the chart does not grant")
        for (scope, group, res, verb) in sorted(g, key=str):
            hit = any(ug == group and ur == res and uv == verb and (scope is None or uns == scope)
                      for (ug, ur, uv, uns) in used[role])
            if hit or (role, group, res, verb) in allow:
                continue
            problems.append(f"{role}: granted {verb} {group or 'core'}/{res}"
                            f"{' in ' + scope if scope else ' (cluster-wide)'} but never used in this run; "
                            f"remove it from the chart or add it, with the reason, to the RBAC allow-list")
    for role in ROLES:
        print(f"{role}: {len(grants[role])} grants, {len(used[role])} distinct requests "
              f"({sum(used[role].values())} in all)")
    if problems:
        print("RBAC check failed:")
        for p in problems:
            print("  " + p)
        return 1
    print("RBAC check: every grant was used (or is allow-listed with a reason) and every request was granted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
