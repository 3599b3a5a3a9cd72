#!/usr/bin/env bash
# e2e: scheduler restart mid-gang (docs/failure-scenarios.md, scenario 8), on a real control plane with nodesim.
# A gang of 8 (PodGroup minMember 8, 8 plain pods) is scheduled by a `tephra scheduler` whose client is
# throttled to 2 requests/s, so binds trickle; after at least 3 pods are bound it is SIGKILLed. A fresh
# scheduler (normal client limits) rebuilds its state from the API and must finish the gang: all 8 pods bound
# and Running, the PodGroup Running, and no pod bound twice (the audit log shows exactly one successful
# pods/binding per pod).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}" "${TEPHRA_E2E_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
trap stop_roles EXIT

install_crds || fail "CRDs not Established"
start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --nodes 4 --cpu 8 --gpus 0 || fail "nodesim did not start"
node_count() { [ "$(k get nodes -o name | wc -l)" -ge 4 ]; }
wait_until "4 nodes registered" 90 node_count || fail "nodesim did not register 4 nodes"
k wait --for condition=Ready --timeout 60s node --all >/dev/null || fail "simulated nodes not Ready"
k taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
create_default_queues || fail "default queues not created"

{
  printf '%s\n' "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" \
    "metadata: {name: gang, namespace: default}" "spec: {minMember: 8, queue: default}" "---"
  for i in $(seq 0 7); do
    printf '%s\n' "apiVersion: v1" "kind: Pod" "metadata:" "  name: gang-$i" "  namespace: default" \
      "  labels: {e2e-group: gang}" "  annotations: {scheduling.k8s.io/group-name: gang}" \
      "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  containers:" "  - name: main" \
      "    image: busybox" "    resources: {requests: {cpu: \"1\"}, limits: {cpu: \"1\"}}" "---"
  done
} | k create -f - >/dev/null
bound_count() { k get pods -l e2e-group=gang -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true; }

# ---------------------------------------------------------------------- 1. slow scheduler, killed mid-gang
start_role scheduler "$LOGS/scheduler-1.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --listen-address 0 --health-addr 0 --kube-api-qps 2 --kube-api-burst 1 || fail "scheduler 1 did not start"
SCHED1=${ROLE_PIDS[-1]}
three_bound() { [ "$(bound_count)" -ge 3 ]; }
wait_until ">= 3 pods bound by scheduler 1" 120 three_bound || fail "scheduler 1 bound only $(bound_count)"
kill -KILL "$SCHED1"
wait "$SCHED1" 2>/dev/null || true
at_kill=$(bound_count)
[ "$at_kill" -lt 8 ] || fail "scheduler 1 bound the whole gang before the kill; the test needs a partial gang"
note "1. scheduler SIGKILLed with $at_kill/8 pods bound"

# ------------------------------------------------------------------- 2. a fresh scheduler finishes the gang
start_role scheduler "$LOGS/scheduler-2.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --listen-address 0 --health-addr 0 || fail "scheduler 2 did not start"
all_bound() { [ "$(bound_count)" -eq 8 ]; }
wait_until "all 8 pods bound" 60 all_bound || fail "after restart only $(bound_count)/8 bound"
running() { [ "$(k get pods -l e2e-group=gang -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c Running)" = 8 ]; }
wait_until "8 pods Running" 60 running || fail "gang pods not Running"
pg_running() { [ "$(k get podgroup gang -o jsonpath='{.status.phase}')" = Running ]; }
wait_until "PodGroup Running" 30 pg_running || fail "PodGroup phase $(k get podgroup gang -o jsonpath='{.status.phase}')"

# ------------------------------------------------------------------------------- 3. nothing bound twice
# The audit line of a request is written after its response, so a line may trail the pod's state: each count
# is read until it is exactly 1, or stays otherwise for 20 s.
AUDIT=$LOGS/audit-slice.log
bindings_of() {
  audit_log >"$AUDIT"
  grep '"verb":"create"' "$AUDIT" | grep "\"requestURI\":\"/api/v1/namespaces/default/pods/$1/binding\"" |
    grep -c '"code":201' || true
}
one_binding() { [ "$(bindings_of "$1")" = 1 ]; }
for i in $(seq 0 7); do
  wait_until "one successful binding of gang-$i in the audit log" 20 one_binding "gang-$i" ||
    fail "gang-$i has $(bindings_of "gang-$i") successful bindings in the audit log, want exactly 1"
done
note "2-3. restarted scheduler finished the gang: 8/8 bound and Running, PodGroup Running, one successful binding per pod"
echo PASS
