# Shared set-up for the ctrlrest e2e suites (queue_, podgroup_, jobflow_, suspend_ tests), sourced, not run.
# Starts `tephra nodesim` (4 nodes) and `tephra controller`. The test plays the scheduler (Pending PodGroups
# -> Inqueue, unbound pods bound round-robin with pods/binding) because on 2026-11-22 `tephra scheduler` left
# vcjob PodGroups Pending in this setup; TEPHRA_E2E_REAL_SCHEDULER=1 uses `tephra scheduler` instead.
# Provides: k, LOGS, NS, CTRL_PID, vcjob_phase, wait_until/fail/note (lib/common.sh).
set -euo pipefail
_ENV_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$_ENV_HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
FAKE_SCHED_PID=
trap 'stop_roles; [ -z "$FAKE_SCHED_PID" ] || kill "$FAKE_SCHED_PID" 2>/dev/null || true' EXIT
NS=default

install_crds || fail "CRDs not Established"

rc=0
start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --nodes 4 --cpu 32 --gpus 0 || rc=$?
[ $rc -eq 0 ] || fail "tephra nodesim did not start (rc=$rc)"
node_count() { [ "$(k get nodes -o name | wc -l)" -ge "$1" ]; }
wait_until "4 nodes" 90 node_count 4 || fail "nodesim did not register nodes"

rc=0
start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --metrics-addr "127.0.0.1:$(free_port)" \
  --health-addr "127.0.0.1:$(free_port)" ${TEPHRA_CONTROLLER_ARGS:-} || rc=$?
[ $rc -eq 0 ] || fail "tephra controller did not start (rc=$rc)"
CTRL_PID=${ROLE_PIDS[-1]}

start_fake_scheduler() {
  local nodes
  nodes=($(k get nodes -o jsonpath='{.items[*].metadata.name}'))
  (
    i=0
    while true; do
      # New PodGroups have no phase until a scheduler writes Pending: admit both.
      k get podgroups -n $NS -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.phase}{"\n"}{end}' 2>/dev/null |
        while read -r pg ph; do
          case "${ph:-}" in "" | Pending)
            k patch podgroup -n $NS "$pg" --type merge -p '{"status":{"phase":"Inqueue"}}' >/dev/null 2>&1 || true ;;
          esac
        done
      # Unbound pods have no spec.nodeName at all (a jsonpath =="" filter would not match them).
      for p in $(k get pods -n $NS -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' 2>/dev/null |
                 awk 'NF == 1 {print $1}'); do
        node=${nodes[$(( i % ${#nodes[@]} ))]}; i=$((i + 1))
        printf '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"%s"},"target":{"apiVersion":"v1","kind":"Node","name":"%s"}}' "$p" "$node" |
          k create --raw "/api/v1/namespaces/$NS/pods/$p/binding" -f - >/dev/null 2>&1 || true
      done
      sleep 1
    done
  ) &
  FAKE_SCHED_PID=$!
}
rc=0
if [ "${TEPHRA_E2E_REAL_SCHEDULER:-0}" != 1 ]; then
  rc=1
else
  start_role scheduler "$LOGS/scheduler.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
    --listen-address "127.0.0.1:$(free_port)" --health-addr "127.0.0.1:$(free_port)" || rc=$?
fi
if [ $rc -ne 0 ]; then
  note "playing the scheduler from the test (admit PodGroups, bind pods, create root/default queues)"
  # tephra scheduler creates these at start-up, as Volcano's does; jobs wait for their queue to exist.
  create_default_queues || fail "default queues not created"
  start_fake_scheduler
fi

vcjob_phase() { k get vcjob -n $NS "$1" -o jsonpath='{.status.state.phase}'; }
vcjob_phase_is() { [ "$(vcjob_phase "$1")" = "$2" ]; }
# task_yaml <task> <replicas> <run-seconds> [<task-policies-flow-yaml>] [<container-name>]: one task of
# nodesim pods exiting 0 after run-seconds (the task list entry of a vcjob).
task_yaml() {
  cat <<YAML
  - name: $1
    replicas: $2
    policies: ${4:-[]}
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "$3", tephra.io/sim-exit-code: "0"}}
      spec:
        restartPolicy: Never
        containers: [{name: ${5:-c}, image: busybox, resources: {requests: {cpu: "1"}}}]
YAML
}
# vcjob_yaml <name> <replicas> <run-seconds>: a one-task job of nodesim pods exiting 0 after run-seconds.
vcjob_yaml() {
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1, namespace: $NS}
spec:
  minAvailable: $2
  schedulerName: volcano
  queue: default
  tasks:
YAML
  task_yaml w "$2" "$3"
}
