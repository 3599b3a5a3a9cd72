#!/usr/bin/env bash
# e2e: the scheduler's read-only web view (docs/web-view.md) in a real browser, on the real control plane.
# 4 simulated nodes x 4 cpu x 4 GPUs under HyperNodes (spine-0 over leaf-a and leaf-b), the scheduler with
# --enable-web-view, the controller; queues default and research:
#  1. without the flag the view is not served: /ui/ and the snapshot are 404 on another scheduler's /metrics
#     address, which still serves /metrics; with it, the view is GET-only (POST is 405);
#  2. headless chromium (DevTools protocol, cdp.py) renders the page from the snapshot: the queues with their
#     shares, the too-big job waiting at position 1 with the scheduler's reason, the running gang with its
#     two nodes and its leaf, the leaves of spine-0 with their node tiles;
#  3. live: a new job and a node fault show up on the open page without a reload (the page keeps a marker
#     set before, and its snapshot counter moves);
#  4. the page logged no console error and threw no exception.
# Screenshots go to ${TEPHRA_ARTIFACTS_DIR:-$TEPHRA_E2E_LOG_DIR}/webview/.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../ctl/stack.sh
source "$HERE/../ctl/stack.sh"   # lib/common.sh, LOGS, WORK (removed on exit), k, vcctl, ctl_stack_up
command -v chromium >/dev/null || fail "chromium is not installed (scripts/deps.sh)"
# Debian's interpreter: python3-websocket is installed for it, whatever python3 comes first on PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import websocket' 2>/dev/null || fail "python3-websocket is not installed (scripts/deps.sh)"
ART=${TEPHRA_ARTIFACTS_DIR:-$LOGS}/webview
mkdir -p "$ART"

# ------------------------------------------------------------------------------------ 1. off without the flag
# A scheduler without --enable-web-view, before the stack (and its CRDs) exist, so it cannot write anything
# the real one reads: it serves /metrics but no view.
off_port=$(free_port)
"$TEPHRA_BIN" scheduler --kubeconfig "$KUBECONFIG" --leader-elect=false --scheduler-name nobody \
  --listen-address "127.0.0.1:$off_port" --health-addr "127.0.0.1:$(free_port)" >"$LOGS/scheduler-no-view.log" 2>&1 &
off_pid=$!
metrics_up() { curl -fsS "http://127.0.0.1:$off_port/metrics" >/dev/null; }
wait_until "/metrics of the scheduler without the view" 60 metrics_up || fail "scheduler without the view did not serve /metrics"
for p in /ui/ /ui /ui/app.js /ui/api/v1/snapshot; do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$off_port$p")
  [ "$code" = 404 ] || fail "without --enable-web-view $p answered $code, want 404"
done
stop_pids 10 "$off_pid"

CTL_NODES=4 CTL_GPUS=4 ctl_stack_up --enable-web-view --queue-position-interval 500ms
URL="http://127.0.0.1:$SCHED_METRICS_PORT"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data '{}' "$URL/ui/api/v1/snapshot")
[ "$code" = 405 ] || fail "POST to the snapshot answered $code, want 405 (read-only)"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/ui/")
[ "$code" = 200 ] || fail "/ui/ answered $code with --enable-web-view"
note "1. no view without --enable-web-view (404); with it, GET only (POST 405)"

# ---------------------------------------------------------------------------------------- the cluster's shape
k apply -f - >/dev/null <<'YAML'
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf-a}
spec:
  tier: 1
  tierName: leaf
  members:
  - {type: Node, selector: {regexMatch: {pattern: "^tephra-sim-[01]$"}}}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf-b}
spec:
  tier: 1
  tierName: leaf
  members:
  - {type: Node, selector: {regexMatch: {pattern: "^tephra-sim-[23]$"}}}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: spine-0}
spec:
  tier: 2
  tierName: spine
  members:
  - {type: HyperNode, selector: {exactMatch: {name: leaf-a}}}
  - {type: HyperNode, selector: {exactMatch: {name: leaf-b}}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 3, reclaimable: true}
YAML

# job <name> <pods> <gpus per pod> <queue> [hard tier]
job() {
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1}
spec:
  schedulerName: volcano
  queue: $4
  minAvailable: $2
$( [ -z "${5:-}" ] || printf '  networkTopology: {mode: hard, highestTierAllowed: %s}\n' "$5" )
  tasks:
  - name: w
    replicas: $2
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "900"}}
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox, resources: {requests: {cpu: "1", nvidia.com/gpu: "$3"}, limits: {nvidia.com/gpu: "$3"}}}]
YAML
}
# A gang of 4 x 2 GPUs inside one leaf (two nodes), and a job no node can hold (8 GPUs a pod, 4 a node).
job train 4 2 research 1 >"$WORK/train.yaml"
job huge 2 8 default >"$WORK/huge.yaml"
job huge-later 2 8 default >"$WORK/huge-later.yaml"
vcctl job run -f "$WORK/train.yaml" >/dev/null
vcctl job wait train --for=Running --timeout 120s >/dev/null || fail "train did not start: $(k get pods -o wide)"
vcctl job run -f "$WORK/huge.yaml" >/dev/null
snap() { curl -fsS "$URL/ui/api/v1/snapshot"; }
huge_waits() {
  snap | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if any(j["name"].startswith("huge-") and j["position"] == 1 and j["reason"] for j in s["pending"]) else 1)'
}
wait_until "huge waiting at position 1 with a reason in the snapshot" 90 huge_waits ||
  fail "snapshot: $(snap | head -c 3000)"
# A node none of train's pods is on: its fault must not disturb the running gang.
FAULT_NODE=$(snap | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
busy = {n for j in s["running"] for n in j["placement"]}
print(sorted(n for n in ("tephra-sim-0", "tephra-sim-1", "tephra-sim-2", "tephra-sim-3") if n not in busy)[0])')

# ------------------------------------------------------------------------------------- 2-4. in the browser
export URL KUBECTL KUBECONFIG ART FAULT_NODE
export NEW_JOB_YAML="$WORK/huge-later.yaml" VCCTL="$WORK/vcctl"
"$PY" "$HERE/webview_check.py" "$LOGS/chromium.log" || fail "web view checks failed (chromium log: $LOGS/chromium.log)"
echo PASS
