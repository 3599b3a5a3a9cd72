# shellcheck shell=bash
# kube-scheduler v1.20.2 beside the roles under test (sourced after common.sh, with the cluster's env): K8S_BIN
# is resolved through fetch-binaries.sh when unset, and
#   start_kube_scheduler <KubeSchedulerConfiguration file> <log file>   runs it in the background (KS_PID)
#   stop_kube_scheduler                                                  stops it (for the caller's EXIT trap)
# The configuration's clientConnection should use $TEPHRA_E2E_DIR/kube-scheduler.kubeconfig (cluster.sh).
KS_PID=
if [ -z "${K8S_BIN:-}" ]; then
  eval "$(bash "$TEPHRA_SOURCE_DIR/tests/e2e/fetch-binaries.sh" 2>/dev/null | grep '^K8S_BIN=')"
fi
[ -x "$K8S_BIN/kube-scheduler" ] || fail "kube-scheduler not found in K8S_BIN=$K8S_BIN"

start_kube_scheduler() {
  local kcfg=$TEPHRA_E2E_DIR/kube-scheduler.kubeconfig
  "$K8S_BIN/kube-scheduler" --config "$1" \
    --authentication-kubeconfig "$kcfg" --authorization-kubeconfig "$kcfg" --authentication-skip-lookup \
    --bind-address 127.0.0.1 --secure-port 0 --port 0 >"$2" 2>&1 &
  KS_PID=$!
}

stop_kube_scheduler() {
  [ -z "$KS_PID" ] || { kill "$KS_PID" 2>/dev/null || true; wait "$KS_PID" 2>/dev/null || true; }
  KS_PID=
}
