#!/usr/bin/env bash
# Every role's /metrics against docs/metrics.md (the contract dashboards and alerts rely on), during a
# workload: names, types and labels (check_metrics.py). Also what protects /metrics: the scheduler serves it
# over TLS with --metrics-auth=kubernetes (no token 401, a token without the RBAC rule 403, a reader's token
# 200, probes open), and the log level changes at run time through PUT /debug/flags/v.
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
e2e_begin
DOC=$TEPHRA_SOURCE_DIR/docs/metrics.md
CHECK=$TEPHRA_SOURCE_DIR/tests/e2e/metrics/check_metrics.py

install_crds || fail "CRDs"
NODESIM_PORT=$(free_port)
# Two leaves under one spine (HyperNode gauges), GPUs shared as vGPUs on one group (Volcano's vGPU gauges).
cat >"$WORK/nodes.yaml" <<'EOF'
nodes:
  - namePrefix: gpu-
    count: 4
    capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "4"}
    topology: {nodesPerLeaf: 2, leavesPerSpine: 2}
  - namePrefix: vgpu-
    count: 1
    capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "2"}
    vgpu: {split: 4, memoryMiB: 16384}
EOF
# The two leaves and their spine, as an operator writes them (labelMatch on nodesim's topology labels).
k apply -f - >/dev/null <<'EOF'
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf-0}
spec: {tier: 1, members: [{type: Node, selector: {labelMatch: {matchLabels: {tephra.io/leaf: gpu-leaf-0}}}}]}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf-1}
spec: {tier: 1, members: [{type: Node, selector: {labelMatch: {matchLabels: {tephra.io/leaf: gpu-leaf-1}}}}]}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: spine-0}
spec: {tier: 2, members: [{type: HyperNode, selector: {exactMatch: {name: leaf-0}}}, {type: HyperNode, selector: {exactMatch: {name: leaf-1}}}]}
EOF
start_sim_nodes 5 "$LOGS/nodesim.log" --config "$WORK/nodes.yaml" --metrics-addr "127.0.0.1:$NODESIM_PORT" ||
  fail "simulated nodes"

# The scheduler's metrics over TLS with delegated auth.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
  -keyout "$WORK/tls.key" -out "$WORK/tls.crt" >/dev/null 2>&1 || fail "openssl"
SCHED_PORT=$(free_port)
SCHED_HEALTH=$(free_port)
start_role scheduler "$LOGS/scheduler.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --listen-address "127.0.0.1:$SCHED_PORT" --health-addr "127.0.0.1:$SCHED_HEALTH" \
  --metrics-tls-cert-file "$WORK/tls.crt" --metrics-tls-private-key-file "$WORK/tls.key" --metrics-auth kubernetes \
  --reservation-depth 1 || fail "tephra scheduler did not start"
CTRL_PORT=$(free_port)
start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --metrics-addr "127.0.0.1:$CTRL_PORT" --health-addr "127.0.0.1:$(free_port)" ||
  fail "tephra controller did not start"
WH_PORT=$(free_port)
WH_METRICS=$(free_port)
start_role webhook "$LOGS/webhook.log" --kubeconfig "$KUBECONFIG" --listen-address 127.0.0.1 --port "$WH_PORT" \
  --webhook-url "https://127.0.0.1:$WH_PORT" --metrics-addr "127.0.0.1:$WH_METRICS" \
  --health-addr "127.0.0.1:$(free_port)" || fail "tephra webhook did not start"
wait_until "scheduler /readyz" 60 curl -fsS "http://127.0.0.1:$SCHED_HEALTH/readyz" || fail "scheduler not ready"
have_queues() { k get queue default; }
wait_until "default queue" 60 have_queues || fail "no default queue"

# --- who may read the scheduler's /metrics
k create serviceaccount metrics-reader >/dev/null
k create serviceaccount stranger >/dev/null
k apply -f - >/dev/null <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tephra-metrics-reader}
rules:
  - nonResourceURLs: ["/metrics"]
    verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: tephra-metrics-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tephra-metrics-reader}
subjects: [{kind: ServiceAccount, name: metrics-reader, namespace: default}]
EOF
sa_token() {
  local secret
  secret=$(k get serviceaccount "$1" -o jsonpath='{.secrets[0].name}')
  [ -n "$secret" ] && k get secret "$secret" -o jsonpath='{.data.token}' | base64 -d
}
wait_until "service account tokens" 60 sa_token metrics-reader || fail "no token for metrics-reader"
wait_until "service account tokens" 60 sa_token stranger || fail "no token for stranger"
READER=$(sa_token metrics-reader)
STRANGER=$(sa_token stranger)
SURL="https://127.0.0.1:$SCHED_PORT"
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/tls.crt" "$@"; }
[ "$(code "$SURL/metrics")" = 401 ] || fail "no token: want 401"
[ "$(code -H "Authorization: Bearer not-a-token" "$SURL/metrics")" = 401 ] || fail "a bad token: want 401"
[ "$(code -H "Authorization: Bearer $STRANGER" "$SURL/metrics")" = 403 ] || fail "a token without the rule: want 403"
[ "$(code -H "Authorization: Bearer $READER" "$SURL/metrics")" = 200 ] || fail "the reader's token: want 200"
[ "$(code -X PUT -d 4 -H "Authorization: Bearer $READER" "$SURL/debug/flags/v")" = 403 ] ||
  fail "the reader may get /metrics but not PUT the log level"
[ "$(code "$SURL/readyz")" = 200 ] || fail "probes stay open on the protected server"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SCHED_HEALTH/metrics")" = 404 ] ||
  fail "a protected role must not serve /metrics on its health address"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SCHED_PORT/metrics")" = 000 ] ||
  fail "plain HTTP on the TLS port must not be answered"
note "scheduler /metrics: 401 without or with a bad token, 403 without the RBAC rule, 200 for the reader"

scrape() {
  case $1 in
    scheduler) curl -fsS --cacert "$WORK/tls.crt" -H "Authorization: Bearer $READER" "$SURL/metrics" ;;
    controller) curl -fsS "http://127.0.0.1:$CTRL_PORT/metrics" ;;
    webhook) curl -fsS "http://127.0.0.1:$WH_METRICS/metrics" ;;
    nodesim) curl -fsS "http://127.0.0.1:$NODESIM_PORT/metrics" ;;
  esac
}
metric() { scrape "$1" | awk -v n="$2" '$1 == n {v = $2} END {print v}'; }

# --- the log level at run time (controller, unprotected)
[ "$(curl -fsS "http://127.0.0.1:$CTRL_PORT/debug/flags/v")" = info ] || fail "the controller starts at info"
curl -fsS -X PUT -d 4 "http://127.0.0.1:$CTRL_PORT/debug/flags/v" >/dev/null || fail "PUT /debug/flags/v"
[ "$(metric controller tephra_log_level)" = 1 ] || fail "tephra_log_level after PUT 4: want 1 (debug)"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X PUT -d loud "http://127.0.0.1:$CTRL_PORT/debug/flags/v")" = 400 ] ||
  fail "a bad level: want 400"
curl -fsS -X PUT -d info "http://127.0.0.1:$CTRL_PORT/debug/flags/v" >/dev/null
grep -q 'msg="log level changed".*to=debug' "$LOGS/controller.log" || fail "no log line for the level change"
note "log level: PUT 4 -> debug, bad value 400, back to info"

# --- a workload that touches every family it can: a second queue with a capability and a guarantee, a gang
# that completes, one that fails, a vGPU job, one admitted (the cluster has its 5 GPUs) but too big for any node
# (unschedulable tasks, retries, a queue position)
k apply -f - >/dev/null <<'EOF'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec:
  weight: 2
  capability: {cpu: "24", memory: 96Gi, nvidia.com/gpu: "12"}
  guarantee: {resource: {cpu: "2"}}
EOF
job() {  # job <name> <queue> <replicas> <gpus> <run-seconds> <exit-code> [extra resource line]
  cat <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1}
spec:
  schedulerName: volcano
  queue: $2
  minAvailable: $3
  runningEstimate: 10m
  tasks:
    - name: worker
      replicas: $3
      template:
        metadata:
          annotations: {tephra.io/sim-run-seconds: "$5", tephra.io/sim-exit-code: "$6"}
        spec:
          restartPolicy: Never
          containers:
            - name: main
              image: busybox
              resources:
                limits: {cpu: "1", memory: 1Gi${4:+, nvidia.com/gpu: "$4"}${7:+, $7}}
EOF
}
{ job done-job research 2 1 3 0; echo ---; job failing-job default 1 "" 3 1; echo ---
  job long-job research 2 2 3600 0; echo ---; job too-big default 1 5 60 0; echo ---
  job vgpu-job default 1 "" 3600 0 'volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "2048"'; } | k apply -f - >/dev/null
phase() { k get vcjob "$1" -o jsonpath='{.status.state.phase}'; }
# On a failure: what the scheduler said about the job's pods.
why() { k get pods -l "volcano.sh/job-name=$1" -o jsonpath='{range .items[*]}{.metadata.name}: {.status.conditions[*].message}{"\n"}{end}'; }
is_phase() { [ "$(phase "$1")" = "$2" ]; }
wait_until "done-job Completed" 120 is_phase done-job Completed || fail "done-job did not complete"
wait_until "failing-job Failed" 120 is_phase failing-job Failed || fail "failing-job did not fail"
wait_until "long-job Running" 60 is_phase long-job Running || fail "long-job did not run"
wait_until "vgpu-job Running" 90 is_phase vgpu-job Running || fail "vgpu-job did not run: $(why vgpu-job)"
# The whole scrape first: `grep -q` would stop reading early, and curl's failed write fails the pipeline.
has_series() { local m; m=$(scrape "$1") && grep -q "^$2" <<<"$m"; }
wait_until "a queue position for too-big" 60 has_series scheduler 'tephra_job_queue_position{namespace="default",podgroup="too-big' ||
  fail "no queue position for the job that cannot be placed"
wait_until "job completed metric" 30 has_series controller 'volcano_job_completed_phase_count{job_name="done-job"' ||
  fail "volcano_job_completed_phase_count has no series for done-job"
has_series controller 'volcano_job_failed_phase_count{job_name="failing-job"' || fail "no failed count for failing-job"
cycles() { scrape scheduler | awk '$1 == "tephra_scheduler_cycles_total" {print int($2)}'; }
c0=$(cycles)
cycled() { [ "$(cycles)" -ge $((c0 + 3)) ]; }
wait_until "3 more scheduling cycles" 60 cycled || fail "scheduler not cycling"
# The same series by value: the vGPU card holds the job's 2048 MiB; a leaf offers its two nodes' 8 GPUs.
scrape scheduler >"$LOGS/scheduler.metrics"
grep -q '^volcano_vgpu_device_allocated_memory{devID="[^"]*",NodeName="vgpu-0"} 2048$' "$LOGS/scheduler.metrics" ||
  fail "volcano_vgpu_device_allocated_memory: want 2048 MiB on a vgpu-0 card"
grep -Eq '^tephra_hypernode_resource_allocatable\{hypernode="leaf-0",tier="1",resource="nvidia.com/gpu"\} 8$' \
  "$LOGS/scheduler.metrics" || fail "tephra_hypernode_resource_allocatable: want 8 GPUs on leaf-0"
grep -q '^tephra_node_resource_allocated{node="gpu-[0-3]",resource="nvidia.com/gpu"} [1-4]$' "$LOGS/scheduler.metrics" ||
  fail "tephra_node_resource_allocated: no GPU node shows the running jobs' GPUs"

# --- every role against the contract
rc=0
for role in scheduler controller webhook nodesim; do
  [ "$role" = scheduler ] || scrape "$role" >"$LOGS/$role.metrics"
  case $role in
    scheduler) req=volcano_e2e_scheduling_latency_milliseconds,volcano_open_session_duration_milliseconds,volcano_e2e_job_scheduling_latency_milliseconds,volcano_task_scheduling_latency_milliseconds,volcano_scheduling_stage_duration_milliseconds,volcano_queue_allocated_milli_cpu,volcano_queue_request_milli_cpu,volcano_queue_deserved_milli_cpu,volcano_queue_capacity_milli_cpu,volcano_queue_real_capacity_milli_cpu,volcano_queue_share,volcano_queue_weight,volcano_job_share,volcano_namespace_share,volcano_unschedule_task_count,volcano_job_retry_counts,tephra_job_queue_position,tephra_node_resource_allocatable,tephra_hypernode_resource_allocated,volcano_vgpu_device_memory_allocation_for_a_certain_pod ;;
    controller) req=volcano_job_completed_phase_count,volcano_job_failed_phase_count,volcano_controller_job_to_pod_creation_latency_milliseconds,volcano_queue_pod_group_running_count,reconcile_total,workqueue_depth ;;
    *) req="" ;;
  esac
  python3 "$CHECK" "$DOC" "$role" "$LOGS/$role.metrics" --require-series "$req" || rc=1
done
[ "$rc" = 0 ] || fail "metrics differ from docs/metrics.md (scrapes in $LOGS/*.metrics)"
note "every role's metrics match docs/metrics.md"
echo "PASS metrics"
