#!/usr/bin/env python3
"""Tests of check_thresholds.py on Google Benchmark JSON written here: within limits passes, a slower or
bigger result fails with exit 1, and a threshold that cannot apply (regex matching nothing, metric not
reported) is a configuration error (exit 2). Run by ctest as bench_check_thresholds_test (label unit)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_thresholds.py")

THRESHOLDS = """
area:
  cycle:
    benchmark: 'BM_Cycle/200'
    placements_per_s_min: 1000
    cpu_time_ms_max: 2.0
    peak_rss_mb_max: 10
  big:
    benchmark: 'BM_Cycle/5000'
    when: manual
    cpu_time_ms_max: 100
  note_only:
    target_ms: 5
"""


def results(cpu_ns, placements, rss, name="BM_Cycle/200"):
    return {"context": {}, "benchmarks": [
        {"name": name, "run_type": "iteration", "iterations": 10, "real_time": cpu_ns * 1.2,
         "cpu_time": cpu_ns, "time_unit": "ns", "placements_per_s": placements, "peak_rss_mb": rss},
        {"name": name + "_mean", "run_type": "aggregate", "real_time": 1e12, "cpu_time": 1e12, "time_unit": "ns"},
    ]}


def run(thresholds, res, *extra):
    with tempfile.TemporaryDirectory() as d:
        t = os.path.join(d, "t.yaml")
        r = os.path.join(d, "r.json")
        with open(t, "w") as f:
            f.write(thresholds)
        with open(r, "w") as f:
            json.dump(res, f)
        p = subprocess.run([sys.executable, CHECKER, "--thresholds", t, "--section", "area", "--results", r, *extra],
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


def expect(what, got, want, out):
    if got != want:
        print("FAIL: %s: exit %d, want %d\n%s" % (what, got, want, out))
        return False
    print("ok: %s" % what)
    return True


def main():
    ok = True
    rc, out = run(THRESHOLDS, results(1.5e6, 5000, 9))
    ok &= expect("within limits", rc, 0, out)
    ok &= expect("aggregate runs are not checked", int("BM_Cycle/200_mean" in out), 0, out)
    rc, out = run(THRESHOLDS, results(3.0e6, 5000, 9))
    ok &= expect("2x slower cpu time", rc, 1, out)
    ok &= expect("the report names the metric", int("REGRESSION: cycle: BM_Cycle/200 cpu_time_ms" not in out), 0, out)
    rc, out = run(THRESHOLDS, results(1.5e6, 500, 9))
    ok &= expect("throughput below its minimum", rc, 1, out)
    rc, out = run(THRESHOLDS, results(1.5e6, 5000, 12))
    ok &= expect("memory above its maximum", rc, 1, out)
    rc, out = run(THRESHOLDS, results(1.5e6, 5000, 9, name="BM_Renamed/200"))
    ok &= expect("benchmark renamed: regex matches nothing", rc, 2, out)
    res = results(1.5e6, 5000, 9)
    del res["benchmarks"][0]["peak_rss_mb"]
    rc, out = run(THRESHOLDS, res)
    ok &= expect("counter no longer reported", rc, 2, out)
    rc, out = run(THRESHOLDS, results(1.5e6, 5000, 9), "--manual")
    ok &= expect("--manual checks the manual entry (its run is absent here)", rc, 2, out)
    ok &= scaling_tests()
    ok &= attempt_tests()
    return 0 if ok else 1


def scaling_tests():
    """A slower machine (factor 2.5) loosens time limits and rates, never sizes."""
    sys.path.insert(0, HERE)
    import check_thresholds as ct
    import yaml
    section = yaml.safe_load(THRESHOLDS)["area"]
    runs = results(3.0e6, 500, 12)["benchmarks"][:1]
    _, problems, regressions = ct.check(section, runs, factor=2.5)
    names = sorted(r.split(" ")[2] for r in regressions)
    ok = expect("factor 2.5: cpu 3 ms <= 5 ms and 500/s >= 400/s pass; 12 MB > 10 MB still fails",
                int(names != ["peak_rss_mb"] or bool(problems)), 0, "\n".join(regressions + problems))
    _, _, regressions = ct.check(section, runs, factor=1.0)
    ok &= expect("factor 1: the same run fails on cpu, rate and memory", len(regressions), 3, "\n".join(regressions))
    ok &= expect("the calibration yardstick measures something", int(ct.calibrate() <= 0), 0, "")
    return ok


FAKE_BENCH = """
import json, sys
counter, slow_runs = sys.argv[1], int(sys.argv[2])
out = [a.split("=", 1)[1] for a in sys.argv[3:] if a.startswith("--benchmark_out=")][0]
n = int(open(counter).read()) if __import__("os").path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
cpu = 3.0e6 if n < slow_runs else 1.5e6
json.dump({"benchmarks": [{"name": "BM_Cycle/200", "run_type": "iteration", "cpu_time": cpu, "real_time": cpu,
                           "time_unit": "ns", "placements_per_s": 5000, "peak_rss_mb": 9}]}, open(out, "w"))
"""


def attempt_tests():
    """A slow first run is repeated (a noisy moment passes); a slow run every time fails."""
    ok = True
    with tempfile.TemporaryDirectory() as d:
        t = os.path.join(d, "t.yaml")
        fake = os.path.join(d, "fake_bench.py")
        with open(t, "w") as f:
            f.write(THRESHOLDS)
        with open(fake, "w") as f:
            f.write(FAKE_BENCH)
        for slow_runs, want, what in ((1, 0, "one slow attempt, then within limits"),
                                      (5, 1, "slow in all three attempts")):
            counter = os.path.join(d, "count%d" % slow_runs)
            p = subprocess.run([sys.executable, CHECKER, "--thresholds", t, "--section", "area", "--",
                                sys.executable, fake, counter, str(slow_runs)], capture_output=True, text=True)
            ok &= expect(what, p.returncode, want, p.stdout + p.stderr)
            runs = int(open(counter).read())
            ok &= expect(what + ": benchmark runs", runs, min(slow_runs + 1, 3), p.stdout + p.stderr)
    return ok


if __name__ == "__main__":
    sys.exit(main())
