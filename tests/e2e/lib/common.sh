# Helpers shared by e2e test scripts and scripts/demo.sh (sourced, not run).
# Expects KUBECTL (or kubectl on PATH) and, for start_role, TEPHRA_BIN.

KUBECTL=${KUBECTL:-kubectl}

# fail <message>: ends the scenario. Roles started by start_role that are no longer running are named with the
# end of their logs: a role that died after its start is usually the cause of whatever timed out.
fail() {
  echo "FAIL: $*" >&2
  local r pid role logf
  for r in "${ROLE_LOGS[@]}"; do
    read -r pid role logf <<<"$r"
    kill -0 "$pid" 2>/dev/null && continue
    echo "(tephra $role, pid $pid, is not running; last lines of $logf:)" >&2
    tail -n 10 "$logf" >&2 || true
  done
  exit 1
}
# e2e_begin: a scenario's usual start under run-with-cluster.sh: requires its environment, sets LOGS (the
# test's log dir, kept on failure) and WORK (scratch, removed), and stops the started roles on exit.
e2e_begin() {
  : "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
  LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
  WORK=$(mktemp -d)
  trap 'stop_roles; rm -rf "$WORK"' EXIT
}
# k: kubectl against the scenario's cluster; no request may hang a test (K_TIMEOUT, default 20s).
k() { "$KUBECTL" --request-timeout "${K_TIMEOUT:-20s}" "$@"; }
note() { echo "--- $*" >&2; }
# sub <var> <var>: the difference of two shell variables holding decimal seconds (`date +%s.%N`), to 0.01.
sub() { awk -v a="${!1}" -v b="${!2}" 'BEGIN {printf "%.2f", a - b}'; }

# wait_until <what> <timeout-s> <cmd...>: polls cmd until it succeeds or the deadline passes: every 0.5 s for
# the first 10 s, then every second, and every 2 s after 30 s. Most checks start a kubectl (about 0.15-0.25 s
# of CPU each, and a request to the API server); on two cores shared by two scenarios, the polls of long waits
# were the largest single use of the CPU in the e2e tier (docs/build.md), while they only need to notice a
# change within a second or two.
wait_until() {
  local what=$1 timeout=$2; shift 2
  local start=$SECONDS
  until "$@" >/dev/null 2>&1; do
    local waited=$(( SECONDS - start ))
    [ "$waited" -lt "$timeout" ] || { echo "timed out after ${timeout}s waiting for $what" >&2; return 1; }
    if [ "$waited" -lt 10 ]; then sleep 0.5; elif [ "$waited" -lt 30 ]; then sleep 1; else sleep 2; fi
  done
}

# Pids of roles started with start_role, stopped by stop_roles.
ROLE_PIDS=()

# "pid role logfile" of every role start_role started (fail names the ones that are no longer running).
ROLE_LOGS=()

# start_role <role> <logfile> [args...]: starts `$TEPHRA_BIN <role> args...` in the background. Returns 0 once
# it has outlived its start-up checks (a bad flag or an unreadable file ends a role within milliseconds), 1
# when it exited first, with the end of its log. Readiness is the caller's own wait (/readyz, nodes, a lease).
# With ROLE_PID_DIR set, the role is detached instead (own session, pid in $ROLE_PID_DIR/tephra-<role>.pid,
# which is the cluster's run/ dir, so `cluster.sh down` stops it with the control plane).
start_role() {
  local role=$1 logf=$2; shift 2
  if [ -n "${ROLE_PID_DIR:-}" ]; then
    setsid "$TEPHRA_BIN" "$role" "$@" </dev/null >"$logf" 2>&1 &
  else
    "$TEPHRA_BIN" "$role" "$@" </dev/null >"$logf" 2>&1 &
  fi
  local pid=$! rc i
  for i in 1 2 3; do
    sleep 0.1
    if ! kill -0 "$pid" 2>/dev/null; then
      rc=0; wait "$pid" || rc=$?
      echo "tephra $role exited with $rc; last lines of $logf:" >&2
      tail -n 20 "$logf" >&2
      return 1
    fi
  done
  ROLE_LOGS+=("$pid $role $logf")
  if [ -n "${ROLE_PID_DIR:-}" ]; then echo "$pid" >"$ROLE_PID_DIR/tephra-$role.pid"; else ROLE_PIDS+=("$pid"); fi
  return 0
}

# stop_pids <grace-seconds> <pid...>: SIGTERM, then SIGKILL whatever still runs after the grace period.
stop_pids() {
  local grace=$1 pid deadline; shift
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  deadline=$(( $(date +%s) + grace ))
  for pid in "$@"; do
    while kill -0 "$pid" 2>/dev/null; do
      if [ "$(date +%s)" -ge "$deadline" ]; then kill -KILL "$pid" 2>/dev/null || true; break; fi
      sleep 0.1
    done
  done
}

stop_roles() {
  stop_pids 10 "${ROLE_PIDS[@]}"
  ROLE_PIDS=()
}

# expect_denied <webhook-name> <message-substring> <kubectl args...> (manifest on stdin): kubectl (through the
# caller's `k`) must fail with that webhook's denial, and the denial must say <message-substring>.
expect_denied() {
  local name=$1 want=$2 out; shift 2
  if out=$(k "$@" 2>&1); then fail "expected $name to deny ($want), but kubectl succeeded: $out"; fi
  grep -qF "admission webhook \"$name\" denied the request" <<<"$out" || fail "not denied by $name: $out"
  grep -qF -- "$want" <<<"$out" || fail "denial by $name does not say '$want': $out"
}

# expect_schema_refused <want> <kubectl args...>: the CRD's own schema refuses the object; the API server
# checks it before any validating webhook runs, so no webhook may be named.
expect_schema_refused() {
  local want=$1 out; shift
  if out=$(k "$@" 2>&1); then fail "expected the CRD schema to refuse ($want), but kubectl succeeded: $out"; fi
  grep -qF -- "$want" <<<"$out" || fail "schema refusal does not say '$want': $out"
  if grep -q "admission webhook" <<<"$out"; then fail "refused by a webhook, not by the CRD schema: $out"; fi
}

# scheduler_cycles <port>: tephra_scheduler_cycles_total from a scheduler's /metrics on 127.0.0.1:<port>.
scheduler_cycles() {
  curl -fsS "http://127.0.0.1:$1/metrics" | awk '$1 == "tephra_scheduler_cycles_total" {print int($2)}'
}
# wait_scheduler_cycles <port> <n> [timeout-s]: returns once the scheduler completed <n> more cycles. Use it
# before asserting that nothing (more) happened: a stalled scheduler would otherwise pass such a check.
wait_scheduler_cycles() {
  local port=$1 n=$2 timeout=${3:-60} start
  start=$(scheduler_cycles "$port") || { echo "no cycle counter on port $port" >&2; return 1; }
  _cycles_past() { [ "$(scheduler_cycles "$1")" -ge "$2" ]; }
  wait_until "$n more scheduling cycles" "$timeout" _cycles_past "$port" $(( start + n ))
}

# audit_log: the API server's audit log (one JSON line per request) from the moment this scenario started. On a
# shared control plane the file also holds every earlier scenario's requests, which a check must not count.
audit_log() {
  local f=${TEPHRA_E2E_AUDIT_LOG:-$TEPHRA_E2E_DIR/logs/audit.log}
  [ -f "$f" ] || { echo "no API audit log at $f (cluster.sh writes one)" >&2; return 1; }
  tail -c +$(( ${TEPHRA_E2E_AUDIT_OFFSET:-0} + 1 )) "$f"
}

# A free TCP port on 127.0.0.1 (the kernel picks it; the socket is closed before use, so callers start the
# listener promptly).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The pieces most e2e scripts start with. They expect KUBECONFIG, TEPHRA_BIN and TEPHRA_SOURCE_DIR.
# install_crds: applies the project's CRDs and waits until the API server serves them (a CRD whose status
# has no conditions yet makes `kubectl wait` fail at once, so it is retried).
install_crds() {
  "$KUBECTL" --request-timeout 20s apply -f "$TEPHRA_SOURCE_DIR/crds/" >/dev/null || return 1
  _crds_established() { "$KUBECTL" --request-timeout 20s wait --for condition=Established --timeout 10s crd --all; }
  wait_until "CRDs Established" 60 _crds_established
}
# The queues `tephra scheduler` creates at start-up (as Volcano's does), for scenarios and benches that need
# them before a scheduler runs or without one: root, and default under it. Idempotent.
create_default_queues() {
  "$KUBECTL" --request-timeout 20s apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: root}
spec: {weight: 1, reclaimable: false}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: default}
spec: {weight: 1, reclaimable: true, parent: root}
YAML
}
# start_sim_nodes <count> <logfile> [nodesim args...]: starts `tephra nodesim`, waits until <count> nodes are
# registered and Ready, and lifts the not-ready:NoSchedule taint the API server's admission puts on new nodes
# (the loopback control plane runs no node lifecycle controller to lift it).
start_sim_nodes() {
  local count=$1 logf=$2; shift 2
  start_role nodesim "$logf" --kubeconfig "$KUBECONFIG" "$@" || { echo "tephra nodesim did not start" >&2; return 1; }
  # One list per poll: `kubectl wait node --all` takes minutes on a thousand nodes.
  _sim_ready_count() {
    [ "$("$KUBECTL" --request-timeout 30s get nodes \
      -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')" -ge "$1" ]
  }
  wait_until "$count nodes registered and Ready" $((60 + count / 5)) _sim_ready_count "$count" || return 1
  "$KUBECTL" --request-timeout 60s taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
}
# start_scheduler <logfile> [args...]: starts `tephra scheduler` without leader election or metrics, then waits
# for /readyz and for the default queue it creates. Sets SCHED_HEALTH_PORT (for wait_scheduler_cycles).
start_scheduler() {
  local logf=$1; shift
  SCHED_HEALTH_PORT=$(free_port)
  start_role scheduler "$logf" --kubeconfig "$KUBECONFIG" --leader-elect=false --listen-address 0 \
    --health-addr "127.0.0.1:$SCHED_HEALTH_PORT" "$@" || { echo "tephra scheduler did not start" >&2; return 1; }
  wait_until "scheduler /readyz" 60 curl -fsS "http://127.0.0.1:$SCHED_HEALTH_PORT/readyz" || return 1
  _have_default_queue() { "$KUBECTL" --request-timeout 20s get queue default; }
  wait_until "default queue" 30 _have_default_queue
}
