#!/usr/bin/env bash
# e2e: faults handled without a human (docs/faults.md), on the real control plane with `tephra nodesim`,
# `tephra controller` and `tephra scheduler`. Six nodes of 8 cpus; a vcjob of 4 pods of 6 cpus, so each pod
# has a node to itself and two nodes are spare. The controller runs with --fault-max-node-fraction 0.34 (two
# of six nodes) and --fault-avoid-seconds 20.
#  1. An XID condition (nodesim reports GpuXidError=True, as NVSentinel would set it) on the node of w-0: the
#     node is marked tephra.io/fault with a FaultDetected Event, w-0 is replaced on another node, the job
#     records PodFaultRestart and runs its 4 pods again (FaultRecovered, tephra_fault_recovery_seconds; its
#     PodGroup's FaultRecovery condition False/Recovered).
#  2. Node death (tephra.io/sim-fail: Ready=False, the kubelet gone): after the 5 s grace the pod is
#     force-deleted and replaced on the spare node.
#  3. A third fault exceeds the budget: the node gets tephra.io/fault-held with a FaultActionsHeld Event and
#     its pod is left alone.
#  4. The XID clears: FaultCleared, the node is avoided until tephra.io/fault-avoid-until; the budget frees, so
#     the held node's pod is replaced, and it can only land on the healed node once the 20 s avoidance ends.
# After each step: no pod of the job on a node marked faulted, 4 pods running. At the end the job's effective
# training ratio (tephra_job_effective_training_ratio) is below 1 and its PodGroup records the time lost.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
trap 'stop_roles' EXIT
NS=default

install_crds || fail "CRDs not Established"
start_sim_nodes 6 "$LOGS/nodesim.log" --nodes 6 --cpu 8 --gpus 0 || fail "6 simulated nodes not Ready"
CTRL_METRICS=$(free_port)
start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --metrics-addr "127.0.0.1:$CTRL_METRICS" --health-addr "127.0.0.1:$(free_port)" \
  --fault-max-node-fraction 0.34 --fault-avoid-seconds 20 || fail "tephra controller did not start"
start_scheduler "$LOGS/scheduler.log" || fail "tephra scheduler not ready"

dump() {
  k get pods -n $NS -o wide >&2 2>&1 || true
  k get nodes -o custom-columns='NAME:.metadata.name,FAULT:.metadata.annotations.tephra\.io/fault,HELD:.metadata.annotations.tephra\.io/fault-held,AVOID:.metadata.annotations.tephra\.io/fault-avoid-until' >&2 || true
  tail -n 30 "$LOGS/controller.log" >&2 || true
}
cat <<YAML | k apply -f - >/dev/null
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: $NS}
spec:
  minAvailable: 4
  schedulerName: volcano
  queue: default
  maxRetry: 10
  tasks:
  - name: w
    replicas: 4
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "3600", tephra.io/sim-exit-code: "0"}}
      spec:
        restartPolicy: Never
        terminationGracePeriodSeconds: 1
        containers: [{name: c, image: busybox, resources: {requests: {cpu: "6"}}}]
YAML
# "<pod> <node> <uid>" of the job's Running pods.
running() {
  k get pods -n $NS -l volcano.sh/job-name=train --field-selector status.phase=Running \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{" "}{.metadata.uid}{"\n"}{end}'
}
four_running() { [ "$(running | grep -c .)" -eq 4 ]; }
node_of() { k get pod -n $NS "$1" -o jsonpath='{.spec.nodeName}'; }
uid_of() { k get pod -n $NS "$1" -o jsonpath='{.metadata.uid}'; }
fault_of() { k get node "$1" -o jsonpath='{.metadata.annotations.tephra\.io/fault}'; }
has_event() {  # has_event <kind> <name> <reason>
  local out
  out=$(k get events -n "${4:-$NS}" --field-selector "involvedObject.kind=$1,involvedObject.name=$2,reason=$3" -o name) || return 1
  [ -n "$out" ]
}
# No pod of the job on a node the controller marked faulted.
check_no_pod_on_faulted() {
  local pod node
  while read -r pod node _; do
    [ -n "$pod" ] || continue
    [ -z "$(fault_of "$node")" ] || { dump; fail "$pod runs on $node, marked faulted ($(fault_of "$node"))"; }
  done < <(running)
}
replaced() {  # replaced <pod> <old-uid> <old-node>: a new pod of that name runs on another node
  local uid node
  uid=$(uid_of "$1" 2>/dev/null) || return 1
  node=$(node_of "$1")
  [ -n "$uid" ] && [ "$uid" != "$2" ] && [ -n "$node" ] && [ "$node" != "$3" ] && four_running
}
wait_until "job train: 4 pods running" 120 four_running || { dump; fail "train never ran 4 pods"; }

# ------------------------------------------------------------------- 1. GpuXidError on w-0's node
XID_NODE=$(node_of train-w-0)
OLD=$(uid_of train-w-0)
t0=$(date +%s.%N)
k annotate node "$XID_NODE" tephra.io/sim-conditions=GpuXidError >/dev/null
marked() { [ "$(fault_of "$1")" = "$2" ]; }
wait_until "$XID_NODE marked GpuXidError" 30 marked "$XID_NODE" GpuXidError || { dump; fail "the XID fault was not recorded"; }
t1=$(date +%s.%N)
wait_until "train-w-0 replaced off $XID_NODE" 60 replaced train-w-0 "$OLD" "$XID_NODE" ||
  { dump; fail "train-w-0 was not replaced on another node"; }
t2=$(date +%s.%N)
has_event Node "$XID_NODE" FaultDetected default || { dump; fail "no FaultDetected Event on $XID_NODE"; }
has_event Job train PodFaultRestart || { dump; fail "no PodFaultRestart Event on the job"; }
recovered_event() { has_event Job train FaultRecovered; }
wait_until "FaultRecovered on the job" 30 recovered_event || { dump; fail "no FaultRecovered Event on the job"; }
# The job's PodGroup tells the recovery too (kubectl describe podgroup): FaultRecovery False, Recovered.
pg_condition() {
  k get podgroups -n $NS -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].name}{" "}{range .status.conditions[?(@.type=="FaultRecovery")]}{.status}{"/"}{.reason}{end}{"\n"}{end}' |
    awk '$1 == "train" {print $2}'
}
pg_recovered() { [ "$(pg_condition)" = False/Recovered ]; }
wait_until "the PodGroup's FaultRecovery condition" 30 pg_recovered ||
  { dump; fail "the PodGroup's FaultRecovery condition is '$(pg_condition)', want False/Recovered"; }
check_no_pod_on_faulted
note "1. XID on $XID_NODE: recorded in $(sub t1 t0) s, the gang whole again in $(sub t2 t0) s"

# ----------------------------------------------------------------------------- 2. node death
DEAD_NODE=$(node_of train-w-1)
OLD=$(uid_of train-w-1)
t0=$(date +%s.%N)
k annotate node "$DEAD_NODE" tephra.io/sim-fail=true >/dev/null
wait_until "$DEAD_NODE marked NotReady" 40 marked "$DEAD_NODE" NotReady || { dump; fail "the node death was not recorded"; }
wait_until "train-w-1 replaced off $DEAD_NODE" 60 replaced train-w-1 "$OLD" "$DEAD_NODE" ||
  { dump; fail "train-w-1 was not replaced on another node"; }
t2=$(date +%s.%N)
check_no_pod_on_faulted
note "2. $DEAD_NODE dead: the gang whole again in $(sub t2 t0) s (5 s of it the NotReady grace)"

# ------------------------------------------------------------------ 3. over the node budget: held
HELD_POD=train-w-2
HELD_NODE=$(node_of $HELD_POD)
OLD_HELD=$(uid_of $HELD_POD)
k annotate node "$HELD_NODE" tephra.io/sim-conditions=GpuXidError >/dev/null
held_marked() { [ "$(k get node "$HELD_NODE" -o jsonpath='{.metadata.annotations.tephra\.io/fault-held}')" = GpuXidError ]; }
wait_until "$HELD_NODE held by the budget" 30 held_marked || { dump; fail "the third fault was not held"; }
has_event Node "$HELD_NODE" FaultActionsHeld default || { dump; fail "no FaultActionsHeld Event on $HELD_NODE"; }
[ -z "$(fault_of "$HELD_NODE")" ] || fail "$HELD_NODE was acted on over the budget"
[ "$(uid_of $HELD_POD)" = "$OLD_HELD" ] || fail "$HELD_POD was deleted over the budget"
note "3. $HELD_NODE: held (2 of 6 nodes already handled), its pod left alone"

# --------------------------------------- 4. the XID clears: avoided for 20 s, the held node goes next
t0=$(date +%s)
k annotate node "$XID_NODE" tephra.io/sim-conditions- >/dev/null
cleared() { [ -z "$(fault_of "$XID_NODE")" ] && [ -n "$(k get node "$XID_NODE" -o jsonpath='{.metadata.annotations.tephra\.io/fault-avoid-until}')" ]; }
wait_until "$XID_NODE cleared and avoided" 30 cleared || { dump; fail "the cleared fault was not recorded"; }
has_event Node "$XID_NODE" FaultCleared default || { dump; fail "no FaultCleared Event on $XID_NODE"; }
wait_until "$HELD_NODE marked now that the budget has room" 30 marked "$HELD_NODE" GpuXidError ||
  { dump; fail "the held fault was not taken up"; }
wait_until "$HELD_POD replaced on the healed node" 90 replaced $HELD_POD "$OLD_HELD" "$HELD_NODE" ||
  { dump; fail "$HELD_POD was not replaced"; }
t1=$(date +%s)
[ "$(node_of $HELD_POD)" = "$XID_NODE" ] || { dump; fail "$HELD_POD landed on $(node_of $HELD_POD), want the healed $XID_NODE"; }
[ $((t1 - t0)) -ge 15 ] || fail "$HELD_POD reached the healed node after $((t1 - t0)) s, inside its 20 s avoidance"
check_no_pod_on_faulted
metrics=$(curl -fsS "http://127.0.0.1:$CTRL_METRICS/metrics")
grep -q 'tephra_fault_detected_total{signal="GpuXidError"} 2' <<<"$metrics" || fail "metrics: $(grep tephra_fault_ <<<"$metrics")"
grep -q 'tephra_fault_pods_deleted_total{signal="NotReady",forced="true"} 1' <<<"$metrics" ||
  fail "metrics: $(grep tephra_fault_ <<<"$metrics")"
grep -q 'tephra_fault_recovery_seconds_count{signal="NotReady"} 1' <<<"$metrics" ||
  fail "metrics: $(grep tephra_fault_recovery <<<"$metrics")"
grep -q 'tephra_fault_recovery_seconds_count{signal="GpuXidError"} 2' <<<"$metrics" ||
  fail "metrics: $(grep tephra_fault_recovery <<<"$metrics")"
# Effective training time: the job ran short of its gang during each fault, so its ratio is below 1, and the
# account is on its PodGroup.
ratio=$(awk '$1 ~ /^tephra_job_effective_training_ratio\{namespace="default",job="train",/ {print $2}' <<<"$metrics")
[ -n "$ratio" ] || fail "no tephra_job_effective_training_ratio for train: $(grep effective <<<"$metrics")"
awk -v r="$ratio" 'BEGIN {exit !(r > 0 && r < 1)}' || fail "train's effective training ratio is $ratio, want in (0, 1)"
lost=$(k get podgroups -n $NS -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].name}{" "}{.metadata.annotations.tephra\.io/training-lost-seconds}{"\n"}{end}' | awk '$1 == "train" {print $2}')
awk -v l="${lost:-0}" 'BEGIN {exit !(l > 0)}' || fail "train's PodGroup records no lost training time ('$lost')"
note "4. $XID_NODE healed, avoided for $((t1 - t0)) s; $HELD_POD replaced there; train's effective training ratio $ratio ($lost s short of its gang)"
echo "PASS"
