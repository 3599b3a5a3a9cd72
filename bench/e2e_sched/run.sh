#!/usr/bin/env bash
# Scheduler end-to-end bench, by hand:
#   TEPHRA_BIN=<build>/bin/tephra NODES=1000 GANGS=8 GANG=128 QPS=50 BURST=100 bash bench/e2e_sched/run.sh
# Brings up a real control plane (tests/e2e/run-with-cluster.sh), NODES nodesim nodes (32 cpu each), then
# runs bench.py (tephra scheduler, kube-scheduler v1.20.2, bare binding poster on the same nodes).
#   MODE=latency TEPHRA_BIN=... NODES=1000 GANG=128 ROUNDS=20 QPS=1000 BURST=1000 bash bench/e2e_sched/run.sh
#     (one gang at a time on an idle cluster: PodGroup created -> all GANG pods bound; gang_latency.py)
#   SHAPES="plain vcjob gang:8 gang:128" PODS=3000 QPS=1000 BURST=1000 CONTROLLER_QPS=1000 CONTROLLER_BURST=1000 \
#     BINDERS=tephra,kube,poster TEPHRA_BIN=... NODES=1000 bash bench/e2e_sched/run.sh   (shapes: bench.py)
# Results: bench/RESULTS.md, section "scheduler end to end".
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
source "$ROOT/bench/tools/in_cluster.sh"
reexec_in_cluster "$HERE/run.sh" 1500 "$@"
source "$ROOT/tests/e2e/lib/common.sh"
trap stop_roles EXIT
NODES=${NODES:-1000}
bench_nodes
if [ "${MODE:-throughput}" = latency ]; then
  python3 "$HERE/gang_latency.py"
elif [ -n "${SHAPES:-}" ]; then
  # Several shapes on one cluster: SHAPES="plain vcjob gang:8 gang:128" (gang:<size>).
  for shape in $SHAPES; do
    SHAPE=${shape%%:*} GANG=${shape#*:} NODES=$NODES python3 "$HERE/bench.py"
  done
else
  NODES=$NODES python3 "$HERE/bench.py"
fi
