#!/usr/bin/env python3
"""Checks that the API server stored every field a client sent (test helper only; the product is C++).

usage: compare_objects.py SENT.json STORED.json
  SENT.json   what the client sent: objects or Lists (e.g. `kubectl create --dry-run=client -o json -f F`)
  STORED.json what the server returns when read back, same order (e.g. `kubectl get -f F -o json`)

Every field of each sent object must be present in the stored one with an equal value. Extra stored fields
(defaults, server-set metadata) are fine. Ignored: top-level `status` (the status subresource drops it on
create, by design), server-owned metadata, and zero values absent from built-in kinds (see builtin()). Prints one line per missing/changed field; exit 1 if any.
"""
import json
import sys

SERVER_METADATA = {"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields", "selfLink"}


def load(path):
    """Objects in a file holding one JSON value, a List, or several concatenated values (kubectl prints
    multi-document input that way with --dry-run=client -o json)."""
    with open(path) as f:
        text = f.read()
    decoder, pos, out = json.JSONDecoder(), 0, []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return out
        doc, pos = decoder.raw_decode(text, pos)
        out += doc["items"] if doc.get("kind", "").endswith("List") and "items" in doc else [doc]


def builtin(obj):
    """Kubernetes' own kinds (core group, *.k8s.io). Their Go types drop zero values (`omitempty`) on output,
    so `globalDefault: false` sent is legitimately absent when read back; custom resources keep what they
    store, so for them an absent field means the schema pruned it."""
    group = obj.get("apiVersion", "").rpartition("/")[0]
    return group == "" or group.endswith(".k8s.io") or "." not in group


def is_zero(value):
    return value in (False, 0, "", None) or value == [] or value == {}


def diff(sent, stored, path, out, omitempty=False):
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            out.append(f"{path}: sent an object, stored {json.dumps(stored)[:80]}")
            return
        for key, value in sent.items():
            if path == "" and key == "status":
                continue
            if path == ".metadata" and key in SERVER_METADATA:
                continue
            sub = f"{path}.{key}"
            if key not in stored:
                if not (omitempty and is_zero(value)):
                    out.append(f"{sub}: pruned (sent {json.dumps(value)[:80]})")
            else:
                diff(value, stored[key], sub, out, omitempty)
    elif isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            out.append(f"{path}: sent {json.dumps(sent)[:80]}, stored {json.dumps(stored)[:80]}")
            return
        for i, (a, b) in enumerate(zip(sent, stored)):
            diff(a, b, f"{path}[{i}]", out, omitempty)
    elif sent != stored:  # note 1 == 1.0 in Python: JSON integer/float spelling differences are not losses
        out.append(f"{path}: sent {json.dumps(sent)}, stored {json.dumps(stored)}")


def main():
    sent = load(sys.argv[1])
    stored = load(sys.argv[2])
    problems = []
    if len(sent) != len(stored):
        problems.append(f"sent {len(sent)} objects, read back {len(stored)}")
    for a, b in zip(sent, stored):
        meta_a, meta_b = a.get("metadata", {}), b.get("metadata", {})
        # Objects sent with generateName get their name from the server.
        want = meta_a.get("name") or meta_a.get("generateName", "") + "*"
        name = f"{a.get('kind')}/{want}"
        same_name = (meta_a["name"] == meta_b.get("name")) if "name" in meta_a else \
            meta_b.get("name", "").startswith(meta_a.get("generateName", "\0"))
        if a.get("kind") != b.get("kind") or not same_name:
            problems.append(f"{name}: read back {b.get('kind')}/{meta_b.get('name')} instead")
            continue
        found = []
        diff(a, b, "", found, omitempty=builtin(a))
        problems += [f"{name} {p}" for p in found]
    for p in problems:
        print(p)
    print(f"compared {len(sent)} object(s): {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
