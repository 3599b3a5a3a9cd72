// Tephra scheduler web view (docs/web-view.md): polls the snapshot every 2 s and redraws the page.
// Every string from the snapshot reaches the DOM through textContent or setAttribute, never innerHTML:
// job, queue and node names are user input.
"use strict";

const POLL_MS = 2000;
let received = 0;

// ---- small DOM helpers
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v;
    else e.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
function replaceChildren(parent, children) {
  parent.replaceChildren(...children);
}
function emptyRow(cols, text) {
  return el("tr", {}, el("td", { colspan: cols, class: "empty" }, text));
}

// ---- formatting
function fmtBytes(b) {
  const units = ["B", "Ki", "Mi", "Gi", "Ti", "Pi"];
  let i = 0;
  let v = Number(b);
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (v >= 10 || i === 0 ? Math.round(v) : v.toFixed(1)) + units[i];
}
function shortName(r) {
  if (r === "nvidia.com/gpu") return "gpu";
  if (r.startsWith("huawei.com/")) return r.slice("huawei.com/".length);
  return r;
}
function fmtNum(v) {
  return Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100);
}
function fmtRes(obj) {
  if (!obj) return "—";
  const parts = [];
  for (const [k, v] of Object.entries(obj)) {
    if (k === "memory") parts.push("mem " + fmtBytes(v));
    else parts.push(shortName(k) + " " + fmtNum(v));
  }
  return parts.length ? parts.join(", ") : "—";
}
function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleTimeString();
}
function fmtIn(iso, now) {
  const t = new Date(iso).getTime() - now;
  if (isNaN(t)) return "";
  const s = Math.round(Math.abs(t) / 1000);
  const txt = s < 60 ? s + "s" : s < 3600 ? Math.round(s / 60) + "m" : (s / 3600).toFixed(1) + "h";
  return t >= 0 ? "in " + txt : txt + " ago";
}

// ---- sections
function renderQueues(snap) {
  const rows = snap.queues.map((q) => {
    const share = q.share;
    let bar;
    if (share === null || share === undefined) {
      bar = el("span", { class: "empty" }, "no deserved share");
    } else {
      const pct = Math.round(share * 100);
      const fill = el("div", { class: share > 1 ? "fill over" : "fill" });
      fill.style.width = Math.min(100, Math.max(0, share * 100)) + "%";
      bar = el("div", { class: "bar", title: "allocated / deserved, by " + (q.shareResource || "") },
        fill, el("span", { class: "label" }, pct + "%" + (q.shareResource ? " " + shortName(q.shareResource) : "")));
    }
    return el("tr", { "data-queue": q.name },
      el("td", {}, q.name), el("td", {}, q.state), el("td", { class: "num" }, q.weight), el("td", {}, bar),
      el("td", {}, fmtRes(q.allocated)), el("td", {}, fmtRes(q.deserved)), el("td", {}, fmtRes(q.capability)),
      el("td", { class: "num" }, q.pending), el("td", { class: "num" }, q.running));
  });
  replaceChildren(document.querySelector("#queues tbody"), rows.length ? rows : [emptyRow(9, "no queues")]);
}

function renderPending(snap, now) {
  const rows = snap.pending.map((j) => {
    const why = el("td", {});
    if (j.reason) why.append(el("div", { class: "reason" }, j.reason));
    if (j.message) why.append(el("div", { class: "message" }, j.message));
    if (!j.reason && !j.message) why.append(el("span", { class: "empty" }, j.queued || "not tried yet"));
    const est = el("td", {});
    if (j.estimate && j.estimate.time) {
      est.append(el("div", {}, fmtIn(j.estimate.time, now) + " (" + fmtTime(j.estimate.time) + ")"));
      est.append(el("div", { class: "message" }, j.estimate.kind + (j.estimate.nodes.length ? " on " + j.estimate.nodes.join(", ") : "")));
    } else if (j.estimate) {
      est.append(el("span", { class: "empty", title: j.estimate.why }, "unknown"));
    } else {
      est.append(el("span", { class: "empty" }, "—"));
    }
    return el("tr", { "data-job": j.namespace + "/" + j.name },
      el("td", {}, j.queue),
      el("td", { class: "num pos" }, j.position === null ? "—" : j.position),
      el("td", {}, j.namespace + "/" + j.name),
      // Pods ready over the gang's minimum; the pods that exist when they are not the minimum (a vcjob's pods
      // are created only once its PodGroup is admitted, so none may exist yet).
      el("td", { class: "num", title: j.pods + " pods exist" }, j.ready + "/" + j.minMember + (j.pods && j.pods !== j.minMember ? " of " + j.pods : "")),
      el("td", {}, j.phase), why, est);
  });
  replaceChildren(document.querySelector("#pending tbody"), rows.length ? rows : [emptyRow(7, "nothing waits")]);
  document.getElementById("pending-count").textContent =
    snap.pendingTotal > snap.pending.length ? `(${snap.pending.length} of ${snap.pendingTotal})` : `(${snap.pendingTotal})`;
}

function renderRunning(snap) {
  const rows = snap.running.map((j) => {
    const placement = el("td", {});
    for (const [node, n] of Object.entries(j.placement)) placement.append(el("span", { class: "chip", "data-node": node }, node + " × " + n));
    const leaves = el("td", {});
    for (const l of j.leaves) leaves.append(el("span", { class: "chip" }, l));
    if (!j.leaves.length) leaves.append(el("span", { class: "empty" }, "—"));
    const short = j.placed < j.minMember;
    return el("tr", { "data-job": j.namespace + "/" + j.name },
      el("td", {}, j.queue), el("td", {}, j.namespace + "/" + j.name),
      el("td", { class: short ? "num short" : "num", title: j.placed + " placed" }, j.running + "/" + j.minMember),
      placement, leaves);
  });
  replaceChildren(document.querySelector("#running tbody"), rows.length ? rows : [emptyRow(5, "nothing runs")]);
  document.getElementById("running-count").textContent =
    snap.runningTotal > snap.running.length ? `(${snap.running.length} of ${snap.runningTotal})` : `(${snap.runningTotal})`;
}

// What colours a tile: its devices when it has any, else its cpu.
function usage(n) {
  const devs = n.devices.filter((d) => d.device && d.allocatable > 0);
  if (devs.length) {
    const a = devs.reduce((s, d) => s + d.allocated, 0), c = devs.reduce((s, d) => s + d.allocatable, 0);
    return { frac: c ? a / c : 0, text: devs.map((d) => shortName(d.name) + " " + d.allocated + "/" + d.allocatable).join(" ") };
  }
  const c = n.cpu.allocatable;
  return { frac: c ? n.cpu.allocated / c : 0, text: "cpu " + fmtNum(n.cpu.allocated) + "/" + fmtNum(c) };
}

function tile(n) {
  const u = usage(n);
  const cls = ["tile"];
  if (n.faulted) cls.push("faulted");
  else if (n.unschedulable) cls.push("cordoned");
  const f = Math.min(1, Math.max(0, u.frac));
  const t = el("div", {
    class: cls.join(" "), "data-node": n.name,
    title: [n.name, u.text, "cpu " + fmtNum(n.cpu.allocated) + "/" + fmtNum(n.cpu.allocatable),
      "mem " + fmtBytes(n.memory.allocated) + "/" + fmtBytes(n.memory.allocatable), n.pods + " pods",
      n.ready ? "ready" : "not ready", n.unschedulable ? "unschedulable" : "", ...(n.signals || [])].filter(Boolean).join("\n"),
  }, el("div", { class: "n" }, n.name), el("div", {}, u.text),
    el("div", {}, n.faulted ? (n.signals[0] || "NotReady") : n.unschedulable ? "unschedulable" : n.pods + " pods"));
  // From pale green (free) through blue to deep blue (full); light text on the dark end.
  t.style.background = `hsl(${140 + 85 * f}, ${45 + 25 * f}%, ${88 - 38 * f}%)`;
  if (f > 0.75) t.style.color = "#fff";
  return t;
}

function renderMap(snap) {
  const groups = snap.cluster.groups.map((g) => {
    const leaves = g.leaves.map((l) => el("div", { class: "leaf", "data-leaf": l.name },
      el("div", { class: "title" }, l.name + " (" + l.nodes.length + " nodes)"),
      el("div", { class: "tiles" }, ...l.nodes.map(tile))));
    const tierName = g.tier !== null && snap.cluster.tierNames[g.tier] ? snap.cluster.tierNames[g.tier] + " " : "";
    return el("div", { class: "group", "data-group": g.name },
      el("div", { class: "title" }, g.name ? tierName + g.name : "leaves without a parent"),
      el("div", { class: "leaves" }, ...leaves));
  });
  if (snap.cluster.ungrouped.length) {
    groups.push(el("div", { class: "group", "data-group": "" },
      el("div", { class: "title" }, "ungrouped (in no HyperNode)"),
      el("div", { class: "leaves" }, el("div", { class: "leaf", "data-leaf": "" },
        el("div", { class: "tiles" }, ...snap.cluster.ungrouped.map(tile))))));
  }
  replaceChildren(document.getElementById("map"), groups.length ? groups : [el("div", { class: "empty" }, "no nodes")]);
}

function renderFaults(snap) {
  const items = snap.faults.map((f) => el("li", { "data-node": f.node, "data-kind": f.kind },
    el("span", { class: "time" }, fmtTime(f.time)), el("span", { class: "kind-" + f.kind }, f.kind), " ",
    el("b", {}, f.node), " ", f.signals.join(", ")));
  replaceChildren(document.getElementById("faults"), items.length ? items : [el("li", { class: "empty" }, "none seen since the scheduler started")]);
}

function render(snap) {
  const now = new Date(snap.generatedAt).getTime() || Date.now();
  const role = document.getElementById("role");
  role.textContent = snap.scheduler.leading ? "leader" : "standby";
  role.className = "badge " + (snap.scheduler.leading ? "leader" : "standby");
  document.getElementById("summary").textContent =
    `${snap.scheduler.nodes} nodes · ${snap.scheduler.pods} pods · cycle ${snap.scheduler.cycles}`;
  renderQueues(snap);
  renderPending(snap, now);
  renderRunning(snap);
  renderMap(snap);
  renderFaults(snap);
  received++;
  document.getElementById("updated").textContent = "updated " + fmtTime(snap.generatedAt);
  document.getElementById("counter").textContent = String(received);
}

function showError(text) {
  const e = document.getElementById("error");
  e.textContent = text;
  e.hidden = !text;
}

async function poll() {
  try {
    const r = await fetch("/ui/api/v1/snapshot", { cache: "no-store" });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) {
      showError("snapshot: HTTP " + r.status + (body.error ? ": " + body.error : ""));
    } else {
      render(body);
      showError("");
    }
  } catch (err) {
    showError("cannot reach the scheduler (" + err.message + "); retrying");
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

poll();
