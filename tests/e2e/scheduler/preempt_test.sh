#!/usr/bin/env bash
# e2e for preemption (run by run-with-cluster.sh: KUBECONFIG, KUBECTL, TEPHRA_BIN, TEPHRA_SOURCE_DIR).
# 4 nodesim nodes of 4 cpu; the scheduler runs `enqueue, allocate, preempt, backfill`.
#  1. a low-priority PodGroup (minMember 2, PriorityClass e2e-low) fills the cluster with 16 one-cpu pods;
#  2. a high-priority gang (minMember 4, PriorityClass e2e-high) of 4 one-cpu pods arrives: the scheduler
#     deletes exactly 4 low pods (Evict events on them and on the low PodGroup), then binds all 4 high pods;
#     the low PodGroup keeps its other 12 pods Running (it stays above its minMember).
#  3. nothing more is evicted afterwards (eviction is idempotent across cycles).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
e2e_begin

install_crds || fail "CRDs not Established"

start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --nodes 4 --cpu 4 --memory 16Gi || fail "tephra nodesim did not start"
node_count() { [ "$(k get nodes -o name | wc -l)" -ge "$1" ]; }
wait_until "4 nodes registered" 90 node_count 4 || fail "nodesim did not register 4 nodes"
k wait --for condition=Ready --timeout 60s node --all >/dev/null || fail "simulated nodes not Ready"
k taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true  # see scheduler_test.sh

CONF=$WORK/volcano-scheduler.conf
printf '%s\n' 'actions: "enqueue, allocate, preempt, backfill"' 'tiers:' '- plugins:' '  - name: priority' \
  '  - name: gang' '  - name: conformance' '- plugins:' '  - name: drf' '    enablePreemptable: false' \
  '  - name: predicates' '  - name: proportion' '  - name: nodeorder' >"$CONF"
HEALTH_PORT=$(free_port)
start_role scheduler "$LOGS/scheduler.log" --kubeconfig "$KUBECONFIG" --leader-elect=false --listen-address 0 \
  --health-addr "127.0.0.1:$HEALTH_PORT" --log-level debug --scheduler-conf "$CONF" || fail "tephra scheduler did not start"
wait_until "scheduler /readyz" 60 curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" || fail "scheduler never ready"
have_default() { k get queue default; }
wait_until "default queue" 30 have_default || fail "scheduler did not create the default queue"

printf '%s\n' "apiVersion: scheduling.k8s.io/v1" "kind: PriorityClass" "metadata: {name: e2e-low}" "value: 10" "---" \
  "apiVersion: scheduling.k8s.io/v1" "kind: PriorityClass" "metadata: {name: e2e-high}" "value: 1000" | k apply -f - >/dev/null

podgroup() {  # podgroup <name> <minMember> <priorityClass>
  printf '%s\n' "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" \
    "metadata: {name: $1, namespace: default}" "spec:" "  minMember: $2" "  queue: default" \
    "  priorityClassName: $3" "---"
}
pod() {  # pod <name> <group> <priorityClass>
  printf '%s\n' "apiVersion: v1" "kind: Pod" \
    "metadata:" "  name: $1" "  namespace: default" "  labels: {e2e-group: $2}" \
    "  annotations: {scheduling.k8s.io/group-name: $2}" \
    "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  priorityClassName: $3" \
    "  terminationGracePeriodSeconds: 1" "  containers:" "  - name: main" "    image: busybox" \
    "    resources:" "      requests: {cpu: \"1\"}" "      limits: {cpu: \"1\"}" "---"
}
phase_count() {  # phase_count <group> <phase>
  k get pods -l "e2e-group=$1" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c "^$2\$" || true
}
bound_count() { k get pods -l "e2e-group=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true; }
pod_count() { k get pods -l "e2e-group=$1" -o name | wc -l; }

# ---------------------------------------------------------------------------------- 1. low fills the cluster
{ podgroup low 2 e2e-low; for i in $(seq 0 15); do pod "low-$i" low e2e-low; done; } | k create -f - >/dev/null
low_running() { [ "$(phase_count low Running)" -eq 16 ]; }
wait_until "16 low pods Running" 90 low_running || fail "low: $(phase_count low Running)/16 Running"
note "1. low: 16/16 Running; the cluster is full"

# ------------------------------------------------------------------------------ 2. high preempts 4 low pods
{ podgroup high 4 e2e-high; for i in 0 1 2 3; do pod "high-$i" high e2e-high; done; } | k create -f - >/dev/null
high_running() { [ "$(phase_count high Running)" -eq 4 ]; }
wait_until "4 high pods Running" 120 high_running || {
  grep -i evict "$LOGS/scheduler.log" | tail -5 >&2 || true
  fail "high: $(bound_count high)/4 bound, $(phase_count high Running) Running; low pods left $(pod_count low)"
}
[ "$(pod_count low)" -eq 12 ] || fail "low: $(pod_count low) pods left, want 12 (exactly 4 evicted)"
[ "$(phase_count low Running)" -eq 12 ] || fail "low: $(phase_count low Running) Running, want 12"
evict_events() { k get events --field-selector reason=Evict -o jsonpath='{range .items[*]}{.involvedObject.kind}{"\n"}{end}'; }
has_events() { [ "$(evict_events | grep -c '^Pod$' || true)" -ge 4 ] && evict_events | grep -q '^PodGroup$'; }
wait_until "Evict events on pods and the PodGroup" 30 has_events || fail "Evict events: $(evict_events | sort | uniq -c | tr '\n' ' ')"
evict_msg=$(k get events --field-selector reason=Evict -o jsonpath='{.items[0].message}')
grep -q "for default/high" <<<"$evict_msg" || fail "Evict event message does not name the preemptor: $evict_msg"
note "2. high: 4/4 Running after evicting 4 low pods; low keeps 12 Running; Evict events present"

# --------------------------------------------------------------------------- 3. no further evictions
wait_scheduler_cycles "$HEALTH_PORT" 4 || fail "the scheduler stopped cycling"
[ "$(pod_count low)" -eq 12 ] || fail "low: $(pod_count low) pods left after settling, want 12"
note "3. settled: no further evictions"
echo "PASS preempt e2e"
