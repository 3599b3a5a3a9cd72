#!/usr/bin/env python3
"""Checks one role's /metrics exposition against the tables of docs/metrics.md.

usage: check_metrics.py <docs/metrics.md> <role> <scrape file> [--require-series name,...]

A role exports exactly its section's families plus the "Every role" section's (workqueue_* and reconcile_*
belong to the controller's section). Every family must have the documented type; every series must carry
exactly the documented labels (plus `le` on a histogram's _bucket). Families with no series yet are listed,
not failed, except those named with --require-series.
"""
import re
import sys

SECTIONS = {
    "scheduler": "Scheduler",
    "controller": "Controller",
    "webhook": "Webhook",
    "nodesim": "Node simulator",
}


def parse_doc(path):
    tables, current = {}, None
    for line in open(path, encoding="utf-8"):
        h = re.match(r"^## (.+?)\s*(\(|$)", line)
        if h:
            current = h.group(1).strip()
            continue
        row = re.match(r"^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|\s*(counter|gauge|histogram)\s*\|([^|]*)\|", line)
        if row and current:
            labels = sorted(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", row.group(3)))
            tables.setdefault(current, {})[row.group(1)] = (row.group(2), labels)
    return tables


def parse_scrape(path):
    types, series = {}, {}
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            types[name] = typ
            continue
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s", line)
        if not m:
            raise SystemExit(f"unparsable line: {line!r}")
        labels = tuple(sorted(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', m.group(3) or "")))
        series.setdefault(m.group(1), set()).add(labels)
    return types, series


def main():
    doc, role, scrape = sys.argv[1:4]
    required = []
    if len(sys.argv) > 5 and sys.argv[4] == "--require-series":
        required = [n for n in sys.argv[5].split(",") if n]
    tables = parse_doc(doc)
    want = dict(tables.get(SECTIONS[role], {}))
    want.update(tables.get("Every role", {}))
    if not tables.get(SECTIONS[role]):
        raise SystemExit(f"docs/metrics.md has no table for {SECTIONS[role]}")
    types, series = parse_scrape(scrape)
    errors, empty = [], []
    for name in sorted(set(types) - set(want)):
        errors.append(f"{name}: exported by {role} but not in docs/metrics.md")
    for name in sorted(set(want) - set(types)):
        errors.append(f"{name}: in docs/metrics.md for {role} but not exported")
    for name, (typ, labels) in sorted(want.items()):
        if name not in types:
            continue
        if types[name] != typ:
            errors.append(f"{name}: type {types[name]}, docs say {typ}")
        names = [name] if typ != "histogram" else [name + "_bucket", name + "_sum", name + "_count"]
        seen = False
        for n in names:
            for got in series.get(n, ()):
                seen = True
                expect = sorted(labels + (["le"] if n.endswith("_bucket") and typ == "histogram" else []))
                if sorted(got) != expect:
                    errors.append(f"{n}: labels {list(got)}, docs say {expect}")
        if not seen:
            empty.append(name)
    for name in required:
        if name in empty:
            errors.append(f"{name}: no series, but the workload should have produced some")
    print(f"{role}: {len(types)} families, {len(types) - len(empty)} with series; no series yet: "
          f"{', '.join(empty) if empty else 'none'}")
    if errors:
        for e in errors:
            print(f"  FAIL {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
