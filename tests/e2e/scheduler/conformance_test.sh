#!/usr/bin/env bash
# e2e for three of Volcano's scheduling and queue rules (docs/volcano-conformance.md, "Preemption, queues and
# priorities"), on the real control plane with `tephra controller`, `tephra scheduler` and two nodesim nodes of
# 4 cpu (run by run-with-cluster.sh: KUBECONFIG, KUBECTL, TEPHRA_BIN, TEPHRA_SOURCE_DIR).
#  1. Queue.spec.priority orders queues before shares: two PodGroups that each need the whole cluster wait in
#     queues qa (priority 0) and qb (priority 10) when the scheduler starts; enqueue admits qb's (by name and
#     equal shares, qa's would go first) and refuses qa's.
#  2. volcano.sh/preemptable: "false" (annotation, else label): of eight low-priority pods filling the
#     cluster, seven are marked; a high-priority pod evicts the one unmarked pod (the oldest, which is never
#     the first pick when all are offered), and a second high-priority pod evicts nothing.
#  3. root cannot be closed: a CloseQueue Command for root is consumed with a CloseQueueRejected Warning Event
#     and root and default stay Open; `vcctl queue operate -n root -a close` refuses without a Command.
#  4. Victims go one by one, and a globalDefault PriorityClass gives a PodGroup without a class its value: two
#     low-priority gangs of four (minMember 4) fill the cluster; a PodGroup and pod without a class, after a
#     globalDefault class of value 500 exists, preempt exactly one pod (not a whole gang), and only because the
#     PodGroup's priority is 500 (with 0 it could take nothing from a priority-10 job).
# Each "nothing happened" check waits for a state the scheduler or controller writes after the decision
# (a PodGroup condition, a consumed Command), never for a fixed time.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
e2e_begin
NS=default

install_crds || fail "CRDs not Established"
start_sim_nodes 2 "$LOGS/nodesim.log" --nodes 2 --cpu 4 --memory 16Gi || fail "nodes not Ready"

# Queues before any scheduler: root and default as the scheduler would create them, and the two queues of 1.
create_default_queues || fail "default queues not created"
cat <<YAML | k apply -f - >/dev/null
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: qa}
spec: {weight: 1, reclaimable: true, parent: root, priority: 0}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: qb}
spec: {weight: 1, reclaimable: true, parent: root, priority: 10}
YAML
start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --metrics-addr "127.0.0.1:$(free_port)" \
  --health-addr "127.0.0.1:$(free_port)" || fail "tephra controller did not start"
queue_state() { k get queue "$1" -o jsonpath='{.status.state}'; }
all_open() { for q in root default qa qb; do [ "$(queue_state $q)" = Open ] || return 1; done; }
wait_until "queues Open" 30 all_open || fail "queue states: root=$(queue_state root) qa=$(queue_state qa) qb=$(queue_state qb)"

printf '%s\n' "apiVersion: scheduling.k8s.io/v1" "kind: PriorityClass" "metadata: {name: e2e-low}" "value: 10" "---" \
  "apiVersion: scheduling.k8s.io/v1" "kind: PriorityClass" "metadata: {name: e2e-high}" "value: 1000" | k apply -f - >/dev/null

pg_phase() { k get podgroup -n $NS "$1" -o jsonpath='{.status.phase}'; }
pg_cond() { k get podgroup -n $NS "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}"; }
has_cond() { [ "$(pg_cond "$1" "$2")" = True ]; }

# ------------------------------------------------------------------------ 1. queue priority before share
# Both need the cluster's 8 cpu; overcommit (idle x 1.2) admits one of them. Both exist before the scheduler's
# first cycle, so that cycle's queue order alone decides.
for q in qa qb; do
  printf '%s\n' "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" \
    "metadata: {name: whole-$q, namespace: $NS}" "spec:" "  minMember: 1" "  queue: $q" \
    "  minResources: {cpu: \"8\"}" "---"
done | k create -f - >/dev/null
CONF=$WORK/volcano-scheduler.conf
# Helm's configuration (gang's and drf's enablePreemptable off) with preempt added.
printf '%s\n' 'actions: "enqueue, allocate, preempt, backfill"' 'tiers:' '- plugins:' '  - name: priority' \
  '  - name: gang' '    enablePreemptable: false' '  - name: conformance' '- plugins:' '  - name: overcommit' \
  '  - name: drf' '    enablePreemptable: false' '  - name: predicates' '  - name: proportion' \
  '  - name: nodeorder' >"$CONF"
start_scheduler "$LOGS/scheduler.log" --log-level debug --scheduler-conf "$CONF" || fail "tephra scheduler not ready"
# whole-qa's refusal is written by the same cycle that decided on whole-qb.
wait_until "whole-qa refused" 60 has_cond whole-qa Unschedulable ||
  fail "whole-qa: phase '$(pg_phase whole-qa)', no Unschedulable condition"
[ "$(pg_phase whole-qb)" = Inqueue ] || fail "whole-qb (queue priority 10) not admitted: phase '$(pg_phase whole-qb)'"
[ "$(pg_phase whole-qa)" != Inqueue ] || fail "whole-qa (queue priority 0) admitted before the higher-priority queue"
note "1. the priority-10 queue's PodGroup was admitted first, the other refused"
k delete podgroup -n $NS whole-qa whole-qb >/dev/null

# ----------------------------------------------------------------------- 2. volcano.sh/preemptable: false
podgroup() {  # podgroup <name> <minMember> <priorityClass>
  printf '%s\n' "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" \
    "metadata: {name: $1, namespace: $NS}" "spec:" "  minMember: $2" "  queue: default" \
    "  priorityClassName: $3" "---"
}
pod() {  # pod <name> <group> <priorityClass> <extra metadata line>
  printf '%s\n' "apiVersion: v1" "kind: Pod" \
    "metadata:" "  name: $1" "  namespace: $NS" "  labels: {e2e-group: $2${4:+, $4}}" \
    "  annotations: {scheduling.k8s.io/group-name: $2${5:+, $5}}" \
    "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  priorityClassName: $3" \
    "  terminationGracePeriodSeconds: 1" "  containers:" "  - name: main" "    image: busybox" \
    "    resources:" "      requests: {cpu: \"1\"}" "      limits: {cpu: \"1\"}" "---"
}
phase_count() { k get pods -n $NS -l "e2e-group=$1" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c "^$2\$" || true; }
pod_count() { k get pods -n $NS -l "e2e-group=$1" -o name | wc -l; }
# The unmarked pod is created first: victims go youngest first, so if the marks were ignored a marked pod
# would be taken.
{
  podgroup low 1 e2e-low
  pod low-free low e2e-low
  for i in 0 1 2 3; do pod "low-ann-$i" low e2e-low "" 'volcano.sh/preemptable: "false"'; done
  for i in 0 1 2; do pod "low-lbl-$i" low e2e-low 'volcano.sh/preemptable: "false"'; done
} | k create -f - >/dev/null
low_running() { [ "$(phase_count low Running)" -eq 8 ]; }
wait_until "8 low pods Running" 90 low_running || fail "low: $(phase_count low Running)/8 Running"
{ podgroup high 1 e2e-high; pod high-0 high e2e-high; } | k create -f - >/dev/null
high_running() { [ "$(phase_count high Running)" -eq "$1" ]; }
wait_until "high-0 Running" 120 high_running 1 || fail "high-0 not Running; low pods left: $(pod_count low)"
k get pod -n $NS low-free >/dev/null 2>&1 && fail "the unmarked pod low-free was not the victim"
[ "$(pod_count low)" -eq 7 ] || fail "low: $(pod_count low) pods left, want the 7 marked ones"
# A second preemptor finds only marked pods: nothing is evicted. Its Unschedulable condition is written after
# the cycle whose preempt action tried it.
{ podgroup high2 1 e2e-high; pod high2-0 high2 e2e-high; } | k create -f - >/dev/null
wait_until "high2 Unschedulable" 60 has_cond high2 Unschedulable || fail "high2: no Unschedulable condition"
[ "$(pod_count low)" -eq 7 ] && [ "$(phase_count low Running)" -eq 7 ] ||
  fail "a marked pod was evicted: $(pod_count low) low pods, $(phase_count low Running) Running"
note "2. only the unmarked pod was a victim; the marked ones (annotation and label) stayed"

# ---------------------------------------------------------------------------------- 3. root stays open
cat <<YAML | k create -f - >/dev/null
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {generateName: root-closequeue-, namespace: default}
action: CloseQueue
target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: root, uid: $(k get queue root -o jsonpath='{.metadata.uid}')}
YAML
rejected() {
  k get events -n default --field-selector reason=CloseQueueRejected,involvedObject.name=root -o name | grep -q .
}
wait_until "CloseQueueRejected on root" 30 rejected || fail "no CloseQueueRejected Event for root"
no_commands() { [ "$(k get commands -n default -o name | wc -l)" -eq 0 ]; }
wait_until "command consumed" 30 no_commands || fail "the Command was not consumed"
for q in root default qa qb; do
  [ "$(queue_state $q)" = Open ] || fail "queue $q is '$(queue_state $q)' after closing root was refused"
done
rc=0
out=$("$TEPHRA_BIN" ctl queue operate -n root -a close 2>&1) || rc=$?
[ $rc -ne 0 ] || fail "vcctl queue operate -n root -a close succeeded"
grep -q "the root queue cannot be closed" <<<"$out" || fail "vcctl's refusal does not say why: $out"
no_commands || fail "vcctl created a Command for closing root"
note "3. root cannot be closed: the Command refused with an Event, vcctl refuses up front"

# ------------------------------------------- 4. victims one by one; a globalDefault class for PodGroups
k delete podgroup -n $NS low high high2 >/dev/null
k delete pod -n $NS -l 'e2e-group in (low,high,high2)' --wait=true --timeout 60s >/dev/null || fail "part 2's pods not deleted"
{
  for g in ga gb; do
    printf '%s\n' "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" "metadata: {name: $g, namespace: $NS}" \
      "spec:" "  minMember: 4" "  queue: default" "  priorityClassName: e2e-low" "---"
    for i in 0 1 2 3; do pod "$g-$i" "$g" e2e-low; done
  done
} | k create -f - >/dev/null
gangs_running() { [ "$(phase_count ga Running)" -eq 4 ] && [ "$(phase_count gb Running)" -eq 4 ]; }
wait_until "gangs ga and gb Running" 90 gangs_running || fail "ga $(phase_count ga Running)/4, gb $(phase_count gb Running)/4 Running"
printf '%s\n' "apiVersion: scheduling.k8s.io/v1" "kind: PriorityClass" "metadata: {name: e2e-default}" "value: 500" \
  "globalDefault: true" | k apply -f - >/dev/null
# Neither the PodGroup nor the pod names a class: the API server gives the pod 500, the scheduler the PodGroup.
printf '%s\n' "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" "metadata: {name: plain, namespace: $NS}" \
  "spec:" "  minMember: 1" "  queue: default" "---" \
  "apiVersion: v1" "kind: Pod" "metadata:" "  name: plain-0" "  namespace: $NS" "  labels: {e2e-group: plain}" \
  "  annotations: {scheduling.k8s.io/group-name: plain}" "spec:" "  schedulerName: volcano" "  restartPolicy: Never" \
  "  terminationGracePeriodSeconds: 1" "  containers:" "  - name: main" "    image: busybox" "    resources:" \
  "      requests: {cpu: \"1\"}" "      limits: {cpu: \"1\"}" | k create -f - >/dev/null
[ "$(k get pod -n $NS plain-0 -o jsonpath='{.spec.priority}')" = 500 ] || fail "the API server did not give plain-0 the globalDefault priority"
plain_running() { [ "$(phase_count plain Running)" -eq 1 ]; }
wait_until "plain-0 Running" 120 plain_running ||
  fail "plain-0 not Running (a PodGroup without a class must get the globalDefault 500): $(k get podgroup -n $NS plain -o jsonpath='{.status.conditions}')"
left=$(( $(pod_count ga) + $(pod_count gb) ))
[ "$left" -eq 7 ] || fail "$(( 8 - left )) pods of the low gangs were evicted for one 1-cpu pod, want exactly 1"
note "4. the classless PodGroup ran at the globalDefault priority and took exactly one pod"
echo PASS
