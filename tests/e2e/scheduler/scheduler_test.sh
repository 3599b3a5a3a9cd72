#!/usr/bin/env bash
# e2e for `tephra scheduler` (run by run-with-cluster.sh: KUBECONFIG, KUBECTL, TEPHRA_BIN, TEPHRA_SOURCE_DIR).
# 16 nodesim nodes (32 cpu, 8 GPUs each; 4 nodes per leaf -> 4 leaves via the tephra.io/leaf label), then:
#  1. the scheduler creates the `root` and `default` queues;
#  2. a PodGroup (minMember 4) + 4 plain pods (schedulerName volcano, group-name annotation): the PodGroup reaches
#     Running, all 4 pods are bound and Running, a pod gets a `Scheduled` event;
#  3. a gang larger than the cluster (20 pods x 8 GPUs > 128 GPUs) is enqueued (Inqueue) but binds nothing; its
#     PodGroup carries an Unschedulable condition naming the short resource;
#  4. a 64-pod gang with networkTopology hard/highestTierAllowed 1 (2 cpu each = exactly one leaf) lands in one leaf;
#  4b. a vcjob whose task has partitionPolicy (two partitions of four whole-node pods, each partition hard tier 1,
#     the job itself unconstrained), through `tephra controller`: the PodGroup carries the subGroupPolicy and each
#     partition lands inside one leaf;
#  4c. two workers with claims of a WaitForFirstConsumer class without a provisioner, and one local volume on each
#     of two nodes: each worker is bound next to its volume, which names its claim; the volume controller binds;
#  5. /metrics carries Volcano's metric names and the bind counter.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
WORK=$(mktemp -d)
WATCH_PID=
trap 'stop_roles; [ -z "$WATCH_PID" ] || kill "$WATCH_PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT

install_crds || fail "CRDs not Established"

rc=0
start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --nodes 16 --cpu 32 --gpus 8 \
  --nodes-per-leaf 4 --leaves-per-spine 4 || rc=$?
[ $rc -eq 0 ] || fail "tephra nodesim did not start (rc=$rc)"
node_count() { [ "$(k get nodes -o name | wc -l)" -ge "$1" ]; }
wait_until "16 nodes registered" 90 node_count 16 || fail "nodesim did not register 16 nodes"
k wait --for condition=Ready --timeout 60s node --all >/dev/null || fail "simulated nodes not Ready"
# The API server's TaintNodesByCondition admission taints new nodes not-ready:NoSchedule; the node lifecycle
# controller that would lift it once Ready is off in this harness (it dislikes simulated heartbeats).
k taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true

# Volcano's Helm default configuration, given as a file so the reload path is exercised in section 3b.
CONF=$WORK/volcano-scheduler.conf
printf '%s\n' 'actions: "enqueue, allocate, backfill"' 'tiers:' '- plugins:' '  - name: priority' '  - name: gang' \
  '    enablePreemptable: false' '  - name: conformance' '- plugins:' '  - name: overcommit' '  - name: drf' \
  '    enablePreemptable: false' '  - name: predicates' '  - name: proportion' '  - name: nodeorder' \
  '  - name: binpack' >"$CONF"
METRICS_PORT=$(free_port)
HEALTH_PORT=$(free_port)
start_role scheduler "$LOGS/scheduler.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --listen-address "127.0.0.1:$METRICS_PORT" --health-addr "127.0.0.1:$HEALTH_PORT" \
  --topology-label-keys tephra.io/leaf,tephra.io/spine --log-level debug --scheduler-conf "$CONF" || fail "tephra scheduler did not start"
wait_until "scheduler /readyz" 60 curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" || fail "scheduler never ready"

# ------------------------------------------------------------------------------------------ 1. default queues
have_queues() { k get queue root && k get queue default; }
wait_until "root and default queues" 30 have_queues || fail "scheduler did not create root/default queues"
[ "$(k get queue root -o jsonpath='{.spec.reclaimable}')" = false ] || fail "root queue must not be reclaimable"
note "1. queues root and default exist"

pod() {  # pod <name> <group> <cpu> <gpus>
  local res="cpu: \"$3\""
  [ "$4" = 0 ] || res="$res, nvidia.com/gpu: \"$4\""
  printf '%s\n' \
    "apiVersion: v1" "kind: Pod" \
    "metadata:" "  name: $1" "  namespace: default" "  labels: {e2e-group: $2}" \
    "  annotations: {scheduling.k8s.io/group-name: $2}" \
    "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  containers:" "  - name: main" \
    "    image: busybox" "    resources:" "      requests: {$res}" "      limits: {$res}" "---"
}
podgroup() {  # podgroup <name> <minMember> [networkTopology-flow-yaml]
  printf '%s\n' "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" \
    "metadata: {name: $1, namespace: default}" "spec:" "  minMember: $2" "  queue: default"
  [ -z "${3:-}" ] || echo "  networkTopology: $3"
  echo "---"
}
bound_count() { k get pods -l "e2e-group=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true; }
all_bound() { [ "$(bound_count "$1")" -ge "$2" ]; }
phase_is() { [ "$(k get podgroup "$1" -o jsonpath='{.status.phase}')" = "$2" ]; }

# ------------------------------------------------------------------------------------- 2. gang of 4 plain pods
podgroup pg-small 4 | k create -f - >/dev/null
# Record every phase the PodGroup passes through (Inqueue may last less than a second).
"$KUBECTL" get podgroup pg-small -w -o jsonpath='{.status.phase}{"\n"}' >"$WORK/pg-small.phases" 2>/dev/null &
WATCH_PID=$!
for i in 0 1 2 3; do pod "small-$i" pg-small 1 0; done | k create -f - >/dev/null
wait_until "4 pods of pg-small bound" 60 all_bound pg-small 4 || fail "pg-small: $(bound_count pg-small)/4 bound"
running() { [ "$(k get pods -l e2e-group=pg-small -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c Running)" = 4 ]; }
wait_until "4 pods Running" 60 running || fail "pg-small pods not Running"
wait_until "pg-small Running" 30 phase_is pg-small Running || fail "pg-small phase $(k get podgroup pg-small -o jsonpath='{.status.phase}')"
kill "$WATCH_PID" 2>/dev/null || true
WATCH_PID=
# Phases are written once per cycle at session close (like Volcano): a gang that is enqueued and fully
# allocated in one cycle goes Pending -> Running directly; Inqueue is asserted on the oversize gang below.
grep -qx Running "$WORK/pg-small.phases" || { cat "$WORK/pg-small.phases" >&2; fail "pg-small Running not observed"; }
has_event() { k get events --field-selector "involvedObject.name=small-0,reason=Scheduled" -o name | grep -q .; }
wait_until "Scheduled event on small-0" 30 has_event || fail "no Scheduled event for small-0"
note "2. pg-small: phases $(tr '\n' ' ' <"$WORK/pg-small.phases"); 4/4 bound and Running, Scheduled event present"

# ------------------------------------------------------------------------------ 3. gang larger than the cluster
{ podgroup pg-big 20; for i in $(seq 0 19); do pod "big-$i" pg-big 1 8; done; } | k create -f - >/dev/null
cond_msg() { k get podgroup pg-big -o jsonpath='{range .status.conditions[?(@.type=="Unschedulable")]}{.message}{end}'; }
# A cycle may run while only some of the 20 pods exist (cycles start on changes), so the first message can be
# "Not enough valid tasks ..."; once all pods exist the condition must say that GPUs are short.
gpu_cond() { cond_msg | grep -qi "gpu"; }
wait_until "pg-big Unschedulable condition naming GPUs" 60 gpu_cond ||
  fail "pg-big condition does not say GPUs are short: '$(cond_msg)' ($(k get podgroup pg-big -o json | jq -c .status))"
msg=$(cond_msg)
note "pg-big condition: $msg"
phase_is pg-big Inqueue || fail "pg-big phase $(k get podgroup pg-big -o jsonpath='{.status.phase}'), want Inqueue (enqueued, not allocatable)"
# Several more cycles (counted on /metrics, so a stalled scheduler cannot pass): still nothing bound, the gang
# is all-or-nothing.
wait_scheduler_cycles "$METRICS_PORT" 3 || fail "the scheduler stopped cycling"
[ "$(bound_count pg-big)" = 0 ] || fail "pg-big: $(bound_count pg-big) pods bound, want 0"
fs_events() { [ "$(k get events --field-selector reason=FailedScheduling -o name | wc -l)" -gt 0 ]; }
wait_until "FailedScheduling events" 20 fs_events || fail "no FailedScheduling events for pg-big pods"
# Every pending pod carries PodScheduled=False/Unschedulable with the gang's reason (as kube-scheduler writes it).
pod_cond() { k get pod "$1" -o jsonpath='{range .status.conditions[?(@.type=="PodScheduled")]}{.status}/{.reason}/{.message}{end}'; }
all_conds() { for i in 0 7 19; do pod_cond "big-$i" | grep -qi '^False/Unschedulable/.*gpu' || return 1; done; }
wait_until "PodScheduled=False naming GPUs on pg-big pods" 30 all_conds ||
  fail "pg-big pods lack PodScheduled=False naming GPUs: big-0 '$(pod_cond big-0)', big-19 '$(pod_cond big-19)'"
note "3. pg-big: 0/20 bound; the condition names the short resource; FailedScheduling events and PodScheduled=False present"

k delete pods -l e2e-group=pg-big --wait=false >/dev/null
k delete podgroup pg-big >/dev/null
k delete pods -l e2e-group=pg-small --wait=true --timeout 60s >/dev/null

# ----------------------------------------------------------------- 3b. a bad configuration file is rejected
metric() { curl -fsS "http://127.0.0.1:$METRICS_PORT/metrics" | awk -v m="$1" '$1 == m {print int($2)}'; }
# Invalid for Volcano too: a switch that is not a boolean. (An unknown key such as a misspelt switch is only a
# warning, as Volcano ignores it: docs/volcano-conformance.md.)
printf '%s\n' 'actions: "enqueue, allocate, backfill"' 'tiers:' '- plugins:' '  - name: gang' '    enableJobReady: maybe' >"$CONF"
rejected() { [ "$(metric 'tephra_scheduler_conf_reloads_total{result="rejected"}')" = 1 ]; }
wait_until "bad conf rejected" 30 rejected || fail "bad scheduler conf not rejected"
grep -q "enableJobReady: not a boolean" "$LOGS/scheduler.log" || fail "rejection log does not name the problem"
[ "$(metric tephra_scheduler_conf_last_reload_successful)" = 0 ] || fail "conf_last_reload_successful should be 0"
note "3b. bad conf rejected with the problem named; the last good configuration stays (section 4 schedules with it)"

# ------------------------------------------------------------------------------------ 4. 64-pod gang, one leaf
# 64 x 2 cpu = 128 cpu = exactly the 4 nodes of one leaf. Nodes sort by name as sim-0, sim-1, sim-10, ... so a
# placement that ignored the topology would cross leaves.
{ podgroup pg-topo 64 '{mode: hard, highestTierAllowed: 1}'; for i in $(seq 0 63); do pod "topo-$i" pg-topo 2 0; done; } \
  | k create -f - >/dev/null
wait_until "64 pods of pg-topo bound" 120 all_bound pg-topo 64 || fail "pg-topo: $(bound_count pg-topo)/64 bound"
k get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.labels.tephra\.io/leaf}{"\n"}{end}' >"$WORK/leaf-of"
k get pods -l e2e-group=pg-topo -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort >"$WORK/topo-nodes"
leaves=$(awk 'NR==FNR {leaf[$1]=$2; next} {print leaf[$1]}' "$WORK/leaf-of" "$WORK/topo-nodes" | sort -u)
[ "$(echo "$leaves" | grep -c .)" = 1 ] || fail "pg-topo spans leaves: $(echo "$leaves" | tr '\n' ' ')"
note "4. pg-topo: 64/64 bound inside leaf $leaves"

# ------------------------------------------------------------------- 4b. sub-groups: each partition in one leaf
# The user's path: a vcjob task with partitionPolicy (Volcano's network-topology guide), through `tephra
# controller`, which writes the PodGroup's subGroupPolicy and labels each pod with its partition. 24-cpu pods take
# a node each, so a leaf holds one partition of four; placed by name order without the sub-group rule, the
# eight pods would cross leaves.
start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --metrics-addr "127.0.0.1:$(free_port)" --health-addr "127.0.0.1:$(free_port)" '--controllers=job-controller' ||
  fail "tephra controller did not start"
cat <<'YAML' | k create -f - >/dev/null
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: part, namespace: default}
spec:
  schedulerName: volcano
  queue: default
  tasks:
  - name: worker
    replicas: 8
    partitionPolicy:
      totalPartitions: 2
      partitionSize: 4
      minPartitions: 2
      networkTopology: {mode: hard, highestTierAllowed: 1}
    template:
      metadata: {labels: {e2e-group: pg-part}}
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: busybox
          resources: {requests: {cpu: "24"}, limits: {cpu: "24"}}
YAML
sub_groups() { k get podgroups -o json | jq -c '[.items[].spec.subGroupPolicy // empty | .[] | {name, subGroupSize, minSubGroups}]'; }
wait_until "8 pods of vcjob part bound" 120 all_bound pg-part 8 ||
  fail "vcjob part: $(bound_count pg-part)/8 bound; PodGroup status $(k get podgroups -o json | jq -c '[.items[].status]')"
[ "$(sub_groups)" = '[{"name":"worker","subGroupSize":4,"minSubGroups":2}]' ] || fail "PodGroup subGroupPolicy: $(sub_groups)"
k get pods -l e2e-group=pg-part -o jsonpath='{range .items[*]}{.spec.nodeName} {.metadata.labels.volcano\.sh/partition-id}{"\n"}{end}' >"$WORK/part-nodes"
part_leaves=$(awk 'NR==FNR {leaf[$1]=$2; next} {print $2, leaf[$1]}' "$WORK/leaf-of" "$WORK/part-nodes" | sort -u)
[ "$(echo "$part_leaves" | grep -c '^0 ')" = 1 ] && [ "$(echo "$part_leaves" | grep -c '^1 ')" = 1 ] ||
  fail "a partition spans leaves: $(echo "$part_leaves" | tr '\n' ';')"
note "4b. vcjob part: 8/8 bound; PodGroup subGroupPolicy $(sub_groups); partition -> leaf: $(echo "$part_leaves" | tr '\n' ';')"

# ---------------------------------------------------- 4c. pre-created local volumes (WaitForFirstConsumer)
# Two workers, each with its own claim of a class without a provisioner, and one local volume on each of two
# nodes: each worker lands next to a volume, the volume's claimRef names the worker's claim (the scheduler's
# write), and the volume controller binds the claim.
mapfile -t vol_nodes < <(awk '{print $1}' "$WORK/part-nodes" | sort -u | head -2)
vol_a=${vol_nodes[0]} vol_b=${vol_nodes[1]}
{
  printf '%s\n' "apiVersion: storage.k8s.io/v1" "kind: StorageClass" "metadata: {name: local-nvme}" \
    "provisioner: kubernetes.io/no-provisioner" "volumeBindingMode: WaitForFirstConsumer" "---"
  for n in "$vol_a" "$vol_b"; do
    printf '%s\n' "apiVersion: v1" "kind: PersistentVolume" "metadata: {name: nvme-$n}" "spec:" \
      "  capacity: {storage: 1Ti}" "  accessModes: [ReadWriteOnce]" "  storageClassName: local-nvme" \
      "  local: {path: /mnt/nvme0}" "  nodeAffinity:" "    required:" "      nodeSelectorTerms:" \
      "      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$n]}]" "---"
  done
  podgroup pg-nvme 2
  for i in 0 1; do
    printf '%s\n' "apiVersion: v1" "kind: PersistentVolumeClaim" "metadata: {name: scratch-$i, namespace: default}" \
      "spec:" "  storageClassName: local-nvme" "  accessModes: [ReadWriteOnce]" "  resources: {requests: {storage: 100Gi}}" "---"
    pod "nvme-$i" pg-nvme 1 0 | sed '/^---$/d'
    printf '%s\n' "  volumes: [{name: scratch, persistentVolumeClaim: {claimName: scratch-$i}}]" "---"
  done
} | k create -f - >/dev/null
wait_until "2 pods of pg-nvme bound" 60 all_bound pg-nvme 2 || fail "pg-nvme: $(bound_count pg-nvme)/2 bound ($(k get podgroup pg-nvme -o json | jq -c .status))"
for i in 0 1; do
  node=$(k get pod "nvme-$i" -o jsonpath='{.spec.nodeName}')
  [ "$(k get pv "nvme-$node" -o jsonpath='{.spec.claimRef.name}' 2>/dev/null)" = "scratch-$i" ] ||
    fail "nvme-$i on $node: volume nvme-$node does not name claim scratch-$i ($(k get pv -o json | jq -c '[.items[] | {n: .metadata.name, c: .spec.claimRef.name}]'))"
done
claims_bound() { [ "$(k get pvc scratch-0 scratch-1 -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c Bound)" = 2 ]; }
wait_until "the volume controller binds scratch-0 and scratch-1" 60 claims_bound || fail "claims: $(k get pvc scratch-0 scratch-1 2>&1)"
note "4c. pg-nvme: each worker next to its own local volume; claims Bound ($(k get pods nvme-0 nvme-1 -o jsonpath='{range .items[*]}{.metadata.name}@{.spec.nodeName} {end}'))"

# ------------------------------------------------------------------------------------------------- 5. metrics
curl -fsS "http://127.0.0.1:$METRICS_PORT/metrics" >"$WORK/metrics"
for mname in volcano_e2e_scheduling_latency_milliseconds_bucket volcano_schedule_attempts_total \
             volcano_action_scheduling_latency_milliseconds_count tephra_scheduler_pods_bound_total; do
  grep -q "^$mname" "$WORK/metrics" || fail "metric $mname missing"
done
bound=$(awk '/^tephra_scheduler_pods_bound_total/ {print int($2)}' "$WORK/metrics")
[ "${bound:-0}" -ge 78 ] || fail "tephra_scheduler_pods_bound_total=$bound, want >= 78"
curl -fsS "http://127.0.0.1:$HEALTH_PORT/healthz" >/dev/null || fail "/healthz"
# A good file again is accepted.
printf '%s\n' 'actions: "enqueue, allocate"' 'tiers:' '- plugins:' '  - name: gang' '  - name: predicates' >"$CONF"
accepted() { [ "$(metric 'tephra_scheduler_conf_reloads_total{result="success"}')" = 1 ]; }
wait_until "good conf accepted" 30 accepted || fail "good scheduler conf not reloaded"
note "5. metrics present; pods bound = $bound"
stop_roles
echo "PASS (queues, gang of 4 enqueued/bound/running, oversize gang binds nothing, 64-pod gang in one leaf, a partition per leaf, local volumes bound, metrics)"
