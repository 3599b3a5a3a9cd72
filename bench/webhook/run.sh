#!/usr/bin/env bash
# Admission latency of `tephra webhook` under a steady open-loop load, by hand:
#   TEPHRA_BIN=<build>/bin/tephra [LOAD_BIN=<build>/bench/webhook/admission_load] [RATES="500 1000 2000 4000"]
#   [SECONDS_PER_RATE=20] [CONNECTIONS=16] bash bench/webhook/run.sh
# Brings up the real control plane (the webhook's informers and its certificate Secret need one), starts the
# webhook with a self-signed certificate and without registering it (the load goes straight to it, not through
# the API server), then for each body (a 100-task job on /jobs/validate and /jobs/mutate, a pod on
# /pods/validate) and each rate runs admission_load and prints its JSON line. Results: bench/RESULTS.md,
# "admission webhook". The webhooks-on-versus-off pod creation rate is bench/controller/run.sh with WEBHOOK=1.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export LOAD_BIN=${LOAD_BIN:-$(dirname "$(dirname "$TEPHRA_BIN")")/bench/webhook/admission_load}
source "$ROOT/bench/tools/in_cluster.sh"
reexec_in_cluster "$HERE/run.sh" 1500 "$@"
source "$ROOT/tests/e2e/lib/common.sh"
trap stop_roles EXIT
[ -x "$LOAD_BIN" ] || fail "LOAD_BIN=$LOAD_BIN is not built (cmake --build <build> --target admission_load)"
install_crds || fail "CRDs not Established"
"$KUBECTL" create namespace volcano-system >/dev/null
"$KUBECTL" create -f - >/dev/null <<'Q'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: default}
spec: {weight: 1, reclaimable: true}
Q
PORT=$(free_port)
HEALTH=$(free_port)
start_role webhook "$TEPHRA_E2E_LOG_DIR/webhook.log" --kubeconfig "$KUBECONFIG" --listen-address 127.0.0.1 \
  --port "$PORT" --manage-webhook-configurations=false --metrics-addr 0 --health-addr "127.0.0.1:$HEALTH" \
  --enabled-admission /jobs/mutate,/jobs/validate,/pods/validate || fail "webhook did not start"
ready() { curl -fsS "http://127.0.0.1:$HEALTH/readyz"; }
wait_until "webhook ready" 60 ready || fail "webhook not ready"
CA="$TEPHRA_E2E_LOG_DIR/webhook-ca.crt"
"$KUBECTL" get secret -n volcano-system volcano-admission-secret -o jsonpath='{.data.ca\.crt}' | base64 -d >"$CA"
for shape in "/jobs/validate job100" "/jobs/mutate job100" "/pods/validate pod"; do
  set -- $shape
  for rate in ${RATES:-500 1000 2000 4000}; do
    "$LOAD_BIN" --url "https://127.0.0.1:$PORT" --ca "$CA" --path "$1" --body "$2" --rate "$rate" \
      --seconds "${SECONDS_PER_RATE:-20}" --connections "${CONNECTIONS:-16}" || true
  done
done
