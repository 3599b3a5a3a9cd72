#!/usr/bin/env python3
"""Runs a Google Benchmark binary and fails when a result crosses its threshold in bench/thresholds.yaml.

    check_thresholds.py --thresholds bench/thresholds.yaml --section sched -- build/bench/sched/sched_bench ARGS...

The binary is run with --benchmark_out=<tmp> --benchmark_out_format=json appended; its console output is
passed through. Then every entry of the section that names a `benchmark:` (a regular expression, matched
against the run name with re.fullmatch) is checked against every run it matches:

    <metric>_min: v    the run's <metric> must be >= v
    <metric>_max: v    the run's <metric> must be <= v

<metric> is a user counter of the run (e.g. placements_per_s, cycle_p99_ms, peak_rss_mb) or one of
real_time_ms / cpu_time_ms (the per-iteration times, converted from the run's time_unit). Other keys are
documentation (targets measured by hand, full-size shapes that CI does not run) and are listed, not
checked. A checked entry that matches no run, or a metric a matched run does not report, is an error too:
a threshold that can silently stop applying is worth nothing.

Shared 2-vCPU machines differ in speed, and one machine's speed drifts from minute to minute (noisy
neighbours; no steal time is reported). Two things keep a slower moment from failing a build while a real
regression still fails:

  * Calibration. A top-level `calibration: {reference_cpu_ms: R}` in the thresholds file is the CPU time
    of calibrate() below on the machine the limits were set on. Before each attempt the checker measures
    it (best of three) and scales every time-based limit (cpu_time_ms, real_time_ms, any *_ms metric, and
    *_per_s / items_per_second rates) by factor = max(1, measured / R): a slower machine gets
    proportionally looser limits, a faster one keeps them as written. Sizes and counts are never scaled.
  * Attempts. A run with regressions is repeated up to --attempts times (default 3); the check passes when
    one attempt is within every limit. A regression that is real shows in every attempt.

Exit status: 0 all within thresholds, 1 a regression, 2 a usage/configuration error or the benchmark failed.
Also usable without running anything: --results FILE checks an existing JSON output (the self-test does).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import yaml

TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def metric(run, name):
    if name in ("real_time_ms", "cpu_time_ms"):
        unit = TO_MS.get(run.get("time_unit", "ns"))
        if unit is None:
            return None
        return run[name[:-3]] * unit
    v = run.get(name)
    return v if isinstance(v, (int, float)) else None


def calibrate():
    """CPU milliseconds of a fixed mix of hashing, allocation and sorting: a machine-speed yardstick."""
    t0 = time.process_time()
    d = {}
    for i in range(200000):
        d["k%d" % (i * 7919 % 200003)] = i
    total = 0
    for k in sorted(d):
        total += d[k] & 7
    return (time.process_time() - t0) * 1000.0


def machine_factor(reference_ms, samples=3):
    """max(1, best-of-`samples` calibration / reference); 1 when no reference is configured."""
    if not reference_ms:
        return 1.0, None
    best = min(calibrate() for _ in range(samples))
    return max(1.0, best / float(reference_ms)), best


def time_based(name):
    return name in ("cpu_time_ms", "real_time_ms") or name.endswith("_ms") or name.endswith("per_s") or \
        name.endswith("per_second")


def check(section, runs, manual=False, factor=1.0):
    """Returns (rows, problems, regressions): rows are printable lines. Time-based limits are scaled by
    `factor` (>= 1: looser on a slower machine)."""
    rows, problems, regressions = [], [], []
    for entry_name, entry in section.items():
        if not isinstance(entry, dict):
            continue
        pattern = entry.get("benchmark")
        limits = {k: v for k, v in entry.items() if k.endswith("_min") or k.endswith("_max")}
        if pattern is None or (entry.get("when") == "manual" and not manual):
            why = "no `benchmark:`" if pattern is None else "when: manual; use --manual"
            rows.append("  %-28s not checked (%s): %s" % (entry_name, why, ", ".join(sorted(limits)) or "-"))
            continue
        matched = [r for r in runs if re.fullmatch(pattern, r["name"])]
        if not matched:
            problems.append("%s: benchmark %r matched no run (names: %s)" %
                            (entry_name, pattern, ", ".join(r["name"] for r in runs)))
            continue
        for r in matched:
            for key, limit in sorted(limits.items()):
                name, kind = key.rsplit("_", 1)
                if factor != 1.0 and time_based(name):
                    limit = limit * factor if kind == "max" else limit / factor
                v = metric(r, name)
                if v is None:
                    problems.append("%s: run %s reports no %r" % (entry_name, r["name"], name))
                    continue
                bad = v < limit if kind == "min" else v > limit
                rows.append("  %-28s %-44s %-22s %12.4g %s %-10g %s" %
                            (entry_name, r["name"], name, v, ">=" if kind == "min" else "<=", limit,
                             "REGRESSION" if bad else "ok"))
                if bad:
                    regressions.append("%s: %s %s = %g, limit %s %g" %
                                       (entry_name, r["name"], name, v, ">=" if kind == "min" else "<=", limit))
    return rows, problems, regressions


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--thresholds", required=True)
    ap.add_argument("--section", required=True)
    ap.add_argument("--results", help="check this Google Benchmark JSON instead of running a binary")
    ap.add_argument("--manual", action="store_true", help="also check entries marked `when: manual`")
    ap.add_argument("--attempts", type=int, default=3,
                    help="runs of the benchmark before a regression fails the check (default 3)")
    ap.add_argument("cmd", nargs="*")
    a = ap.parse_args()
    with open(a.thresholds) as f:
        doc = yaml.safe_load(f)
    section = (doc or {}).get(a.section)
    if not isinstance(section, dict):
        print("check_thresholds: no section %r in %s" % (a.section, a.thresholds), file=sys.stderr)
        return 2
    reference = (doc.get("calibration") or {}).get("reference_cpu_ms") if isinstance(doc, dict) else None
    attempts = 1 if a.results else max(1, a.attempts)
    for attempt in range(1, attempts + 1):
        factor, measured = machine_factor(reference) if not a.results else (1.0, None)
        if a.results:
            path = a.results
        else:
            if not a.cmd:
                print("check_thresholds: give a benchmark command after --, or --results", file=sys.stderr)
                return 2
            fd, path = tempfile.mkstemp(suffix=".json")
            os.close(fd)
            rc = subprocess.call(a.cmd + ["--benchmark_out=" + path, "--benchmark_out_format=json"])
            if rc != 0:
                print("check_thresholds: %s exited %d" % (a.cmd[0], rc), file=sys.stderr)
                return 2
        with open(path) as f:
            runs = [r for r in json.load(f).get("benchmarks", []) if r.get("run_type", "iteration") == "iteration"]
        if not a.results:
            os.unlink(path)
        rows, problems, regressions = check(section, runs, a.manual, factor)
        speed = "" if measured is None else \
            "; calibration %.0f ms vs reference %g ms: time limits x%.2f" % (measured, reference, factor)
        print("thresholds (%s, section %s; attempt %d of %d%s):" % (a.thresholds, a.section, attempt, attempts, speed))
        for r in rows:
            print(r)
        for p in problems:
            print("check_thresholds: error: " + p, file=sys.stderr)
        if problems:
            return 2
        if not regressions:
            return 0
        for r in regressions:
            print("check_thresholds: REGRESSION: %s (attempt %d of %d)" % (r, attempt, attempts), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
