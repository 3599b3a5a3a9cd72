#!/usr/bin/env bash
# A real Kubernetes v1.20 control plane as plain processes on 127.0.0.1 (no containers):
# etcd + kube-apiserver (TLS, static token auth, RBAC, service-account token signing, audit log)
# + kube-controller-manager (+ kube-scheduler when TEPHRA_E2E_KUBE_SCHEDULER=1).
#
#   cluster.sh up   <dir>   start everything, write <dir>/kubeconfig and <dir>/env, wait until usable
#   cluster.sh down <dir>   stop everything started by `up <dir>` (logs stay in <dir>/logs)
#   cluster.sh env  <dir>   print eval-able exports (KUBECONFIG, KUBECTL, HELM, TEPHRA_E2E_*)
#
# Everything an instance owns lives under <dir> (pki, etcd data, pid files, logs) and its ports are chosen at
# start, so two instances with different dirs never clash. See docs/e2e.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The kube-controller-manager controllers that work without cloud providers or kubelets. nodelifecycle is left
# out on purpose: it would taint simulated nodes whose heartbeats it does not like.
# TaintNodesByCondition is disabled: it puts node.kubernetes.io/not-ready on every new Node, and only the
# node-lifecycle controller (not run here: simulated nodes have no kubelet) would lift it, so no pod could land
# on nodesim nodes. nodesim owns the Ready condition itself.
# pvc-protection/pv-protection remove the finalizer the (default-on) StorageObjectInUseProtection admission
# plugin puts on every PVC/PV; without them deleting a PVC hangs forever. persistentvolume-binder binds claims
# to volumes (the scheduler's volume predicates read the result).
DEFAULT_KCM_CONTROLLERS=garbagecollector,namespace,serviceaccount,serviceaccount-token,clusterrole-aggregation,root-ca-cert-publisher,replicaset,deployment,statefulset,daemonset,job,podgc,resourcequota,disruption,endpoint,endpointslice,pvc-protection,pv-protection,persistentvolume-binder
SERVICE_CIDR=10.0.0.0/24
SERVICE_IP=10.0.0.1   # first address of SERVICE_CIDR: the `kubernetes` Service's ClusterIP, must be in the cert

log() { echo "cluster.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
now_ms() { date +%s%3N; }

usage() {
  echo "usage: $0 up|down|env <dir>" >&2
  exit 2
}

# ---------------------------------------------------------------------------------------------------------- down
# Stops every process recorded in <dir>/run/*.pid. Each was started in its own session (setsid), so its pid is
# also its process-group id and killing the group takes any children with it.
cmd_down() {
  local dir=$1 pidf pid name deadline
  [ -d "$dir/run" ] || return 0
  for pidf in "$dir"/run/*.pid; do
    [ -e "$pidf" ] || continue
    pid=$(cat "$pidf")
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  deadline=$(( $(date +%s) + 15 ))
  for pidf in "$dir"/run/*.pid; do
    [ -e "$pidf" ] || continue
    pid=$(cat "$pidf"); name=$(basename "$pidf" .pid)
    while kill -0 -- "-$pid" 2>/dev/null || kill -0 "$pid" 2>/dev/null; do
      if [ "$(date +%s)" -ge "$deadline" ]; then
        log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
        kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
        break
      fi
      sleep 0.1
    done
    rm -f "$pidf"
  done
  log "down: $dir (logs in $dir/logs)"
}

# ----------------------------------------------------------------------------------------------------------- env
cmd_env() {
  local dir=$1
  [ -f "$dir/env" ] || die "$dir/env not found: run '$0 up $dir' first"
  cat "$dir/env"
}

# ------------------------------------------------------------------------------------------------------------ up
# Picks n distinct free TCP ports on 127.0.0.1 from 20000-32767, i.e. below Linux's ephemeral range
# (32768-60999), so an outgoing connection cannot grab a port between the pick and the daemon's bind.
# Callers hold the ports lock until the daemons have bound them.
pick_ports() {
  python3 - "$1" <<'EOF'
import random, socket, sys
n = int(sys.argv[1]); socks = []; ports = []
while len(ports) < n:
    p = random.randint(20000, 32767)
    if p in ports:
        continue
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        s.close(); continue
    socks.append(s); ports.append(p)
print(" ".join(map(str, ports)))
EOF
}

port_listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start <name> <cmd...>: runs cmd in its own session with output to logs/<name>.log and its pid in run/<name>.pid.
# fd 9 (the ports lock) is closed for the child so the lock is released when `up` releases it.
start() {
  local name=$1; shift
  setsid "$@" </dev/null >"$DIR/logs/$name.log" 2>&1 9>&- &
  echo $! >"$DIR/run/$name.pid"
}

alive_or_die() {
  local name pidf
  for pidf in "$DIR"/run/*.pid; do
    [ -e "$pidf" ] || continue
    name=$(basename "$pidf" .pid)
    if ! kill -0 "$(cat "$pidf")" 2>/dev/null; then
      log "$name exited early; last lines of $DIR/logs/$name.log:"
      tail -n 30 "$DIR/logs/$name.log" >&2 || true
      exit 1
    fi
  done
}

# wait_for <what> <timeout-s> <cmd...>: polls cmd every 0.2s until it succeeds, failing fast if a daemon died.
wait_for() {
  local what=$1 timeout=$2; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    alive_or_die
    [ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${timeout}s waiting for $what"
    sleep 0.2
  done
}

gen_pki() {
  local pki=$DIR/pki
  mkdir -p "$pki"; chmod 700 "$pki"
  # EC P-256 keys: generated in milliseconds, accepted by Go's TLS and by OpenSSL clients.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
    -subj "/CN=tephra-e2e-ca" -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  local san="IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default"
  san+=",DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n' "$san") \
    -out "$pki/apiserver.crt" 2>/dev/null
  # Service-account token signing pair (RS256 is what 1.20 issues).
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null

  # Static tokens (csv: token,user,uid,"groups"). The admin is in system:masters; the controller-manager and
  # scheduler use the identities the RBAC bootstrap policy grants their roles to, so RBAC is exercised for them.
  local t_admin t_kcm t_sched
  t_admin=$(openssl rand -hex 24); t_kcm=$(openssl rand -hex 24); t_sched=$(openssl rand -hex 24)
  {
    echo "$t_admin,tephra-admin,tephra-admin,\"system:masters\""
    echo "$t_kcm,system:kube-controller-manager,system:kube-controller-manager"
    echo "$t_sched,system:kube-scheduler,system:kube-scheduler"
  } >"$pki/tokens.csv"
  echo "$t_admin" >"$pki/admin.token"
  write_kubeconfig "$DIR/kubeconfig" tephra-admin "$t_admin"
  write_kubeconfig "$DIR/kube-controller-manager.kubeconfig" system:kube-controller-manager "$t_kcm"
  write_kubeconfig "$DIR/kube-scheduler.kubeconfig" system:kube-scheduler "$t_sched"
}

write_kubeconfig() {
  local file=$1 user=$2 token=$3
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tephra-e2e
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $DIR/pki/ca.crt
users:
- name: $user
  user:
    token: $token
contexts:
- name: tephra-e2e
  context:
    cluster: tephra-e2e
    user: $user
    namespace: default
current-context: tephra-e2e
EOF
  chmod 600 "$file"
}

write_audit_policy() {
  # Metadata level records user, groups, verb, resource and response code of every request: enough to check
  # which identity was denied what (RBAC), without logging bodies. Read-only noise from health checks is dropped.
  cat >"$DIR/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version"]
- level: Metadata
EOF
}

cmd_up() {
  local t0 t_bin t_pki t_etcd t_api t_ready
  t0=$(now_ms)
  mkdir -p "$DIR"/{logs,run}
  for pidf in "$DIR"/run/*.pid; do
    [ -e "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null && die "$DIR already has a running cluster; run '$0 down $DIR' first"
  done
  rm -f "$DIR"/run/*.pid

  local bins
  bins=$(bash "$HERE/fetch-binaries.sh") || die "fetch-binaries.sh failed"
  eval "$bins"
  KUBECTL=${KUBECTL:-$(command -v kubectl)}
  t_bin=$(now_ms)

  # Any failure or interrupt from here on tears down what was started.
  # shellcheck disable=SC2154  # rc is assigned inside the trap string
  trap 'rc=$?; trap - EXIT INT TERM; if [ $rc -ne 0 ]; then log "up failed (rc=$rc); tearing down"; cmd_down "$DIR"; fi; exit $rc' EXIT
  trap 'exit 130' INT TERM

  # Ports: etcd client, etcd peer, apiserver, controller-manager, scheduler (secure serving / healthz).
  local lockfile=${TMPDIR:-/tmp}/tephra-e2e-ports.lock
  exec 9>"$lockfile"
  flock 9
  read -r ETCD_PORT ETCD_PEER_PORT API_PORT KCM_PORT SCHED_PORT <<<"$(pick_ports 5)"
  t_pki=$(now_ms)
  gen_pki
  write_audit_policy
  t_pki=$(( $(now_ms) - t_pki ))

  rm -rf "$DIR/etcd"
  start etcd "$ETCD" --name tephra-e2e --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "tephra-e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
    --logger zap --log-outputs stderr
  wait_for "etcd /health" 30 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
  t_etcd=$(( $(now_ms) - t0 ))

  local pki=$DIR/pki
  # shellcheck disable=SC2086  # extra args are meant to be word-split
  start kube-apiserver "$K8S_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" --insecure-port 0 \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" --cert-dir "$DIR/apiserver-certs" \
    --token-auth-file "$pki/tokens.csv" \
    --authorization-mode Node,RBAC \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --enable-admission-plugins NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultTolerationSeconds,Priority,NodeRestriction,ResourceQuota,MutatingAdmissionWebhook,ValidatingAdmissionWebhook \
    --disable-admission-plugins TaintNodesByCondition \
    --allow-privileged=true \
    --endpoint-reconciler-type none \
    --audit-policy-file "$DIR/audit-policy.yaml" --audit-log-path "$DIR/logs/audit.log" \
    --audit-log-maxsize 4000 --audit-log-maxbackup 1 \
    ${TEPHRA_E2E_APISERVER_ARGS:-}
  # --endpoint-reconciler-type none: the `kubernetes` Service would otherwise get 127.0.0.1 as an endpoint,
  # which Endpoints validation rejects (loopback), producing an error every 10s. No real pod needs to reach it.
  local token
  token=$(cat "$pki/admin.token")
  local curl_api=(curl -fsS --cacert "$pki/ca.crt" -H "Authorization: Bearer $token")
  wait_for "kube-apiserver to listen" 60 port_listening "$API_PORT"
  t_api=$(( $(now_ms) - t0 ))
  # /readyz includes the RBAC bootstrap post-start hook: before it passes, the controller-manager's identity has
  # no roles yet and it exits on its first forbidden read.
  wait_for "kube-apiserver /readyz" 90 "${curl_api[@]}" "https://127.0.0.1:$API_PORT/readyz"
  t_ready=$(( $(now_ms) - t0 ))

  # The remaining daemons bind their own ports; start them while still holding the lock.
  # shellcheck disable=SC2086  # extra args are meant to be word-split
  start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$DIR/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "$DIR/kube-controller-manager.kubeconfig" \
    --authentication-skip-lookup \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --port 0 --cert-dir "$DIR/kcm-certs" \
    --controllers "${TEPHRA_E2E_KCM_CONTROLLERS:-$DEFAULT_KCM_CONTROLLERS}" \
    --use-service-account-credentials \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --leader-elect=false \
    ${TEPHRA_E2E_KCM_ARGS:-}
  if [ "${TEPHRA_E2E_KUBE_SCHEDULER:-0}" = 1 ]; then
    # shellcheck disable=SC2086
    start kube-scheduler "$K8S_BIN/kube-scheduler" \
      --kubeconfig "$DIR/kube-scheduler.kubeconfig" \
      --authentication-kubeconfig "$DIR/kube-scheduler.kubeconfig" \
      --authorization-kubeconfig "$DIR/kube-scheduler.kubeconfig" \
      --authentication-skip-lookup \
      --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --port 0 --cert-dir "$DIR/scheduler-certs" \
      --leader-elect=false \
      ${TEPHRA_E2E_SCHEDULER_ARGS:-}
  fi
  wait_for "kube-controller-manager to listen" 60 port_listening "$KCM_PORT"
  if [ "${TEPHRA_E2E_KUBE_SCHEDULER:-0}" = 1 ]; then
    wait_for "kube-scheduler to listen" 60 port_listening "$SCHED_PORT"
  fi
  flock -u 9; exec 9>&-

  # KUBECACHEDIR: kubectl's discovery cache per cluster, so a later cluster on a reused port never sees the
  # API list (e.g. without our CRDs) cached from an earlier one, and ~/.kube/cache does not grow per port.
  cat >"$DIR/env" <<EOF
export KUBECONFIG=$DIR/kubeconfig
export KUBECTL=$KUBECTL
export HELM=$HELM
export TEPHRA_E2E_DIR=$DIR
export TEPHRA_E2E_API_URL=https://127.0.0.1:$API_PORT
export TEPHRA_E2E_CA_FILE=$pki/ca.crt
export TEPHRA_E2E_TOKEN_FILE=$pki/admin.token
export TEPHRA_E2E_ETCD_URL=http://127.0.0.1:$ETCD_PORT
export TEPHRA_E2E_SA_KEY_FILE=$pki/sa.key
export TEPHRA_E2E_AUDIT_LOG=$DIR/logs/audit.log
export KUBECACHEDIR=$DIR/kube-cache
EOF

  # Usable means: the namespace controller's `default` namespace exists and the serviceaccount controllers have
  # given it a `default` ServiceAccount with a token Secret (in 1.20 the ServiceAccount admission plugin rejects
  # pods until that token exists).
  local kc=("$KUBECTL" --kubeconfig "$DIR/kubeconfig" --request-timeout 5s)
  wait_for "namespace default" 60 "${kc[@]}" get namespace default
  wait_for "serviceaccount default/default with a token" 60 \
    bash -c '[ -n "$("$@" -n default get serviceaccount default -o jsonpath="{.secrets[0].name}")" ]' _ "${kc[@]}"
  local t_end; t_end=$(( $(now_ms) - t0 ))

  trap - EXIT INT TERM
  log "up: $DIR  api=https://127.0.0.1:$API_PORT etcd=127.0.0.1:$ETCD_PORT"
  log "timing (ms since start): binaries=$(( t_bin - t0 )) pki=$t_pki etcd-healthy=$t_etcd apiserver-listening=$t_api apiserver-ready=$t_ready usable=$t_end"
  log "use it: eval \"\$(bash $HERE/cluster.sh env $DIR)\"; stop it: bash $HERE/cluster.sh down $DIR"
}

[ $# -eq 2 ] || usage
case $2 in /*) DIR=$2 ;; *) DIR=$PWD/$2 ;; esac
case $1 in
  up) cmd_up ;;
  down) cmd_down "$DIR" ;;
  env) cmd_env "$DIR" ;;
  *) usage ;;
esac
