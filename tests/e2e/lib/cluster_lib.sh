# shellcheck shell=bash
# The harness's view of a shared control plane (sourced by run-with-cluster.sh and shared-cluster.sh).
#   shared_cluster_usable <dir>   0 when the cluster in <dir> is up and its API server answers /readyz
#   scenario_reset <dir>          stops every process a scenario left that uses the cluster's admin kubeconfig,
#                                 then removes every API object that was not there when the cluster came up
#                                 (lib/cluster_reset.py; the baseline is <dir>/baseline.json), and marks the
#                                 cluster clean
#   scenario_reset_if_needed <dir>  the same, unless the last reset left the clean mark and nothing ran since

_CLUSTER_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

shared_cluster_usable() {
  local dir=$1
  [ -f "$dir/env" ] && [ -f "$dir/baseline.json" ] && [ -f "$dir/run/kube-apiserver.pid" ] || return 1
  kill -0 "$(cat "$dir/run/kube-apiserver.pid")" 2>/dev/null || return 1
  (
    eval "$(cat "$dir/env")"
    curl -fsS --max-time 5 --cacert "$TEPHRA_E2E_CA_FILE" -H "Authorization: Bearer $(cat "$TEPHRA_E2E_TOKEN_FILE")" \
      "$TEPHRA_E2E_API_URL/readyz" >/dev/null
  )
}

scenario_reset() {
  local dir=$1
  # Scenarios run one at a time on a shared cluster, so any process still naming its admin kubeconfig is a
  # leftover (a role started detached, a kubectl stuck in a watch); it would act on the next scenario's objects.
  local pat="$dir/kubeconfig"
  if pgrep -f -- "$pat" >/dev/null 2>&1; then
    echo "scenario_reset: stopping leftover processes: $(pgrep -f -a -- "$pat" | cut -c1-120 | tr '\n' ';')"
    pkill -TERM -f -- "$pat" 2>/dev/null || true
    local i
    for i in $(seq 1 50); do pgrep -f -- "$pat" >/dev/null 2>&1 || break; sleep 0.1; done
    pkill -KILL -f -- "$pat" 2>/dev/null || true
  fi
  rm -f "$dir/clean"
  ( eval "$(cat "$dir/env")"; python3 "$_CLUSTER_LIB_DIR/cluster_reset.py" reset "$dir/baseline.json" ) &&
    touch "$dir/clean"
}

# Before a scenario: the last one's own reset normally left the cluster clean. The mark is taken away for the
# scenario's duration, so a scenario killed by ctest's timeout (no trap ran) leaves no mark and gets a reset.
scenario_reset_if_needed() {
  local dir=$1
  if [ -f "$dir/clean" ]; then
    rm -f "$dir/clean"
    echo "scenario_reset: the cluster is clean (the last scenario's reset finished)"
    return 0
  fi
  scenario_reset "$dir" && rm -f "$dir/clean"
}
