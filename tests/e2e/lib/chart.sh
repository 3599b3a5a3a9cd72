# shellcheck shell=bash
# The Helm chart on the loopback control plane, with the roles as local processes (there is no kubelet):
# every role runs with the flags of the chart's own Deployment (tests/e2e/lib/chart_roles.py) and the token of
# the chart's own ServiceAccount, so the chart's configuration and RBAC are what is exercised; the webhook is
# reached by URL (custom.admission_url). Sourced after common.sh and the cluster's env (cluster.sh env).
#
#   chart_install <release> <namespace> <webhook-port> [helm args...]   helm upgrade --install, local-process values
#   chart_start_roles <release> <namespace> <workdir> <webhook-port>     start controller, scheduler, webhook
#   chart_stop_roles                                                     SIGTERM them, wait
#   chart_sa_kubeconfig <namespace> <serviceaccount> <file>              a kubeconfig with that SA's token
CHART_DIR=${CHART_DIR:-$TEPHRA_SOURCE_DIR/charts/tephra}
declare -gA CHART_ROLE_PID=() CHART_ROLE_HEALTH=() CHART_ROLE_METRICS=() CHART_ROLE_LOG=()
# Deployment suffix -> role, in start order.
CHART_ROLES=(admission controllers scheduler)

chart_install() {
  local release=$1 ns=$2 port=$3; shift 3
  "$HELM" upgrade --install "$release" "$CHART_DIR" --kubeconfig "$KUBECONFIG" -n "$ns" --create-namespace \
    --wait --timeout 120s \
    --set custom.controller_replicas=0 --set custom.scheduler_replicas=0 --set custom.admission_replicas=0 \
    --set "custom.admission_url=https://127.0.0.1:$port" "$@"
}

chart_sa_kubeconfig() {
  local ns=$1 sa=$2 out=$3 secret token
  has_token() { secret=$("$KUBECTL" -n "$ns" get serviceaccount "$sa" -o jsonpath='{.secrets[0].name}' 2>/dev/null) &&
                [ -n "$secret" ]; }
  wait_until "a token for serviceaccount $ns/$sa" 60 has_token || return 1
  token=$("$KUBECTL" -n "$ns" get secret "$secret" -o jsonpath='{.data.token}' | base64 -d)
  [ -n "$token" ] || { echo "chart_sa_kubeconfig: secret $ns/$secret has no token" >&2; return 1; }
  cat >"$out" <<KC
apiVersion: v1
kind: Config
clusters:
- name: loopback
  cluster: {server: "$TEPHRA_E2E_API_URL", certificate-authority: "$TEPHRA_E2E_CA_FILE"}
users:
- name: $sa
  user: {token: "$token"}
contexts:
- name: $sa
  context: {cluster: loopback, user: $sa, namespace: $ns}
current-context: $sa
KC
  chmod 600 "$out"
}

chart_start_roles() {
  local release=$1 ns=$2 work=$3 port=$4 suffix spec sa rc
  mkdir -p "$work"
  "$HELM" get manifest "$release" -n "$ns" --kubeconfig "$KUBECONFIG" >"$work/manifest.yaml"
  for suffix in "${CHART_ROLES[@]}"; do
    local dep="$release-$suffix"
    grep -q "name: $dep\$" "$work/manifest.yaml" || continue   # role switched off in values
    local sets=()
    [ "$suffix" = admission ] && sets=("--set=--port=$port" "--set=--listen-address=127.0.0.1")
    spec=$(python3 "$TEPHRA_SOURCE_DIR/tests/e2e/lib/chart_roles.py" --manifest "$work/manifest.yaml" \
             --deployment "$dep" --workdir "$work/$suffix" "${sets[@]}") || return 1
    sa=$(jq -r .serviceAccountName <<<"$spec")
    chart_sa_kubeconfig "$ns" "$sa" "$work/$suffix.kubeconfig" || return 1
    local args=()
    mapfile -t args < <(jq -r '.args[]' <<<"$spec")
    CHART_ROLE_HEALTH[$suffix]=$(jq -r '.ports["--health-addr"] // empty' <<<"$spec")
    CHART_ROLE_METRICS[$suffix]=$(jq -r '(.ports["--metrics-addr"] // .ports["--listen-address"]) // empty' <<<"$spec")
    CHART_ROLE_LOG[$suffix]=$work/$suffix.log
    rc=0
    start_role "${args[0]}" "$work/$suffix.log" "${args[@]:1}" "--kubeconfig=$work/$suffix.kubeconfig" || rc=$?
    [ $rc -eq 0 ] || { echo "chart_start_roles: $dep did not start (rc=$rc): ${args[*]}" >&2; return 1; }
    if [ -n "${ROLE_PID_DIR:-}" ]; then CHART_ROLE_PID[$suffix]=$(cat "$ROLE_PID_DIR/tephra-${args[0]}.pid")
    else CHART_ROLE_PID[$suffix]=${ROLE_PIDS[-1]}; fi
    echo "started $dep as serviceaccount $sa: tephra ${args[*]}" >&2
  done
  for suffix in "${!CHART_ROLE_HEALTH[@]}"; do
    local hp=${CHART_ROLE_HEALTH[$suffix]}
    [ -n "$hp" ] || continue
    ready() { curl -fsS "http://127.0.0.1:$hp/readyz" >/dev/null; }
    wait_until "$release-$suffix ready" 90 ready || { tail -n 30 "${CHART_ROLE_LOG[$suffix]}" >&2; return 1; }
  done
}

chart_stop_roles() {
  stop_pids 15 "${CHART_ROLE_PID[@]}"
  CHART_ROLE_PID=()
}
