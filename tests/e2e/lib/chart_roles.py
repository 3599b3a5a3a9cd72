#!/usr/bin/env python3
"""Turns a Deployment of the Tephra chart into the command line of a local process.

The full-stack e2e and the demo run the chart's roles as local processes (the loopback control plane has no
kubelet), but with exactly the flags the chart's Deployments carry, so the chart's configuration is what runs.
Only what cannot exist outside a pod is rewritten:
  * listen addresses (":8080", "0.0.0.0:11251") become 127.0.0.1 with a free port each;
  * a path under a ConfigMap volume mount becomes a file written from that ConfigMap's data;
  * a path under an emptyDir mount becomes a directory under --workdir;
  * --set FLAG=VALUE replaces (or adds) a flag, e.g. the webhook's --port, which must match the URL the chart
    registered.

usage: chart_roles.py --manifest FILE --deployment NAME --workdir DIR [--set FLAG=VALUE]...
prints JSON: {"serviceAccountName": ..., "args": [role, flags...], "ports": {flag: port}}
"""
import argparse
import json
import os
import re
import socket
import sys

import yaml


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--deployment", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()

    with open(a.manifest) as f:
        objs = [o for o in yaml.safe_load_all(f) if o]
    by_kind = {}
    for o in objs:
        by_kind.setdefault(o["kind"], {})[o["metadata"]["name"]] = o
    dep = by_kind.get("Deployment", {}).get(a.deployment)
    if dep is None:
        sys.exit(f"chart_roles: no Deployment {a.deployment} in {a.manifest} "
                 f"(have: {sorted(by_kind.get('Deployment', {}))})")
    pod = dep["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = list(container.get("command", [])[1:]) + list(container.get("args", []))

    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = []  # (mountPath, volume)
    for m in container.get("volumeMounts", []):
        mounts.append((m["mountPath"].rstrip("/"), volumes.get(m["name"], {})))
    os.makedirs(a.workdir, exist_ok=True)

    def local_path(value):
        for path, vol in mounts:
            if value != path and not value.startswith(path + "/"):
                continue
            rest = value[len(path):].lstrip("/")
            if "configMap" in vol:
                cm = by_kind.get("ConfigMap", {}).get(vol["configMap"]["name"])
                if cm is None:
                    sys.exit(f"chart_roles: ConfigMap {vol['configMap']['name']} is not in the release")
                d = os.path.join(a.workdir, "configmap-" + vol["configMap"]["name"])
                os.makedirs(d, exist_ok=True)
                for key, text in (cm.get("data") or {}).items():
                    with open(os.path.join(d, key), "w") as f:
                        f.write(text)
                return os.path.join(d, rest) if rest else d
            if "emptyDir" in vol:
                d = os.path.join(a.workdir, "emptydir" + path.replace("/", "-"))
                os.makedirs(d, exist_ok=True)
                return os.path.join(d, rest) if rest else d
        return value

    overrides = {}
    for s in a.set:
        flag, _, value = s.partition("=")
        overrides[flag] = value

    out, ports, seen = [], {}, set()
    i = 0
    while i < len(args):
        tok = args[i]
        if not tok.startswith("--"):
            out.append(tok)
            i += 1
            continue
        if "=" in tok:
            flag, value = tok.split("=", 1)
            i += 1
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            flag, value = tok, args[i + 1]
            i += 2
        else:
            flag, value = tok, None
            i += 1
        seen.add(flag)
        if flag in overrides:
            value = overrides[flag]
        elif value is not None and re.fullmatch(r"(0\.0\.0\.0)?:\d+", value):
            p = free_port()
            ports[flag] = p
            value = f"127.0.0.1:{p}"
        elif value is not None and value.startswith("/"):
            value = local_path(value)
        out.append(flag if value is None else f"{flag}={value}")
    for flag, value in overrides.items():
        if flag not in seen:
            out.append(f"{flag}={value}")
    print(json.dumps({"serviceAccountName": pod.get("serviceAccountName", "default"), "args": out,
                      "ports": ports}))


if __name__ == "__main__":
    main()
