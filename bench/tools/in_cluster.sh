# Sourced by the end-to-end bench scripts (bench/*/run.sh), not run. Usage, first thing in a script:
#   source "$ROOT/bench/tools/in_cluster.sh"; reexec_in_cluster "${BASH_SOURCE[0]}" <timeout-s> "$@"
# Unless the script was called with "inner", this fetches (or finds cached) the control-plane binaries and runs
# the script again, as `<script> inner`, inside a fresh real control plane (tests/e2e/run-with-cluster.sh),
# with TEPHRA_E2E_TEST_TIMEOUT defaulting to <timeout-s>. It does not return in that case.
reexec_in_cluster() {
  local script=$1 timeout=$2
  shift 2
  [ "${1:-}" = inner ] && return 0
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  eval "$(bash "$root/tests/e2e/fetch-binaries.sh" 2>/dev/null | grep '^K8S_BIN=')"
  export K8S_BIN
  export TEPHRA_E2E_TEST_TIMEOUT=${TEPHRA_E2E_TEST_TIMEOUT:-$timeout}
  exec bash "$root/tests/e2e/run-with-cluster.sh" bash "$script" inner
}

# After tests/e2e/lib/common.sh is sourced: the CRDs, $NODES simulated nodes (32 cpu, no GPUs, plus
# NODESIM_ARGS) Ready and untainted, and the root and default queues that PodGroups name before any
# scheduler runs. Fails the bench (common.sh's fail) when any of it does not come up.
bench_nodes() {
  install_crds || fail "CRDs not Established"
  # shellcheck disable=SC2086  # NODESIM_ARGS is a word list
  start_sim_nodes "$NODES" "$TEPHRA_E2E_LOG_DIR/nodesim.log" --nodes "$NODES" --cpu 32 --gpus 0 ${NODESIM_ARGS:-} ||
    fail "$NODES simulated nodes not Ready"
  create_default_queues || fail "default queues not created"
}
