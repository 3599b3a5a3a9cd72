#!/usr/bin/env bash
# e2e for device-level placement of Ascend NPUs (docs/devices.md; run by run-with-cluster.sh: KUBECONFIG,
# KUBECTL, TEPHRA_BIN, TEPHRA_SOURCE_DIR). 8 nodesim nodes of type module-910b-16 (16 cards in two HCCS rings
# of 8), and one node with 2 GPUs that Volcano's vGPU device plugin shares (10 pods, 16000 MiB each). nodesim
# plays both device plugins: a pod whose `huawei.com/Ascend910` or `volcano.sh/vgpu-ids-new` annotation names
# cards that are missing, taken (or full), unhealthy or against the ring rule fails with
# UnexpectedAdmissionError, so a pod that runs proves the scheduler's choice is one a real device plugin would
# honour.
#  1. an 8-card pod runs on 8 cards inside one ring;
#  2. a 9-card pod stays Pending, and its PodGroup names the ring rule;
#  3. a gang of 16 pods of 8 cards runs on 128 distinct cards, each pod inside one ring;
#  4. a card the device plugin reports unhealthy (node annotation) is never assigned: with only one node
#     schedulable, 15 one-card pods run on its 15 healthy cards, and a 16th stays Pending;
#  5. the same through the device plugin's ConfigMap mindx-dl-deviceinfo-<node> in kube-system, which wins
#     over the node's annotations;
#  6. vGPU pods of 6000 MiB share the 2 GPUs two by two: 4 run, each GPU named by two of them, and a fifth
#     stays Pending (a third on either GPU would need 18000 MiB of its 16000).
#  7. GPU models and MIG: a two-container vGPU pod that accepts only A100s runs on the A100 node with one
#     card per container (one by percentage of its memory); a pod that accepts only H100s stays Pending with
#     the reason; a pod asking for MIG slices by profile name (mixed strategy) runs on the MIG node.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
trap 'stop_roles' EXIT

install_crds || fail "CRDs not Established"
cat >"$LOGS/nodes.yaml" <<'NODES'
nodes:
- namePrefix: npu-
  count: 8
  capacity: {cpu: "64", memory: 256Gi, pods: "110", huawei.com/Ascend910: "16"}
  labels: {accelerator-type: module-910b-16}
- namePrefix: vgpu-
  count: 1
  capacity: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "2"}
  vgpu: {split: 10, memoryMiB: 16000}
- namePrefix: a100-
  count: 1
  capacity: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "2"}
  vgpu: {split: 4, memoryMiB: 40000}
  gpu: {product: A100-SXM4-40GB}
- namePrefix: mig-
  count: 1
  capacity: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "2"}
  gpu: {product: A100-SXM4-80GB, mig: {strategy: mixed, profiles: {1g.10gb: 7}}}
NODES
start_sim_nodes 11 "$LOGS/nodesim.log" --config "$LOGS/nodes.yaml" || fail "11 simulated nodes not Ready"
start_scheduler "$LOGS/scheduler.log" || fail "tephra scheduler not ready"
HEALTH_PORT=$SCHED_HEALTH_PORT

podgroup() {  # podgroup <name> <minMember>
  printf '%s\n' "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" \
    "metadata: {name: $1, namespace: default}" "spec: {minMember: $2, queue: default}" "---"
}
npu_pod() {  # npu_pod <name> <group> <cards>
  printf '%s\n' "apiVersion: v1" "kind: Pod" \
    "metadata:" "  name: $1" "  namespace: default" "  labels: {e2e-group: $2}" \
    "  annotations: {scheduling.k8s.io/group-name: $2}" \
    "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  terminationGracePeriodSeconds: 1" \
    "  containers:" "  - name: main" "    image: busybox" \
    "    resources:" "      requests: {cpu: \"1\", huawei.com/Ascend910: \"$3\"}" \
    "      limits: {cpu: \"1\", huawei.com/Ascend910: \"$3\"}" "---"
}
# "<node> <cards>" per pod of a group, for pods the device plugin admitted (Running).
placements() {
  k get pods -l "e2e-group=$1" --field-selector status.phase=Running \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{" "}{.metadata.annotations.huawei\.com/Ascend910}{"\n"}{end}'
}
running_count() { placements "$1" | grep -c . || true; }
refused() {  # pods of a group the device plugin refused, with the reason
  k get pods -l "e2e-group=$1" --field-selector status.phase=Failed \
    -o jsonpath='{range .items[*]}{.metadata.name}{": "}{.status.message}{"\n"}{end}'
}
# Fails unless every pod's cards lie inside one ring of 8 (all indices < 8, or all >= 8).
check_rings() {
  local node cards
  while read -r node cards; do
    [ -n "$node" ] || continue
    echo "$cards" | tr ',' '\n' | sed 's/Ascend910-//' |
      awk -v n="$node" -v c="$cards" '{r[int($1/8)]=1} END {if (length(r) != 1) {print "straddles the rings: " n " " c; exit 1}}' ||
      fail "$1: a pod's cards straddle the rings"
  done < <(placements "$1")
}

# ------------------------------------------------------------------------- 1. 8 cards inside one ring
{ podgroup one 1; npu_pod one-0 one 8; } | k create -f - >/dev/null
one_running() { [ "$(running_count one)" -eq 1 ]; }
wait_until "the 8-card pod running" 90 one_running || fail "one: not running; refused: $(refused one)"
check_rings one
note "1. one: $(placements one)"

# --------------------------------------------------------------- 2. 9 cards: Pending, with the ring rule
{ podgroup odd 1; npu_pod odd-0 odd 9; } | k create -f - >/dev/null
reason() { k get podgroup odd -o jsonpath='{range .status.conditions[*]}{.message}{"\n"}{end}'; }
has_reason() { reason | grep -q "ring rule"; }
wait_until "odd's PodGroup names the ring rule" 60 has_reason || fail "odd: conditions: $(reason | tr '\n' ' ')"
wait_scheduler_cycles "$HEALTH_PORT" 3 || fail "the scheduler stopped cycling"
[ -z "$(k get pod odd-0 -o jsonpath='{.spec.nodeName}')" ] || fail "the 9-card pod was bound"
note "2. odd: Pending; $(reason | grep "ring rule" | head -1)"

# --------------------------------------------- 3. 16 pods of 8 cards: 128 distinct cards, one ring each
k delete pods --all --wait=true --timeout 60s >/dev/null
{ podgroup train 16; for i in $(seq 0 15); do npu_pod "train-$i" train 8; done; } | k create -f - >/dev/null
train_running() { [ "$(running_count train)" -eq 16 ]; }
wait_until "16 train pods running" 120 train_running ||
  fail "train: $(running_count train)/16 running; refused: $(refused train)"
check_rings train
distinct=$(placements train | awk '{n=split($2, c, ","); for (i=1; i<=n; i++) print $1 "/" c[i]}' | sort -u | wc -l)
[ "$distinct" -eq 128 ] || fail "train: $distinct distinct cards, want 128"
note "3. train: 16/16 running on $distinct distinct cards, each pod inside one ring"

# ------------------------------------------------------------ 4. an unhealthy card is never assigned
k delete pods --all --wait=true --timeout 60s >/dev/null
for n in $(k get nodes -o name | grep -v '/npu-0$'); do k cordon "${n#node/}" >/dev/null; done
k annotate node npu-0 huawei.com/Ascend910-Unhealthy=Ascend910-3 >/dev/null
npu_allocatable() { [ "$(k get node npu-0 -o jsonpath='{.status.allocatable.huawei\.com/Ascend910}')" = "15" ]; }
wait_until "npu-0 reports 15 allocatable cards" 60 npu_allocatable || fail "nodesim did not lower allocatable"
{ podgroup ones 15; for i in $(seq 0 14); do npu_pod "ones-$i" ones 1; done; } | k create -f - >/dev/null
ones_running() { [ "$(running_count ones)" -eq 15 ]; }
wait_until "15 one-card pods running" 90 ones_running || fail "ones: $(running_count ones)/15 running; refused: $(refused ones)"
# Captured first: `kubectl ... | grep -q` under pipefail fails when grep exits before kubectl has written all.
ones_out=$(placements ones) || fail "ones: listing the placements failed"
if grep -q 'Ascend910-3$' <<<"$ones_out"; then fail "ones: the unhealthy card Ascend910-3 was assigned"; fi
{ podgroup last 1; npu_pod last-0 last 1; } | k create -f - >/dev/null
wait_scheduler_cycles "$HEALTH_PORT" 3 || fail "the scheduler stopped cycling"
[ -z "$(k get pod last-0 -o jsonpath='{.spec.nodeName}')" ] || fail "a 16th card was assigned on a node with 15 healthy"
note "4. ones: 15/15 running, none on the unhealthy Ascend910-3; a 16th pod stays Pending"

# ------------------------------------------- 5. card health from the device plugin's ConfigMap
k delete pods --all --wait=true --timeout 60s >/dev/null
k annotate node npu-0 huawei.com/Ascend910-Unhealthy- >/dev/null
cfg='{"DeviceInfo":{"DeviceList":{"huawei.com/Ascend910":"","huawei.com/Ascend910-Unhealthy":"Ascend910-5","huawei.com/Ascend910-NetworkUnhealthy":"","huawei.com/Ascend910-Recovering":""},"UpdateTime":1700000000},"CheckCode":""}'
k -n kube-system create configmap mindx-dl-deviceinfo-npu-0 --from-literal=DeviceInfoCfg="$cfg" >/dev/null
{ podgroup cm 15; for i in $(seq 0 14); do npu_pod "cm-$i" cm 1; done; } | k create -f - >/dev/null
cm_running() { [ "$(running_count cm)" -eq 15 ]; }
wait_until "15 one-card pods running" 90 cm_running || fail "cm: $(running_count cm)/15 running; refused: $(refused cm)"
cm_out=$(placements cm) || fail "cm: listing the placements failed"
if grep -q 'Ascend910-5$' <<<"$cm_out"; then fail "cm: Ascend910-5, unhealthy in the ConfigMap, was assigned"; fi
grep -q 'Ascend910-3$' <<<"$cm_out" || fail "cm: Ascend910-3 (healthy again) was not used: $(tr '\n' ' ' <<<"$cm_out")"
note "5. cm: 15/15 running, none on Ascend910-5 (unhealthy in mindx-dl-deviceinfo-npu-0)"

# ------------------------------------------------------ 6. vGPU: shares up to a GPU's memory, no further
k delete pods --all --wait=true --timeout 60s >/dev/null
k uncordon vgpu-0 >/dev/null
vgpu_pod() {  # vgpu_pod <name> <group>: one shared GPU, 6000 MiB, 30% of its compute
  printf '%s\n' "apiVersion: v1" "kind: Pod" \
    "metadata:" "  name: $1" "  namespace: default" "  labels: {e2e-group: $2}" \
    "  annotations: {scheduling.k8s.io/group-name: $2}" \
    "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  terminationGracePeriodSeconds: 1" \
    "  containers:" "  - name: main" "    image: busybox" \
    "    resources:" "      limits: {cpu: \"1\", volcano.sh/vgpu-number: \"1\", volcano.sh/vgpu-memory: \"6000\", volcano.sh/vgpu-cores: \"30\"}" "---"
}
{ podgroup share 4; for i in 0 1 2 3; do vgpu_pod "share-$i" share; done; } | k create -f - >/dev/null
gpus_of() {
  k get pods -l "e2e-group=$1" --field-selector status.phase=Running \
    -o jsonpath='{range .items[*]}{.metadata.annotations.volcano\.sh/vgpu-ids-new}{"\n"}{end}' | cut -d, -f1
}
share_running() { [ "$(gpus_of share | grep -c .)" -eq 4 ]; }
wait_until "4 vGPU pods running" 90 share_running || fail "share: $(gpus_of share | grep -c .)/4 running; refused: $(refused share)"
per_gpu=$(gpus_of share | sort | uniq -c | awk '{print $1}' | sort -u | tr '\n' ' ')
[ "$per_gpu" = "2 " ] || fail "share: pods per GPU: $(gpus_of share | sort | uniq -c | tr '\n' ' ')"
{ podgroup extra 1; vgpu_pod extra-0 extra; } | k create -f - >/dev/null
wait_scheduler_cycles "$HEALTH_PORT" 3 || fail "the scheduler stopped cycling"
[ -z "$(k get pod extra-0 -o jsonpath='{.spec.nodeName}')" ] || fail "a third 6000 MiB share was placed on a 16000 MiB GPU"
note "6. share: 4/4 running, two per GPU; a fifth stays Pending ($(k get podgroup extra -o jsonpath='{.status.conditions[?(@.type=="Unschedulable")].message}' | cut -c1-200))"

# ------------------------------------------------------------------ 7. GPU models, containers, MIG
k uncordon a100-0 >/dev/null
k uncordon mig-0 >/dev/null
gpu_pod() {  # gpu_pod <name> <group> <use-gputype> <containers yaml...>
  local name=$1 group=$2 types=$3
  shift 3
  printf '%s
' "apiVersion: v1" "kind: Pod"     "metadata:" "  name: $name" "  namespace: default" "  labels: {e2e-group: $group}"     "  annotations: {scheduling.k8s.io/group-name: $group, nvidia.com/use-gputype: \"$types\"}"     "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  terminationGracePeriodSeconds: 1"     "  containers:" "$@" "---"
}
{
  podgroup pair 1
  gpu_pod pair-0 pair a100 \
    "  - {name: a, image: busybox, resources: {limits: {cpu: \"1\", volcano.sh/vgpu-number: \"1\", volcano.sh/vgpu-memory-percentage: \"25\"}}}" \
    "  - {name: b, image: busybox, resources: {limits: {cpu: \"1\", volcano.sh/vgpu-number: \"1\", volcano.sh/vgpu-memory: \"8000\"}}}"
  podgroup h100 1
  gpu_pod h100-0 h100 H100 "  - {name: a, image: busybox, resources: {limits: {cpu: \"1\", volcano.sh/vgpu-number: \"1\"}}}"
  podgroup slice 1
  gpu_pod slice-0 slice A100 "  - {name: a, image: busybox, resources: {limits: {cpu: \"1\", nvidia.com/mig-1g.10gb: \"3\"}}}"
} | k create -f - >/dev/null
phase_of() { k get pod "$1" -o jsonpath='{.status.phase}'; }
pair_running() { [ "$(phase_of pair-0)" = Running ]; }
wait_until "the two-container A100 pod running" 90 pair_running ||
  fail "pair-0: $(phase_of pair-0) $(k get pod pair-0 -o jsonpath='{.status.message}')"
[ "$(k get pod pair-0 -o jsonpath='{.spec.nodeName}')" = a100-0 ] || fail "pair-0 is not on the A100 node"
ids=$(k get pod pair-0 -o jsonpath='{.metadata.annotations.volcano\.sh/vgpu-ids-new}')
[ "$(echo "$ids" | tr ';' '\n' | grep -c NVIDIA)" -eq 2 ] || fail "pair-0: want one card per container, got $ids"
echo "$ids" | grep -q ',NVIDIA,10000,' || fail "pair-0: 25% of a 40000 MiB card should be 10000 MiB: $ids"
h100_reason() { k get podgroup h100 -o jsonpath='{range .status.conditions[*]}{.message}{"\n"}{end}' | grep -q "no GPU the pod accepts"; }
wait_until "h100's PodGroup says no GPU is accepted" 60 h100_reason ||
  fail "h100: conditions: $(k get podgroup h100 -o jsonpath='{.status.conditions}')"
[ -z "$(k get pod h100-0 -o jsonpath='{.spec.nodeName}')" ] || fail "the H100-only pod was bound"
slice_running() { [ "$(phase_of slice-0)" = Running ]; }
wait_until "the MIG pod running" 90 slice_running || fail "slice-0: $(phase_of slice-0)"
[ "$(k get pod slice-0 -o jsonpath='{.spec.nodeName}')" = mig-0 ] || fail "slice-0 is not on the MIG node"
note "7. pair-0 on a100-0 ($ids); h100-0 Pending (no GPU accepted); slice-0 on mig-0"
# Safety (issue 40): every bound pod satisfies its node's hard constraints, cards and shares included.
k get nodes,pods -A -o json >"$LOGS/placement.json" || fail "could not list nodes and pods"
# vGPU memory as a percentage of a card is Tephra's device model's unit, not a resource the nodes advertise.
python3 "$TEPHRA_SOURCE_DIR/tests/e2e/lib/placement_audit.py" --ignore-resource volcano.sh/vgpu-memory-percentage \
  "$LOGS/placement.json" || fail "placement audit ($LOGS/placement.json)"
echo "PASS"
