#!/usr/bin/env bash
# e2e: plain pods (schedulerName volcano, no PodGroup) on the real control plane (docs/scheduler-process.md,
# "Plain pods").
#  1. Scheduler only, no controller: a bare pod is bound although no PodGroup exists (it is a gang of one);
#     a pod that names a missing PodGroup, and a ReplicaSet's pod, are not (their gang is the controller's to
#     define), checked after several more scheduling cycles.
#  2. The controller starts: the bare pod's PodGroup podgroup-<uid> appears and the scheduler writes it
#     Running (the same job, not a second one); the ReplicaSet (group-min-member 3, 3 replicas) is placed as a
#     gang of 3.
#  3. A ReplicaSet asking for a gang of 3 with 2 replicas never binds a pod alone.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
trap 'stop_roles' EXIT

install_crds || fail "CRDs not Established"
start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --nodes 4 --cpu 8 --gpus 0 || fail "nodesim did not start"
node_count() { [ "$(k get nodes -o name | wc -l)" -ge 4 ]; }
wait_until "4 nodes registered" 90 node_count || fail "nodesim did not register 4 nodes"
k wait --for condition=Ready --timeout 60s node --all >/dev/null || fail "simulated nodes not Ready"
k taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true

METRICS_PORT=$(free_port)
start_role scheduler "$LOGS/scheduler.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --listen-address "127.0.0.1:$METRICS_PORT" --health-addr 0 || fail "tephra scheduler did not start"
have_queue() { k get queue default; }
wait_until "default queue" 60 have_queue || fail "scheduler did not create the default queue"

replicaset() {  # replicaset <name> <replicas> <min-member>
  cat <<YAML
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: $1
  namespace: default
  annotations: {scheduling.volcano.sh/group-min-member: "$3"}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}, annotations: {tephra.io/sim-run-seconds: "600"}}
    spec:
      schedulerName: volcano
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
YAML
}

# ------------------------------------------------------------------- 1. no controller: only the bare pod binds
cat <<YAML | k apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: bare
  namespace: default
  annotations: {tephra.io/sim-run-seconds: "600"}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: named
  namespace: default
  annotations: {scheduling.k8s.io/group-name: not-yet}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
YAML
replicaset gang3 3 3 | k apply -f - >/dev/null
node_of() { k get pod -n default "$1" -o jsonpath='{.spec.nodeName}'; }
bound() { [ -n "$(node_of "$1")" ]; }
wait_until "bare pod bound" 60 bound bare || fail "the bare pod was not bound without a PodGroup"
k get podgroup -n default -o name | grep -q . && fail "a PodGroup exists although no controller runs: $(k get podgroup -A)"
rs_pods() { k get pods -n default -l "app=$1" -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}'; }
three_pods() { [ "$(rs_pods gang3 | wc -l)" -eq 3 ]; }
wait_until "3 ReplicaSet pods" 60 three_pods || fail "the ReplicaSet did not create its pods"
wait_scheduler_cycles "$METRICS_PORT" 3 || fail "the scheduler stopped cycling"
[ -z "$(node_of named)" ] || fail "a pod naming a missing PodGroup was bound"
rs_pods gang3 | grep -qv '=$' && fail "a ReplicaSet pod was bound before its PodGroup existed: $(rs_pods gang3)"
note "1. bare pod bound without a PodGroup; grouped and owned pods wait"

# ------------------------------------------------------- 2. the controller catches up; no second job, no split
start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --metrics-addr 0 --health-addr 0 || fail "tephra controller did not start"
uid=$(k get pod -n default bare -o jsonpath='{.metadata.uid}')
pg_phase() { [ "$(k get podgroup -n default "$1" -o jsonpath='{.status.phase}')" = "$2" ]; }
wait_until "podgroup-$uid Running" 60 pg_phase "podgroup-$uid" Running || \
  fail "the bare pod's PodGroup did not reach Running: $(k get podgroup -n default "podgroup-$uid" -o yaml)"
all_bound() { ! rs_pods "$1" | grep -q '=$' && [ "$(rs_pods "$1" | wc -l)" -eq "$2" ]; }
wait_until "gang3 bound" 60 all_bound gang3 3 || fail "the ReplicaSet's gang of 3 was not placed: $(rs_pods gang3)"
note "2. PodGroup of the bare pod Running; ReplicaSet placed as a gang of 3"

# -------------------------------------------------------------------- 3. a gang that cannot fill never splits
replicaset short 2 3 | k apply -f - >/dev/null
rs_uid() { k get replicaset -n default "$1" -o jsonpath='{.metadata.uid}'; }
pg_exists() { k get podgroup -n default "podgroup-$(rs_uid short)"; }
wait_until "short's PodGroup" 60 pg_exists || fail "no PodGroup for ReplicaSet short"
annotated() { [ "$(k get pods -n default -l app=short -o jsonpath='{.items[*].metadata.annotations.scheduling\.k8s\.io/group-name}' | wc -w)" -eq 2 ]; }
wait_until "short's pods annotated" 60 annotated || fail "short's pods were not annotated"
wait_scheduler_cycles "$METRICS_PORT" 3 || fail "the scheduler stopped cycling"
rs_pods short | grep -qv '=$' && fail "a pod of an incomplete gang was bound alone: $(rs_pods short)"
note "3. a 2-pod ReplicaSet asking for a gang of 3 binds nothing"
echo "PASS plain pods"
