#!/usr/bin/env python3
"""The scheduler series Volcano's bundled Grafana dashboards query are all in docs/metrics.md.

Volcano's dashboards must work against Tephra unchanged (docs/dashboards.md, "Volcano's own dashboards"); the
names below are the ones those dashboards' PromQL uses (histograms through their _bucket series).
usage: volcano_dashboard_names_test.py <source root>
"""
import os
import re
import sys

QUERIED = [
    "volcano_e2e_scheduling_latency_milliseconds_bucket",
    "volcano_e2e_job_scheduling_latency_milliseconds_bucket",
    "volcano_e2e_job_scheduling_duration",
    "volcano_action_scheduling_latency_milliseconds_bucket",
    "volcano_plugin_scheduling_latency_milliseconds_bucket",
    "volcano_pod_preemption_victims",
    "volcano_total_preemption_attempts",
    "volcano_queue_share",
] + [f"volcano_queue_{what}_{unit}" for what in ("allocated", "request", "deserved", "capacity", "real_capacity")
     for unit in ("milli_cpu", "memory_bytes", "scalar_resources")]
# Labels those queries group or filter by, per family.
LABELS = {"volcano_e2e_job_scheduling_duration": {"job_name", "queue", "job_namespace"},
          "volcano_queue_share": {"queue_name"}}


def main():
    doc = open(os.path.join(sys.argv[1], "docs", "metrics.md"), encoding="utf-8").read()
    rows = {}
    for m in re.finditer(r"^\|\s*`([a-z0-9_]+)`\s*\|\s*(counter|gauge|histogram)\s*\|([^|]*)\|", doc, re.M):
        rows[m.group(1)] = (m.group(2), set(re.findall(r"`([A-Za-z_]+)`", m.group(3))))
    errors = []
    for name in QUERIED:
        family = name[: -len("_bucket")] if name.endswith("_bucket") else name
        if family not in rows:
            errors.append(f"{family}: Volcano's dashboards query it, docs/metrics.md lacks it")
            continue
        if name.endswith("_bucket") and rows[family][0] != "histogram":
            errors.append(f"{family}: Volcano's dashboards read its buckets, docs/metrics.md says {rows[family][0]}")
        missing = LABELS.get(family, set()) - rows[family][1]
        if missing:
            errors.append(f"{family}: Volcano's dashboards use labels {sorted(missing)}, not in docs/metrics.md")
    print(f"{len(QUERIED)} series Volcano's dashboards query; {len(errors)} problems")
    for e in errors:
        print("FAIL", e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
