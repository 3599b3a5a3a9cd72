#!/usr/bin/env python3
"""Runs every query of the chart's Grafana dashboards against a live Prometheus (prometheus_test.sh).

For every panel target of every charts/tephra/dashboards/*.json, and every template variable's
label_values() query, the expression is evaluated with /api/v1/query after substituting Grafana's variables:
  $queue, $node, $namespace, ... (the dashboard's own, always inside a `=~` matcher)  -> .*
  $__rate_interval, $__interval                                                     -> 1m
  $__range                                                                           -> 10m
and the result must hold at least one series. Prints a table panel -> series count and writes it to
<out>/dashboards.tsv and <out>/dashboards.json. An empty panel is named with its dashboard, panel and
expression, and with why: for each metric it selects, whether Prometheus holds any series of it, and if not
whether any C++ source under the checkout names it at all (a metric of docs/metrics.md not implemented yet)
or the workload simply did not produce it.

usage: check_dashboards.py --prometheus http://127.0.0.1:PORT --dashboards DIR --source DIR --out DIR
Exit 0 when every query returned data, 1 otherwise.
"""
import argparse
import glob
import json
import os
import re
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "chart"))
import dashboards_lint  # noqa: E402  (metric_names, resolve, load_metrics)

SUBST = {"__rate_interval": "1m", "__interval": "1m", "__range": "10m", "__range_s": "600", "__range_ms": "600000"}
VAR = re.compile(r"\$(?:\{([a-zA-Z0-9_]+)(?::[a-zA-Z]+)?\}|([a-zA-Z0-9_]+))")
CODE_DIRS = ("core", "scheduler-ext", "controller", "reconcilers", "webhooks", "nodesim", "cmd")


def substitute(expr):
    def rep(m):
        v = m.group(1) or m.group(2)
        return SUBST.get(v, ".*")
    return VAR.sub(rep, expr)


def query(base, expr):
    url = base.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        try:
            body = json.load(e)
        except ValueError:
            return None, f"HTTP {e.code}"
    except (OSError, ValueError) as e:
        return None, str(e)
    if body.get("status") != "success":
        return None, f"{body.get('errorType')}: {body.get('error')}"
    data = body["data"]
    if data["resultType"] in ("vector", "matrix"):
        return len(data["result"]), ""
    return 1, ""  # scalar or string: a value


class Explainer:
    def __init__(self, base, source, metrics):
        self.base, self.source, self.metrics = base, source, metrics
        self.cache = {}

    def in_code(self, name):
        """Whether a C++ source names the metric: as one string literal, or as a prefix literal ending in `_`
        and a suffix literal starting with `_` in the same file ("volcano_queue_" + what + "_milli_cpu")."""
        if not hasattr(self, "_literals"):
            self._literals = []
            for d in CODE_DIRS:
                for root, _, files in os.walk(os.path.join(self.source, d)):
                    for fn in files:
                        if fn.endswith((".cc", ".h")):
                            with open(os.path.join(root, fn), errors="replace") as f:
                                self._literals.append(set(re.findall(r'"([a-zA-Z0-9_:]+)"', f.read())))
        for lits in self._literals:
            if name in lits:
                return True
            pre = [x for x in lits if x.endswith("_") and len(x) >= 8 and name.startswith(x)]
            if pre and any(x.startswith("_") and name.endswith(x) and len(p) + len(x) <= len(name)
                           for x in lits for p in pre):
                return True
        return False

    def series(self, sel):
        n, _ = query(self.base, f"count({sel})")
        return n or 0

    def why(self, expr):
        """One line per metric the expression selects: has series, or why not."""
        out = []
        for n in dict.fromkeys(dashboards_lint.metric_names(expr)):
            base, _ = dashboards_lint.resolve(n, self.metrics)
            key = n
            if key not in self.cache:
                if self.series(n):
                    self.cache[key] = ("present", f"{n}: has series")
                elif not self.in_code(base or n):
                    self.cache[key] = ("unimplemented", f"{n}: no series; no C++ source names {base or n} yet "
                                                        "(in docs/metrics.md, not implemented)")
                else:
                    self.cache[key] = ("not-produced", f"{n}: no series, though the code names it: the workload "
                                                       "did not produce it (or its role is not scraped)")
            out.append(self.cache[key])
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--dashboards", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--metrics", default="")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    metrics = dashboards_lint.load_metrics(a.metrics or os.path.join(a.source, "docs", "metrics.md"))
    ex = Explainer(a.prometheus, a.source, metrics)
    rows = []
    for path in sorted(glob.glob(os.path.join(a.dashboards, "*.json"))):
        with open(path) as f:
            d = json.load(f)
        dash = d["uid"]
        for v in d.get("templating", {}).get("list", []):
            if v.get("type") != "query":
                continue
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.fullmatch(r"\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*", q)
            expr = f"group by ({m.group(2)}) ({m.group(1)})" if m else q
            rows.append({"dashboard": dash, "panel": f"${v['name']}", "title": "template variable", "ref": "-",
                         "expr": q, "why_expr": expr, "query": substitute(expr)})
        stack = list(d.get("panels", []))
        while stack:
            p = stack.pop(0)
            if p.get("type") == "row":
                stack[0:0] = p.get("panels") or []
                continue
            for t in p.get("targets", []):
                rows.append({"dashboard": dash, "panel": str(p["id"]), "title": p.get("title", ""),
                             "ref": t.get("refId", "?"), "expr": t.get("expr", ""), "query": substitute(t.get("expr", ""))})
    for r in rows:
        n, err = query(a.prometheus, r["query"])
        r["series"] = n if n is not None else -1
        r["error"] = err
        r["ok"] = bool(n)
        if not r["ok"]:
            r["why"] = [w for _, w in ex.why(r.get("why_expr", r["expr"]))]

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "dashboards.json"), "w") as f:
        json.dump(rows, f, indent=1)
    wd = max(len(r["dashboard"]) for r in rows)
    wt = min(48, max(len(r["title"]) for r in rows))
    lines = [f"{'dashboard':<{wd}}  {'panel':>10}  {'title':<{wt}}  ref  series  status"]
    for r in rows:
        status = "ok" if r["ok"] else ("ERROR " + r["error"] if r["error"] else "EMPTY")
        lines.append(f"{r['dashboard']:<{wd}}  {r['panel']:>10}  {r['title'][:wt]:<{wt}}  {r['ref']:<3}  "
                     f"{r['series']:>6}  {status}")
    table = "\n".join(lines)
    with open(os.path.join(a.out, "dashboards.tsv"), "w") as f:
        f.write("dashboard\tpanel\ttitle\tref\tseries\tstatus\texpr\n")
        for r in rows:
            f.write("\t".join([r["dashboard"], r["panel"], r["title"], r["ref"], str(r["series"]),
                               "ok" if r["ok"] else (r["error"] or "empty"), r["expr"]]) + "\n")
    print(table)
    bad = [r for r in rows if not r["ok"]]
    print(f"\n{len(rows) - len(bad)}/{len(rows)} queries returned data "
          f"({len({(r['dashboard'], r['panel']) for r in rows})} panels and variables in "
          f"{len({r['dashboard'] for r in rows})} dashboards)")
    if bad:
        unimpl = sorted({w.split(":")[0] for r in bad for w in r["why"] if "not implemented" in w})
        print(f"\nFAIL: {len(bad)} queries returned no data:")
        for r in bad:
            print(f"  {r['dashboard']} panel {r['panel']} {r['title']!r} target {r['ref']}: "
                  f"{r['error'] or 'empty result'}\n    expr: {r['expr']}")
            for w in r["why"]:
                print(f"    - {w}")
        if unimpl:
            print(f"\nMetrics of docs/metrics.md that no C++ source names yet ({len(unimpl)}): {', '.join(unimpl)}")
        produced = sorted({w.split(":")[0] for r in bad for w in r["why"] if "did not produce" in w})
        if produced:
            print(f"Metrics the code has but the run produced no series of ({len(produced)}): {', '.join(produced)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
