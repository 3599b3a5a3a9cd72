#!/usr/bin/env bash
# e2e (issue 10): every long-lived role exits promptly on SIGTERM, whatever the API server does.
#  1. API server healthy: controller and scheduler (leader election on) and nodesim exit 0 within the
#     default --graceful-shutdown-seconds (5 s), and both leases are released (holderIdentity empty).
#     A second controller, a standby, is ready while the first leads.
#  2. API server frozen (SIGSTOP: connections open, nothing answers - the worst case for a client): all
#     three exit within 5 s + 2 s of slack instead of waiting out their request timeouts (~30 s before).
# Prints the measured exit times.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
source "$HERE/lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}" "${TEPHRA_E2E_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
APISERVER_PID=$(cat "$TEPHRA_E2E_DIR/run/kube-apiserver.pid")
trap 'kill -CONT "$APISERVER_PID" 2>/dev/null || true; stop_roles' EXIT

install_crds || fail "CRDs not Established"
k create namespace volcano-system >/dev/null 2>&1 || true

declare -A PID HEALTH
start_all() {
  local rc=0 hp
  ROLE_PIDS=()
  start_role nodesim "$LOGS/nodesim-$1.log" --kubeconfig "$KUBECONFIG" --nodes 2 --cpu 8 --gpus 0 || rc=$?
  [ $rc -eq 0 ] || fail "nodesim did not start"
  PID[nodesim]=${ROLE_PIDS[-1]}
  hp=$(free_port); HEALTH[controller]=$hp
  start_role controller "$LOGS/controller-$1.log" --kubeconfig "$KUBECONFIG" --leader-elect=true \
    --metrics-addr 0 --health-addr "127.0.0.1:$hp" || rc=$?
  [ $rc -eq 0 ] || fail "controller did not start"
  PID[controller]=${ROLE_PIDS[-1]}
  hp=$(free_port); HEALTH[scheduler]=$hp
  start_role scheduler "$LOGS/scheduler-$1.log" --kubeconfig "$KUBECONFIG" --leader-elect=true \
    --listen-address 0 --health-addr "127.0.0.1:$hp" || rc=$?
  [ $rc -eq 0 ] || fail "scheduler did not start"
  PID[scheduler]=${ROLE_PIDS[-1]}
  ready() { curl -sf "http://127.0.0.1:${HEALTH[$1]}/readyz" >/dev/null; }
  leader() { [ -n "$(k get lease -n volcano-system "$1" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" ]; }
  wait_until "controller ready" 60 ready controller || fail "controller not ready"
  wait_until "scheduler ready" 60 ready scheduler || fail "scheduler not ready"
  wait_until "controller lease held" 60 leader vc-controller-manager || fail "controller never led"
  wait_until "scheduler lease held" 60 leader vc-scheduler || fail "scheduler never led"
  node_count() { [ "$(k get nodes -o name | wc -l)" -ge 2 ]; }
  wait_until "2 nodes" 60 node_count || fail "nodesim did not register its nodes"
}

# A child that exited is a zombie until reaped: kill -0 still succeeds on it.
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
# stop_all <limit-ms> <want-exit-code|any>: SIGTERMs the three roles at once and waits for each; fails when one
# takes longer than the limit or exits with another code. Sets STOPPED to "role=ms(exit code) ...". Not in a
# subshell: `wait` only reaps our own children.
stop_all() {
  local limit=$1 want=$2 role t0 out="" rc now
  t0=$(date +%s%3N)
  for role in nodesim controller scheduler; do kill -TERM "${PID[$role]}"; done
  for role in nodesim controller scheduler; do
    while alive "${PID[$role]}"; do
      now=$(date +%s%3N)
      if [ $(( now - t0 )) -gt $(( limit + 10000 )) ]; then
        kill -KILL "${PID[$role]}" 2>/dev/null || true
        break
      fi
      sleep 0.05
    done
    rc=0; wait "${PID[$role]}" 2>/dev/null || rc=$?
    now=$(date +%s%3N)
    out+="$role=$(( now - t0 ))ms(exit $rc) "
    [ $(( now - t0 )) -le "$limit" ] || { echo "$out" >&2; tail -n 5 "$LOGS/$role-"*.log >&2; fail "$role took $(( now - t0 )) ms (limit $limit)"; }
    [ "$want" = any ] || [ "$rc" -eq "$want" ] || { echo "$out" >&2; fail "$role exited $rc (want $want)"; }
  done
  ROLE_PIDS=()
  STOPPED=$out
}

# ---------------------------------------------------------------------------------- 1. healthy API server
start_all healthy
# A standby controller (the first one holds the lease) is ready while it waits, so a rolling update and a
# PodDisruptionBudget count it (docs/controllers.md); it does not lead.
hp=$(free_port); mp=$(free_port); rc=0
start_role controller "$LOGS/controller-standby.log" --kubeconfig "$KUBECONFIG" --leader-elect=true \
  --metrics-addr "127.0.0.1:$mp" --health-addr "127.0.0.1:$hp" || rc=$?
[ $rc -eq 0 ] || fail "the standby controller did not start"
standby_ready() { curl -sf "http://127.0.0.1:$hp/readyz" >/dev/null; }
wait_until "standby controller ready" 30 standby_ready || fail "a standby controller is not ready"
leads=$(curl -fsS "http://127.0.0.1:$mp/metrics" | awk '$1 == "tephra_controller_is_leader" {print int($2)}')
[ "$leads" = 0 ] || fail "the standby controller says it leads (tephra_controller_is_leader=$leads)"
kill -TERM "${ROLE_PIDS[-1]}"; wait "${ROLE_PIDS[-1]}" 2>/dev/null || true
unset 'ROLE_PIDS[-1]'
note "a standby controller is ready and does not lead"
stop_all 5000 0
note "1. healthy API server: $STOPPED"
for l in vc-controller-manager vc-scheduler; do
  [ -z "$(k get lease -n volcano-system $l -o jsonpath='{.spec.holderIdentity}')" ] || fail "lease $l not released on a clean stop"
done

# ------------------------------------------------------------------------------------ 2. frozen API server
start_all frozen
kill -STOP "$APISERVER_PID"
stop_all 7000 any
note "2. API server frozen: $STOPPED"
kill -CONT "$APISERVER_PID"
grep -q 'graceful shutdown did not finish in time\|stop signal received' "$LOGS"/scheduler-frozen.log ||
  fail "scheduler log does not mention the stop signal"
echo PASS
