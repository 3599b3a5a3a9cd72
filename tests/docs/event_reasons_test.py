#!/usr/bin/env python3
"""Every Event reason the sources emit is in docs/events.md, and every reason there is emitted somewhere.

Reasons are an interface (alerts, `kubectl get events --field-selector reason=...`, vcctl's views): this
keeps a rename from slipping through without the docs, and the docs from listing reasons nothing emits.
usage: event_reasons_test.py <source root>
"""
import glob
import os
import re
import sys

# The shapes an Event reason takes in the sources: a type then a reason literal, a recorder call, an event
# record's designated initialiser, the fault plan's JobEvent, the CronJob plan's {warning, reason, ...}.
PATTERNS = [
    r'"(?:Normal|Warning)",\s*"([A-Z][A-Za-z]+)"',
    r'kEventType(?:Normal|Warning)\),\s*"([A-Z][A-Za-z]+)"',
    r'(?:push_back|events_?\(|Event)\(\{(?:true|false),\s*"([A-Z][A-Za-z]+)"',
    r'\.reason = "([A-Z][A-Za-z]+)"',
    r'JobEvent\([^;]*?,\s*"([A-Z][A-Za-z]+)"',
    r'EventType::k(?:Normal|Warning),\s*"([A-Z][A-Za-z]+)"',
    r'\bWarn\([^;]*?,\s*"([A-Z][A-Za-z]+)"',
    r'"Reserved"',
]
# Reasons made at run time: the scheduler's PodGroup condition types and the queue controller's actions.
DYNAMIC = {"Unschedulable", "Scheduled", "OpenQueue", "CloseQueue"}


def emitted(root):
    found = {}
    files = []
    for d in ("reconcilers", "scheduler-ext/src", "core/sched/src", "webhooks/src", "controller/kube/src"):
        files += glob.glob(os.path.join(root, d, "**", "*.cc"), recursive=True)
    for f in files:
        if f.endswith("_test.cc"):
            continue
        s = open(f, encoding="utf-8").read()
        for p in PATTERNS:
            for m in re.finditer(p, s, re.S):
                reason = m.group(1) if m.groups() else m.group(0).strip('"')
                found.setdefault(reason, set()).add(os.path.relpath(f, root))
    return found


def documented(root):
    names = set()
    for line in open(os.path.join(root, "docs", "events.md"), encoding="utf-8"):
        if line.startswith("| `"):
            first = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Za-z]+)`", first))
    return names


def main():
    root = sys.argv[1]
    found, docs = emitted(root), documented(root)
    errors = []
    for r in sorted(set(found) - docs):
        errors.append(f"reason {r} (in {', '.join(sorted(found[r]))}) is not in docs/events.md")
    for r in sorted(docs - set(found) - DYNAMIC):
        errors.append(f"docs/events.md lists {r}, which no source emits")
    print(f"{len(found)} reasons in the sources, {len(docs)} in docs/events.md")
    for e in errors:
        print("FAIL", e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
