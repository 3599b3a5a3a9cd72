#!/usr/bin/env bash
# `tephra controller` end-to-end bench, by hand:
#   TEPHRA_BIN=<build>/bin/tephra QPS=50 BURST=100 BIG=1000 SMALL=1000 SAMPLES=30 bash bench/controller/run.sh
# (CTRL_ARGS="--worker-threads 16" passes extra flags to `tephra controller`; MAX_LATENCY_MS / MIN_RATIO make
# it fail above a status-latency p99 / below a controller:bare pod-rate ratio; ctest: bench_controller_small.)
# Brings up a real control plane (tests/e2e/run-with-cluster.sh; kube-apiserver with its default inflight
# limits, 400 read / 200 mutating), applies crds/, then runs bench.py (see its docstring: the script stands in
# for the scheduler by patching PodGroups Inqueue and for kubelets by patching pod status).
# WEBHOOK=1 first starts `tephra webhook`, registered with the API server for jobs, queues, podgroups and pods,
# so every pod the controller (and the bare poster) creates passes /pods/mutate and /pods/validate: compare
# with a run without it for the cost of admission (bench/RESULTS.md, "admission webhook").
# Results: bench/RESULTS.md, section "controller".
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
source "$ROOT/bench/tools/in_cluster.sh"
reexec_in_cluster "$HERE/run.sh" 900 "$@"
source "$ROOT/tests/e2e/lib/common.sh"
install_crds || fail "CRDs not Established"
create_default_queues || fail "default queues not created"
if [ "${WEBHOOK:-0}" = 1 ]; then
  trap stop_roles EXIT
  "$KUBECTL" create namespace volcano-system >/dev/null
  WH_PORT=$(free_port)
  start_role webhook "$TEPHRA_E2E_LOG_DIR/webhook.log" --kubeconfig "$KUBECONFIG" --listen-address 127.0.0.1 \
    --port "$WH_PORT" --webhook-url "https://127.0.0.1:$WH_PORT" --metrics-addr 0 --health-addr 0 ||
    fail "webhook did not start"
  registered() { [ "$("$KUBECTL" get mutatingwebhookconfigurations -o name | grep -c volcano-admission-service)" -ge 3 ]; }
  wait_until "webhook configurations" 60 registered || fail "webhook not registered"
fi
python3 "$HERE/bench.py"
