#!/usr/bin/env bash
# Small jobs as CI pipelines send them (issue: one-pod jobs faster than Kubernetes' own Job controller), by hand:
#   TEPHRA_BIN=<build>/bin/tephra NODES=1000 JOBS=1000 RATE=20 STEADY_SECONDS=30 bash bench/e2e_sched/smalljobs.sh
# Brings up a real control plane whose kube-controller-manager gets the same client QPS/burst as Tephra's roles
# (QPS, BURST; default 1000), NODES nodesim nodes (32 cpu each), then runs smalljobs.py: Tephra's vcjob path,
# the batch/v1 Job path (kube-controller-manager + kube-scheduler v1.20.2) and the create-and-bind ceiling, one
# after another on the same nodes (PATHS). Results: bench/RESULTS.md, section "Small jobs"; the ctest entry
# bench_small_jobs runs a smaller size and checks bench/thresholds.yaml (section e2e_small_jobs).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export QPS=${QPS:-1000} BURST=${BURST:-1000}
export TEPHRA_E2E_KCM_ARGS="--kube-api-qps $QPS --kube-api-burst $BURST ${TEPHRA_E2E_KCM_ARGS:-}"
source "$ROOT/bench/tools/in_cluster.sh"
reexec_in_cluster "$HERE/smalljobs.sh" 1800 "$@"
source "$ROOT/tests/e2e/lib/common.sh"
trap stop_roles EXIT
NODES=${NODES:-1000}
bench_nodes
# OUT=<file> keeps the output (the cluster's log directory goes away with it on success).
BENCH_JSON=$TEPHRA_E2E_LOG_DIR/smalljobs.json NODES=$NODES python3 "$HERE/smalljobs.py" | tee "${OUT:-/dev/null}" ||
  fail "smalljobs.py failed"
# CHECK=<python3 with yaml>: the ratios against bench/thresholds.yaml (ctest's bench_small_jobs).
if [ -n "${CHECK:-}" ]; then
  "$CHECK" "$ROOT/bench/tools/check_thresholds.py" --thresholds "$ROOT/bench/thresholds.yaml" \
    --section e2e_small_jobs --results "$TEPHRA_E2E_LOG_DIR/smalljobs.json" || fail "small jobs: thresholds crossed"
fi
