#!/usr/bin/env bash
# e2e + measurement: time to recover from faults (docs/faults.md, bench/RESULTS.md "Fault recovery"), on the
# real control plane with nodesim, the controller and the scheduler at their defaults. NODES nodes (200; 1,000
# by hand) of 8 GPUs; JOBS vcjobs (NODES/10) of 4 pods of 8 GPUs, so every pod has a node to itself and most
# nodes are spare. FAULTS faults (10), one after another on the node of a running pod chosen with a seeded
# random generator, alternating:
#   * node death (tephra.io/sim-fail: Ready=False, the kubelet gone; the default 5 s grace applies);
#   * one unhealthy GPU (tephra.io/sim-unhealthy-gpus=1: allocatable 7 of 8, the pod asks 8, so it holds it).
# For each: detection = fault injected -> tephra.io/fault on the node; recovery (MTTR) = fault injected -> the
# job runs 4 pods again, none on that node. Prints p50/p99 per kind and fails when a recovery p99 is 30 s
# or more (the issue's target) or a GPU fault's detection p99 is 5 s or more.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
trap 'stop_roles' EXIT
K_TIMEOUT=30s   # k (lib/common.sh): this suite's requests may take longer
NS=default
NODES=${NODES:-200}
JOBS=${JOBS:-$((NODES / 10))}
FAULTS=${FAULTS:-10}
SEED=${SEED:-7}

install_crds || fail "CRDs not Established"
start_sim_nodes "$NODES" "$LOGS/nodesim.log" --nodes "$NODES" --cpu 16 --gpus 8 || fail "$NODES simulated nodes not Ready"
start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --metrics-addr "127.0.0.1:$(free_port)" --health-addr "127.0.0.1:$(free_port)" || fail "tephra controller did not start"
start_scheduler "$LOGS/scheduler.log" || fail "tephra scheduler not ready"

for j in $(seq 0 $((JOBS - 1))); do
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j$j, namespace: $NS}
spec:
  minAvailable: 4
  schedulerName: volcano
  queue: default
  maxRetry: 100
  tasks:
  - name: w
    replicas: 4
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "3600", tephra.io/sim-exit-code: "0"}}
      spec:
        restartPolicy: Never
        terminationGracePeriodSeconds: 1
        containers: [{name: c, image: busybox, resources: {limits: {cpu: "1", nvidia.com/gpu: "8"}}}]
---
YAML
done | k apply -f - >/dev/null
want=$((JOBS * 4))
# "<pod> <node>" of every Running pod of the jobs.
running() {
  k get pods -n $NS -l volcano.sh/job-name --field-selector status.phase=Running \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}'
}
all_running() { [ "$(running | grep -c .)" -eq "$want" ]; }
wait_until "$want pods running" 300 all_running || fail "only $(running | grep -c .)/$want pods running"
note "$JOBS jobs, $want pods running on $NODES nodes"

fault_of() { k get node "$1" -o jsonpath='{.metadata.annotations.tephra\.io/fault}'; }
# The job of <pod> runs 4 pods again, none on <node>.
whole_off() {
  local job=$1 node=$2 pods
  pods=$(k get pods -n $NS -l "volcano.sh/job-name=$job" --field-selector status.phase=Running \
    -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{"|"}{.spec.nodeName}{"\n"}{end}')
  [ "$(grep -c '^|' <<<"$pods")" -eq 4 ] && ! grep -q "|$node\$" <<<"$pods"
}
now() { date +%s.%N; }
RESULTS="$LOGS/mttr.tsv"
: >"$RESULTS"
RANDOM=$SEED
for i in $(seq 1 "$FAULTS"); do
  mapfile -t pods < <(running)
  pick=${pods[$((RANDOM % ${#pods[@]}))]}
  pod=${pick% *}
  node=${pick#* }
  job=${pod%-w-*}
  if [ $((i % 2)) -eq 1 ]; then kind=node-death; ann=tephra.io/sim-fail=true; else kind=gpu-unhealthy; ann=tephra.io/sim-unhealthy-gpus=1; fi
  t0=$(now)
  k annotate node "$node" "$ann" >/dev/null
  detected() { [ -n "$(fault_of "$node")" ]; }
  wait_until "$node's fault recorded" 60 detected || fail "fault $i ($kind on $node) was not recorded"
  t1=$(now)
  wait_until "$job whole again off $node" 120 whole_off "$job" "$node" || fail "fault $i ($kind on $node): $job not whole again"
  t2=$(now)
  printf '%s\t%s\t%s\n' "$kind" "$(sub t1 t0)" "$(sub t2 t0)" >>"$RESULTS"
  note "fault $i: $kind on $node ($pod): detected $(sub t1 t0) s, $job whole again $(sub t2 t0) s"
done

# p50/p99 (nearest rank) of column <col> for <kind>.
pct() {
  awk -F'\t' -v k="$1" -v c="$2" '$1 == k {print $c}' "$RESULTS" | sort -g |
    awk -v p="$3" '{v[++n] = $1} END {
      if (n == 0) { print "nan"; exit }
      r = int(p / 100 * n + 0.999999); if (r < 1) r = 1; if (r > n) r = n; printf "%.2f", v[r] }'
}
status=0
for kind in node-death gpu-unhealthy; do
  d50=$(pct $kind 2 50) d99=$(pct $kind 2 99) r50=$(pct $kind 3 50) r99=$(pct $kind 3 99)
  echo "MTTR $kind: detection p50 ${d50} s p99 ${d99} s; recovery p50 ${r50} s p99 ${r99} s ($NODES nodes)"
  awk -v v="$r99" 'BEGIN {exit !(v < 30)}' || { echo "FAIL: $kind recovery p99 ${r99} s, target under 30 s" >&2; status=1; }
  if [ $kind = gpu-unhealthy ]; then
    awk -v v="$d99" 'BEGIN {exit !(v < 5)}' || { echo "FAIL: $kind detection p99 ${d99} s, target under 5 s" >&2; status=1; }
  fi
done
[ $status -eq 0 ] || exit 1
echo "PASS"
