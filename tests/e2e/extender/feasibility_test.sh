#!/usr/bin/env bash
# e2e: Tephra's predicates agree with kube-scheduler v1.20.2's on which nodes a pod may use (run by
# run-with-cluster.sh: KUBECONFIG, KUBECTL, TEPHRA_BIN, TEPHRA_SOURCE_DIR, TEPHRA_E2E_DIR).
#
# The cluster (feasibility/nodes.yaml, 12 nodesim nodes: three zones, a zone-less group, taints of every
# effect, a cordoned node, a node at its pod limit) holds pods placed without a scheduler
# (feasibility/existing.yaml: host ports, labels for affinity and spread, a pod with its own anti-affinity,
# GPUs in use) and volumes (feasibility/volumes.yaml: claims bound to node-local and zonal volumes, an unbound
# Immediate claim, WaitForFirstConsumer claims of provisioning classes and of pre-created local volumes, a
# volume with zone labels, CSI volumes against a node's CSINode attach limit). Then, for each probe pod of
# feasibility/probes.yaml:
#  - kube-scheduler's feasible set: kube-scheduler runs with its default plugins and, as its only extender,
#    recorder.py, which it calls with exactly the nodes its filters passed; the recorder refuses them all,
#    so nothing is bound and the cluster stays as built;
#  - Tephra's feasible set: Tephra's extender filter (the scheduler's own predicates) asked about every node.
# The two sets must be equal for every probe. A difference is printed with Tephra's reason for each node
# it refused.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}" "${TEPHRA_E2E_DIR:?}"
# shellcheck source=../lib/kube_scheduler.sh
source "$HERE/../lib/kube_scheduler.sh"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
WORK=$(mktemp -d)
REC_PID=
cleanup() {
  stop_kube_scheduler
  [ -z "$REC_PID" ] || { kill "$REC_PID" 2>/dev/null || true; wait "$REC_PID" 2>/dev/null || true; }
  stop_roles
  rm -rf "$WORK"
}
trap cleanup EXIT
DATA=$HERE/feasibility

install_crds || fail "CRDs not Established"
start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --config "$DATA/nodes.yaml" ||
  fail "tephra nodesim did not start"
node_count() { [ "$(k get nodes -o name | wc -l)" -ge "$1" ]; }
wait_until "12 nodes registered" 90 node_count 12 || fail "nodesim did not register 12 nodes"
k wait --for condition=Ready --timeout 60s node --all >/dev/null || fail "simulated nodes not Ready"
k taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true  # see scheduler_test.sh
# spec.unschedulable only: this harness's node lifecycle controller never mirrors it as a taint (see
# scheduler_test.sh), and kube-scheduler's NodeUnschedulable filter reads the field.
k cordon a-2 >/dev/null

k create -f "$DATA/volumes.yaml" >/dev/null || fail "the API server refused a volume object"
claims_bound() {
  for c in data-a1 data-b data-zone-label csi-used csi-other; do
    [ "$(k get pvc "$c" -o jsonpath='{.status.phase}')" = Bound ] || return 1
  done
}
wait_until "the volume controller binds the pre-bound claims" 60 claims_bound || fail "claims not bound: $(k get pvc,pv 2>&1)"
local_available() { [ "$(k get pv local-b0 -o jsonpath='{.status.phase}')" = Available ]; }
wait_until "the volume controller makes local-b0 Available" 60 local_available || fail "local-b0: $(k get pv local-b0 2>&1)"
k create -f "$DATA/existing.yaml" >/dev/null || fail "the API server refused a placed pod"
EXISTING=$(grep -c '^kind: Pod' "$DATA/existing.yaml")
all_running() { [ "$(k get pods --field-selector status.phase=Running -o name | wc -l)" -ge "$EXISTING" ]; }
wait_until "$EXISTING placed pods Running" 90 all_running || fail "placed pods not Running: $(k get pods -o wide)"

# Tephra, started after the placed pods exist: /readyz means its caches hold them.
EXT_PORT=$(free_port)
HEALTH_PORT=$(free_port)
start_role scheduler "$LOGS/scheduler.log" --kubeconfig "$KUBECONFIG" --leader-elect=false --listen-address 0 \
  --health-addr "127.0.0.1:$HEALTH_PORT" --extender-address "127.0.0.1:$EXT_PORT" --extender-prefix /tephra ||
  fail "tephra scheduler did not start"
wait_until "scheduler /readyz" 60 curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" || fail "scheduler never ready"

python3 "$HERE/recorder.py" "$WORK/recorder.port" "$WORK/recorded.jsonl" 2>"$LOGS/recorder.log" &
REC_PID=$!
have_port() { [ -s "$WORK/recorder.port" ]; }
wait_until "recorder port" 20 have_port || fail "recorder.py did not start: $(cat "$LOGS/recorder.log")"
cat >"$WORK/kube-scheduler.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $TEPHRA_E2E_DIR/kube-scheduler.kubeconfig
leaderElection:
  leaderElect: false
percentageOfNodesToScore: 100
profiles:
- schedulerName: default-scheduler
extenders:
- urlPrefix: http://127.0.0.1:$(cat "$WORK/recorder.port")
  filterVerb: filter
  nodeCacheCapable: true
  enableHTTPS: false
  httpTimeout: 5s
YAML
start_kube_scheduler "$WORK/kube-scheduler.yaml" "$LOGS/kube-scheduler-feasibility.log"

k create -f "$DATA/probes.yaml" >/dev/null || fail "the API server refused a probe pod"
PROBES=$(k get pods -l probe=yes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
NPROBES=$(echo "$PROBES" | wc -l)
# A probe has been judged once kube-scheduler has marked it unschedulable (through the recorder's refusal,
# or because no node passed its filters and the recorder was never asked).
judged() {
  [ "$(k get pods -l probe=yes -o json |
    jq '[.items[] | select(any(.status.conditions[]?; .type == "PodScheduled" and .status == "False"))] | length')" -ge "$NPROBES" ]
}
wait_until "kube-scheduler judged $NPROBES probes" 120 judged ||
  fail "kube-scheduler did not judge every probe: $(k get pods -l probe=yes -o json | jq -c '[.items[] | {n: .metadata.name, c: .status.conditions}]' | head -c 2000)"
k get pods -l probe=yes -o json | jq -c '.items[] | select(.spec.nodeName != null) | .metadata.name' | grep -q . &&
  fail "a probe was bound: the recorder should have refused every node"

ALL=$(k get nodes -o json | jq -c '[.items[].metadata.name] | sort')
mismatches=0
for p in $PROBES; do
  kube=$(jq -sc --arg p "default/$p" '[.[] | select(.pod == $p)] | if length == 0 then [] else .[0].nodes end' \
    "$WORK/recorded.jsonl")
  k get pod "$p" -o json | jq -c --argjson all "$ALL" '{Pod: ., NodeNames: $all}' >"$WORK/args.json"
  curl -fsS -X POST -H 'Content-Type: application/json' --data-binary "@$WORK/args.json" \
    "http://127.0.0.1:$EXT_PORT/tephra/filter" >"$WORK/tephra.json" || fail "Tephra's filter failed for $p"
  tephra=$(jq -c '.NodeNames | sort' "$WORK/tephra.json")
  if [ "$kube" = "$tephra" ]; then
    note "$p: $kube"
  else
    mismatches=$((mismatches + 1))
    echo "MISMATCH $p: kube-scheduler $kube, Tephra $tephra" >&2
    jq -c --argjson kube "$kube" '.FailedNodes | with_entries(select(.key | IN($kube[])))' "$WORK/tephra.json" |
      sed 's/^/  Tephra refused, kube-scheduler allowed: /' >&2
  fi
done
[ "$mismatches" -eq 0 ] || fail "$mismatches of $NPROBES probes: Tephra's feasible nodes differ from kube-scheduler v1.20.2's"
note "all $NPROBES probes: Tephra and kube-scheduler v1.20.2 agree on every node"
