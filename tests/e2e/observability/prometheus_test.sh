#!/usr/bin/env bash
# e2e: the chart's Grafana dashboards (charts/tephra/dashboards/, docs/dashboards.md) against a real Prometheus
# (run by run-with-cluster.sh: KUBECONFIG, KUBECTL, TEPHRA_BIN, TEPHRA_SOURCE_DIR).
#  1. nodesim (4 nodes x 8 cpu x 4 GPUs, two leaves under one spine, HyperNodes for them), the webhook, the
#     controller and the scheduler (enqueue, allocate, preempt, backfill; EASY reservations) run on loopback;
#     Prometheus (Debian package) scrapes each role's /metrics every second. Every target must be up and the
#     scheduler's cycle counter must advance in Prometheus.
#  2. A workload that moves the metrics: queues team-a and team-b (team-b capped, with GPUs); a job that
#     completes, one that fails (exit 1, PodFailed -> RestartJob, maxRetry 1: restarted once, then Failed), one
#     that fails once and then completes after its restart; a GPU training gang whose node reports a GPU Xid
#     error (the fault controller records it, replaces the pod, the job is whole again elsewhere); a
#     low-priority filler
#     preempted by a high-priority gang; then a gang too wide to start now (a reservation, a queue position),
#     a job no node can take (unschedulable), and a second node losing a GPU, which the node budget holds.
#     The faulted node stays faulted through this part: healed earlier, it would free the budget (the second
#     fault would not be held) and leave the urgent gang room without preemption (empty eviction panels).
#  3. Once every target has been scraped twice after the workload, every panel target and every template
#     variable of every dashboard is queried (check_dashboards.py: variables -> .*, $__rate_interval -> 1m,
#     $__range -> 10m) and must return at least one series. The table panel -> series count goes to stdout
#     and to $TEPHRA_E2E_LOG_DIR/dashboards/; an empty panel is named with its expression and why (metric
#     not implemented yet in the C++ sources, or not produced by the run).
#  4. The faulted node heals (--fault-avoid-seconds 0: schedulable at once) and a new pod that no node matches
#     must stay unbound (issue 40: runs that healed the node saw such a pod bound). Then every bound pod is
#     audited against its node (lib/placement_audit.py) and the bind guard must have refused nothing.
# Every wait is on an observable change (wait_until), never a bare sleep.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source=../lib/prometheus.sh
source "$HERE/../lib/prometheus.sh"
e2e_begin
NS=default

# ------------------------------------------------------------------------------------------- 1. the stack
install_crds || fail "CRDs not Established"
NODESIM_METRICS=$(free_port)
start_sim_nodes 4 "$LOGS/nodesim.log" --nodes 4 --cpu 8 --memory 32Gi --gpus 4 --nodes-per-leaf 2 \
  --leaves-per-spine 2 --metrics-addr "127.0.0.1:$NODESIM_METRICS" || fail "4 simulated nodes not Ready"

hypernode() {  # hypernode <name> <tier> <member-type> <selector yaml (flow)>...
  local name=$1 tier=$2 type=$3; shift 3
  printf '%s\n' "apiVersion: topology.volcano.sh/v1alpha1" "kind: HyperNode" "metadata: {name: $name}" \
    "spec:" "  tier: $tier" "  members:"
  for sel in "$@"; do printf '  - {type: %s, selector: %s}\n' "$type" "$sel"; done
  echo "---"
}
{
  hypernode e2e-leaf-0 1 Node "{labelMatch: {matchLabels: {tephra.io/leaf: tephra-sim-leaf-0}}}"
  hypernode e2e-leaf-1 1 Node "{labelMatch: {matchLabels: {tephra.io/leaf: tephra-sim-leaf-1}}}"
  hypernode e2e-spine-0 2 HyperNode "{exactMatch: {name: e2e-leaf-0}}" "{exactMatch: {name: e2e-leaf-1}}"
} | k apply -f - >/dev/null || fail "HyperNodes not created"

k create namespace volcano-system >/dev/null 2>&1 || true
WH_PORT=$(free_port) WH_METRICS=$(free_port) WH_HEALTH=$(free_port)
start_role webhook "$LOGS/webhook.log" --kubeconfig "$KUBECONFIG" --listen-address 127.0.0.1 --port "$WH_PORT" \
  --webhook-url "https://127.0.0.1:$WH_PORT" --metrics-addr "127.0.0.1:$WH_METRICS" \
  --health-addr "127.0.0.1:$WH_HEALTH" || fail "tephra webhook did not start"
wh_ready() { curl -fsS "http://127.0.0.1:$WH_HEALTH/readyz"; }
wait_until "webhook ready" 60 wh_ready || fail "webhook not ready"
wh_configured() { k get validatingwebhookconfigurations -o name | grep -q jobs-validate; }
wait_until "webhook configurations" 30 wh_configured || fail "webhook configurations not written"

CTRL_METRICS=$(free_port)
start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --metrics-addr "127.0.0.1:$CTRL_METRICS" --health-addr "127.0.0.1:$(free_port)" --fault-avoid-seconds 0 ||
  fail "tephra controller did not start"

CONF=$WORK/volcano-scheduler.conf
cat >"$CONF" <<'YAML'
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
YAML
SCHED_METRICS=$(free_port)
start_scheduler "$LOGS/scheduler.log" --scheduler-conf "$CONF" --metrics-addr "127.0.0.1:$SCHED_METRICS" \
  --reservation-depth 1 --estimate-resolution 1s --queue-position-interval 500ms || fail "tephra scheduler not ready"

start_prometheus "$WORK/prometheus" "$LOGS/prometheus.log" \
  tephra-scheduler="127.0.0.1:$SCHED_METRICS" tephra-controller="127.0.0.1:$CTRL_METRICS" \
  tephra-webhook="127.0.0.1:$WH_METRICS" tephra-nodesim="127.0.0.1:$NODESIM_METRICS" ||
  fail "prometheus did not start"
wait_prom_targets_up 60 || fail "not every role is up in Prometheus"
prom_cycles() { prom_query 'max(tephra_scheduler_cycles_total)' | python3 -c 'import json,sys; r=json.load(sys.stdin); print(int(float(r[0]["value"][1])) if r else -1)'; }
c0=$(prom_cycles)
cycles_advance() { [ "$(prom_cycles)" -gt "$c0" ]; }
wait_until "scheduler cycles advancing in Prometheus" 30 cycles_advance || fail "tephra_scheduler_cycles_total stuck at $c0 in Prometheus"
note "Prometheus $PROM_URL scrapes 4 roles; scheduler cycles $c0 -> $(prom_cycles)"

# -------------------------------------------------------------------------------------------- 2. workload
cat <<'YAML' | k apply -f - >/dev/null || fail "queues and priority classes not created"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team-a}
spec: {weight: 2, reclaimable: true}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team-b}
spec:
  weight: 1
  reclaimable: true
  capability: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "8"}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-high}
value: 1000
YAML
queues_open() { [ "$(k get queue team-a -o jsonpath='{.status.state}')" = Open ] && [ "$(k get queue team-b -o jsonpath='{.status.state}')" = Open ]; }
wait_until "queues team-a and team-b Open" 30 queues_open || fail "queues not Open: $(k get queue -o wide 2>&1)"

# job <name> <queue> <replicas> <minAvailable> <resources (flow)> <annotations (flow)> [extra spec lines...]
# $POD_EXTRA: more lines of the pod spec (8 spaces of indentation).
job() {
  local name=$1 queue=$2 replicas=$3 min=$4 res=$5 ann=$6; shift 6
  printf '%s\n' "apiVersion: batch.volcano.sh/v1alpha1" "kind: Job" "metadata: {name: $name, namespace: $NS}" "spec:" \
    "  schedulerName: volcano" "  queue: $queue" "  minAvailable: $min" "$@" "  tasks:" "  - name: w" \
    "    replicas: $replicas" "    template:" "      metadata: {annotations: $ann}" "      spec:" \
    ${POD_EXTRA:+"$POD_EXTRA"} "        restartPolicy: Never" "        terminationGracePeriodSeconds: 1" \
    "        containers: [{name: main, image: busybox, resources: {requests: $res, limits: $res}}]" "---"
}
phase() { k get vcjob -n $NS "$1" -o jsonpath='{.status.state.phase}'; }
is_phase() { [ "$(phase "$1")" = "$2" ]; }
dump() { k get vcjob,podgroup,pods -n $NS -o wide >&2 2>&1 || true; }

{
  job done team-a 2 2 '{cpu: "1", memory: 1Gi}' '{tephra.io/sim-run-seconds: "3"}' "  runningEstimate: 1m"
  job broken team-a 1 1 '{cpu: "1", memory: 1Gi}' '{tephra.io/sim-run-seconds: "2", tephra.io/sim-exit-code: "1"}' \
    "  runningEstimate: 1m" "  maxRetry: 1" "  policies: [{event: PodFailed, action: RestartJob}]"
  job flaky team-a 1 1 '{cpu: "1", memory: 1Gi}' \
    '{tephra.io/sim-run-seconds: "2", tephra.io/sim-exit-code: "1", tephra.io/sim-fail-attempts: "1"}' \
    "  runningEstimate: 1m" "  maxRetry: 3" "  policies: [{event: PodFailed, action: RestartJob}]"
  job train team-b 2 2 '{cpu: "1", memory: 2Gi, nvidia.com/gpu: "4"}' '{tephra.io/sim-run-seconds: "3600"}' \
    "  runningEstimate: 1h" "  maxRetry: 5"
} | k apply -f - >/dev/null || fail "jobs not created"
outcomes() { is_phase done Completed && is_phase broken Failed && is_phase flaky Completed && is_phase train Running; }
wait_until "done Completed, broken Failed, flaky Completed (after a restart), train Running" 120 outcomes ||
  { dump; fail "job outcomes: done=$(phase done) broken=$(phase broken) flaky=$(phase flaky) train=$(phase train)"; }
note "done Completed, broken Failed (retryCount $(k get vcjob -n $NS broken -o jsonpath='{.status.retryCount}')), flaky Completed (retryCount $(k get vcjob -n $NS flaky -o jsonpath='{.status.retryCount}')), train Running"

# The training gang's first node reports a GPU Xid error (a node condition, as NPD or NVSentinel set it): its
# transition time gives the detection latency (tephra_fault_detection_seconds). The node stays faulted, so the
# scheduler avoids it from here on: three nodes take the work below.
fault_node=$(k get pod -n $NS train-w-0 -o jsonpath='{.spec.nodeName}')
[ -n "$fault_node" ] || fail "train-w-0 has no node"
k annotate node "$fault_node" tephra.io/sim-conditions=GpuXidError >/dev/null
fault_recorded() { [ -n "$(k get node "$fault_node" -o jsonpath='{.metadata.annotations.tephra\.io/fault}')" ]; }
wait_until "fault on $fault_node recorded" 60 fault_recorded || fail "fault on $fault_node not recorded"
train_whole_elsewhere() {
  local pods
  pods=$(k get pods -n $NS -l volcano.sh/job-name=train --field-selector status.phase=Running \
    -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{"|"}{.spec.nodeName}{"\n"}{end}')
  [ "$(grep -c '^|' <<<"$pods")" -eq 2 ] && ! grep -q "|$fault_node\$" <<<"$pods"
}
wait_until "train whole again off $fault_node" 90 train_whole_elsewhere || { dump; fail "train not whole again after the fault"; }
note "fault on $fault_node: $(k get node "$fault_node" -o jsonpath='{.metadata.annotations.tephra\.io/fault}'); train whole again"

# Preemption: a low-priority filler takes most of the CPU, a high-priority gang needs two nodes' worth.
job filler team-a 12 1 '{cpu: "2", memory: 1Gi}' '{tephra.io/sim-run-seconds: "3600"}' "  runningEstimate: 1h" \
  "  priorityClassName: e2e-low" | k apply -f - >/dev/null
running_pods() { k get pods -n $NS -l "volcano.sh/job-name=$1" --field-selector status.phase=Running -o name | grep -c . || true; }
# Four of its pods suffice (2026-11-28: the scheduler placed only 4-7 of the 12, filling one or two nodes and
# leaving the CPU of the nodes that hold a training pod idle; to be investigated in the scheduler).
filler_runs() { [ "$(running_pods filler)" -ge 4 ]; }
wait_until "filler Running with 4 or more pods" 90 filler_runs || { dump; fail "filler runs $(running_pods filler)/12 pods"; }
# The filler may still be growing (its pods bind over a few cycles). The urgent gang must come once the filler
# holds all the room it can get: sent earlier, it takes the room the rest of the filler was about to use and
# preempts nothing, and the eviction panels stay empty (seen once in CI, with the filler at 4/12).
bound_pods() { k get pods -n $NS -l "volcano.sh/job-name=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true; }
filler_settled() {
  local before
  before=$(bound_pods filler)
  wait_scheduler_cycles "$SCHED_METRICS" 2 30 >/dev/null || return 1
  [ "$(bound_pods filler)" -eq "$before" ]
}
wait_until "filler placed as far as it goes (bound pods unchanged over two cycles)" 90 filler_settled ||
  { dump; fail "filler kept changing: $(bound_pods filler)/12 pods bound"; }
note "filler runs $(running_pods filler)/12 pods ($(bound_pods filler) bound)"
job urgent team-a 2 2 '{cpu: "5", memory: 1Gi}' '{tephra.io/sim-run-seconds: "3600"}' "  runningEstimate: 1h" \
  "  priorityClassName: e2e-high" | k apply -f - >/dev/null
urgent_running() { [ "$(running_pods urgent)" -eq 2 ]; }
wait_until "urgent Running after preempting filler pods" 90 urgent_running || { dump; fail "urgent not Running"; }
note "urgent Running; filler runs $(running_pods filler)/12 pods"

# Waiting jobs: a gang too wide to start before the running jobs end (a reservation and a queue position),
# and a job no node matches (unschedulable).
job wide team-a 3 3 '{cpu: "7", memory: 1Gi}' '{tephra.io/sim-run-seconds: "60"}' "  runningEstimate: 10m" | k apply -f - >/dev/null
POD_EXTRA="        nodeSelector: {e2e-pool: none}" job stuck team-b 1 1 '{cpu: 100m, memory: 128Mi}' \
  '{tephra.io/sim-run-seconds: "60"}' "  runningEstimate: 1m" | k apply -f - >/dev/null
pg_of() {  # the PodGroup of vcjob <name>
  k get podgroup -n $NS -o json | python3 -c 'import json,sys
for p in json.load(sys.stdin)["items"]:
    if any(o.get("name") == sys.argv[1] for o in p["metadata"].get("ownerReferences", [])):
        print(p["metadata"]["name"])' "$1"
}
pg_message() { k get podgroup -n $NS "$(pg_of "$1")" -o jsonpath='{range .status.conditions[*]}{.type}={.message}{"\n"}{end}'; }
wide_positioned() { pg_message wide | grep -q "position"; }
wait_until "wide has a queue position" 60 wide_positioned || { dump; fail "wide: $(pg_message wide)"; }
stuck_unschedulable() { pg_message stuck | grep -q "^Unschedulable="; }
wait_until "stuck Unschedulable" 60 stuck_unschedulable || {
  dump
  fail "stuck: $(pg_message stuck); its pod: $(k get pods -n $NS -l volcano.sh/job-name=stuck -o jsonpath='{range .items[*]}{.metadata.name} nodeSelector={.spec.nodeSelector} node={.spec.nodeName}{"\n"}{end}')"
}
note "wide: $(pg_message wide | tr '\n' ' ')"
note "stuck: $(pg_message stuck | tr '\n' ' ')"
wait_scheduler_cycles "$SCHED_METRICS" 3 30 || fail "the scheduler stopped cycling"

# A second node loses a GPU within the budget window: --fault-max-node-fraction (0.1, at least one node) holds it.
held_node=$(k get nodes -o name | sed 's|^node/||' | grep -vx "$fault_node" | head -n1)
k annotate node "$held_node" tephra.io/sim-unhealthy-gpus=1 >/dev/null
# The whole scrape first: `grep -q` stops reading early, and curl's failed write would fail the pipeline.
fault_held() { local m; m=$(curl -fsS "http://127.0.0.1:$CTRL_METRICS/metrics") && grep -q '^tephra_fault_actions_held_total' <<<"$m"; }
wait_until "the fault on $held_node held by the node budget" 60 fault_held || fail "no tephra_fault_actions_held_total after a second fault"
note "second fault on $held_node held by the node budget"

# ---------------------------------------------------------------------------------------- 3. the panels
done_at=$(date +%s.%N)
# Two scrapes of every target after the workload: rate() over 1m needs two samples of a new series.
wait_prom_scraped_since "$done_at" 30 || fail "Prometheus did not scrape every target after the workload"
second=$(date +%s.%N)
wait_prom_scraped_since "$second" 30 || fail "Prometheus did not scrape every target twice after the workload"
wait_prom_targets_up 10 || fail "a role went down during the workload"

mkdir -p "$LOGS/dashboards"
cp "$WORK/prometheus/prometheus.yml" "$LOGS/dashboards/"
python3 "$HERE/check_dashboards.py" --prometheus "$PROM_URL" --dashboards "$TEPHRA_SOURCE_DIR/charts/tephra/dashboards" \
  --source "$TEPHRA_SOURCE_DIR" --out "$LOGS/dashboards" || fail "dashboards with empty panels (table: $LOGS/dashboards/dashboards.tsv)"

# ---------------------------------------------------------------------------------------- 4. the heal
# The faulted node heals and, with --fault-avoid-seconds 0, takes work again at once. Early runs of this e2e
# that healed it (before the eviction panels moved it out of the way) saw a pod bound against its nodeSelector
# (issue 40). The heal comes after the panels were read: it frees the fault budget, so the controller now acts
# on the held fault too, and the pods it replaces are scheduled beside a new pod that no node matches. That pod
# must stay unbound while the scheduler cycles over the healed node; the audit below checks every bind.
k annotate node "$fault_node" tephra.io/sim-conditions- >/dev/null
fault_cleared() { [ -z "$(k get node "$fault_node" -o jsonpath='{.metadata.annotations.tephra\.io/fault}')" ]; }
wait_until "fault on $fault_node cleared" 60 fault_cleared || fail "fault on $fault_node not cleared"
POD_EXTRA="        nodeSelector: {e2e-pool: none}" job stuck2 team-b 1 1 '{cpu: 100m, memory: 128Mi}' \
  '{tephra.io/sim-run-seconds: "60"}' "  runningEstimate: 1m" | k apply -f - >/dev/null
stuck2_unschedulable() { pg_message stuck2 | grep -q "^Unschedulable="; }
wait_until "stuck2 Unschedulable after the heal" 60 stuck2_unschedulable || { dump; fail "stuck2: $(pg_message stuck2)"; }
wait_scheduler_cycles "$SCHED_METRICS" 5 60 || fail "the scheduler stopped cycling after the heal"
for j in stuck stuck2; do
  bound=$(k get pods -n $NS -l "volcano.sh/job-name=$j" -o jsonpath='{range .items[*]}{.spec.nodeName}{end}')
  [ -z "$bound" ] || fail "$j's pod (nodeSelector e2e-pool: none) was bound to $bound"
done
note "healed $fault_node; stuck and stuck2 stay unbound"

# Safety (issue 40): every live bound pod satisfies its node's hard constraints on the real control plane, and
# the scheduler's bind guard refused nothing (a refusal is a scheduler bug: the guard's log line and the
# BindRefused Events say which rule and node).
k get nodes,pods -A -o json >"$LOGS/placement.json" || fail "could not list nodes and pods"
# The held node lost a GPU on purpose after its pods were bound (the budget keeps them there).
python3 "$TEPHRA_SOURCE_DIR/tests/e2e/lib/placement_audit.py" --ignore-resource "nvidia.com/gpu@$held_node" "$LOGS/placement.json" || fail "placement audit failed ($LOGS/placement.json)"
sched_scrape=$(curl -fsS "http://127.0.0.1:$SCHED_METRICS/metrics") || fail "scheduler /metrics not readable"
refused=$(awk '/^tephra_scheduler_bind_refused_total/ {s += $NF} END {print s + 0}' <<<"$sched_scrape")
[ "$refused" = 0 ] || fail "the bind guard refused $refused bind(s): $(grep '^tephra_scheduler_bind_refused_total' <<<"$sched_scrape" | tr '\n' ' '); see $LOGS/scheduler.log"
note "placement audit clean; tephra_scheduler_bind_refused_total 0"
echo "prometheus_test: every dashboard query returned data"
