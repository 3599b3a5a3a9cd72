#!/usr/bin/env bash
# e2e: the example manifests of Volcano's repository, applied unchanged with kubectl to Tephra installed by
# its Helm chart (run by run-with-cluster.sh). The files are in volcano-examples/ as Volcano ships them
# (volcano-examples/README.md says from which commit, and which files are left out and why).
#
# nodesim plays 11 kubelets of 32 cpu: 6 with 256Gi and 8 GPUs, and 5 named 192.168.23.20..24, because the
# node-selector example pins its pods to the host 192.168.23.24.
#  1. Every runnable example reaches what a user of Volcano would see: vcjobs Running or Completed, every pod
#     of a ReplicaSet or Deployment with schedulerName volcano Running, the JobFlow's first job Running, the
#     CronJob accepted and not rejected by the controller.
#  2. The three invalid_jobs examples are denied by the admission webhook, with Volcano's message.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source=../lib/chart.sh
source "$HERE/../lib/chart.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${HELM:?}" "${TEPHRA_E2E_DIR:?}"
LOGS=$TEPHRA_E2E_DIR/logs
WORK=$TEPHRA_E2E_DIR/examples
mkdir -p "$WORK"
trap 'chart_stop_roles; stop_roles' EXIT
EX=$HERE/volcano-examples
REL=tephra
RNS=tephra-system
WH_PORT=$(free_port)

cat >"$WORK/nodes.yaml" <<'YAML'
nodes:
- namePrefix: sim-
  count: 6
  capacity: {cpu: "32", memory: 256Gi, pods: "110", ephemeral-storage: 1Ti, nvidia.com/gpu: "8"}
- namePrefix: 192.168.23.2
  count: 5
  capacity: {cpu: "32", memory: 128Gi, pods: "110", ephemeral-storage: 1Ti}
YAML
start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --config "$WORK/nodes.yaml" ||
  fail "tephra nodesim did not start"
node_count() { [ "$(k get nodes -o name | wc -l)" -ge 11 ]; }
wait_until "11 nodes" 90 node_count || fail "nodesim did not register 11 nodes"
k wait --for condition=Ready --timeout 60s node --all >/dev/null || fail "simulated nodes not Ready"
k taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true  # see scheduler_test.sh

chart_install "$REL" "$RNS" "$WH_PORT" --set custom.scheduler_schedule_period=1s >"$WORK/install.out" ||
  { cat "$WORK/install.out" >&2; fail "helm install failed"; }
crds_established() { k wait --for condition=Established --timeout 10s crd --all >/dev/null; }
wait_until "CRDs Established" 60 crds_established || fail "the chart's CRDs are not Established"
chart_start_roles "$REL" "$RNS" "$WORK/roles" "$WH_PORT" || fail "the chart's roles did not start"
ca_written() {
  [ "$(k get validatingwebhookconfigurations,mutatingwebhookconfigurations -o json |
       jq "[.items[] | select(.metadata.name | startswith(\"$REL-admission-service-\")) | .webhooks[] |
            select((.clientConfig.caBundle // \"\") == \"\")] | length")" = 0 ]
}
wait_until "caBundle in every webhook configuration" 60 ca_written || fail "caBundle not written"

# ------------------------------------------------------------------------------------- 1. runnable examples
# Each file goes to a namespace of its own (several examples share object names), except those that name
# their namespace. Cluster-scoped objects (Queues, PriorityClasses) land where they are.
NSI=0
declare -A NS_OF=()
apply_example() {  # apply_example <path under volcano-examples> [namespace]
  local f=$1 ns=${2:-} out
  if [ -n "$ns" ]; then :
  elif grep -qE '^\s+namespace:' "$EX/$f"; then ns=$(awk '/^  namespace:/ {print $2; exit}' "$EX/$f")
  else NSI=$((NSI + 1)); ns=ex-$NSI; k create namespace "$ns" >/dev/null; fi
  NS_OF[$f]=$ns
  out=$(k apply -n "$ns" -f "$EX/$f" 2>&1) || fail "kubectl apply -f $f (namespace $ns) failed: $out"
  note "applied $f in $ns: $(echo "$out" | tr '\n' ' ')"
}
# Queues and priority classes first: the jobs refer to them.
for f in deployment/queue.yaml hierarchical-jobs/queues.yaml kubecon-2019-china/task-priority/high-priority.yaml; do
  apply_example "$f"
done
JOB_FILES=(
  job.yaml job-plugin.yaml
  MindSpore-example/mindspore_cpu/mindspore-cpu.yaml MindSpore-example/mindspore_gpu/mindspore-gpu.yaml
  hierarchical-jobs/jobs.yaml
  integrations/mpi/mpi-example.yaml integrations/mxnet/train/train-mnist-cpu.yaml
  integrations/paddlepaddle/ctr-paddlepaddle-on-volcano.yaml integrations/ray/ray-example.yaml
  integrations/tensorflow/benchmark/tf-example.yaml integrations/tensorflow/dist-mnist/tf-dist-mnist-example.yaml
  kubecon-2019-china/gang/mpi-example.yaml kubecon-2019-china/horovod-sample/lm-horovod-tf-mnist-v0.5.yaml
  kubecon-2019-china/mpi-sample/mpi-example.yaml kubecon-2019-china/task-priority/elastic-job.yaml
  kubecon-2019-china/tf-sample/tf-example.yaml
  task-start-dependency/job.yaml task-start-dependency/mpi.yaml
)
POD_FILES=(
  deployment/deployment.yaml
  kubecon-2019-china/drf/nginx-1.yaml kubecon-2019-china/drf/nginx-2.yaml kubecon-2019-china/node-selector/nginx.yaml
)
# The JobFlow names namespace default; its templates (which name none) go where it looks for them.
apply_example jobflow/JobTemplate.yaml default
for f in "${JOB_FILES[@]}" "${POD_FILES[@]}" cronjob/cronjob.yaml jobflow/JobFlow.yaml \
  sharding/sharding-config-configmap.yaml; do
  [ "$f" != sharding/sharding-config-configmap.yaml ] || k create namespace volcano-system >/dev/null 2>&1 || true
  apply_example "$f"
done

# vcjobs: every job of every job example Running or Completed.
jobs_state() {  # <ns>: "name=phase" per vcjob
  k get jobs.batch.volcano.sh -n "$1" -o json | jq -r '.items[] | "\(.metadata.name)=\(.status.state.phase // "")"'
}
jobs_up() {
  local s
  s=$(jobs_state "$1")
  [ -n "$s" ] && ! grep -qvE '=(Running|Completed)$' <<<"$s"
}
for f in "${JOB_FILES[@]}"; do
  ns=${NS_OF[$f]}
  wait_until "$f: vcjobs Running" 120 jobs_up "$ns" ||
    fail "$f: vcjobs not Running: $(jobs_state "$ns" | tr '\n' ' '); pods: $(k get pods -n "$ns" --no-headers 2>&1 | head -20); podgroups: $(k get podgroups -n "$ns" -o json | jq -c '[.items[] | {n: .metadata.name, s: .status}]' | head -c 1500)"
  note "$f: $(jobs_state "$ns" | tr '\n' ' ')"
done

# ReplicaSets and Deployments with schedulerName volcano: every replica Running.
pods_up() {  # <ns> <want>
  [ "$(k get pods -n "$1" --field-selector status.phase=Running -o name | wc -l)" -ge "$2" ]
}
for f in "${POD_FILES[@]}"; do
  ns=${NS_OF[$f]}
  want=$(k get rs,deploy -n "$ns" -o json | jq '[.items[] | select(.kind == "ReplicaSet" and (.metadata.ownerReferences // []) == []) | .spec.replicas] + [.items[] | select(.kind == "Deployment") | .spec.replicas] | add')
  wait_until "$f: $want pods Running" 120 pods_up "$ns" "$want" ||
    fail "$f: pods not Running: $(k get pods -n "$ns" -o wide --no-headers | head -20)"
  note "$f: $want pods Running on $(k get pods -n "$ns" -o jsonpath='{.items[*].spec.nodeName}' | tr ' ' '\n' | sort -u | tr '\n' ' ')"
done
ns=${NS_OF[kubecon-2019-china/node-selector/nginx.yaml]}
[ -z "$(k get pods -n "$ns" -o jsonpath='{.items[*].spec.nodeName}' | tr ' ' '\n' | grep -vx 192.168.23.24)" ] ||
  fail "node-selector example: pods outside 192.168.23.24"
ns=${NS_OF[deployment/deployment.yaml]}
pg_queue=$(k get podgroups -n "$ns" -o jsonpath='{.items[*].spec.queue}')
[ "$pg_queue" = test ] || fail "deployment example: PodGroup queue '$pg_queue', want test (the pod's queue annotation)"

# JobFlow: its first flow's job runs (the templates' pods sleep 10 s on a kubelet; on nodesim they run on).
ns=${NS_OF[jobflow/JobFlow.yaml]}
flow_started() { [ "$(k get jobs.batch.volcano.sh -n "$ns" test-a -o jsonpath='{.status.state.phase}' 2>/dev/null)" = Running ]; }
wait_until "JobFlow test: job test-a Running" 90 flow_started ||
  fail "JobFlow test: $(k get jobflow -n "$ns" test -o json | jq -c .status); jobs: $(jobs_state "$ns" | tr '\n' ' ')"
note "jobflow: $(k get jobflow -n "$ns" test -o jsonpath='{.status.state.phase}'), $(jobs_state "$ns" | tr '\n' ' ')"

# CronJob (every 5 minutes: its first job may be minutes away; e2e_controller_cronjob runs schedules): stored
# by the webhook with Volcano's defaults and no Warning from the controller.
ns=${NS_OF[cronjob/cronjob.yaml]}
k get cronjob.batch.volcano.sh -n "$ns" volcano-cronjob-example >/dev/null || fail "the CronJob example was not stored"
warnings=$(k get events -n "$ns" --field-selector type=Warning -o jsonpath='{.items[*].message}')
[ -z "$warnings" ] || fail "CronJob example: Warning events: $warnings"

# ------------------------------------------------------------------------------------------ 2. invalid jobs
ns=ex-invalid
k create namespace "$ns" >/dev/null
expect_denied validatejob.volcano.sh "duplicate event PodFailed across different policy" apply -n "$ns" -f "$EX/invalid_jobs/duplicatedPolicyEvent-webhook-deny.yaml"
expect_denied validatejob.volcano.sh "duplicated task name" apply -n "$ns" -f "$EX/invalid_jobs/duplicatedTaskName-webhook-deny.yaml"
expect_denied validatejob.volcano.sh "job 'minAvailable' should not be greater than total replicas in tasks" \
  apply -n "$ns" -f "$EX/invalid_jobs/minAvailable-webhook-deny.yaml"
[ -z "$(k get jobs.batch.volcano.sh -n "$ns" -o name)" ] || fail "an invalid example was stored"
note "the three invalid_jobs examples were denied by validatejob.volcano.sh"
note "all $((${#JOB_FILES[@]} + ${#POD_FILES[@]} + 2)) runnable examples reached Running"
