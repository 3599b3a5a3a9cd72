#!/usr/bin/env bash
# e2e churn test (docs/churn.md): a seeded random mix of vcjobs, pod evictions, suspend/resume, job deletes,
# queue close/open and SIGKILLed controller/scheduler on the real control plane; afterwards every job must
# reach the phase its policies imply and the global invariants must hold. Run by run-with-cluster.sh:
#   TEPHRA_BIN=build/bin/tephra bash tests/e2e/run-with-cluster.sh bash tests/e2e/churn/churn_test.sh
# Knobs (environment): CHURN_SEED, CHURN_JOBS, CHURN_SECONDS, CHURN_NODES, CHURN_NODE_CPU,
# CHURN_CONVERGE_SECONDS. The driver is churn.py (Python 3 stdlib); it starts nodesim, scheduler and
# controller itself, because it SIGKILLs and restarts the last two.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
python3 -u "$HERE/churn.py" "$@"
# Safety after all that churn (issue 40): every pod still bound satisfies its node's hard constraints.
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
"$KUBECTL" --request-timeout 60s get nodes,pods -A -o json >"$LOGS/placement.json"
python3 "$TEPHRA_SOURCE_DIR/tests/e2e/lib/placement_audit.py" "$LOGS/placement.json"
