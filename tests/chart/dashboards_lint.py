#!/usr/bin/env python3
"""Lint of the chart's Grafana dashboards (ctest dashboards_lint, label unit; no cluster, no network).

Every charts/tephra/dashboards/*.json must:
  * parse as JSON and carry the keys Grafana needs (uid, title, schemaVersion, panels, templating, time);
  * have a `tephra-` uid of at most 40 characters, unique over all the files, and a unique title;
  * declare the `datasource` template variable (type datasource, query prometheus), and use no other
    datasource anywhere: every `datasource` in the file is {"type": "prometheus", "uid": "${datasource}"};
  * have unique panel ids (rows' nested panels included), gridPos inside the 24 columns, and every panel
    other than a row at least one target, each with a refId (unique in the panel) and a non-empty `expr`;
  * query only metric names of docs/metrics.md's tables (first column, in backticks); a histogram only
    through `_bucket`, `_sum` or `_count`; rate()/increase()/irate() only over counters and histogram series;
  * use only template variables it defines (plus Grafana's `$__rate_interval`, `$__interval`, `$__range`, ...),
    and its own only inside a `=~"..."` matcher (multi-value and All expand to regular expressions).

Template variable queries (`label_values(<metric>, <label>)`) are checked like panel expressions.
The e2e tests/e2e/observability/prometheus_test.sh runs every expression against a real Prometheus.

usage: dashboards_lint.py [--dashboards DIR] [--metrics docs/metrics.md]
Prints one line per problem, naming the file, the panel (id and title) and the expression; exits 1 on any.
"""
import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
DATASOURCE_UIDS = {"${datasource}", "$datasource"}
GRAFANA_VARS = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms",
                "__from", "__to", "__dashboard", "__name", "__org", "__user", "__all"}
# PromQL words that look like identifiers but are no metric names.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or",
            "unless", "atan2", "inf", "nan", "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
            "count_values", "bottomk", "topk", "quantile", "start", "end"}
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
IDENT = re.compile(r"(?<![\w.:$])([a-zA-Z_:][a-zA-Z0-9_:]*)")
VAR = re.compile(r"\$(?:\{([a-zA-Z0-9_]+)(?::[a-zA-Z]+)?\}|([a-zA-Z0-9_]+))")
RATE_FUNCS = ("rate", "irate", "increase")


def load_metrics(path):
    """name -> type, from the markdown tables whose first column is a backticked metric name."""
    out = {}
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 2 or not line.lstrip().startswith("|"):
                continue
            m = re.fullmatch(r"`([a-zA-Z_:][a-zA-Z0-9_:]*)`", cells[0])
            if m:
                out[m.group(1)] = cells[1]
    return out


def strip_strings(expr):
    return re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)


def metric_names(expr):
    """Metric names an expression selects (label names, functions, keywords and durations left out)."""
    e = strip_strings(expr)
    e = re.sub(r"\{[^{}]*\}", " ", e)        # label matchers
    e = re.sub(r"\[[^\[\]]*\]", " ", e)      # ranges and subqueries' durations
    e = GROUPING.sub(" ", e)                  # by (...), on (...), group_left (...)
    e = re.sub(r"\boffset\s+-?\S+", " ", e)
    names = []
    for m in IDENT.finditer(e):
        word = m.group(1)
        rest = e[m.end():].lstrip()
        if rest.startswith("("):             # a function call
            continue
        if word.lower() in KEYWORDS:
            continue
        names.append(word)
    return names


def call_args(expr, func):
    """The argument text of every call of `func` in expr (strings blanked)."""
    e = strip_strings(expr)
    out = []
    for m in re.finditer(r"\b%s\s*\(" % func, e):
        depth, i = 1, m.end()
        while i < len(e) and depth:
            depth += {"(": 1, ")": -1}.get(e[i], 0)
            i += 1
        out.append(e[m.end():i - 1])
    return out


def resolve(name, metrics):
    """(base name, type) of a selected series name, or (None, why)."""
    if name in metrics:
        t = metrics[name]
        if t == "histogram":
            return None, f"histogram `{name}` has no series of its own: use {name}_bucket, _sum or _count"
        return name, t
    for suf in ("_bucket", "_sum", "_count"):
        if name.endswith(suf) and metrics.get(name[:-len(suf)]) == "histogram":
            return name[:-len(suf)], "histogram"
    return None, f"`{name}` is not in docs/metrics.md"


def check_expr(expr, metrics, variables, where, problems):
    if not isinstance(expr, str) or not expr.strip():
        problems.append(f"{where}: empty expr")
        return
    names = metric_names(expr)
    if not names:
        problems.append(f"{where}: selects no metric: {expr}")
    for n in names:
        base, why = resolve(n, metrics)
        if base is None:
            problems.append(f"{where}: {why}: {expr}")
    for func in RATE_FUNCS:
        for arg in call_args(expr, func):
            for n in metric_names(arg):
                base, t = resolve(n, metrics)
                if base and t not in ("counter", "histogram"):
                    problems.append(f"{where}: {func}() over {t} `{n}` (only counters and histogram series): {expr}")
    for m in VAR.finditer(expr):
        v = m.group(1) or m.group(2)
        if v not in variables and v not in GRAFANA_VARS:
            problems.append(f"{where}: uses ${v}, which the dashboard does not define: {expr}")
        elif v in variables and not re.search(r'=~\s*"[^"]*$', expr[:m.start()]):
            # Multi-value and All both expand to regular expressions, and the e2e substitutes `.*`.
            problems.append(f"{where}: ${v} outside a =~\"...\" matcher: {expr}")
    depth = 0
    for ch in strip_strings(expr):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            break
    if depth != 0:
        problems.append(f"{where}: unbalanced parentheses: {expr}")


def walk_datasources(node, path, problems, where):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "datasource":
                ok = (isinstance(v, dict) and v.get("type") == "prometheus" and v.get("uid") in DATASOURCE_UIDS) or \
                     (isinstance(v, str) and v in DATASOURCE_UIDS)
                if not ok:
                    problems.append(f"{where}: {path}.datasource is {json.dumps(v)}; only {json.dumps(DATASOURCE)} is allowed")
            else:
                walk_datasources(v, f"{path}.{k}", problems, where)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk_datasources(v, f"{path}[{i}]", problems, where)


def all_panels(panels):
    for p in panels or []:
        yield p
        if p.get("type") == "row":
            yield from all_panels(p.get("panels"))


def lint_file(path, metrics, problems, seen_uids, seen_titles):
    name = os.path.basename(path)
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        problems.append(f"{name}: does not parse as JSON: {e}")
        return 0
    if not isinstance(d, dict):
        problems.append(f"{name}: not a JSON object")
        return 0
    for key, typ in (("uid", str), ("title", str), ("schemaVersion", int), ("panels", list),
                     ("templating", dict), ("time", dict), ("tags", list)):
        if not isinstance(d.get(key), typ):
            problems.append(f"{name}: key `{key}` missing or not a {typ.__name__}")
    uid, title = d.get("uid"), d.get("title")
    if isinstance(uid, str):
        if not re.fullmatch(r"tephra-[a-z0-9-]+", uid) or len(uid) > 40:
            problems.append(f"{name}: uid {uid!r} must be tephra-[a-z0-9-]+ and at most 40 characters")
        if uid in seen_uids:
            problems.append(f"{name}: uid {uid!r} also used by {seen_uids[uid]}")
        seen_uids.setdefault(uid, name)
    if isinstance(title, str):
        if title in seen_titles:
            problems.append(f"{name}: title {title!r} also used by {seen_titles[title]}")
        seen_titles.setdefault(title, name)
    if isinstance(d.get("schemaVersion"), int) and not 36 <= d["schemaVersion"] <= 39:
        problems.append(f"{name}: schemaVersion {d['schemaVersion']} (want 36..39: Grafana 9.x/10.x)")
    walk_datasources(d, "$", problems, name)

    tvars = (d.get("templating") or {}).get("list") or []
    variables = {}
    for v in tvars:
        vn = v.get("name")
        if not vn or vn in variables:
            problems.append(f"{name}: template variable without a name or defined twice: {vn!r}")
        variables[vn] = v
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append(f"{name}: no template variable `datasource` of type datasource with query prometheus")
    for vn, v in variables.items():
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.fullmatch(r"\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*", q or "")
        if not m:
            problems.append(f"{name}: variable ${vn}: query {q!r} is not label_values(<series>, <label>)")
            continue
        check_expr(m.group(1), metrics, variables, f"{name}: variable ${vn}", problems)

    ids = {}
    exprs = 0
    for p in all_panels(d.get("panels")):
        pid, ptitle, ptype = p.get("id"), p.get("title"), p.get("type")
        where = f"{name}: panel {pid} {ptitle!r}"
        if not isinstance(pid, int):
            problems.append(f"{where}: no integer id")
        elif pid in ids:
            problems.append(f"{where}: id {pid} also used by panel {ids[pid]!r}")
        else:
            ids[pid] = ptitle
        if not ptitle or not ptype:
            problems.append(f"{where}: missing title or type")
        g = p.get("gridPos") or {}
        if not all(isinstance(g.get(k), int) for k in ("h", "w", "x", "y")) or g["x"] + g["w"] > 24:
            problems.append(f"{where}: gridPos {g} (h, w, x, y integers, x + w <= 24)")
        if ptype == "row":
            if p.get("targets"):
                problems.append(f"{where}: a row with targets")
            continue
        targets = p.get("targets")
        if not targets:
            problems.append(f"{where}: no targets")
            continue
        refs = set()
        for t in targets:
            ref = t.get("refId")
            if not ref or ref in refs:
                problems.append(f"{where}: target without refId or with a repeated one ({ref!r})")
            refs.add(ref)
            if "expr" not in t:
                problems.append(f"{where}: target {ref} has no expr")
                continue
            check_expr(t["expr"], metrics, variables, f"{where} target {ref}", problems)
            exprs += 1
    return exprs


def self_test(metrics):
    """The lint must catch what it promises to catch: a broken dashboard gives each expected complaint."""
    import tempfile
    bad = {"uid": "tephra-bad", "title": "bad", "schemaVersion": 38, "tags": [], "time": {},
           "templating": {"list": [{"type": "datasource", "name": "datasource", "query": "prometheus"}]},
           "panels": [
               {"id": 1, "type": "timeseries", "title": "p1", "gridPos": {"h": 1, "w": 12, "x": 0, "y": 0},
                "datasource": {"type": "prometheus", "uid": "prom-1"},
                "targets": [{"refId": "A", "expr": "sum(no_such_metric)"}, {"refId": "B"},
                            {"refId": "C", "expr": 'rate(volcano_queue_share{queue_name=~"$queue"}[1m])'},
                            {"refId": "D", "expr": 'volcano_queue_weight{queue_name="$datasource"}'}]},
               {"id": 1, "type": "stat", "title": "p2", "gridPos": {"h": 1, "w": 12, "x": 12, "y": 0},
                "targets": [{"refId": "A", "expr": "volcano_e2e_scheduling_latency_milliseconds"}]}]}
    want = ["`no_such_metric` is not in docs/metrics.md", "target B has no expr", "rate() over gauge",
            "uses $queue", "$datasource outside a =~", "id 1 also used", "prom-1", "has no series of its own"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bad.json")
        with open(path, "w") as f:
            json.dump(bad, f)
        got = []
        lint_file(path, metrics, got, {}, {})
    return [f"self-test: the lint did not report {w!r} for a broken dashboard (got: {got})"
            for w in want if not any(w in g for g in got)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dashboards", default=os.path.join(SRC, "charts", "tephra", "dashboards"))
    ap.add_argument("--metrics", default=os.path.join(SRC, "docs", "metrics.md"))
    a = ap.parse_args()
    metrics = load_metrics(a.metrics)
    problems = []
    if len(metrics) < 20:
        problems.append(f"{a.metrics}: found only {len(metrics)} metric names in its tables")
    files = sorted(glob.glob(os.path.join(a.dashboards, "*.json")))
    if not files:
        problems.append(f"{a.dashboards}: no *.json dashboards")
    other = sorted(set(os.listdir(a.dashboards)) - {os.path.basename(f) for f in files}) if os.path.isdir(a.dashboards) else []
    for o in other:
        problems.append(f"{a.dashboards}/{o}: not a .json dashboard (the chart ships every file of the folder)")
    problems += self_test(metrics)
    seen_uids, seen_titles = {}, {}
    total = 0
    for f in files:
        total += lint_file(f, metrics, problems, seen_uids, seen_titles)
    for p in problems:
        print("FAIL " + p)
    if problems:
        print(f"dashboards_lint: {len(problems)} problem(s) in {len(files)} dashboards")
        sys.exit(1)
    print(f"dashboards_lint: {len(files)} dashboards, {total} expressions, {len(metrics)} metric names: ok")


if __name__ == "__main__":
    main()
