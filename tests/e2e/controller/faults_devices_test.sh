#!/usr/bin/env bash
# e2e: faults a pod meets through its devices, and jobs that say how their faults are handled (docs/faults.md),
# on the real control plane with `tephra nodesim`, `tephra controller` and `tephra scheduler`. Six nodes of
# 8 GPUs; the controller may act on half of them at once.
#  1. A GPU goes bad under a running pod (tephra.io/sim-unhealthy-gpus=1: nodesim fails the pod holding the
#     last card with a CUDA error, as the workload would): the pod of job `cuda` (no policies, so Volcano's
#     default would leave it failed and the job short of its gang) is replaced on another node, and the job
#     records PodFaultRestart saying the pod failed during a fault.
#  2. A pod the kubelet refuses at admission (UnexpectedAdmissionError: it is bound to a node with no free
#     GPU, as a scheduler with a stale view would do): it is deleted, and the node gets a FaultDetected Event
#     and tephra.io/fault-avoid-until, so Tephra's scheduler keeps off it for a while.
#  3. A job labelled `fault-scheduling: grace` without `pod-rescheduling: on` (Ascend's job-level
#     rescheduling): an XID under one of its pods replaces both its pods, with a JobFaultRestart Event.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
trap 'stop_roles' EXIT
NS=default

install_crds || fail "CRDs not Established"
start_sim_nodes 6 "$LOGS/nodesim.log" --nodes 6 --cpu 16 --gpus 8 || fail "6 simulated nodes not Ready"
start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --metrics-addr "127.0.0.1:$(free_port)" --health-addr "127.0.0.1:$(free_port)" \
  --fault-max-node-fraction 0.5 || fail "tephra controller did not start"
start_scheduler "$LOGS/scheduler.log" || fail "tephra scheduler not ready"

dump() {
  k get pods -n $NS -o wide >&2 2>&1 || true
  k get nodes -o custom-columns='NAME:.metadata.name,FAULT:.metadata.annotations.tephra\.io/fault,AVOID:.metadata.annotations.tephra\.io/fault-avoid-until' >&2 || true
  tail -n 30 "$LOGS/controller.log" >&2 || true
}
job() {  # job <name> <pods> <gpus> [labels-flow-map]
  local labels=${4:-}
  [ -n "$labels" ] || labels='{}'
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1, namespace: $NS, labels: $labels}
spec:
  minAvailable: $2
  schedulerName: volcano
  queue: default
  maxRetry: 10
  tasks:
  - name: w
    replicas: $2
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "3600", tephra.io/sim-exit-code: "0"}}
      spec:
        restartPolicy: Never
        terminationGracePeriodSeconds: 1
        containers: [{name: c, image: busybox, resources: {limits: {cpu: "1", nvidia.com/gpu: "$3"}}}]
---
YAML
}
{ job cuda 2 8; job whole 2 2 '{fault-scheduling: grace}'; } | k apply -f - >/dev/null

# "<pod> <node> <uid>" of a job's Running pods that are not being deleted.
running() {
  local out
  out=$(k get pods -n $NS -l "volcano.sh/job-name=$1" --field-selector status.phase=Running \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{" "}{.metadata.uid}{" "}{.metadata.deletionTimestamp}{"\n"}{end}')
  awk 'NF == 3' <<<"$out"
}
whole() { [ "$(running "$1" | grep -c .)" -eq "$2" ]; }
node_of() { k get pod -n $NS "$1" -o jsonpath='{.spec.nodeName}'; }
uid_of() { k get pod -n $NS "$1" -o jsonpath='{.metadata.uid}'; }
fault_of() { k get node "$1" -o jsonpath='{.metadata.annotations.tephra\.io/fault}'; }
event_message() {  # event_message <kind> <name> <reason> [ns]
  k get events -n "${4:-$NS}" --field-selector "involvedObject.kind=$1,involvedObject.name=$2,reason=$3" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}
has_event() { [ -n "$(event_message "$@")" ]; }
wait_until "cuda and whole running" 120 eval 'whole cuda 2 && whole whole 2' || { dump; fail "the jobs never ran"; }

# ------------------------------------------------------- 1. a GPU goes bad under cuda-w-0: the pod fails
GPU_NODE=$(node_of cuda-w-0)
OLD=$(uid_of cuda-w-0)
k annotate node "$GPU_NODE" tephra.io/sim-unhealthy-gpus=1 >/dev/null
replaced() {  # replaced <job> <pods> <pod> <old-uid> <old-node>
  local uid node
  uid=$(uid_of "$3" 2>/dev/null) || return 1
  node=$(node_of "$3")
  [ -n "$uid" ] && [ "$uid" != "$4" ] && [ -n "$node" ] && [ "$node" != "$5" ] && whole "$1" "$2"
}
wait_until "cuda-w-0 replaced off $GPU_NODE" 60 replaced cuda 2 cuda-w-0 "$OLD" "$GPU_NODE" ||
  { dump; fail "cuda-w-0 was not replaced after its GPU went bad"; }
msg=$(event_message Job cuda PodFaultRestart)
grep -qF "pod cuda-w-0 failed on node $GPU_NODE during a fault" <<<"$msg" ||
  { dump; fail "the job's PodFaultRestart does not say the pod failed during the fault: $msg"; }
grep -q 'fell off the bus\|fallen off the bus' "$LOGS/nodesim.log" || fail "nodesim did not fail the pod with a device error"
[ "$(k get job.batch.volcano.sh cuda -n $NS -o jsonpath='{.status.state.phase}')" = Running ] || { dump; fail "cuda is not Running"; }
note "1. GPU 7 of $GPU_NODE bad: cuda-w-0 failed with a CUDA error and was replaced; cuda runs 2 pods"

# --------------------------------------------- 2. refused at admission: deleted, and the node avoided
FULL_NODE=$(node_of cuda-w-1)
cat <<YAML | k apply -f - >/dev/null
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: stale, namespace: $NS}
spec: {minMember: 1, queue: default}
---
apiVersion: v1
kind: Pod
metadata:
  name: stale
  namespace: $NS
  annotations: {scheduling.k8s.io/group-name: stale, tephra.io/sim-run-seconds: "3600"}
spec:
  nodeName: $FULL_NODE
  restartPolicy: Never
  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: "1"}}}]
YAML
gone() { ! k get pod stale -n $NS >/dev/null 2>&1; }
wait_until "the refused pod deleted" 60 gone || { dump; fail "the pod refused at admission was not deleted"; }
avoided() { [ -n "$(k get node "$FULL_NODE" -o jsonpath='{.metadata.annotations.tephra\.io/fault-avoid-until}')" ]; }
wait_until "$FULL_NODE avoided" 30 avoided || { dump; fail "$FULL_NODE was not marked avoided"; }
msg=$(event_message Node "$FULL_NODE" FaultDetected default)
grep -qF "UnexpectedAdmissionError: pod $NS/stale" <<<"$msg" || { dump; fail "no FaultDetected naming the refused pod: $msg"; }
[ -z "$(fault_of "$FULL_NODE")" ] || fail "$FULL_NODE was marked faulted; a refusal only avoids it for a while"
note "2. stale pod refused on $FULL_NODE: deleted; the node avoided until $(k get node "$FULL_NODE" -o jsonpath='{.metadata.annotations.tephra\.io/fault-avoid-until}')"

# ------------------------------------------------- 3. fault-scheduling: grace -> the whole job moves
XID_NODE=$(node_of whole-w-0)
OTHER=$(node_of whole-w-1)
OLD0=$(uid_of whole-w-0)
OLD1=$(uid_of whole-w-1)
k annotate node "$XID_NODE" tephra.io/sim-conditions=GpuXidError >/dev/null
both_new() {
  local u0 u1
  u0=$(uid_of whole-w-0 2>/dev/null) && u1=$(uid_of whole-w-1 2>/dev/null) || return 1
  [ "$u0" != "$OLD0" ] && [ "$u1" != "$OLD1" ] && whole whole 2
}
wait_until "both pods of whole replaced" 60 both_new || { dump; fail "the whole job was not rescheduled"; }
msg=$(event_message Job whole JobFaultRestart)
grep -qF "fault-scheduling=grace" <<<"$msg" || { dump; fail "no JobFaultRestart naming fault-scheduling=grace: $msg"; }
while read -r pod node _; do
  [ "$node" != "$XID_NODE" ] || { dump; fail "$pod is back on the faulted $XID_NODE"; }
done < <(running whole)
note "3. XID on $XID_NODE: whole-w-0 and whole-w-1 (on $OTHER) both replaced, as fault-scheduling=grace asks"
echo "PASS"
