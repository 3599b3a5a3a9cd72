#!/usr/bin/env bash
# e2e: "why is my job pending" on the real control plane (docs/why-pending.md), 2 simulated nodes x 4 cpu:
#  1. a gang larger than the cluster: enqueue refuses it, and `vcctl job why` names the gate, the short
#     resource and the amount; the PodGroup has the same facts in its conditions, and an Event says it once;
#  2. a job admitted but not placeable (enough free cpu in total, not on one node): NotEnoughResources says
#     so; both waiting jobs have positions 1 and 2 in their queue, and `vcctl queue why` lists them front first;
#  3. a job in a closed queue: QueueClosed, and what to do;
#  4. `kubectl wait --for=condition=Completed=Completed` works on a vcjob (docs/ctl.md);
#  5. errors name what is missing: an RBAC permission (a ServiceAccount with no rights), a kubeconfig.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=stack.sh
source "$HERE/stack.sh"   # lib/common.sh, LOGS, WORK (removed on exit), k, vcctl, ctl_stack_up

# Positions every 500 ms, so the test does not wait for the 2 s default.
ctl_stack_up --queue-position-interval 500ms

# job <name> <replicas> <cpu> [queue] [run-seconds]
job() {
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1}
spec:
  schedulerName: volcano
  queue: ${4:-default}
  minAvailable: $2
  tasks:
  - name: w
    replicas: $2
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "${5:-600}"}}
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox, resources: {requests: {cpu: "$3"}}}]
YAML
}
# why_says <job> <text>: `vcctl job why` output contains text.
why_says() { vcctl job why -N "$1" >"$WORK/why" 2>&1 && grep -qF -- "$2" "$WORK/why"; }

# ---------------------------------------------------------------------------- 1. larger than the cluster
# Two pods hold 3 of each node's 4 cpus for the whole test.
job blocker 2 3 >"$WORK/blocker.yaml"
vcctl job run -f "$WORK/blocker.yaml" >/dev/null
vcctl job wait blocker --for=Running --timeout 120s >/dev/null || fail "blocker did not start"
job huge 3 4 >"$WORK/huge.yaml"   # 12 cpu on an 8-cpu cluster
vcctl job run -f "$WORK/huge.yaml" >/dev/null
wait_until "job why huge says OverClusterCapacity" 60 why_says huge "OverClusterCapacity" ||
  fail "job why huge: $(cat "$WORK/why")"
grep -qE "short by cpu [0-9]" "$WORK/why" || fail "job why names no shortfall: $(cat "$WORK/why")"
grep -q "What next: The cluster is full" "$WORK/why" || fail "job why gives no next step: $(cat "$WORK/why")"
cat "$WORK/why" >&2
pg_huge=$(k get podgroups -o name | grep '/huge-' | head -1)
[ -n "$pg_huge" ] || fail "no PodGroup for huge"
k get "$pg_huge" -o jsonpath='{.status.conditions[?(@.type=="Unschedulable")].reason}' | grep -qx OverClusterCapacity ||
  fail "PodGroup condition: $(k get "$pg_huge" -o yaml)"
events_once() {
  [ "$(k get events --field-selector "involvedObject.name=${pg_huge#*/},reason=Unschedulable" -o name | wc -l)" -eq 1 ]
}
wait_until "one Unschedulable Event for huge" 30 events_once ||
  fail "Events for huge: $(k get events --field-selector "involvedObject.name=${pg_huge#*/}")"
vcctl job why -N huge -o json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["waiting"] and d["reason"] == "OverClusterCapacity" and "short by cpu" in d["message"], d' ||
  fail "job why -o json"
note "1. a gang larger than the cluster says OverClusterCapacity, short by cpu"

# ------------------------------------------------------------------- 2. admitted, not placeable; positions
# One pod of 1.5 cpu: admitted (the queue holds 6 of the cluster's 8 cpus), and 2 cpus are free in total, but
# each node has only 1 left.
job frag 1 1500m >"$WORK/frag.yaml"
vcctl job run -f "$WORK/frag.yaml" >/dev/null
wait_until "job why frag says NotEnoughResources" 60 why_says frag "NotEnoughResources" ||
  fail "job why frag: $(cat "$WORK/why")"
grep -qF "2 node(s) had insufficient cpu; the cluster has enough free in total (cpu 2) for the 1 pod(s) the gang still needs (cpu 1500m), but no node that fits them" "$WORK/why" ||
  fail "job why frag explanation: $(cat "$WORK/why")"
pg_frag=$(k get podgroups -o name | grep '/frag-' | head -1)
# Both waiting jobs have a place: 1 and 2. (Same priority, so the older PodGroup goes first; creation times
# have one-second resolution, and within one second the uid decides, so the order itself is not asserted.)
positions() { vcctl queue why -n default >"$WORK/qwhy" 2>&1 &&
  [ "$(awk '$1 ~ /^[0-9]+$/ {print $1, $2}' "$WORK/qwhy" | sort | tr '\n' ' ')" = "$1" ]; }
both_placed() {
  positions "1 default/${pg_huge#*/} 2 default/${pg_frag#*/} " || positions "1 default/${pg_frag#*/} 2 default/${pg_huge#*/} "
}
wait_until "positions 1 and 2 for huge and frag" 30 both_placed ||
  fail "queue why: $(cat "$WORK/qwhy") $(k get podgroups -o custom-columns=N:.metadata.name,C:.metadata.creationTimestamp,P:.status.phase)"
grep -q "Waiting:    2 job(s)" "$WORK/qwhy" || fail "queue why summary: $(cat "$WORK/qwhy")"
frag_pos=$(awk -v pg="default/${pg_frag#*/}" '$2 == pg {print $1}' "$WORK/qwhy")
why_says frag "Position:  $frag_pos" || fail "job why frag position (queue why says $frag_pos): $(cat "$WORK/why")"
cat "$WORK/qwhy" >&2
note "2. NotEnoughResources on fragmented nodes; positions 1 and 2; queue why"

# ----------------------------------------------------------------------------------------- 3. closed queue
vcctl queue create -n shut
vcctl queue operate -n shut -a close
closed() { [ "$(k get queue shut -o jsonpath='{.status.state}')" = Closed ]; }
wait_until "queue shut Closed" 60 closed || fail "queue shut not Closed"
job late 1 100m shut >"$WORK/late.yaml"
vcctl job run -f "$WORK/late.yaml" >/dev/null
wait_until "job why late says QueueClosed" 60 why_says late "QueueClosed" || fail "job why late: $(cat "$WORK/why")"
grep -q "vcctl queue operate -n shut -a open" "$WORK/why" || fail "job why late: no next step: $(cat "$WORK/why")"
note "3. closed queue: QueueClosed and how to open it"

# ----------------------------------------------------------------------------------- 4. kubectl wait on vcjob
for j in huge frag late; do vcctl job delete -N "$j" >/dev/null; done
job quick 1 100m default 1 >"$WORK/quick.yaml"
vcctl job run -f "$WORK/quick.yaml" >/dev/null
k wait --for=condition=Completed=Completed --timeout 120s vcjob/quick >/dev/null ||
  fail "kubectl wait --for=condition=Completed=Completed: $(k get vcjob quick -o yaml)"
note "4. kubectl wait --for=condition=Completed=Completed vcjob/quick"

# ----------------------------------------------------------------------- 5. errors that say what to do
# A user without rights on vcjobs: the missing permission is named. No kubeconfig at all: where it looked.
# shellcheck source=../lib/chart.sh
source "$HERE/../lib/chart.sh"
k create serviceaccount nobody >/dev/null
chart_sa_kubeconfig default nobody "$WORK/nobody.kubeconfig" || fail "no token for serviceaccount nobody"
rc=0; vcctl job why -N quick -k "$WORK/nobody.kubeconfig" >"$WORK/out" 2>&1 || rc=$?   # -k is a flag of each command, as in vcctl
[ "$rc" -eq 1 ] || fail "forbidden: exit $rc, want 1: $(cat "$WORK/out")"
grep -qF 'Missing RBAC permission: verb "get" on resource "jobs" in API group "batch.volcano.sh"' "$WORK/out" ||
  fail "forbidden message: $(cat "$WORK/out")"
rc=0; env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST "$WORK/vcctl" job list >"$WORK/out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q "no kubeconfig found. Looked at" "$WORK/out" || fail "no kubeconfig: exit $rc: $(cat "$WORK/out")"
note "5. forbidden names the missing permission; no kubeconfig says where it looked"
echo PASS
