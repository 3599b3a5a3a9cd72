#!/usr/bin/env bash
# The main job: from a fresh Debian bookworm machine to Volcano jobs running on Tephra.
#   deps -> control-plane binaries (cached) -> build `tephra` -> real control plane on loopback
#   -> Volcano CRDs -> tephra nodesim / controller / scheduler -> example jobs -> watch -> summary.
# The cluster is left running for exploration; the last lines say how to use and stop it.
#
# Environment: TEPHRA_DEMO_DIR (default /tmp/tephra-demo; wiped at start), TEPHRA_BUILD_DIR (default ./build),
# TEPHRA_JOBS (build parallelism, default 2), TEPHRA_DEMO_NODES (simulated nodes, default 4),
# TEPHRA_DEMO_WAIT (seconds to watch the jobs, default 180).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=${TEPHRA_DEMO_DIR:-/tmp/tephra-demo}
BUILD=${TEPHRA_BUILD_DIR:-$ROOT/build}
WAIT=${TEPHRA_DEMO_WAIT:-180}
step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
bash scripts/deps.sh
step "control-plane binaries (built once, then cached in ~/.cache/tephra)"
bash tests/e2e/fetch-binaries.sh >/dev/null
step "building tephra in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"${TEPHRA_JOBS:-2}" --target tephra
export TEPHRA_BIN=$BUILD/bin/tephra

step "control plane in $DIR"
if [ -d "$DIR" ]; then bash tests/e2e/cluster.sh down "$DIR" 2>/dev/null || true; rm -rf "$DIR"; fi
bash tests/e2e/cluster.sh up "$DIR"
eval "$(bash tests/e2e/cluster.sh env "$DIR")"
# shellcheck source=../tests/e2e/lib/common.sh
source tests/e2e/lib/common.sh
k() { "$KUBECTL" --request-timeout 20s "$@"; }

step "Volcano CRDs"
k apply -f crds/ >/dev/null
k wait --for condition=Established --timeout 60s crd --all
# Volcano installs a `default` queue; the example jobs use it.
k get queue default >/dev/null 2>&1 || k create -f - >/dev/null <<'EOF'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: default}
spec: {weight: 1, reclaimable: true}
EOF

step "tephra roles"
# Detached into the cluster's run/ dir so `cluster.sh down` stops them together with the control plane.
ROLE_PID_DIR=$DIR/run   # read by start_role (tests/e2e/lib/common.sh)
export ROLE_PID_DIR
declare -A ROLE_STATE
launch() {  # launch <role> [args...]
  local role=$1 rc=0; shift
  start_role "$role" "$DIR/logs/tephra-$role.log" --kubeconfig "$KUBECONFIG" "$@" || rc=$?
  case $rc in
    0) ROLE_STATE[$role]="running (log: $DIR/logs/tephra-$role.log)" ;;
    3) ROLE_STATE[$role]="not implemented yet: coming" ;;
    *) ROLE_STATE[$role]="FAILED to start (log: $DIR/logs/tephra-$role.log)" ;;
  esac
  echo "tephra $role: ${ROLE_STATE[$role]}"
}
launch nodesim --nodes "${TEPHRA_DEMO_NODES:-4}"
# Volcano's controller and scheduler both default their health endpoint to :11251 (they run in separate pods);
# here they share one host, so every role gets its own loopback ports.
launch controller --metrics-addr "127.0.0.1:$(free_port)" --health-addr "127.0.0.1:$(free_port)"
launch scheduler --listen-address "127.0.0.1:$(free_port)" --health-addr "127.0.0.1:$(free_port)"
if [[ ${ROLE_STATE[nodesim]} == running* ]]; then
  node_count() { [ "$(k get nodes -o name | wc -l)" -ge "${TEPHRA_DEMO_NODES:-4}" ]; }
  wait_until "simulated nodes" 60 node_count && k get nodes
fi

step "example jobs"
# What the jobs refer to first (queues; priority classes and PVCs from prerequisites.yaml), then every
# Volcano batch Job among crds/examples. Other examples (PodGroups, JobFlows, ...) are not part of the demo.
job_files=()
for f in crds/examples/*.yaml; do
  kinds=$(k create --dry-run=client -o json -f "$f" | jq -r '.kind' | sort -u | tr '\n' ' ')
  case $kinds in
    "Job ") job_files+=("$f") ;;
    *Job*|*PodGroup*|*Command*|*HyperNode*) ;;   # also matches JobFlow, JobTemplate, CronJob
    *) k apply -f "$f" ;;
  esac
done
for f in "${job_files[@]}"; do
  # Namespaces the examples name must exist.
  for ns in $(k create --dry-run=client -o json -f "$f" | jq -r '.metadata.namespace // empty' | sort -u); do
    k get namespace "$ns" >/dev/null 2>&1 || k create namespace "$ns"
  done
  k apply -f "$f"
done

step "watching the jobs"
terminal() {  # all Volcano jobs in a terminal phase
  local phases
  phases=$(k get vcjob -A -o jsonpath='{range .items[*]}{.status.state.phase}{"\n"}{end}')
  [ -n "$phases" ] && ! grep -qvE '^(Completed|Failed|Aborted|Terminated)$' <<<"$phases"
}
if [[ ${ROLE_STATE[controller]} != running* ]]; then
  echo "tephra controller is not running, so the jobs stay as submitted; not waiting."
else
  deadline=$(( $(date +%s) + WAIT ))
  until terminal; do
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "(stopped watching after ${WAIT}s)"; break; fi
    k get vcjob -A --no-headers -o custom-columns='NS:.metadata.namespace,JOB:.metadata.name,PHASE:.status.state.phase,RUNNING:.status.running,SUCCEEDED:.status.succeeded,FAILED:.status.failed' || true
    echo
    sleep 10
  done
fi

step "summary"
k get vcjob -A -o custom-columns='NAMESPACE:.metadata.namespace,JOB:.metadata.name,QUEUE:.spec.queue,PHASE:.status.state.phase,MIN:.spec.minAvailable,RUNNING:.status.running,SUCCEEDED:.status.succeeded,FAILED:.status.failed'
echo
k get podgroup -A 2>/dev/null || true
echo
echo "pods by phase:"
k get pods -A --no-headers -o custom-columns='P:.status.phase' 2>/dev/null | sort | uniq -c || true
echo
for role in nodesim controller scheduler; do printf '  tephra %-10s %s\n' "$role" "${ROLE_STATE[$role]}"; done
cat <<EOF

The cluster is still running. Use it with:
  eval "\$(bash $ROOT/tests/e2e/cluster.sh env $DIR)"; \$KUBECTL get vcjob -A
Logs: $DIR/logs   Stop everything (control plane and tephra roles):
  bash $ROOT/tests/e2e/cluster.sh down $DIR
EOF
